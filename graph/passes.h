#ifndef RILL_GRAPH_PASSES_H_
#define RILL_GRAPH_PASSES_H_

// Analyses over a Graph: topological order and shape/type inference. The
// executor runs them at bind; they are public for tools and tests.

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rill/graph/graph.h"
#include "rill/tensor/dtype.h"
#include "rill/tensor/shape.h"

namespace rill::graph {

// The nodes the outputs depend on, each after its inputs (ties in creation
// order). InvalidArgument for an input that names no output (naming the
// node and the slot) and for a cycle (naming the nodes on it).
absl::StatusOr<std::vector<int>> TopoOrder(const Graph& g);
// Same, from the given roots instead of the graph's outputs.
absl::StatusOr<std::vector<int>> TopoOrder(const Graph& g, const std::vector<Entry>& roots);

// Shape and type of one entry; unknown until inferred.
struct EntryType {
  std::optional<Shape> shape;
  std::optional<DType> dtype;
  bool known() const { return shape.has_value() && dtype.has_value(); }
  std::string ToString() const;  // "float32[2, 3]", "?[2, 3]", "?"
};

// Entries' types per node, indexed [node][output].
using EntryTypes = std::vector<std::vector<EntryType>>;

// Infers every entry in `order` (TopoOrder). Variables take `known[name]`,
// else their declared shape/type. Partial: an op whose inputs are not all
// known leaves its outputs unknown (no error); a variable bound to a shape
// other than the declared one is InvalidArgument naming both; an op's own
// inference error is annotated with the node and its input types.
absl::StatusOr<EntryTypes> InferTypes(const Graph& g, const std::vector<int>& order,
                                      const absl::flat_hash_map<std::string, EntryType>& known);

// One step of InferTypes: infers node `id`'s outputs from its inputs'
// entries in `types` (grown to hold the node when needed), for graphs
// inferred as they are built.
absl::Status InferNodeTypes(const Graph& g, int id,
                            const absl::flat_hash_map<std::string, EntryType>& known,
                            EntryTypes& types);

}  // namespace rill::graph

#endif  // RILL_GRAPH_PASSES_H_
