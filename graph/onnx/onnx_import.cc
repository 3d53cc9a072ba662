#include "rill/graph/onnx/onnx_import.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rill/base/checked_math.h"
#include "rill/base/status_macros.h"
#include "rill/base/untrusted_file.h"
#include "rill/graph/onnx/onnx_lowering.h"
#include "rill/graph/onnx/onnx_validate.h"
#include "rill/ops/op_names.h"

namespace rill::graph {

// ------------------------------------------------------------------- Importer

namespace {

std::string DescribeNode(const onnx::NodeProto& n, int index, int64_t opset) {
  const std::string name =
      n.name().empty() ? absl::StrCat("#", index) : absl::StrCat("'", n.name(), "'");
  const std::string domain =
      n.domain().empty() || n.domain() == "ai.onnx" ? "" : absl::StrCat(n.domain(), ".");
  return absl::StrCat("node ", name, " (", domain, n.op_type(), ", opset ", opset, ")");
}

const char* ValueKind(const onnx::TypeProto& t) {
  switch (t.value_case()) {
    case onnx::TypeProto::kTensorType:
      return "a tensor";
    case onnx::TypeProto::kSequenceType:
      return "a sequence";
    case onnx::TypeProto::kMapType:
      return "a map";
    case onnx::TypeProto::kOptionalType:
      return "an optional";
    case onnx::TypeProto::kSparseTensorType:
      return "a sparse tensor";
    default:
      return "untyped";
  }
}

// Records what the model's type information says about a value.
void NoteType(const onnx::ValueInfoProto& vi, ImportState& s) {
  if (!vi.type().has_tensor_type()) return;
  const onnx::TypeProto::Tensor& tt = vi.type().tensor_type();
  ValueState& v = s.values[vi.name()];
  if (tt.elem_type() != 0) {
    absl::StatusOr<DType> d = DTypeFromOnnx(tt.elem_type());
    if (d.ok()) v.dtype = *d;
  }
  if (tt.has_shape()) {
    // Unknown (-1) where symbolic or negative; no dims at all when the
    // known ones (declared or inferred by libonnx) overflow.
    std::vector<int64_t> dims;
    CheckedInt<int64_t> count = 1;
    for (const auto& d : tt.shape().dim()) {
      dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
      if (dims.back() >= 0) count *= dims.back();
    }
    if (count.ok()) v.dims = std::move(dims);
  }
}

// The nodes in an order where each node's inputs come first; InvalidArgument
// naming the node and the value for an input that nothing defines, or a
// cycle.
absl::StatusOr<std::vector<int>> SortNodes(const onnx::GraphProto& g, int64_t opset) {
  absl::flat_hash_map<std::string, int> producer;  // -1: graph input or initializer.
  for (const auto& v : g.input()) producer[v.name()] = -1;
  for (const auto& t : g.initializer()) producer[t.name()] = -1;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& o : g.node(i).output()) {
      if (o.empty()) continue;
      auto [it, fresh] = producer.emplace(o, i);
      if (!fresh) {
        return absl::InvalidArgumentError(absl::StrCat(
            DescribeNode(g.node(i), i, opset), " defines '", o, "', which is already ",
            it->second < 0 ? "a graph input or initializer" : "another node's output"));
      }
    }
  }
  for (const onnx::ValueInfoProto& out : g.output()) {
    if (!producer.contains(out.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", out.name(),
                       "' is produced by no node and is no graph input or initializer"));
    }
  }
  std::vector<int> waiting(g.node_size(), 0);
  std::vector<std::vector<int>> users(g.node_size());
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& in : g.node(i).input()) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(DescribeNode(g.node(i), i, opset), " reads '", in,
                         "', which is no graph input, initializer or node output"));
      }
      if (it->second >= 0) {
        ++waiting[i];
        users[it->second].push_back(i);
      }
    }
  }
  std::deque<int> ready;
  for (int i = 0; i < g.node_size(); ++i) {
    if (waiting[i] == 0) ready.push_back(i);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (int u : users[i]) {
      if (--waiting[u] == 0) ready.push_back(u);
    }
  }
  if (order.size() != static_cast<size_t>(g.node_size())) {
    for (int i = 0; i < g.node_size(); ++i) {
      if (waiting[i] == 0) continue;
      for (const std::string& in : g.node(i).input()) {
        auto it = producer.find(in);
        if (it != producer.end() && it->second >= 0 && waiting[it->second] > 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("the graph has a cycle: ", DescribeNode(g.node(i), i, opset), " reads '",
                           in, "' from ", DescribeNode(g.node(it->second), it->second, opset),
                           ", which depends on it"));
        }
      }
    }
    return absl::InvalidArgumentError("the graph has a cycle");
  }
  return order;
}

