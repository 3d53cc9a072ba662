#ifndef RILL_ENGINE_REFUSING_ENGINE_H_
#define RILL_ENGINE_REFUSING_ENGINE_H_

// rill:internal -- not installed: what Engine::Default() becomes when the
// environment is bad; users include engine.h.

#include <memory>
#include <string>

#include "rill/engine/engine.h"

namespace rill::engine::internal {

// An engine that runs nothing: every push, operator, deletion and wait
// fails with `why` (the bad setting that kept the default engine from being
// created), so that a program whose environment is bad fails at its first
// engine call with the cause instead of running on with defaults.
// NewVariable returns a null handle. Owns no thread. Thread-safe.
class RefusingEngine : public Engine {
 public:
  explicit RefusingEngine(absl::Status why) : why_(std::move(why)) {}

  const absl::Status& why() const { return why_; }

  PlatformManager& platforms() const override;
  VarHandle NewVariable() override { return VarHandle(); }
  absl::Status PushSync(SyncFn, Context, absl::Span<const VarHandle>, absl::Span<const VarHandle>,
                        FnProperty, int, std::string_view) override {
    return why_;
  }
  absl::Status PushAsync(AsyncFn, Context, absl::Span<const VarHandle>, absl::Span<const VarHandle>,
                         FnProperty, int, std::string_view) override {
    return why_;
  }
  absl::StatusOr<OperatorHandle> NewOperator(AsyncFn, absl::Span<const VarHandle>,
                                             absl::Span<const VarHandle>, FnProperty,
                                             std::string_view) override {
    return why_;
  }
  absl::Status Push(OperatorHandle, Context, int) override { return why_; }
  absl::Status DeleteOperator(OperatorHandle) override { return why_; }
  absl::Status DeleteVariable(SyncFn, Context, VarHandle) override { return why_; }
  absl::Status WaitForVar(VarHandle) override { return why_; }
  absl::Status WaitForAll() override { return why_; }
  absl::Status ClearError(VarHandle) override { return why_; }
  std::string DescribePending() override;
  EngineStats Stats() const override { return {}; }
  void StartProfiling() override {}
  absl::Status WriteTrace(const std::string&) override { return why_; }
  void Shutdown(bool) override {}
  absl::Status Shutdown(bool, absl::Duration) override { return absl::OkStatus(); }

 private:
  const absl::Status why_;
};

std::unique_ptr<Engine> NewRefusingEngine(absl::Status why);

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_REFUSING_ENGINE_H_
