#ifndef RILL_GRAPH_EXECUTOR_H_
#define RILL_GRAPH_EXECUTOR_H_

// Binds a Graph to tensors and runs it through the engine (MXNet's
// GraphExecutor): shape and type inference, placement with copy nodes, the
// backward graph, memory planning, then one engine function per node or per
// bulk segment.
//
//   graph::BindOptions opt;
//   opt.context = ctx;
//   RILL_ASSIGN_OR_RETURN(auto exec, graph::Executor::Bind(g, {{"x", x}, {"w", w}},
//                                                          {{"w", dw}}, opt));
//   RILL_RETURN_IF_ERROR(exec->Forward(/*is_train=*/true));
//   RILL_RETURN_IF_ERROR(exec->Backward());      // ones as the head gradients
//   RILL_ASSIGN_OR_RETURN(auto loss, exec->outputs()[0].ToHost<float>());

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rill/engine/engine.h"
#include "rill/graph/graph.h"
#include "rill/tensor/tensor.h"

namespace rill::graph {

// What Backward does with a variable's gradient (MXNet's grad_req).
enum class GradReq { kNull, kWrite, kAdd };
const char* GradReqName(GradReq req);  // "null", "write", "add"

struct BindOptions {
  // Where nodes run unless their group is mapped below.
  engine::Context context = engine::Context::Host();
  // Placement: node group -> context. Edges between contexts get copy
  // nodes (on copy streams).
  absl::flat_hash_map<std::string, engine::Context> group_contexts;
  // null: engine::Engine::Default().
  engine::Engine* engine = nullptr;
  // Per variable name. Default: kWrite for a variable with a bound
  // gradient tensor, kNull otherwise.
  absl::flat_hash_map<std::string, GradReq> grad_reqs;
  // Consecutive nodes on one context pushed as one engine function; 1: one
  // function per node. Default chosen by measurement (docs/graph.md).
  int bulk_size = 15;
  // Checking mode: every block the plan releases is filled with a canary
  // (NaN) and every node checks that each block it reads still holds the
  // entry it expects; a read after reuse fails the run naming both entries.
  bool canary = false;
  // For testing the canary mode itself: the plan releases one block a node
  // before its last reader (a planner bug the canary must catch).
  bool canary_inject_early_release = false;
  // Plan memory (in-place and reuse). Off: every entry its own buffer.
  bool plan_memory = true;
};

// What the memory planner did, for the forward and backward nodes.
struct MemoryReport {
  int64_t entries = 0;          // Planned (internal) entries.
  int64_t blocks = 0;           // Storage blocks they share.
  uint64_t planned_bytes = 0;   // Sum of the blocks' sizes.
  uint64_t naive_bytes = 0;     // Bytes if every entry had its own buffer.
  int64_t inplace = 0;          // Outputs written over an input's block.
  int64_t addto = 0;            // Gradient contributions summed with kAddTo.
  uint64_t external_bytes = 0;  // Bound tensors (arguments, gradients): not planned.
  double ratio() const {
    return naive_bytes ? static_cast<double>(planned_bytes) / naive_bytes : 1.0;
  }
  std::string ToString() const;
};

class Executor {
 public:
  // Binds `g`: `args` holds a tensor for every variable (inputs, parameters,
  // auxiliary states) by name; `grads` a gradient tensor (same shape and
  // type) for each variable whose gradient is wanted. Errors: an unbound or
  // unknown variable, a shape or type conflict (naming the node and the
  // shapes), an op without a kernel on its context, a graph error.
  static absl::StatusOr<std::unique_ptr<Executor>> Bind(
      const Graph& g, const absl::flat_hash_map<std::string, Tensor>& args,
      const absl::flat_hash_map<std::string, Tensor>& grads = {}, const BindOptions& options = {});
  ~Executor();

  // Pushes the forward nodes. is_train=false skips nothing in the plan but
  // tells ops (dropout) they run for inference.
  absl::Status Forward(bool is_train = true);
  // Pushes the backward nodes, after a Forward(true). `head_grads`: one per
  // output (its shape), or empty for ones.
  absl::Status Backward(absl::Span<const Tensor> head_grads = {});
  // The outputs, valid after Forward (read them with WaitToRead/ToHost).
  const std::vector<Tensor>& outputs() const { return outputs_; }
  // Re-binds with some variables replaced by tensors of new shapes (a new
  // batch size): re-infers and re-plans; the rest stays bound.
  absl::Status Reshape(const absl::flat_hash_map<std::string, Tensor>& args);

  const MemoryReport& memory() const;
  // The nodes in execution order with contexts, storage and write requests.
  std::string DebugString() const;
  // Forward and backward node counts, and engine functions per pass.
  int num_forward_nodes() const;
  int num_backward_nodes() const;

  struct Impl;

 private:
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::vector<Tensor> outputs_;
};

}  // namespace rill::graph

#endif  // RILL_GRAPH_EXECUTOR_H_
