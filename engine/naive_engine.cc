// The naive engine: each function runs as soon as its dependencies allow --
// at push, in the pushing thread (a function pushed from inside a running
// function runs right after it) -- and device work is waited for before the
// push returns. Same rules and errors as the threaded engine; for debugging.

#include <deque>

#include "rill/engine/engine_base.h"
#include "rill/engine/engine_kinds.h"

namespace rill::engine::internal {
namespace {

class NaiveEngine : public EngineBase {
 public:
  explicit NaiveEngine(const EngineOptions& options) : EngineBase(options) {}
  ~NaiveEngine() override { Shutdown(false); }

 protected:
  // Runs `op` now, unless this thread is already running a function of this
  // engine: then `op` (made ready by that function's completion, or pushed
  // by it) runs right after, in a loop rather than a recursion, so long
  // chains cannot overflow the stack.
  void Dispatch(OprBlock* op, bool) override {
    thread_local NaiveEngine* owner = nullptr;
    thread_local std::deque<OprBlock*>* pending = nullptr;
    if (owner == this) {
      pending->push_back(op);
      return;
    }
    NaiveEngine* saved_owner = owner;
    std::deque<OprBlock*>* saved_pending = pending;
    std::deque<OprBlock*> queue{op};
    owner = this;
    pending = &queue;
    while (!queue.empty()) {
      OprBlock* next = queue.front();
      queue.pop_front();
      Run(next, 0);
    }
    owner = saved_owner;
    pending = saved_pending;
  }

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
  auto engine = std::make_unique<NaiveEngine>(options);
  engine->StartBackground();
  return engine;
}

}  // namespace rill::engine::internal
