#ifndef RILL_GRAPH_GRAPH_H_
#define RILL_GRAPH_GRAPH_H_

// A static graph of op nodes over named variables (MXNet's Symbol, nnvm's
// Graph): built in C++ or imported from ONNX (graph/onnx_import.h), then
// bound and run by graph::Executor (graph/executor.h).
//
//   graph::Graph g;
//   graph::Entry x = g.Input("x");
//   graph::Entry w = g.Param("w"), b = g.Param("b");
//   graph::Entry h = g.Op1("fully_connected", {x, w, b}, {}, "fc1");
//   g.AddOutput(g.Op1("relu", {h}, {}, "relu1"));
//   RILL_RETURN_IF_ERROR(g.status());
//
// Builder calls never fail on the spot: the first error (an unknown op,
// attributes its schema rejects, a wrong number of inputs, an entry that
// names no output) is kept in status(), later calls become no-ops returning
// invalid entries, and Bind refuses a graph whose status is not OK. So a
// network is written as straight-line code and checked once.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "rill/ops/op.h"
#include "rill/ops/params.h"
#include "rill/tensor/dtype.h"
#include "rill/tensor/shape.h"

namespace rill::graph {

// One output of one node.
struct Entry {
  int node = -1;
  int index = 0;
  bool valid() const { return node >= 0; }
  friend bool operator==(const Entry& a, const Entry& b) {
    return a.node == b.node && a.index == b.index;
  }
  template <typename H>
  friend H AbslHashValue(H h, const Entry& e) {
    return H::combine(std::move(h), e.node, e.index);
  }
};

// What a variable is: a graph input (data, labels), a learned parameter
// (gets a gradient by default), or an auxiliary state (bound like an input,
// never differentiated).
enum class VarKind { kInput, kParam, kAux };
const char* VarKindName(VarKind kind);  // "input", "param", "aux"

struct Node {
  std::string name;
  // The op; null for a variable.
  const ops::OpDef* op = nullptr;
  // Attributes as given, and as the op's ParamSchema parsed them.
  ops::Attrs attrs;
  std::shared_ptr<const void> params;
  std::vector<Entry> inputs;
  // Placement group: BindOptions::group_contexts maps it to a context
  // ("" is the default context).
  std::string group;
  // For variables: the kind, and a shape and type if declared (Bind takes
  // them from the bound tensors).
  VarKind kind = VarKind::kInput;
  std::optional<Shape> shape;
  std::optional<DType> dtype;

  bool is_variable() const { return op == nullptr; }
  int num_outputs() const { return op == nullptr ? 1 : op->num_outputs(); }
};

class Graph {
 public:
  Graph() = default;

  // --- Variables. Names are unique among all nodes.
  Entry Input(std::string name, std::optional<Shape> shape = std::nullopt,
              std::optional<DType> dtype = std::nullopt);
  Entry Param(std::string name, std::optional<Shape> shape = std::nullopt,
              std::optional<DType> dtype = std::nullopt);
  Entry Aux(std::string name, std::optional<Shape> shape = std::nullopt,
            std::optional<DType> dtype = std::nullopt);
  Entry Variable(std::string name, VarKind kind, std::optional<Shape> shape = std::nullopt,
                 std::optional<DType> dtype = std::nullopt);

  // --- Op nodes. `name` empty: "<op><n>". Returns every output.
  std::vector<Entry> Op(std::string_view op, std::vector<Entry> inputs,
                        const ops::Attrs& attrs = {}, std::string name = "",
                        std::string group = "");
  // The first output.
  Entry Op1(std::string_view op, std::vector<Entry> inputs, const ops::Attrs& attrs = {},
            std::string name = "", std::string group = "");

  // An op node from a definition and already parsed parameters (for passes
  // and importers; `op` need not be in the registry and must outlive the
  // graph). `name` must be unique.
  std::vector<Entry> OpParsed(const ops::OpDef& op, std::shared_ptr<const void> params,
                              std::vector<Entry> inputs, std::string name, std::string group = "");

  // --- Outputs, in order; the name defaults to the node's ("fc1" or
  // "bn:1" for a second output).
  void AddOutput(Entry e, std::string name = "");

  // --- Composition: copies `sub`'s nodes into this graph with names
  // prefixed by `prefix`. Each variable of `sub` named in `bind` is replaced
  // by that entry of this graph; the others become variables of this graph
  // (prefixed too). Returns `sub`'s outputs as entries of this graph. An
  // unknown name in `bind` is an error.
  std::vector<Entry> Compose(const Graph& sub, const absl::flat_hash_map<std::string, Entry>& bind,
                             std::string_view prefix);

  // Rewires input `slot` of node `node` (importers resolve forward
  // references this way; it can make a cycle, which the passes report).
  void SetInput(int node, int slot, Entry e);
  // Records `error` as the graph's error if it has none (for importers).
  void Fail(absl::Status error);

  const absl::Status& status() const { return status_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int id) const { return nodes_[id]; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const std::vector<Entry>& outputs() const { return outputs_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  // Node id of the node called `name`, or -1.
  int Find(std::string_view name) const;
  // Variable node ids of `kind`, in creation order.
  std::vector<int> Variables(VarKind kind) const;
  // "node 'fc1' (fully_connected)" or "variable 'x'".
  std::string Describe(int node) const;
  // One line per node: "fc1 = fully_connected(x, w, b) {num_hidden=10}".
  std::string ToString() const;

 private:
  bool CheckEntry(const Entry& e, std::string_view user);
  int AddNode(Node n);

  std::vector<Node> nodes_;
  absl::flat_hash_map<std::string, int> by_name_;
  std::vector<Entry> outputs_;
  std::vector<std::string> output_names_;
  absl::flat_hash_map<std::string, int> auto_names_;
  absl::Status status_;
};

}  // namespace rill::graph

#endif  // RILL_GRAPH_GRAPH_H_
