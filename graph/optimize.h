#ifndef RILL_GRAPH_OPTIMIZE_H_
#define RILL_GRAPH_OPTIMIZE_H_

// The inference optimizer: rewrites a graph whose constants are known (an
// imported ONNX model's initializers) into a cheaper equivalent before
// Bind, by levels as ONNX Runtime's:
//
//   none      the graph as built.
//   basic     fold_constants: a node whose inputs are all constants is
//             run once (on the CPU) and becomes a constant;
//             remove_identity: identity, dropout (inference), a reshape to
//             the same shape and a cast to the same type disappear.
//   extended  fold_conv_affine: a per-channel add, sub, mul or div by a
//             constant after a convolution (a bias, an inference BatchNorm)
//             is folded into its weight and bias; fuse_conv_residual: an add
//             of a tensor of the convolution's shape becomes the fused
//             convolution's residual input; fuse_conv_activation: relu, a
//             clip to [0, c] (ReLU6), sigmoid or tanh after it becomes its
//             activation (ops/nn/fused_conv.h: one library call, oneDNN
//             post-ops); fuse_gelu: the erf form of GELU becomes one gelu;
//             fuse_layer_norm: a LayerNorm's chain of ops becomes layer_norm.
//   all       constant_filters: every convolution with a constant weight
//             runs as fused_conv2d with a filter id, so the DNN plugin
//             converts the weight to its own (blocked) layout once and keeps
//             it, not on every call; nhwc_layout: chained ones compute in
//             NHWC, with transposes only where another op reads.
//
// Each rewrite can be turned off by name (OptimizeOptions::disabled). The
// optimized graph is an inference graph: its constants are snapshots of
// the values given (folded weights are new tensors), and the graph must
// not be bound for training.
//
//   OptimizeOptions o;
//   o.level = OptLevel::kAll;
//   RILL_ASSIGN_OR_RETURN(OptimizeReport r,
//                         OptimizeForInference(&model.graph, &model.initializers, o));
//   std::cout << r.ToString();   // "optimized 133 -> 41 nodes: fold_constants x20, ..."

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rill/graph/graph.h"
#include "rill/tensor/tensor.h"

namespace rill::graph {

enum class OptLevel { kNone = 0, kBasic = 1, kExtended = 2, kAll = 3 };
const char* OptLevelName(OptLevel level);  // "none", "basic", "extended", "all"
// "none", "basic", "extended", "all" or 0-3; InvalidArgument naming `s`.
absl::StatusOr<OptLevel> ParseOptLevel(std::string_view s);

// One rewrite: its name, the level that turns it on, what it does.
struct RewriteInfo {
  const char* name;
  OptLevel level;
  const char* what;
};
absl::Span<const RewriteInfo> Rewrites();
// InvalidArgument naming the first of `names` that is no rewrite, and the
// rewrites there are.
absl::Status CheckRewriteNames(const std::vector<std::string>& names);

struct OptimizeOptions {
  OptLevel level = OptLevel::kAll;
  // Where the graph will run (and its engine; null: the default): fusions
  // whose op has no kernel there are not made (OpenCL has no fused_conv2d).
  engine::Context context = engine::Context::Cpu();
  engine::Engine* engine = nullptr;
  // Rewrites turned off by name; an unknown name is InvalidArgument.
  std::vector<std::string> disabled;
  // fold_constants makes no constant larger than this.
  int64_t max_fold_bytes = int64_t{64} << 20;
};

struct OptimizeReport {
  int nodes_before = 0;  // Op nodes the outputs depend on.
  int nodes_after = 0;
  // Per rewrite that fired: how many times, in Rewrites() order.
  std::vector<std::pair<std::string, int>> applied;
  // "optimized 133 -> 41 op nodes (level all): fold_constants x20, ..."
  std::string ToString() const;
};

// Rewrites `graph` at `options.level`. `constants` holds the values of the
// variables that are constants (parameters and auxiliary states by name;
// others stay variables); on return it holds exactly the constants the
// optimized graph reads (new ones for folded values, on the context of the
// values they came from). Errors: InvalidArgument for a graph that does not
// check (its status, a cycle, failed type inference) or a bad option.
absl::StatusOr<OptimizeReport> OptimizeForInference(
    Graph* graph, absl::flat_hash_map<std::string, Tensor>* constants,
    const OptimizeOptions& options = {});

}  // namespace rill::graph

#endif  // RILL_GRAPH_OPTIMIZE_H_
