#ifndef RILL_GRAPH_ONNX_ONNX_LOWERING_H_
#define RILL_GRAPH_ONNX_ONNX_LOWERING_H_

// Inside the ONNX importer: what is known about each ONNX value while
// importing (ValueState), the per-node view a converter works through
// (NodeLowering), and the converter table (onnx_ops.cc). Not a public API.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "rill/graph/graph.h"
#include "rill/graph/onnx/onnx_tensor.h"
#include "rill/graph/passes.h"
#include "rill/ops/params.h"

namespace onnx {
class NodeProto;
class AttributeProto;
}  // namespace onnx

namespace rill::graph {

// One ONNX value as the importer knows it. `entry` is invalid for a
// constant not yet read by an op (it becomes a variable on first use).
struct ValueState {
  Entry entry;
  std::optional<OnnxHostTensor> constant;
  // From the model's type information (declared or inferred): the rank and
  // dimensions (-1 where unknown), and the element type.
  std::optional<std::vector<int64_t>> dims;
  std::optional<DType> dtype;
  // A constant from an initializer gets a kParam variable, others kAux.
  bool initializer = false;
};

// The importer's state shared by all nodes. Thread-compatible.
class ImportState {
 public:
  Graph graph;
  absl::flat_hash_map<std::string, ValueState> values;
  absl::flat_hash_map<std::string, Tensor> tensors;  // Variables' bound tensors.
  absl::flat_hash_set<std::string> reserved;         // Value names that may become variables.
  engine::Context context = engine::Context::Host();
  engine::Engine* engine = nullptr;
  // What the model's tensors (initializers, Constant values) may make the
  // importer allocate; null: unbounded. Borrowed for the import.
  FileBudget* budget = nullptr;

  // Rill's own shape/type inference of the graph as it grows: entries of
  // nodes [0, inferred) are inferred where their inputs are known.
  EntryTypes types;
  int inferred = 0;

  // `base` or "base_<n>": a name no node has and no value may take.
  std::string UniqueName(std::string_view base);
  // Infers the nodes added since the last call (errors name the node).
  absl::Status InferNew();
  // The inferred type of `e`, or null when unknown.
  const EntryType* TypeOf(Entry e) const;
  // The entry of value `name`, making the variable of a constant on first
  // use.
  absl::StatusOr<Entry> Materialize(const std::string& name);
};

// What a converter sees of one ONNX node. Errors it returns are annotated
// by the importer with "node 'n' (Op, opset k)".
class NodeLowering {
 public:
  NodeLowering(ImportState& state, const onnx::NodeProto& node, int64_t opset);

  const onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }

  // --- Inputs. Optional inputs may be absent (missing or named "").
  int num_inputs() const;
  bool has_input(int i) const;
  const ValueState& info(int i) const;
  absl::StatusOr<Entry> In(int i);
  // A constant input's values; Unimplemented naming `what` when the input
  // is not known at import time.
  absl::StatusOr<std::vector<int64_t>> ConstInts(int i, std::string_view what) const;
  absl::StatusOr<std::vector<double>> ConstDoubles(int i, std::string_view what) const;
  // The input's static rank / dims (-1 for unknown dims), when known.
  std::optional<int> Rank(int i) const;
  std::optional<std::vector<int64_t>> Dims(int i) const;
  // Every dimension known.
  std::optional<std::vector<int64_t>> StaticDims(int i) const;
  std::optional<DType> InType(int i) const;

  // --- Outputs.
  int num_outputs() const;
  bool wants_output(int i) const;  // Present and named.
  std::optional<DType> OutType(int i) const;
  std::optional<std::vector<int64_t>> OutDims(int i) const;
  void SetOutput(int i, Entry e);
  void SetConstOutput(int i, OnnxHostTensor t);

  // --- Attributes.
  const onnx::AttributeProto* Attr(std::string_view name) const;
  bool HasAttr(std::string_view name) const { return Attr(name) != nullptr; }
  int64_t Int(std::string_view name, int64_t def) const;
  float Float(std::string_view name, float def) const;
  std::string String(std::string_view name, std::string def) const;
  std::vector<int64_t> Ints(std::string_view name) const;

