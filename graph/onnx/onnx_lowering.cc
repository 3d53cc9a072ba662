// The importer's per-value state and the per-node view converters work
// through (onnx_lowering.h).

#include "rill/graph/onnx/onnx_lowering.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"

namespace rill::graph {

// ---------------------------------------------------------------- ImportState

std::string ImportState::UniqueName(std::string_view base) {
  std::string b = base.empty() ? std::string("node") : std::string(base);
  std::string name = b;
  for (int k = 1; graph.Find(name) >= 0 || reserved.contains(name); ++k)
    name = absl::StrCat(b, "_", k);
  return name;
}

absl::Status ImportState::InferNew() {
  static const auto* const kNone = new absl::flat_hash_map<std::string, EntryType>;
  for (; inferred < graph.num_nodes(); ++inferred) {
    RILL_RETURN_IF_ERROR(InferNodeTypes(graph, inferred, *kNone, types));
  }
  return absl::OkStatus();
}

const EntryType* ImportState::TypeOf(Entry e) const {
  if (!e.valid() || e.node >= static_cast<int>(types.size())) return nullptr;
  const auto& outs = types[e.node];
  if (e.index >= static_cast<int>(outs.size()) || !outs[e.index].known()) return nullptr;
  return &outs[e.index];
}

absl::StatusOr<Entry> ImportState::Materialize(const std::string& name) {
  auto it = values.find(name);
  if (it == values.end()) return absl::InvalidArgumentError(absl::StrCat("no value '", name, "'"));
  ValueState& v = it->second;
  if (v.entry.valid()) return v.entry;
  if (!v.constant) return absl::InternalError(absl::StrCat("value '", name, "' has no entry"));
  RILL_ASSIGN_OR_RETURN(Tensor t, TensorFromHost(*v.constant, context, engine));
  v.entry = graph.Variable(name, v.initializer ? VarKind::kParam : VarKind::kAux, v.constant->shape,
                           v.constant->dtype);
  RILL_RETURN_IF_ERROR(graph.status());
  tensors[name] = std::move(t);
  return v.entry;
}

// --------------------------------------------------------------- NodeLowering

NodeLowering::NodeLowering(ImportState& state, const onnx::NodeProto& node, int64_t opset)
    : state_(state), node_(node), opset_(opset) {}

int NodeLowering::num_inputs() const { return node_.input_size(); }
bool NodeLowering::has_input(int i) const {
  return i < node_.input_size() && !node_.input(i).empty();
}

const ValueState& NodeLowering::Value(const std::string& name) const {
  static const ValueState* const kNone = new ValueState;
  auto it = state_.values.find(name);
  return it == state_.values.end() ? *kNone : it->second;
}

const ValueState& NodeLowering::info(int i) const {
  static const ValueState* const kNone = new ValueState;
  return has_input(i) ? Value(node_.input(i)) : *kNone;
}

absl::StatusOr<Entry> NodeLowering::In(int i) {
  if (!has_input(i)) return absl::InvalidArgumentError(absl::StrCat("input ", i, " is missing"));
  return state_.Materialize(node_.input(i));
}

absl::StatusOr<std::vector<int64_t>> NodeLowering::ConstInts(int i, std::string_view what) const {
  const ValueState& v = info(i);
  if (!v.constant) {
    return Unsupported(
        absl::StrCat(AsAbsl(what), " (input ", i, ") must be an initializer or a Constant"));
  }
  return v.constant->Int64s();
}

absl::StatusOr<std::vector<double>> NodeLowering::ConstDoubles(int i, std::string_view what) const {
  const ValueState& v = info(i);
  if (!v.constant) {
    return Unsupported(
        absl::StrCat(AsAbsl(what), " (input ", i, ") must be an initializer or a Constant"));
  }
  return v.constant->Doubles();
}

std::optional<std::vector<int64_t>> NodeLowering::Dims(int i) const {
  const ValueState& v = info(i);
  if (v.constant) {
    return std::vector<int64_t>(v.constant->shape.span().begin(), v.constant->shape.span().end());
  }
  // Rill's inference knows every dimension where the inputs' are known;
  // ONNX's may stop at a shape computed in the graph.
  if (const EntryType* t = state_.TypeOf(v.entry)) {
    return std::vector<int64_t>(t->shape->span().begin(), t->shape->span().end());
  }
  return v.dims;
}

std::optional<DType> NodeLowering::InType(int i) const {
  const ValueState& v = info(i);
  if (v.dtype) return v.dtype;
  if (const EntryType* t = state_.TypeOf(v.entry)) return t->dtype;
  return std::nullopt;
}

std::optional<int> NodeLowering::Rank(int i) const {
  auto d = Dims(i);
  if (!d) return std::nullopt;
  return static_cast<int>(d->size());
}

std::optional<std::vector<int64_t>> NodeLowering::StaticDims(int i) const {
  auto d = Dims(i);
  if (!d) return std::nullopt;
  for (int64_t x : *d) {
    if (x < 0) return std::nullopt;
  }
  return d;
}

int NodeLowering::num_outputs() const { return node_.output_size(); }
bool NodeLowering::wants_output(int i) const {
  return i < node_.output_size() && !node_.output(i).empty();
}
std::optional<DType> NodeLowering::OutType(int i) const {
  return wants_output(i) ? Value(node_.output(i)).dtype : std::nullopt;
}
std::optional<std::vector<int64_t>> NodeLowering::OutDims(int i) const {
  return wants_output(i) ? Value(node_.output(i)).dims : std::nullopt;
}

void NodeLowering::SetOutput(int i, Entry e) {
  if (!wants_output(i)) return;
  state_.values[node_.output(i)].entry = e;
}

void NodeLowering::SetConstOutput(int i, OnnxHostTensor t) {
  if (!wants_output(i)) return;
  ValueState& v = state_.values[node_.output(i)];
  v.dims = std::vector<int64_t>(t.shape.span().begin(), t.shape.span().end());
  v.dtype = t.dtype;
  v.constant = std::move(t);
}

const onnx::AttributeProto* NodeLowering::Attr(std::string_view name) const {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t NodeLowering::Int(std::string_view name, int64_t def) const {
  const onnx::AttributeProto* a = Attr(name);
  return a ? a->i() : def;
}
float NodeLowering::Float(std::string_view name, float def) const {
  const onnx::AttributeProto* a = Attr(name);
  return a ? a->f() : def;
}
std::string NodeLowering::String(std::string_view name, std::string def) const {
  const onnx::AttributeProto* a = Attr(name);
  return a ? a->s() : def;
}
std::vector<int64_t> NodeLowering::Ints(std::string_view name) const {
  const onnx::AttributeProto* a = Attr(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

std::vector<Entry> NodeLowering::OpN(std::string_view op, std::vector<Entry> inputs,
                                     const ops::Attrs& attrs) {
  const std::string base = node_.name().empty()
                               ? (node_.output_size() ? node_.output(0) : node_.op_type())
                               : node_.name();
  return state_.graph.Op(op, std::move(inputs), attrs, state_.UniqueName(base));
}

Entry NodeLowering::Op(std::string_view op, std::vector<Entry> inputs, const ops::Attrs& attrs) {
  std::vector<Entry> out = OpN(op, std::move(inputs), attrs);
  return out.empty() ? Entry{} : out[0];
}

absl::StatusOr<Entry> NodeLowering::Const(OnnxHostTensor t) {
  const std::string base = node_.name().empty()
                               ? (node_.output_size() ? node_.output(0) : node_.op_type())
                               : node_.name();
  const std::string name = state_.UniqueName(absl::StrCat(base, "_const"));
  RILL_ASSIGN_OR_RETURN(Tensor tensor, TensorFromHost(t, state_.context, state_.engine));
  Entry e = state_.graph.Aux(name, t.shape, t.dtype);
  RILL_RETURN_IF_ERROR(state_.graph.status());
  state_.tensors[name] = std::move(tensor);
  return e;
}

absl::Status NodeLowering::Unsupported(std::string_view what) {
  return absl::UnimplementedError(AsAbsl(what));
}

std::string IntsAttr(const std::vector<int64_t>& v) {
  return absl::StrCat("(", absl::StrJoin(v, ", "), ")");
}
std::string FloatAttr(double v) { return absl::StrFormat("%.17g", v); }

}  // namespace rill::graph