// Checks input 0's element type against the converter's mask.
absl::Status CheckInputType(const onnx::NodeProto& n, const Converter& c, const ImportState& s) {
  if (c.dtypes == 0 || n.input_size() == 0 || n.input(0).empty()) return absl::OkStatus();
  auto it = s.values.find(n.input(0));
  if (it == s.values.end() || !it->second.dtype || (c.dtypes & DTypeBit(*it->second.dtype)) != 0) {
    return absl::OkStatus();
  }
  std::vector<std::string> names;
  for (DType t : kAllDTypes) {
    if (c.dtypes & DTypeBit(t)) names.push_back(DTypeName(t));
  }
  return absl::UnimplementedError(
      absl::StrCat("input '", n.input(0), "' of type ", DTypeName(*it->second.dtype),
                   " is not supported (takes ", absl::StrJoin(names, ", "), ")"));
}

// Unimplemented naming a value whose declared element type Rill lacks or
// which is not a tensor.
absl::Status CheckValueTypes(
    const onnx::NodeProto& n,
    const absl::flat_hash_map<std::string, const onnx::TypeProto*>& types) {
  auto check = [&](const std::string& name) -> absl::Status {
    if (name.empty()) return absl::OkStatus();
    auto it = types.find(name);
    if (it == types.end()) return absl::OkStatus();
    const onnx::TypeProto& t = *it->second;
    if (!t.has_tensor_type()) {
      return absl::UnimplementedError(
          absl::StrCat("value '", name, "' is ", ValueKind(t), "; only tensors are supported"));
    }
    if (t.tensor_type().elem_type() == 0) return absl::OkStatus();
    return Annotate(DTypeFromOnnx(t.tensor_type().elem_type()).status(),
                    absl::StrCat("value '", name, "'"));
  };
  for (const std::string& in : n.input()) RILL_RETURN_IF_ERROR(check(in));
  for (const std::string& out : n.output()) RILL_RETURN_IF_ERROR(check(out));
  return absl::OkStatus();
}

// Ops whose opset 1 or 6 form means what the converter implements (later
// versions only added types); other ops changed (broadcasting before 7,
// attributes that became inputs).
bool StableSinceOpset1(std::string_view op_type) {
  static const auto* const kStable =
      new absl::flat_hash_set<std::string_view>{"Abs",
                                                "Ceil",
                                                "Constant",
                                                "Elu",
                                                "Exp",
                                                "Floor",
                                                "GlobalAveragePool",
                                                "GlobalMaxPool",
                                                "HardSigmoid",
                                                "Identity",
                                                "InstanceNormalization",
                                                "LeakyRelu",
                                                "Log",
                                                "Neg",
                                                "Not",
                                                "Reciprocal",
                                                "Relu",
                                                "Selu",
                                                "Sigmoid",
                                                "Softplus",
                                                "Softsign",
                                                "Sqrt",
                                                "Tanh"};
  return kStable->contains(op_type);
}

// libonnx's shape inference trusts more than attribute values: some of its
// functions index an input's dimensions without checking its rank (RNN-1,
// GRU-3, LSTM-1, Gemm-6, ConvTranspose's weight, STFT's scalars: found by
// giving every op version inputs of rank 0 to 4), and the ranks of the
// values in between come from that same inference, so no check beforehand
// can see them. It sees only the nodes Rill converts at `opset`, less
// those: the others are renamed so that it skips them (it is not strict),
// and Rill's own inference of the graph it builds gives their shapes.
void HideFromShapeInference(onnx::ModelProto& m, int64_t opset) {
  static const auto* const kFragile =
      new absl::flat_hash_set<std::string_view>{"ConvTranspose", "GRU", "LSTM", "RNN", "STFT"};
  for (onnx::NodeProto& n : *m.mutable_graph()->mutable_node()) {
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (default_domain && FindConverter(n.op_type()) != nullptr &&
        !kFragile->contains(n.op_type()) && (opset >= 7 || StableSinceOpset1(n.op_type()))) {
      continue;
    }
    n.set_op_type(absl::StrCat("RillHidden_", n.op_type()));
    n.clear_domain();
  }
}

