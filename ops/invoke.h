#ifndef RILL_OPS_INVOKE_H_
#define RILL_OPS_INVOKE_H_

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rill/ops/op.h"
#include "rill/ops/params.h"
#include "rill/tensor/tensor.h"

namespace rill::ops {

struct InvokeOptions {
  // Per output; empty: kWriteTo. An output may share storage with inputs:
  // where it covers exactly the bytes of an input that the op declares it
  // may overwrite (OpDef::set_inplace) the kernel writes in place
  // (kWriteInplace); any other overlap with an input is computed into temp
  // space and then copied (or added, kAddTo) into the output, so the result
  // is always as if the inputs were read first. Outputs that overlap each
  // other, or a value outside OpReqType, are InvalidArgument.
  std::vector<OpReqType> reqs;
  // Without a kernel for the inputs' device, run the op on the CPU context
  // with copies (logged once per op and platform, counted) even where the
  // platform declares no fallback (Platform::OpFallback). Also
  // RILL_OPS_HOST_FALLBACK=1.
  bool host_fallback = false;
  bool is_train = true;
  int priority = 0;
  // For ops without inputs (fill, arange, random): where the outputs go and
  // the engine (null: engine::Engine::Default()). Ignored otherwise.
  std::optional<engine::Context> context;
  engine::Engine* engine = nullptr;
};

// Runs `op` imperatively (MXNet's Imperative::Invoke): checks the inputs
// (count, types, one context and engine: copies are explicit), infers the
// outputs' shapes and types, allocates them (or checks `outputs`, written
// per options.reqs), and pushes one engine function on the inputs' context
// that reads the inputs' vars and writes the outputs' (and the random
// generator's, for kRandom ops). Returns the outputs at once; their
// contents are ready after WaitToRead. Errors in the arguments are returned
// here; an error while the op runs poisons the outputs with a message that
// names the op and its inputs.
//
//   RILL_ASSIGN_OR_RETURN(auto out, Invoke("sum", {x}, {{"axes", "(1)"}}));
absl::StatusOr<std::vector<Tensor>> Invoke(const OpDef& op, absl::Span<const Tensor> inputs,
                                           std::shared_ptr<const void> params,
                                           absl::Span<const Tensor> outputs = {},
                                           const InvokeOptions& options = {});
// Invoke with every output given (written per options.reqs), returning
// only the status: what ops::AddTo and the graph-free hot paths use, with
// no vector of outputs made.
absl::Status InvokeInto(const OpDef& op, absl::Span<const Tensor> inputs,
                        std::shared_ptr<const void> params, absl::Span<const Tensor> outputs,
                        const InvokeOptions& options = {});
// By name with string attributes (parsed by the op's ParamSchema).
absl::StatusOr<std::vector<Tensor>> Invoke(std::string_view op, absl::Span<const Tensor> inputs,
                                           const Attrs& attrs = {},
                                           absl::Span<const Tensor> outputs = {},
                                           const InvokeOptions& options = {});

// Seeds the random generator of `ctx`'s device, in push order with the
// random ops on that device: the same seed gives the same numbers on host,
// OpenCL and CUDA (Philox). A device without an RNG plugin whose platform
// declares a fallback (Platform::OpFallback) seeds the fallback's.
absl::Status Seed(engine::Context ctx, uint64_t seed, engine::Engine* engine = nullptr);

// Where `op`, which has no kernel on `ctx`'s device, runs instead: the
// platform's declared fallback (Platform::OpFallback), else the CPU context
// when `host_fallback` or RILL_OPS_HOST_FALLBACK=1 asks; nullopt for none.
// `ctx` is looked up among `engine`'s platforms (null: the default's).
// InvalidArgument when the declared fallback does not parse.
absl::StatusOr<std::optional<engine::Context>> FallbackFor(engine::Context ctx, bool host_fallback,
                                                           engine::Engine* engine = nullptr);
// Op calls run on a fallback device so far in this process (Invoke's and
// the graph executor's nodes placed there at Bind).
uint64_t FallbackCount();
// Records `n` calls run on a fallback device, and (with `log`) logs `op`
// once per device it falls back from.
void NoteFallback(const OpDef& op, const engine::Context& from, const engine::Context& to,
                  uint64_t n = 1, bool log = true);

// Looks up a built-in op; aborts on a missing name (for ops:: wrappers).
const OpDef& BuiltinOp(std::string_view name);

}  // namespace rill::ops

#endif  // RILL_OPS_INVOKE_H_
