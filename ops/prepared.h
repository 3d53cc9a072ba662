#ifndef RILL_OPS_PREPARED_H_
#define RILL_OPS_PREPARED_H_

// Op calls resolved once and run many times, and tracing op calls instead
// of running them. The graph executor (graph/) uses both: a PreparedOp per
// node made at bind time and run from its engine functions, and an OpTrace
// around the ops' gradient functions to turn them into backward nodes.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rill/engine/engine.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op.h"
#include "rill/tensor/tensor.h"

namespace rill::ops {

struct OpCall;
class OpTrace;

// One op call with everything fixed: kernel, parameters, the inputs' and
// outputs' storage, write requests. Run() does the work of the engine
// function Invoke would push; the caller pushes it (alone or with others in
// one engine function) reading reads() and writing writes(). The tensors
// must stay alive while the call can run. Copyable (shared, immutable).
class PreparedOp {
 public:
  PreparedOp() = default;

  // Checks and resolves as Invoke does with caller outputs (every output
  // given, options.reqs honoured); no host fallback. Allocates the storage
  // of inputs and outputs.
  static absl::StatusOr<PreparedOp> Prepare(const OpDef& op, absl::Span<const Tensor> inputs,
                                            std::shared_ptr<const void> params,
                                            absl::Span<const Tensor> outputs,
                                            const InvokeOptions& options = {});

  bool valid() const { return call_ != nullptr; }
  const OpDef& op() const;
  engine::Context context() const { return ctx_; }
  engine::Engine* engine() const { return engine_; }
  absl::Span<const engine::VarHandle> reads() const { return reads_; }
  absl::Span<const engine::VarHandle> writes() const { return writes_; }
  // Every output is kNullOp: Run does nothing.
  bool noop() const { return noop_; }

  // Runs the call from inside an engine function on context(); an error
  // names the op and its inputs.
  absl::Status Run(const engine::RunContext& rc) const;
  // Pushes one engine function running it, named `name` (the op's name if
  // empty) in the engine's trace. A small call on the CPU context whose
  // vars are free runs on the calling thread (Engine::PushSyncInline).
  absl::Status Push(int priority = 0, std::string_view name = {}) const;

 private:
  friend absl::StatusOr<std::vector<Tensor>> Invoke(const OpDef&, absl::Span<const Tensor>,
                                                    std::shared_ptr<const void>,
                                                    absl::Span<const Tensor>, const InvokeOptions&);
  friend absl::Status InvokeInto(const OpDef&, absl::Span<const Tensor>,
                                 std::shared_ptr<const void>, absl::Span<const Tensor>,
                                 const InvokeOptions&);
  // Shared by Invoke and Prepare (ops/invoke.cc). `result` gets the new
  // outputs (none given) and may be null when the caller gives them.
  static absl::Status Resolve(const OpDef& op, absl::Span<const Tensor> inputs,
                              std::shared_ptr<const void> params, absl::Span<const Tensor> outputs,
                              const InvokeOptions& options, std::vector<Tensor>* result,
                              PreparedOp* prep, bool* no_kernel, OpTrace* trace);
  std::shared_ptr<const OpCall> call_;
  engine::Context ctx_;
  engine::Engine* engine_ = nullptr;
  absl::InlinedVector<engine::VarHandle, 4> reads_;
  absl::InlinedVector<engine::VarHandle, 3> writes_;
  bool noop_ = false;
  // A CPU-context call small enough to run on the pushing thread when its
  // vars are free (Engine::PushSyncInline).
  bool run_here_ = false;
};

// While an OpTrace is alive, Invoke on this thread records each call and
// returns outputs that have shape, type and context but no storage and are
// never computed (inputs may be such tensors too). Used to turn gradient
// functions, written with imperative ops, into graph nodes. Calls with
// caller outputs are refused (Unimplemented). Not nestable.
class OpTrace {
 public:
  struct Call {
    const OpDef* op = nullptr;
    std::shared_ptr<const void> params;
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
  };

  OpTrace();
  ~OpTrace();
  OpTrace(const OpTrace&) = delete;
  OpTrace& operator=(const OpTrace&) = delete;

  // The trace active on this thread, or null.
  static OpTrace* Current();
  const std::vector<Call>& calls() const { return calls_; }
  std::vector<Call> TakeCalls() { return std::move(calls_); }
  void Record(Call call) { calls_.push_back(std::move(call)); }

 private:
  OpTrace* previous_ = nullptr;
  std::vector<Call> calls_;
};

}  // namespace rill::ops

#endif  // RILL_OPS_PREPARED_H_