absl::Status ImportNode(ImportState& s, const onnx::NodeProto& n, int64_t opset,
                        const absl::flat_hash_map<std::string, const onnx::TypeProto*>& types) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    return absl::UnimplementedError(absl::StrCat("domain '", n.domain(), "' is not supported"));
  }
  const Converter* c = FindConverter(n.op_type());
  if (c == nullptr) return absl::UnimplementedError("op type not supported");
  if (opset < 7 && !StableSinceOpset1(n.op_type())) {
    return absl::UnimplementedError(
        "before opset 7 Rill imports only the ops whose meaning has not changed since (the "
        "activations, unary math, Not, Identity, Constant, global pooling, InstanceNormalization)");
  }
  RILL_RETURN_IF_ERROR(CheckValueTypes(n, types));
  RILL_RETURN_IF_ERROR(CheckInputType(n, *c, s));
  bool folded = false;
  if (CanFold(s, n)) {
    RILL_ASSIGN_OR_RETURN(folded, FoldNode(s, n, opset, *c));
  }
  if (!folded) {
    NodeLowering l(s, n, opset);
    RILL_RETURN_IF_ERROR(c->fn(l));
    RILL_RETURN_IF_ERROR(s.graph.status());
    RILL_RETURN_IF_ERROR(s.InferNew());
  }
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    const ValueState& v = s.values[n.output(i)];
    if (!v.entry.valid() && !v.constant) {
      return absl::UnimplementedError(
          absl::StrCat("output ", i, " ('", n.output(i), "') is not supported"));
    }
  }
  return absl::OkStatus();
}

struct NodeFailure {
  std::string op_type;
  std::string node;  // DescribeNode
  absl::Status status;
};

// One Unimplemented error for all failed nodes: a single one as
// "node 'n' (Op, opset k): why"; several grouped by op type, with counts,
// each reason once and the first nodes it names.
absl::Status ReportFailures(const std::vector<NodeFailure>& failures, int num_nodes) {
  if (failures.size() == 1) return Annotate(failures[0].status, failures[0].node);
  std::map<std::string, std::vector<const NodeFailure*>> by_type;
  for (const NodeFailure& f : failures) by_type[f.op_type].push_back(&f);
  std::string msg =
      absl::StrCat(failures.size(), " of ", num_nodes, " nodes (", by_type.size(), " op type",
                   by_type.size() == 1 ? "" : "s", ") cannot be imported:");
  for (const auto& [op_type, list] : by_type) {
    absl::StrAppend(&msg, "\n  ", op_type, " x", list.size(), ":");
    std::map<std::string, std::vector<std::string>> by_reason;
    std::vector<std::string> reasons;  // In first-seen order.
    for (const NodeFailure* f : list) {
      std::string why(f->status.message());
      auto [it, fresh] = by_reason.try_emplace(why);
      if (fresh) reasons.push_back(why);
      it->second.push_back(f->node);
    }
    for (const std::string& why : reasons) {
      const std::vector<std::string>& nodes = by_reason[why];
      absl::StrAppend(&msg, "\n    ", why, " (", nodes.size(), ": ", nodes[0]);
      for (size_t k = 1; k < nodes.size() && k < 3; ++k) absl::StrAppend(&msg, ", ", nodes[k]);
      absl::StrAppend(&msg, nodes.size() > 3 ? ", ...)" : ")");
    }
  }
  return absl::UnimplementedError(msg);
}

