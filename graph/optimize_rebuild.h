#ifndef RILL_GRAPH_OPTIMIZE_REBUILD_H_
#define RILL_GRAPH_OPTIMIZE_REBUILD_H_

// rill:internal -- not installed: the optimizer's graph copier.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "rill/graph/graph.h"
#include "rill/graph/passes.h"
#include "rill/tensor/tensor.h"

namespace rill::graph::internal {

// One optimizer pass copies the old graph into a new one node by node, in
// topological order: a node is copied (its inputs mapped), replaced by new
// nodes, or dropped with its outputs mapped to entries already made.
// Variables are copied when first read, so what no node reads disappears.
class Rebuild {
 public:
  Rebuild(const Graph& in, const absl::flat_hash_map<std::string, Tensor>& constants);

  const Graph& in() const { return in_; }
  Graph& out() { return out_; }
  const std::vector<int>& order() const { return order_; }
  const EntryTypes& types() const { return types_; }
  const EntryType& type(Entry old) const { return types_[old.node][old.index]; }
  // Readers of each old entry, graph outputs counted.
  int consumers(Entry old) const;

  // Called by Map for an entry not mapped yet; returns the new entry for
  // `old` when the pass holds one back (a pending fused convolution), after
  // Set(old, it).
  std::function<std::optional<Entry>(Entry)> hook;

  // The new graph's entry holding old entry `old`'s value.
  Entry Map(Entry old);
  // Old entry `old` is `now` in the new graph.
  void Set(Entry old, Entry now) { map_[old] = now; }
  // Copies node `id` with its inputs mapped; returns its first output.
  Entry Copy(int id);
  // The value of `old` when it is a constant (a constant variable, or one
  // this pass made), else nullopt.
  std::optional<Tensor> ConstOf(Entry old) const;
  // A new constant variable named after `hint` (made unique).
  Entry AddConst(const std::string& hint, Tensor value);
  // Old entry `old` is the constant `value` (a folded node's output).
  void SetConst(Entry old, const std::string& hint, Tensor value);
  // The new graph, with the old outputs mapped, and its constants.
  absl::StatusOr<Graph> Finish(absl::flat_hash_map<std::string, Tensor>* constants);
  // A name used by neither graph, from `hint`.
  std::string UniqueName(const std::string& hint);

 private:
  const Graph& in_;
  const absl::flat_hash_map<std::string, Tensor>& constants_;
  Graph out_;
  std::vector<int> order_;
  EntryTypes types_;
  absl::flat_hash_map<Entry, int> consumers_;
  absl::flat_hash_map<Entry, Entry> map_;
  absl::flat_hash_map<Entry, Tensor> made_;  // Old entries folded into constants.
  absl::flat_hash_map<Entry, std::string> made_names_;
  absl::flat_hash_map<std::string, Tensor> out_constants_;
  absl::Status status_;

 public:
  // Set by the constructor: InvalidArgument for a graph that does not check.
  const absl::Status& status() const { return status_; }
};

// What a pass knows of the run: the options, the rewrites on, the counts.
struct PassContext {
  int64_t max_fold_bytes = 0;
  bool fused_conv_runs = false;              // fused_conv2d has a kernel where the graph runs.
  absl::flat_hash_map<std::string, int> on;  // Enabled rewrite -> times applied.
  bool On(const std::string& rewrite) const { return on.contains(rewrite); }
  void Count(const std::string& rewrite, int n = 1) { on[rewrite] += n; }
};

// The passes, each one walk of a Rebuild (optimize.cc, optimize_conv.cc).
// fold_constants, remove_identity.
absl::Status FoldAndClean(Rebuild& r, PassContext& pc);
// fold_conv_affine, fuse_conv_residual, fuse_conv_activation, constant_filters.
absl::Status FuseConvolutions(Rebuild& r, PassContext& pc);
// fuse_gelu, fuse_layer_norm.
absl::Status FusePatterns(Rebuild& r, PassContext& pc);

// A LayerNorm found by LayerNormOf (optimize_norm.cc): old entries.
struct LayerNormMatch {
  Entry x, gamma, beta;
  int64_t axis = -1;
  double eps = 0;
};
// The LayerNorm whose last node makes old entry `z`, if it is one.
std::optional<LayerNormMatch> LayerNormOf(const Rebuild& r, Entry z);
// nhwc_layout.
absl::Status ToNhwc(Rebuild& r, PassContext& pc);

// The scalar value of old entry `e` when it is a constant of one element.
std::optional<double> ScalarConst(const Rebuild& r, Entry e);
// The op name of old entry `e`'s node ("" for a variable).
const std::string& OpOf(const Rebuild& r, Entry e);
// The inputs of old entry `e`'s node when it is `op` with two inputs.
std::optional<std::pair<Entry, Entry>> Binary(const Rebuild& r, Entry e, const char* op);
// The input of old entry `e`'s node when it is `op` with one input.
std::optional<Entry> Unary(const Rebuild& r, Entry e, const char* op);
// The scalar of a *_scalar op's node (its ScalarParams).
double ScalarOperand(const Node& node);

}  // namespace rill::graph::internal

#endif  // RILL_GRAPH_OPTIMIZE_REBUILD_H_