  // --- Emitting ops: a node named after this ONNX node. Errors are kept
  // in the graph's status and surface after the converter returns.
  Entry Op(std::string_view op, std::vector<Entry> inputs, const ops::Attrs& attrs = {});
  std::vector<Entry> OpN(std::string_view op, std::vector<Entry> inputs,
                         const ops::Attrs& attrs = {});
  // A constant made an entry (an aux variable).
  absl::StatusOr<Entry> Const(OnnxHostTensor t);

  // Unimplemented("what"): annotated with the node by the importer.
  static absl::Status Unsupported(std::string_view what);

  ImportState& state() { return state_; }

 private:
  const ValueState& Value(const std::string& name) const;

  ImportState& state_;
  const onnx::NodeProto& node_;
  int64_t opset_;
};

// Attribute value text for ops::Attrs.
std::string IntsAttr(const std::vector<int64_t>& v);  // "(1, 2)"
std::string FloatAttr(double v);                      // round-trips

using ConvertFn = absl::Status (*)(NodeLowering& l);
struct Converter {
  ConvertFn fn = nullptr;
  // Element types input 0 may have (DTypeBit mask); 0: any.
  uint32_t dtypes = 0;
};
using ConverterTable = std::map<std::string, Converter, std::less<>>;
// The converter of default-domain op `op_type`, or null.
const Converter* FindConverter(std::string_view op_type);
// Every op type with a converter, sorted.
std::vector<std::string> SupportedOnnxOps();
// Add the converters of onnx_nn_ops.cc, onnx_reduce_ops.cc,
// onnx_shape_ops.cc, onnx_resize.cc and onnx_rnn.cc to `table`.
void AddNnConverters(ConverterTable& table);
void AddReduceConverters(ConverterTable& table);
void AddShapeConverters(ConverterTable& table);
void AddResizeConverters(ConverterTable& table);
void AddRnnConverters(ConverterTable& table);

// Constant folding (onnx_fold.cc). CanFold: every input of `n` is known at
// import time, none is a float initializer (weights stay parameters), and
// the sizes are bounded. FoldNode: runs the converter on the CPU and makes
// `n`'s outputs constants of `s`; false (nothing done) when a value it
// would make is over the bound or of unknown size.
bool CanFold(const ImportState& s, const onnx::NodeProto& n);
absl::StatusOr<bool> FoldNode(ImportState& s, const onnx::NodeProto& n, int64_t opset,
                              const Converter& c);

// Helpers shared by the converters (onnx_ops.cc).
// Sets output 0.
absl::Status Out(NodeLowering& l, Entry e);
// reshape to `dims` (-1: unknown; Unimplemented for more than one).
absl::StatusOr<Entry> ReshapeTo(NodeLowering& l, Entry x, const std::vector<int64_t>& dims);
// Input i's rank / static dims, or Unimplemented saying `why` they are needed.
absl::StatusOr<int> NeedRank(const NodeLowering& l, int i, std::string_view why);
absl::StatusOr<std::vector<int64_t>> NeedDims(const NodeLowering& l, int i, std::string_view why);
// Axes from input `input_since_13` from opset 13 on (-1: never), else
// from the "axes" attribute.
absl::StatusOr<std::vector<int64_t>> AxesOf(NodeLowering& l, int input_since_13);
// `axis` in [-rank, rank) made non-negative.
absl::StatusOr<int64_t> NormAxis(int64_t axis, int rank);
// Each of `axes` made non-negative; InvalidArgument naming the axes for one
// out of range or named twice.
absl::StatusOr<std::vector<int64_t>> NormAxes(const std::vector<int64_t>& axes, int rank);
// x[..., b:e, ...] on `axis` of a value of static `dims`.
Entry SliceAxis(NodeLowering& l, Entry x, const std::vector<int64_t>& dims, int axis, int64_t b,
                int64_t e);
// x of static `dims` padded by `begin`/`end` elements per axis (negative:
// cropped) in `mode` "constant" (with `value`), "reflect" or "edge":
// slices and concats, so it runs anywhere and has a gradient.
absl::StatusOr<Entry> PadEntry(NodeLowering& l, Entry x, std::vector<int64_t> dims,
                               const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                               std::string_view mode, double value, DType dtype);

}  // namespace rill::graph

#endif  // RILL_GRAPH_ONNX_ONNX_LOWERING_H_