// Fixes symbolic dimensions of the graph inputs (OnnxImportOptions::
// input_shapes, dim_params and batch) in `m`, before checking and shape
// inference.
absl::Status BindDims(onnx::ModelProto& m, const OnnxImportOptions& options) {
  if (options.batch < 0) {
    return absl::InvalidArgumentError(absl::StrCat("batch ", options.batch, " is negative"));
  }
  for (const auto& [name, value] : options.dim_params) {
    if (value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dim_params '", name, "' = ", value, " is not positive"));
    }
  }
  absl::flat_hash_set<std::string> initializers;
  for (const auto& t : m.graph().initializer()) initializers.insert(t.name());
  // Symbols' values: dim_params, then what input_shapes says of them.
  absl::flat_hash_map<std::string, int64_t> symbols(options.dim_params.begin(),
                                                    options.dim_params.end());
  for (const auto& [name, shape] : options.input_shapes) {
    const onnx::ValueInfoProto* in = nullptr;
    for (const onnx::ValueInfoProto& v : m.graph().input()) {
      if (v.name() == name && !initializers.contains(name)) in = &v;
    }
    if (in == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("input_shapes names '", name, "', which is no graph input"));
    }
    if (!in->type().has_tensor_type() || !in->type().tensor_type().has_shape()) continue;
    const auto& dims = in->type().tensor_type().shape().dim();
    std::vector<int64_t> declared;
    for (const auto& d : dims) declared.push_back(d.has_dim_value() ? d.dim_value() : -1);
    bool fits = dims.size() == static_cast<int>(shape.size());
    for (int i = 0; fits && i < dims.size(); ++i) {
      fits = shape[i] >= 0 && (!dims[i].has_dim_value() || dims[i].dim_value() == shape[i]);
      if (fits && dims[i].has_dim_param()) symbols.try_emplace(dims[i].dim_param(), shape[i]);
    }
    if (!fits) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' is declared [", absl::StrJoin(declared, ", "),
                       "] (-1: symbolic) but given [", absl::StrJoin(shape, ", "), "]"));
    }
  }
  absl::flat_hash_set<std::string> used;
  for (onnx::ValueInfoProto& in : *m.mutable_graph()->mutable_input()) {
    if (initializers.contains(in.name()) || !in.type().has_tensor_type() ||
        !in.type().tensor_type().has_shape()) {
      continue;
    }
    auto* dims = in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
    auto given = options.input_shapes.find(in.name());
    for (int i = 0; i < dims->size(); ++i) {
      onnx::TensorShapeProto::Dimension& d = (*dims)[i];
      if (d.has_dim_param()) used.insert(d.dim_param());
      if (d.has_dim_value()) continue;
      auto it = d.has_dim_param() ? symbols.find(d.dim_param()) : symbols.end();
      if (given != options.input_shapes.end()) {
        d.set_dim_value(given->second[i]);
      } else if (it != symbols.end()) {
        d.set_dim_value(it->second);
      } else if (i == 0 && options.batch > 0) {
        d.set_dim_value(options.batch);
      }
    }
  }
  for (const auto& [name, value] : options.dim_params) {
    if (!used.contains(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("dim_params '", name, "' names no symbolic dimension of a graph input"));
    }
  }
  return absl::OkStatus();
}

// The default domain's opset. A model that imports no opset, or whose
// nodes use the default domain without importing it, is malformed
// (InvalidArgument); one whose nodes all come from other domains it imports
// is valid ONNX that Rill does not import (Unimplemented).
absl::StatusOr<int64_t> DefaultOpset(const onnx::ModelProto& m) {
  std::vector<std::string> domains;
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
    domains.push_back(absl::StrCat("'", o.domain(), "'"));
  }
  if (domains.empty()) {
    return absl::InvalidArgumentError("the model imports no opset (opset_import is empty)");
  }
  for (const onnx::NodeProto& n : m.graph().node()) {
    if (n.domain().empty() || n.domain() == "ai.onnx") {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", n.name(), "' (", n.op_type(),
          ") is in the default domain (ai.onnx), which the model does not import (opset_import "
          "lists ",
          absl::StrJoin(domains, ", "), ")"));
    }
  }
  return absl::UnimplementedError(
      absl::StrCat("the model imports no default-domain (ai.onnx) opset, only ",
                   absl::StrJoin(domains, ", "), "; Rill imports the default domain"));
}

absl::Status AddInputs(const onnx::GraphProto& g, ImportState& s, OnnxModel& model) {
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (s.values[in.name()].constant) continue;  // An initializer listed as an input (IR < 4).
    if (!in.type().has_tensor_type()) {
      return absl::UnimplementedError(absl::StrCat("graph input '", in.name(), "' is ",
                                                   ValueKind(in.type()),
                                                   "; only tensors are supported"));
    }
    absl::StatusOr<DType> dtype = DTypeFromOnnx(in.type().tensor_type().elem_type());
    if (!dtype.ok()) return Annotate(dtype.status(), absl::StrCat("graph input '", in.name(), "'"));
    std::optional<Shape> shape;
    const ValueState& v = s.values[in.name()];
    if (v.dims) {
      Shape sh;
      bool known = true;
      for (int64_t d : *v.dims) {
        known = known && d >= 0;
        sh.mutable_dims().push_back(d);
      }
      if (known) shape = sh;
    }
    s.values[in.name()].entry = s.graph.Input(in.name(), shape, *dtype);
    RILL_RETURN_IF_ERROR(s.graph.status());
    model.inputs.push_back(in.name());
  }
  return absl::OkStatus();
}

