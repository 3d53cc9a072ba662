#include "rill/graph/onnx/onnx_validate.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/checked_math.h"
#include "rill/base/status_macros.h"

namespace rill::graph {
namespace {

using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

// "node 'conv1' (Conv)", "node #3 (MaxPool)", with "in <where>" for a
// subgraph or function body.
std::string Describe(const onnx::NodeProto& n, int index, const std::string& where) {
  std::string s =
      n.name().empty() ? absl::StrCat("node #", index) : absl::StrCat("node '", n.name(), "'");
  absl::StrAppend(&s, " (", n.op_type(), ")");
  if (!where.empty()) absl::StrAppend(&s, " in ", where);
  return s;
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// Checks the values of list attribute `name` against [lo, hi]; `length`
// gets the list's length (-1 when absent).
absl::Status CheckInts(const onnx::NodeProto& n, const std::string& node, const std::string& name,
                       int64_t lo, int64_t hi, int* length) {
  *length = -1;
  const onnx::AttributeProto* a = FindAttr(n, name);
  if (a == nullptr) return absl::OkStatus();
  *length = a->ints_size();
  for (int i = 0; i < a->ints_size(); ++i) {
    const int64_t v = a->ints(i);
    if (v < lo || v > hi) {
      return absl::InvalidArgumentError(absl::StrCat(
          node, ": attribute '", name, "' = [", absl::StrJoin(a->ints(), ", "), "] has ", v,
          " at index ", i, "; each value must be in [", lo, ", ", hi, "]"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckInt(const onnx::NodeProto& n, const std::string& node, const std::string& name,
                      int64_t lo, int64_t hi) {
  const onnx::AttributeProto* a = FindAttr(n, name);
  if (a == nullptr || (!a->has_i() && a->type() != onnx::AttributeProto::INT)) {
    return absl::OkStatus();
  }
  if (a->i() < lo || a->i() > hi) {
    return absl::InvalidArgumentError(absl::StrCat(node, ": attribute '", name, "' = ", a->i(),
                                                   " must be in [", lo, ", ", hi, "]"));
  }
  return absl::OkStatus();
}

// Conv, ConvTranspose and the pooling ops: what onnx::convPoolShapeInference
// and its ConvTranspose twin compute with (they divide by the strides).
absl::Status CheckConvPool(const onnx::NodeProto& n, const std::string& node) {
  constexpr int64_t kMax = kMaxOnnxSpatialAttr;
  int kernel = -1, strides = -1, dilations = -1, pads = -1, output_padding = -1, output_shape = -1;
  RILL_RETURN_IF_ERROR(CheckInts(n, node, "kernel_shape", 1, kMax, &kernel));
  RILL_RETURN_IF_ERROR(CheckInts(n, node, "strides", 1, kMax, &strides));
  RILL_RETURN_IF_ERROR(CheckInts(n, node, "dilations", 1, kMax, &dilations));
  RILL_RETURN_IF_ERROR(CheckInts(n, node, "pads", 0, kMax, &pads));
  RILL_RETURN_IF_ERROR(CheckInts(n, node, "output_padding", 0, kMax, &output_padding));
  RILL_RETURN_IF_ERROR(CheckInts(n, node, "output_shape", 0, kMax, &output_shape));
  RILL_RETURN_IF_ERROR(CheckInt(n, node, "group", 1, kMax));
  RILL_RETURN_IF_ERROR(CheckInt(n, node, "ceil_mode", 0, 1));
  RILL_RETURN_IF_ERROR(CheckInt(n, node, "storage_order", 0, 1));
  // The spatial rank, from the first list that gives it.
  int rank = -1;
  const char* from = "";
  for (auto [len, name] :
       {std::pair{kernel, "kernel_shape"}, std::pair{strides, "strides"},
        std::pair{dilations, "dilations"}, std::pair{output_padding, "output_padding"}}) {
    if (len < 0) continue;
    if (rank < 0) {
      rank = len;
      from = name;
    } else if (len != rank) {
      return absl::InvalidArgumentError(absl::StrCat(node, ": attribute '", name, "' has ", len,
                                                     " values but '", from, "' has ", rank));
    }
  }
  if (pads >= 0 && rank >= 0 && pads != 2 * rank) {
    return absl::InvalidArgumentError(absl::StrCat(node, ": attribute 'pads' has ", pads,
                                                   " values but '", from, "' has ", rank,
                                                   " (pads needs two per axis)"));
  }
  if (pads >= 0 && pads % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        node, ": attribute 'pads' has ", pads, " values (pads needs two per axis, an even count)"));
  }
  if (const onnx::AttributeProto* a = FindAttr(n, "auto_pad")) {
    static const auto* const kModes =
        new absl::flat_hash_set<std::string>{"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    if (!kModes->contains(a->s())) {
      return absl::InvalidArgumentError(
          absl::StrCat(node, ": attribute 'auto_pad' = '", a->s(),
                       "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNode(const onnx::NodeProto& n, int index, const std::string& where) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return absl::OkStatus();
  static const auto* const kConvPool =
      new absl::flat_hash_set<std::string>{"Conv",    "ConvInteger", "QLinearConv", "ConvTranspose",
                                           "MaxPool", "AveragePool", "LpPool",      "MaxUnpool"};
  if (kConvPool->contains(n.op_type())) return CheckConvPool(n, Describe(n, index, where));
  if (n.op_type() == "DepthToSpace" || n.op_type() == "SpaceToDepth") {
    // DepthToSpace divides by blocksize squared, which wraps to 0 at 2^32.
    return CheckInt(n, Describe(n, index, where), "blocksize", 1, kMaxOnnxSpatialAttr);
  }
  return absl::OkStatus();
}

// A declared shape: InvalidArgument for a negative dimension (when
// `negative_is_error`) or more elements than fit in 63 bits.
absl::Status CheckValueInfo(const onnx::ValueInfoProto& v, const std::string& kind,
                            bool negative_is_error) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return absl::OkStatus();
  const auto& dims = v.type().tensor_type().shape().dim();
  CheckedInt<int64_t> count = 1;
  for (int i = 0; i < dims.size(); ++i) {
    if (!dims[i].has_dim_value()) continue;
    const int64_t d = dims[i].dim_value();
    if (d < 0) {
      if (!negative_is_error) continue;
      return absl::InvalidArgumentError(
          absl::StrCat(kind, " '", v.name(), "' has dimension ", d, " at axis ", i,
                       " (dimensions are >= 0; a symbolic one has a dim_param)"));
    }
    count *= d;
  }
  if (!count.ok()) {
    std::vector<std::string> text;
    for (const auto& d : dims)
      text.push_back(d.has_dim_value() ? absl::StrCat(d.dim_value()) : "?");
    return absl::InvalidArgumentError(absl::StrCat(kind, " '", v.name(), "' has shape [",
                                                   absl::StrJoin(text, ", "),
                                                   "], more elements than fit in 63 bits"));
  }
  return absl::OkStatus();
}

absl::Status CheckTensorDims(const onnx::TensorProto& t, const std::string& kind) {
  CheckedInt<int64_t> count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind, " '", t.name(), "' has a negative dimension ", d));
    }
    count *= d;
  }
  if (!count.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(kind, " '", t.name(), "' has dims [",
                                                   absl::StrJoin(t.dims(), ", "),
                                                   "], more elements than fit in 63 bits"));
  }
  return absl::OkStatus();
}

absl::Status CheckGraph(const onnx::GraphProto& g, const std::string& where, bool main);

absl::Status CheckNodes(const Nodes& nodes, const std::string& where) {
  for (int i = 0; i < nodes.size(); ++i) {
    const onnx::NodeProto& n = nodes[i];
    RILL_RETURN_IF_ERROR(CheckNode(n, i, where));
    for (const onnx::AttributeProto& a : n.attribute()) {
      const std::string inner =
          absl::StrCat("attribute '", a.name(), "' of ", Describe(n, i, where));
      if (a.has_t())
        RILL_RETURN_IF_ERROR(CheckTensorDims(a.t(), absl::StrCat("tensor of ", inner)));
      for (const onnx::TensorProto& t : a.tensors()) {
        RILL_RETURN_IF_ERROR(CheckTensorDims(t, absl::StrCat("tensor of ", inner)));
      }
      if (a.has_g())
        RILL_RETURN_IF_ERROR(CheckGraph(a.g(), absl::StrCat("the graph of ", inner), false));
      for (const onnx::GraphProto& sub : a.graphs()) {
        RILL_RETURN_IF_ERROR(CheckGraph(sub, absl::StrCat("a graph of ", inner), false));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGraph(const onnx::GraphProto& g, const std::string& where, bool main) {
  const std::string in = where.empty() ? "" : absl::StrCat(" of ", where);
  for (const onnx::ValueInfoProto& v : g.input()) {
    RILL_RETURN_IF_ERROR(CheckValueInfo(v, absl::StrCat("graph input", in), /*negative=*/main));
  }
  for (const onnx::ValueInfoProto& v : g.output()) {
    RILL_RETURN_IF_ERROR(CheckValueInfo(v, absl::StrCat("graph output", in), false));
  }
  for (const onnx::ValueInfoProto& v : g.value_info()) {
    RILL_RETURN_IF_ERROR(CheckValueInfo(v, absl::StrCat("value", in), false));
  }
  for (const onnx::TensorProto& t : g.initializer()) {
    RILL_RETURN_IF_ERROR(CheckTensorDims(t, absl::StrCat("initializer", in)));
  }
  return CheckNodes(g.node(), where);
}

}  // namespace

absl::Status ValidateOnnxModel(const onnx::ModelProto& m) {
  RILL_RETURN_IF_ERROR(CheckGraph(m.graph(), "", /*main=*/true));
  for (const onnx::FunctionProto& f : m.functions()) {
    RILL_RETURN_IF_ERROR(CheckNodes(f.node(), absl::StrCat("function '", f.name(), "'")));
  }
  return absl::OkStatus();
}

}  // namespace rill::graph
