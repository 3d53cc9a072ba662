#ifndef RILL_GRAPH_ONNX_ONNX_EXPORT_OPS_H_
#define RILL_GRAPH_ONNX_ONNX_EXPORT_OPS_H_

// Inside the ONNX exporter: the state shared by all nodes (ExportState),
// what one op exporter sees of its Rill node (NodeExport), and the table
// of op exporters (onnx_export_ops.cc). Not a public API.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "rill/graph/graph.h"
#include "rill/graph/passes.h"
#include "rill/tensor/dtype.h"

namespace onnx {
class GraphProto;
class NodeProto;
}  // namespace onnx

namespace rill::graph {

// The ONNX element type (TensorProto::DataType) of `dtype`.
int32_t OnnxTypeOf(DType dtype);

// What the exporter knows while writing one graph. Thread-compatible.
struct ExportState {
  const Graph* graph = nullptr;
  EntryTypes types;
  onnx::GraphProto* proto = nullptr;
  // The ONNX value of each entry a node or an output reads.
  absl::flat_hash_map<Entry, std::string> values;
  absl::flat_hash_set<std::string> value_names, node_names;

  // `base` or "base_<n>", not yet taken; takes it.
  std::string FreshValue(std::string_view base);
  std::string FreshNode(std::string_view base);
};

// What an op exporter sees of one Rill node: its inputs' ONNX values and
// types, its parameters, and helpers that emit ONNX nodes and constants.
// Errors it returns are annotated with the node by the exporter.
class NodeExport {
 public:
  NodeExport(ExportState& state, int node) : state_(state), id_(node) {}

  const Node& node() const { return state_.graph->node(id_); }
  int num_inputs() const { return static_cast<int>(node().inputs.size()); }
  // Input i's ONNX value and inferred type (every type is known: the
  // exporter refuses variables without a shape).
  const std::string& In(int i) const { return state_.values.at(node().inputs[i]); }
  const EntryType& InType(int i) const;
  int InRank(int i) const { return InType(i).shape->rank(); }
  DType InDType(int i) const { return *InType(i).dtype; }
  const EntryType& OutType(int i) const;
  // Whether output i is read (by a node or as a graph output), and its value.
  bool Used(int i) const { return state_.values.contains(Entry{id_, i}); }
  const std::string& Out(int i) const { return state_.values.at(Entry{id_, i}); }
  // The node's parsed parameters (the defaults when it has none).
  template <typename P>
  const P& Params() const {
    static const P* const kDefault = new P{};
    return node().params ? *static_cast<const P*>(node().params.get()) : *kDefault;
  }

  // One ONNX node; the first takes the Rill node's name. Returns it, to add
  // attributes to.
  onnx::NodeProto* Emit(std::string_view op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs);
  // One node writing a fresh intermediate value; returns the value.
  std::string Tmp(std::string_view op_type, const std::vector<std::string>& inputs,
                  onnx::NodeProto** made = nullptr);
  // An int64 [n] initializer (shapes, axes, bounds); returns its name.
  std::string Int64s(const std::vector<int64_t>& v, std::string_view what);
  // A scalar of `dtype` holding `v`, made by a Constant node.
  std::string Scalar(double v, DType dtype);

  static absl::Status Unsupported(std::string_view what) {
    return absl::UnimplementedError(std::string(what));
  }

 private:
  ExportState& state_;
  int id_;
  int emitted_ = 0;
};

// Attributes.
void AddIntAttr(onnx::NodeProto* n, const std::string& name, int64_t v);
void AddFloatAttr(onnx::NodeProto* n, const std::string& name, float v);
void AddIntsAttr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v);

using ExportFn = absl::Status (*)(NodeExport& x);
// The exporter of Rill op `op`, or null when it has no ONNX mapping.
ExportFn FindExporter(std::string_view op);
// Every op with an exporter, sorted.
std::vector<std::string> ExportableOps();

}  // namespace rill::graph

#endif  // RILL_GRAPH_ONNX_ONNX_EXPORT_OPS_H_
