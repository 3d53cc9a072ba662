#ifndef RILL_GRAPH_AUTODIFF_H_
#define RILL_GRAPH_AUTODIFF_H_

// The backward graph (nnvm's Gradient pass). Each op's gradient function is
// written with imperative ops (ops/op.h GradientFn); it is run once under an
// ops::OpTrace over shape-only tensors, and the calls it makes become
// backward nodes. Contributions to one gradient are summed by a
// `_grad_sum` node, which the memory planner turns into kAddTo writes.

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rill/graph/graph.h"
#include "rill/graph/passes.h"

namespace rill::graph {

// Pseudo-ops the executor runs itself (not in the op registry).
const ops::OpDef& GradSumOp();  // `_grad_sum`: the sum of its inputs.
const ops::OpDef& CopyOp();     // `_copy`: its input copied to another context.

struct BackwardGraph {
  // The forward nodes (same ids as the input graph), then the backward ones.
  Graph graph;
  // One variable per forward output, "_head_grad<i>", shaped as the output.
  std::vector<Entry> head_grads;
  // Per requested variable: the `_grad_sum` node's output holding its gradient.
  absl::flat_hash_map<std::string, Entry> var_grads;
};

// Appends the backward nodes of `fwd` for the gradients of the variables in
// `wrt` (by name) and returns the whole. `types` are fwd's inferred entry
// types (every entry the backward pass touches must be known). Backward
// nodes take their forward node's group. Unimplemented for an op on the
// path that has no gradient function, naming the node.
absl::StatusOr<BackwardGraph> BuildBackward(const Graph& fwd, const std::vector<int>& order,
                                            const EntryTypes& types,
                                            const std::vector<std::string>& wrt);

}  // namespace rill::graph

#endif  // RILL_GRAPH_AUTODIFF_H_
