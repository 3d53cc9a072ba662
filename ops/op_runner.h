#ifndef RILL_OPS_OP_RUNNER_H_
#define RILL_OPS_OP_RUNNER_H_

// Internal to ops/: one resolved op call and how the engine function runs
// it (write requests, temp space, the CPU context's stream, errors).

#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "rill/engine/engine.h"
#include "rill/ops/op.h"

namespace rill::ops {

// A stream of `executor` owned by the calling thread, for kernels that run
// inline on an engine CPU worker but call a library through a stream.
absl::StatusOr<Stream*> InlineStream(StreamExecutor* executor);

// Everything an engine function needs to run one op; built on the pushing
// thread.
struct OpCall {
  const OpDef* op = nullptr;
  KernelDef kernel;
  KernelFn accumulate = nullptr;  // The platform's "_accumulate" kernel, for kAddTo.
  std::shared_ptr<const void> params;
  absl::InlinedVector<TensorArg, 3> in;
  absl::InlinedVector<TensorArg, 2> out;
  absl::InlinedVector<OpReqType, 2> req;
  // Per output, when any is set: the output overlaps an input in a way the
  // kernel cannot write over, so it writes temp space that is copied (or
  // added) into the output after it. Empty for calls without such aliasing.
  absl::InlinedVector<bool, 2> through_temp;
  StreamExecutor* executor = nullptr;
  bool is_train = true;
};

class OpRunner {
 public:
  // Runs `call` in the engine function's context; an error names the op and
  // its inputs.
  static absl::Status Run(const OpCall& call, const engine::RunContext& rc);
  // "op 'add' (float32[2, 3], float32[3] on cpu)".
  static std::string Describe(const OpCall& call, const engine::Context& ctx);
};

}  // namespace rill::ops

#endif  // RILL_OPS_OP_RUNNER_H_