absl::Status AddOutputs(const onnx::GraphProto& g, ImportState& s, OnnxModel& model) {
  for (const onnx::ValueInfoProto& out : g.output()) {
    if (out.type().value_case() != onnx::TypeProto::VALUE_NOT_SET &&
        !out.type().has_tensor_type()) {
      return absl::UnimplementedError(absl::StrCat("graph output '", out.name(), "' is ",
                                                   ValueKind(out.type()),
                                                   "; only tensors are supported"));
    }
    RILL_ASSIGN_OR_RETURN(Entry e, s.Materialize(out.name()));
    if (s.graph.node(e.node).is_variable()) {
      // Outputs are op results: a copy of an input or a constant.
      const auto& dtype = s.graph.node(e.node).dtype;
      e = dtype && *dtype == DType::kF16
              ? s.graph.Op1(op_names::kCast, {e}, {{"dtype", "float16"}},
                            s.UniqueName(absl::StrCat(out.name(), "_copy")))
              : s.graph.Op1(op_names::kIdentity, {e}, {},
                            s.UniqueName(absl::StrCat(out.name(), "_copy")));
    }
    s.graph.AddOutput(e, out.name());
    RILL_RETURN_IF_ERROR(s.graph.status());
    model.outputs.push_back(out.name());
  }
  return absl::OkStatus();
}

