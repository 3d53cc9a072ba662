// The naive engine: each function runs as soon as its dependencies allow --
// at push, in the pushing thread -- and device work is waited for before the
// push returns. Same rules and errors as the threaded engine; for debugging.

#include "engine/engine_base.h"
#include "engine/engine_kinds.h"

namespace rill::engine::internal {
namespace {

class NaiveEngine : public EngineBase {
 public:
  explicit NaiveEngine(const EngineOptions& options) : EngineBase(options) {}
  ~NaiveEngine() override { Shutdown(false); }

 protected:
  void Dispatch(OprBlock* op) override { Run(op, 0); }

  void AfterDeviceEnqueue(OprBlock* op) override {
    Mutex mu;
    CondVar cv;
    bool done = false;
    op->fence->OnDone([&](absl::Status) {
      MutexLock lock(&mu);
      done = true;
      cv.SignalAll();
    });
    MutexLock lock(&mu);
    cv.Wait(&mu, [&] { return done; });
  }
};

}  // namespace

std::unique_ptr<Engine> NewNaiveEngine(const EngineOptions& options) {
  return std::make_unique<NaiveEngine>(options);
}

}  // namespace rill::engine::internal