absl::StatusOr<OnnxModel> Import(onnx::ModelProto& m, const OnnxImportOptions& options,
                                 std::string_view what) {
  RILL_ASSIGN_OR_RETURN(const int64_t opset, DefaultOpset(m));
  // Before any outside library sees the model: libonnx trusts attribute
  // values and declared shapes.
  RILL_RETURN_IF_ERROR(ValidateOnnxModel(m));
  RILL_RETURN_IF_ERROR(BindDims(m, options));
  if (opset < 1 || opset > 17) {
    return absl::UnimplementedError(
        absl::StrCat("opset ", opset, " is not supported (Rill imports 1 to 17)"));
  }
  const onnx::GraphProto& g = m.graph();
  RILL_ASSIGN_OR_RETURN(std::vector<int> order, SortNodes(g, opset));
  // Our own checks first: they name the tensor or value.
  std::vector<std::pair<std::string, OnnxHostTensor>> constants;
  std::string_view file = what;  // The budget quotes it.
  if (file.size() >= 2 && file.front() == '\'' && file.back() == '\'') {
    file = file.substr(1, file.size() - 2);
  }
  if (file == "ONNX model") file = "(bytes in memory)";  // ImportOnnxBytes' default name.
  RILL_ASSIGN_OR_RETURN(FileBudget budget, FileBudget::Create("ONNX model", file));
  for (const onnx::TensorProto& t : g.initializer()) {
    absl::StatusOr<OnnxHostTensor> h = HostTensorFromProto(t, &budget);
    if (!h.ok()) return Annotate(h.status(), "initializer");
    constants.emplace_back(t.name(), *std::move(h));
  }
  for (const auto& entry : options.constant_inputs) {
    const std::string& name = entry.first;
    const Tensor& t = entry.second;
    const bool is_input =
        std::any_of(g.input().begin(), g.input().end(),
                    [&](const onnx::ValueInfoProto& v) { return v.name() == name; });
    const bool is_initializer = std::any_of(constants.begin(), constants.end(),
                                            [&](const auto& c) { return c.first == name; });
    if (!is_input || is_initializer) {
      return absl::InvalidArgumentError(
          absl::StrCat("constant input '", name, "' is no graph input",
                       is_initializer ? " (it is an initializer)" : ""));
    }
    OnnxHostTensor h;
    h.dtype = t.dtype();
    h.shape = t.shape();
    h.bytes.resize(t.ByteSize());
    RILL_RETURN_IF_ERROR(Annotate(t.ToHostBytes(h.bytes.data(), h.bytes.size()),
                                  absl::StrCat("constant input '", name, "'")));
    constants.emplace_back(name, std::move(h));
  }
  for (const auto* list : {&g.input(), &g.output()}) {
    for (const onnx::ValueInfoProto& v : *list) {
      if (v.type().value_case() != onnx::TypeProto::VALUE_NOT_SET && !v.type().has_tensor_type()) {
        return absl::UnimplementedError(
            absl::StrCat("graph ", list == &g.input() ? "input" : "output", " '", v.name(), "' is ",
                         ValueKind(v.type()), "; only tensors are supported"));
      }
    }
  }
  try {
    onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("ONNX checker: ", e.what()));
  }
  // Shapes and types of the values in between, where ONNX can infer them.
  onnx::ModelProto inferred = m;
  // Rill imports no calls of model-local functions; libonnx would infer
  // through their bodies with the callers' attributes, unchecked.
  inferred.clear_functions();
  HideFromShapeInference(inferred, opset);
  try {
    onnx::shape_inference::InferShapes(inferred);
  } catch (const std::exception&) {
    inferred = m;  // Without inferred shapes: converters that need one say so.
  }
  const onnx::GraphProto& ig = inferred.graph();
  ImportState s;
  s.context = options.context;
  s.engine = options.engine;
  s.budget = &budget;
  absl::flat_hash_map<std::string, const onnx::TypeProto*> types;
  for (const auto* list : {&ig.input(), &ig.value_info(), &ig.output()}) {
    for (const onnx::ValueInfoProto& vi : *list) {
      NoteType(vi, s);
      types[vi.name()] = &vi.type();
    }
  }
  for (auto& [name, h] : constants) {
    ValueState& v = s.values[name];
    v.dims = std::vector<int64_t>(h.shape.span().begin(), h.shape.span().end());
    v.dtype = h.dtype;
    v.constant = std::move(h);
    v.initializer = true;
  }
  for (const auto& [name, v] : s.values) s.reserved.insert(name);
  for (const onnx::NodeProto& n : g.node()) {
    for (const std::string& o : n.output()) s.reserved.insert(o);
  }
  OnnxModel model;
  model.opset = opset;
  RILL_RETURN_IF_ERROR(AddInputs(g, s, model));
  RILL_RETURN_IF_ERROR(s.InferNew());
  // Every node is tried: an Unimplemented one is recorded and its outputs
  // poisoned, so that one error lists all that Rill lacks. Nodes reading a
  // poisoned value are skipped, unless their op type is missing too.
  std::vector<NodeFailure> failures;
  absl::flat_hash_set<std::string> poisoned;
  for (int i : order) {
    const onnx::NodeProto& n = g.node(i);
    const bool skip = std::any_of(n.input().begin(), n.input().end(),
                                  [&](const std::string& in) { return poisoned.contains(in); });
    absl::Status st;
    if (!skip) {
      st = ImportNode(s, n, opset, types);
    } else if (FindConverter(n.op_type()) == nullptr) {
      st = absl::UnimplementedError("op type not supported");
    }
    if (!st.ok() && st.code() != absl::StatusCode::kUnimplemented) {
      return Annotate(st, DescribeNode(n, i, opset));
    }
    if (skip || !st.ok()) poisoned.insert(n.output().begin(), n.output().end());
    if (!st.ok()) failures.push_back({n.op_type(), DescribeNode(n, i, opset), std::move(st)});
  }
  if (!failures.empty()) return ReportFailures(failures, g.node_size());
  RILL_RETURN_IF_ERROR(AddOutputs(g, s, model));
  model.graph = std::move(s.graph);
  model.initializers = std::move(s.tensors);
  return model;
}

}  // namespace

absl::StatusOr<OnnxModel> ImportOnnxBytes(std::string_view bytes, const OnnxImportOptions& options,
                                          std::string_view what) {
  if (bytes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(AsAbsl(what), ": not an ONNX model (it is empty)"));
  }
  onnx::ModelProto m;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        AsAbsl(what), ": not an ONNX model (protobuf parse failed on ", bytes.size(), " bytes)"));
  }
  absl::StatusOr<OnnxModel> r = Import(m, options, what);
  if (!r.ok()) return Annotate(r.status(), what);
  return r;
}

absl::StatusOr<OnnxModel> ImportOnnxFile(const std::string& path,
                                         const OnnxImportOptions& options) {
  RILL_ASSIGN_OR_RETURN(const std::string bytes, ReadUntrustedFile("ONNX file", path));
  return ImportOnnxBytes(bytes, options, absl::StrCat("'", path, "'"));
}

}  // namespace rill::graph
