// Exporters from Rill ops to ONNX nodes (default domain, opsets 13-17):
// one function per op, reading the node's parsed parameters. Ops with no
// ONNX counterpart are composed (square, the scalar forms, comparisons,
// batch_norm) or left out (FindExporter returns null: Unimplemented).

#include "rill/graph/onnx/onnx_export_ops.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/graph/onnx/onnx_tensor.h"
#include "rill/ops/elementwise/elementwise.h"
#include "rill/ops/init/init.h"
#include "rill/ops/nn/fused_conv.h"
#include "rill/ops/nn/nn.h"
#include "rill/ops/norm/norm.h"
#include "rill/ops/op_names.h"
#include "rill/ops/reduce/reduce.h"
#include "rill/ops/shape/shape.h"

namespace rill::graph {

int32_t OnnxTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return onnx::TensorProto::FLOAT;
    case DType::kF64:
      return onnx::TensorProto::DOUBLE;
    case DType::kF16:
      return onnx::TensorProto::FLOAT16;
    case DType::kI32:
      return onnx::TensorProto::INT32;
    case DType::kI64:
      return onnx::TensorProto::INT64;
    case DType::kU8:
      return onnx::TensorProto::UINT8;
    case DType::kBool:
      return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

namespace {

std::string Fresh(absl::flat_hash_set<std::string>& taken, std::string_view base) {
  std::string name(base);
  for (int k = 1; taken.contains(name); ++k) name = absl::StrCat(std::string(base), "_", k);
  taken.insert(name);
  return name;
}

void SetTensor(onnx::TensorProto* t, const OnnxHostTensor& h) {
  t->set_data_type(OnnxTypeOf(h.dtype));
  for (int64_t d : h.shape.span()) t->add_dims(d);
  t->set_raw_data(h.bytes);
}

}  // namespace

std::string ExportState::FreshValue(std::string_view base) { return Fresh(value_names, base); }
std::string ExportState::FreshNode(std::string_view base) { return Fresh(node_names, base); }

const EntryType& NodeExport::InType(int i) const {
  const Entry& e = node().inputs[i];
  return state_.types[e.node][e.index];
}
const EntryType& NodeExport::OutType(int i) const { return state_.types[id_][i]; }

onnx::NodeProto* NodeExport::Emit(std::string_view op_type, const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& outputs) {
  onnx::NodeProto* n = state_.proto->add_node();
  n->set_name(state_.FreshNode(
      emitted_++ == 0 ? node().name : absl::StrCat(node().name, "/", std::string(op_type))));
  n->set_op_type(std::string(op_type));
  for (const std::string& s : inputs) n->add_input(s);
  for (const std::string& s : outputs) n->add_output(s);
  return n;
}

std::string NodeExport::Tmp(std::string_view op_type, const std::vector<std::string>& inputs,
                            onnx::NodeProto** made) {
  const std::string out = state_.FreshValue(absl::StrCat(node().name, "/", std::string(op_type)));
  onnx::NodeProto* n = Emit(op_type, inputs, {out});
  if (made != nullptr) *made = n;
  return out;
}

std::string NodeExport::Int64s(const std::vector<int64_t>& v, std::string_view what) {
  onnx::TensorProto* t = state_.proto->add_initializer();
  t->set_name(state_.FreshValue(absl::StrCat(node().name, "/", std::string(what))));
  SetTensor(t, OnnxHostTensor::FromInt64s(v, Shape{static_cast<int64_t>(v.size())}));
  return t->name();
}

std::string NodeExport::Scalar(double v, DType dtype) {
  const std::string out = state_.FreshValue(absl::StrCat(node().name, "/scalar"));
  onnx::NodeProto* n = Emit("Constant", {}, {out});
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  SetTensor(a->mutable_t(), OnnxHostTensor::Fill(dtype, Shape{}, v));
  return out;
}

void AddIntAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void AddFloatAttr(onnx::NodeProto* n, const std::string& name, float v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void AddIntsAttr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

namespace {

using X = NodeExport;

// (h, w) of a Rill window tuple: empty is the default, one value is both.
std::vector<int64_t> Pair(const std::vector<int64_t>& v, int64_t def) {
  if (v.empty()) return {def, def};
  if (v.size() == 1) return {v[0], v[0]};
  return v;
}

int64_t NormAxis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

// ------------------------------------------------------------------ elementwise

template <const char* kOnnx>
absl::Status Same(X& x) {
  std::vector<std::string> in;
  for (int i = 0; i < x.num_inputs(); ++i) in.push_back(x.In(i));
  x.Emit(kOnnx, in, {x.Out(0)});
  return absl::OkStatus();
}
constexpr char kAdd[] = "Add", kSub[] = "Sub", kMul[] = "Mul", kDiv[] = "Div", kPow[] = "Pow",
               kMax[] = "Max", kMin[] = "Min", kNeg[] = "Neg", kAbs[] = "Abs", kExp[] = "Exp",
               kLog[] = "Log", kSqrt[] = "Sqrt", kRelu[] = "Relu", kSigmoid[] = "Sigmoid",
               kTanh[] = "Tanh", kIdentity[] = "Identity", kEqual[] = "Equal",
               kGreater[] = "Greater", kErf[] = "Erf", kFloor[] = "Floor", kCeil[] = "Ceil",
               kRound[] = "Round", kSin[] = "Sin", kCos[] = "Cos", kTan[] = "Tan", kAsin[] = "Asin",
               kAcos[] = "Acos", kAtan[] = "Atan", kSinh[] = "Sinh", kCosh[] = "Cosh",
               kAsinh[] = "Asinh", kAcosh[] = "Acosh", kAtanh[] = "Atanh", kIsNaN[] = "IsNaN";

// Rill's condition may be any type (nonzero is true); ONNX's is bool.
absl::Status Where(X& x) {
  std::string cond = x.In(0);
  if (x.InDType(0) != DType::kBool) {
    onnx::NodeProto* n = nullptr;
    cond = x.Tmp("Cast", {cond}, &n);
    AddIntAttr(n, "to", OnnxTypeOf(DType::kBool));
  }
  x.Emit("Where", {cond, x.In(1), x.In(2)}, {x.Out(0)});
  return absl::OkStatus();
}

absl::Status IsInf(X& x) {
  const auto& p = x.Params<ops::IsInfParams>();
  onnx::NodeProto* n = x.Emit("IsInf", {x.In(0)}, {x.Out(0)});
  AddIntAttr(n, "detect_positive", p.detect_positive);
  AddIntAttr(n, "detect_negative", p.detect_negative);
  return absl::OkStatus();
}

absl::Status Mod(X& x) {
  AddIntAttr(x.Emit("Mod", {x.In(0), x.In(1)}, {x.Out(0)}), "fmod",
             x.Params<ops::ModParams>().fmod);
  return absl::OkStatus();
}

absl::Status CumSum(X& x) {
  const auto& p = x.Params<ops::CumsumParams>();
  onnx::NodeProto* n =
      x.Emit("CumSum", {x.In(0), x.Scalar(static_cast<double>(p.axis), DType::kI64)}, {x.Out(0)});
  AddIntAttr(n, "exclusive", p.exclusive);
  AddIntAttr(n, "reverse", p.reverse);
  return absl::OkStatus();
}

absl::Status GatherElements(X& x) {
  AddIntAttr(x.Emit("GatherElements", {x.In(0), x.In(1)}, {x.Out(0)}), "axis",
             x.Params<ops::GatherParams>().axis);
  return absl::OkStatus();
}

absl::Status Gather(X& x) {
  AddIntAttr(x.Emit("Gather", {x.In(0), x.In(1)}, {x.Out(0)}), "axis",
             x.Params<ops::GatherParams>().axis);
  return absl::OkStatus();
}

absl::Status Square(X& x) {
  x.Emit("Mul", {x.In(0), x.In(0)}, {x.Out(0)});
  return absl::OkStatus();
}

// Rill's comparisons give 1 or 0 in the input type; ONNX's give bool.
template <const char* kOnnx>
absl::Status Compare(X& x) {
  const std::string b = x.Tmp(kOnnx, {x.In(0), x.In(1)});
  AddIntAttr(x.Emit("Cast", {b}, {x.Out(0)}), "to", OnnxTypeOf(*x.OutType(0).dtype));
  return absl::OkStatus();
}

// `op` of x and the node's scalar (scalar first when kReversed).
template <const char* kOnnx, bool kReversed>
absl::Status WithScalar(X& x) {
  const std::string s = x.Scalar(x.Params<ops::ScalarParams>().scalar, x.InDType(0));
  x.Emit(kOnnx,
         kReversed ? std::vector<std::string>{s, x.In(0)} : std::vector<std::string>{x.In(0), s},
         {x.Out(0)});
  return absl::OkStatus();
}
template <const char* kOnnx>
absl::Status CompareScalar(X& x) {
  const std::string s = x.Scalar(x.Params<ops::ScalarParams>().scalar, x.InDType(0));
  const std::string b = x.Tmp(kOnnx, {x.In(0), s});
  AddIntAttr(x.Emit("Cast", {b}, {x.Out(0)}), "to", OnnxTypeOf(*x.OutType(0).dtype));
  return absl::OkStatus();
}

absl::Status Activation(X& x) {
  const std::string& t = x.Params<ops::ActivationParams>().act_type;
  const char* op = t == "relu"      ? "Relu"
                   : t == "sigmoid" ? "Sigmoid"
                   : t == "tanh"    ? "Tanh"
                                    : nullptr;
  if (op == nullptr) return X::Unsupported(absl::StrCat("act_type '", t, "'"));
  x.Emit(op, {x.In(0)}, {x.Out(0)});
  return absl::OkStatus();
}

absl::Status Cast(X& x) {
  AddIntAttr(x.Emit("Cast", {x.In(0)}, {x.Out(0)}), "to",
             OnnxTypeOf(x.Params<ops::CastParams>().dtype));
  return absl::OkStatus();
}

// An inference graph: y = x. The mask (all ones when not training) has no
// ONNX value to come from.
absl::Status Dropout(X& x) {
  if (x.Used(1)) return X::Unsupported("dropout's mask output (output 1)");
  x.Emit("Identity", {x.In(0)}, {x.Out(0)});
  return absl::OkStatus();
}

// ---------------------------------------------------------------------- nn

absl::Status Conv(X& x) {
  const auto& p = x.Params<ops::ConvParams>();
  const std::vector<int64_t> pad = Pair(p.pad, 0);
  const Shape& w = *x.InType(1).shape;
  onnx::NodeProto* n = x.Emit("Conv", {x.In(0), x.In(1)}, {x.Out(0)});
  AddIntsAttr(n, "kernel_shape", {w[2], w[3]});
  AddIntsAttr(n, "strides", Pair(p.stride, 1));
  AddIntsAttr(n, "pads", {pad[0], pad[1], pad[0], pad[1]});
  AddIntsAttr(n, "dilations", Pair(p.dilation, 1));
  AddIntAttr(n, "group", p.num_group);
  return absl::OkStatus();
}

// fused_conv2d (the optimizer's): Conv with its bias, then the residual
// Add and the activation as their own nodes.
absl::Status FusedConv(X& x) {
  const auto& p = x.Params<ops::FusedConvParams>();
  const std::vector<int64_t> pad = Pair(p.pad, 0);
  const Shape& w = *x.InType(1).shape;
  if (p.layout != "NCHW") {
    return X::Unsupported(absl::StrCat("fused_conv2d in layout ", p.layout,
                                       " (export the graph before the optimizer's nhwc_layout)"));
  }
  const bool act = !p.act.empty();
  if (act && p.act != "relu" && p.act != "clipped_relu" && p.act != "sigmoid" && p.act != "tanh")
    return X::Unsupported(absl::StrCat("act '", p.act, "'"));
  const std::vector<std::string> in = {x.In(0), x.In(1), x.In(2)};
  onnx::NodeProto* n = nullptr;
  std::string y;
  if (!act && !p.residual) {
    n = x.Emit("Conv", in, {x.Out(0)});
  } else {
    y = x.Tmp("Conv", in, &n);
  }
  AddIntsAttr(n, "kernel_shape", {w[2], w[3]});
  AddIntsAttr(n, "strides", Pair(p.stride, 1));
  AddIntsAttr(n, "pads", {pad[0], pad[1], pad[0], pad[1]});
  AddIntsAttr(n, "dilations", Pair(p.dilation, 1));
  AddIntAttr(n, "group", p.num_group);
  if (p.residual) {
    if (!act) {
      x.Emit("Add", {y, x.In(3)}, {x.Out(0)});
      return absl::OkStatus();
    }
    y = x.Tmp("Add", {y, x.In(3)});
  }
  if (!act) return absl::OkStatus();
  if (p.act == "clipped_relu") {
    x.Emit("Clip", {y, x.Scalar(0, DType::kF32), x.Scalar(p.clip, DType::kF32)}, {x.Out(0)});
  } else {
    x.Emit(p.act == "relu" ? "Relu" : p.act == "sigmoid" ? "Sigmoid" : "Tanh", {y}, {x.Out(0)});
  }
  return absl::OkStatus();
}

absl::Status Pool(X& x) {
  const auto& p = x.Params<ops::PoolParams>();
  if (p.pool_type != "max" && p.pool_type != "avg") {
    return X::Unsupported(absl::StrCat("pool_type '", p.pool_type, "'"));
  }
  const bool max = p.pool_type == "max";
  const std::vector<int64_t> pad = Pair(p.pad, 0);
  onnx::NodeProto* n = x.Emit(max ? "MaxPool" : "AveragePool", {x.In(0)}, {x.Out(0)});
  AddIntsAttr(n, "kernel_shape", Pair(p.kernel, 1));
  AddIntsAttr(n, "strides", Pair(p.stride, 1));
  AddIntsAttr(n, "pads", {pad[0], pad[1], pad[0], pad[1]});
  if (!max)
    AddIntAttr(n, "count_include_pad",
               p.count_include_pad ? 1 : 0);  // Rill's default is 1, ONNX's 0.
  return absl::OkStatus();
}

absl::Status FullyConnected(X& x) {
  std::vector<std::string> in = {x.In(0), x.In(1)};
  if (!x.Params<ops::FullyConnectedParams>().no_bias) in.push_back(x.In(2));
  AddIntAttr(x.Emit("Gemm", in, {x.Out(0)}), "transB", 1);
  return absl::OkStatus();
}

// Without transposes MatMul; 2-D with transposes Gemm; batched with
// transposes a Transpose of the last two axes first.
absl::Status Matmul(X& x) {
  const auto& p = x.Params<ops::MatmulParams>();
  if (!p.transpose_a && !p.transpose_b) {
    x.Emit("MatMul", {x.In(0), x.In(1)}, {x.Out(0)});
    return absl::OkStatus();
  }
  const int r = x.InRank(0);
  if (r == 2) {
    onnx::NodeProto* n = x.Emit("Gemm", {x.In(0), x.In(1)}, {x.Out(0)});
    AddIntAttr(n, "transA", p.transpose_a ? 1 : 0);
    AddIntAttr(n, "transB", p.transpose_b ? 1 : 0);
    return absl::OkStatus();
  }
  std::vector<int64_t> perm;
  for (int i = 0; i < r; ++i) perm.push_back(i);
  std::swap(perm[r - 1], perm[r - 2]);
  std::string in[2] = {x.In(0), x.In(1)};
  for (int i = 0; i < 2; ++i) {
    if (!(i == 0 ? p.transpose_a : p.transpose_b)) continue;
    onnx::NodeProto* t;
    in[i] = x.Tmp("Transpose", {in[i]}, &t);
    AddIntsAttr(t, "perm", perm);
  }
  x.Emit("MatMul", {in[0], in[1]}, {x.Out(0)});
  return absl::OkStatus();
}

// Rill's batch_norm normalizes with the batch's statistics (it keeps no
// running ones), so it is written as that computation, not as ONNX's
// inference-mode BatchNormalization: mean and biased variance over every
// axis but 1, y = (x - mean) / sqrt(var + eps) * gamma + beta.
absl::Status BatchNorm(X& x) {
  const int r = x.InRank(0);
  const std::vector<int64_t> axes =
      r == 4 ? std::vector<int64_t>{0, 2, 3} : std::vector<int64_t>{0};
  const std::vector<int64_t> channel =
      r == 4 ? std::vector<int64_t>{1, -1, 1, 1} : std::vector<int64_t>{1, -1};
  auto reduce_mean = [&](const std::string& v) {
    onnx::NodeProto* n;
    std::string out = x.Tmp("ReduceMean", {v}, &n);
    AddIntsAttr(n, "axes", axes);
    AddIntAttr(n, "keepdims", 1);
    return out;
  };
  const std::string mean = reduce_mean(x.In(0));
  const std::string d = x.Tmp("Sub", {x.In(0), mean});
  const std::string var = reduce_mean(x.Tmp("Mul", {d, d}));
  const std::string eps = x.Scalar(x.Params<ops::BatchNormParams>().eps, x.InDType(0));
  const std::string inv_std = x.Tmp("Reciprocal", {x.Tmp("Sqrt", {x.Tmp("Add", {var, eps})})});
  if (x.Used(0)) {
    const std::string shape = x.Int64s(channel, "channel_shape");
    const std::string gamma = x.Tmp("Reshape", {x.In(1), shape});
    const std::string beta = x.Tmp("Reshape", {x.In(2), shape});
    const std::string y = x.Tmp("Mul", {x.Tmp("Mul", {d, inv_std}), gamma});
    x.Emit("Add", {y, beta}, {x.Out(0)});
  }
  if (x.Used(1) || x.Used(2)) {
    const std::string flat = x.Int64s({-1}, "flat_shape");
    if (x.Used(1)) x.Emit("Reshape", {mean, flat}, {x.Out(1)});
    if (x.Used(2)) x.Emit("Reshape", {inv_std, flat}, {x.Out(2)});
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ reduce, softmax

template <const char* kOnnx>
absl::Status Softmax(X& x) {
  AddIntAttr(x.Emit(kOnnx, {x.In(0)}, {x.Out(0)}), "axis", x.Params<ops::SoftmaxParams>().axis);
  return absl::OkStatus();
}
constexpr char kSoftmax[] = "Softmax", kLogSoftmax[] = "LogSoftmax";

// Rill: empty axes reduce all, keepdims defaults to false. ReduceSum takes
// its axes as an input since opset 13, the others as an attribute until 18.
// layer_norm (the optimizer's): the ReduceMean chain opset 13 has.
absl::Status LayerNorm(X& x) {
  const auto& p = x.Params<ops::LayerNormParams>();
  const int r = x.InRank(0);
  const int64_t axis = p.axis < 0 ? p.axis + r : p.axis;
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < r; ++a) axes.push_back(a);
  auto reduce_mean = [&](const std::string& v) {
    onnx::NodeProto* n = nullptr;
    std::string out = x.Tmp("ReduceMean", {v}, &n);
    AddIntsAttr(n, "axes", axes);
    AddIntAttr(n, "keepdims", 1);
    return out;
  };
  const std::string d = x.Tmp("Sub", {x.In(0), reduce_mean(x.In(0))});
  const std::string var = reduce_mean(x.Tmp("Mul", {d, d}));
  const std::string sd = x.Tmp("Sqrt", {x.Tmp("Add", {var, x.Scalar(p.eps, x.InDType(0))})});
  const std::string y = x.Tmp("Mul", {x.Tmp("Div", {d, sd}), x.In(1)});
  x.Emit("Add", {y, x.In(2)}, {x.Out(0)});
  return absl::OkStatus();
}

template <const char* kOnnx>
absl::Status Reduce(X& x) {
  const auto& p = x.Params<ops::ReduceParams>();
  const bool sum = std::string_view(kOnnx) == "ReduceSum";
  std::vector<std::string> in = {x.In(0)};
  if (sum && !p.axes.empty()) in.push_back(x.Int64s(p.axes, "axes"));
  onnx::NodeProto* n = x.Emit(kOnnx, in, {x.Out(0)});
  if (!sum && !p.axes.empty()) AddIntsAttr(n, "axes", p.axes);
  AddIntAttr(n, "keepdims", p.keepdims ? 1 : 0);
  return absl::OkStatus();
}
constexpr char kReduceSum[] = "ReduceSum", kReduceMean[] = "ReduceMean", kReduceMax[] = "ReduceMax",
               kReduceProd[] = "ReduceProd";

absl::Status Argmax(X& x) {
  const auto& p = x.Params<ops::ArgmaxParams>();
  onnx::NodeProto* n = x.Emit("ArgMax", {x.In(0)}, {x.Out(0)});
  AddIntAttr(n, "axis", p.axis);
  AddIntAttr(n, "keepdims", p.keepdims ? 1 : 0);
  AddIntAttr(n, "select_last_index", 0);
  return absl::OkStatus();
}

// ---------------------------------------------------------------- shape ops

absl::Status Reshape(X& x) {
  x.Emit("Reshape", {x.In(0), x.Int64s(x.Params<ops::ReshapeParams>().shape, "shape")}, {x.Out(0)});
  return absl::OkStatus();
}

absl::Status Flatten(X& x) {
  if (x.InRank(0) == 0) {
    x.Emit("Reshape", {x.In(0), x.Int64s({1, 1}, "shape")}, {x.Out(0)});
  } else {
    AddIntAttr(x.Emit("Flatten", {x.In(0)}, {x.Out(0)}), "axis", 1);
  }
  return absl::OkStatus();
}

absl::Status Transpose(X& x) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                        ops::TransposeAxes(x.Params<ops::TransposeParams>(), x.InRank(0)));
  AddIntsAttr(x.Emit("Transpose", {x.In(0)}, {x.Out(0)}), "perm", perm);
  return absl::OkStatus();
}

absl::Status Concat(X& x) {
  std::vector<std::string> in;
  for (int i = 0; i < x.num_inputs(); ++i) in.push_back(x.In(i));
  AddIntAttr(x.Emit("Concat", in, {x.Out(0)}), "axis",
             NormAxis(x.Params<ops::ConcatParams>().axis, x.InRank(0)));
  return absl::OkStatus();
}

// Rill's bounds are per leading axis, negative from the end, as ONNX's.
absl::Status Slice(X& x) {
  const auto& p = x.Params<ops::SliceParams>();
  if (p.begin.empty()) {
    x.Emit("Identity", {x.In(0)}, {x.Out(0)});
    return absl::OkStatus();
  }
  std::vector<int64_t> axes;
  for (size_t i = 0; i < p.begin.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  x.Emit("Slice",
         {x.In(0), x.Int64s(p.begin, "starts"), x.Int64s(p.end, "ends"), x.Int64s(axes, "axes")},
         {x.Out(0)});
  return absl::OkStatus();
}

const std::map<std::string, ExportFn, std::less<>>& Table() {
  static const auto* t = new std::map<std::string, ExportFn, std::less<>>{
      {op_names::kAbs, Same<kAbs>},
      {op_names::kAcos, Same<kAcos>},
      {op_names::kAcosh, Same<kAcosh>},
      {op_names::kActivation, Activation},
      {op_names::kAdd, Same<kAdd>},
      {op_names::kAddScalar, WithScalar<kAdd, false>},
      {op_names::kArgmax, Argmax},
      {op_names::kAsin, Same<kAsin>},
      {op_names::kAsinh, Same<kAsinh>},
      {op_names::kAtan, Same<kAtan>},
      {op_names::kAtanh, Same<kAtanh>},
      {op_names::kBatchNorm, BatchNorm},
      {op_names::kCast, Cast},
      {op_names::kCeil, Same<kCeil>},
      {op_names::kConcat, Concat},
      {op_names::kConv2d, Conv},
      {op_names::kCos, Same<kCos>},
      {op_names::kCosh, Same<kCosh>},
      {op_names::kCumsum, CumSum},
      {op_names::kDiv, Same<kDiv>},
      {op_names::kDivScalar, WithScalar<kDiv, false>},
      {op_names::kDropout, Dropout},
      {op_names::kEqual, Compare<kEqual>},
      {op_names::kEqualScalar, CompareScalar<kEqual>},
      {op_names::kErf, Same<kErf>},
      {op_names::kExp, Same<kExp>},
      {op_names::kFlatten, Flatten},
      {op_names::kFloor, Same<kFloor>},
      {op_names::kFullyConnected, FullyConnected},
      {op_names::kFusedConv2d, FusedConv},
      {op_names::kLayerNorm, LayerNorm},
      {op_names::kGather, Gather},
      {op_names::kGatherElements, GatherElements},
      {op_names::kGreater, Compare<kGreater>},
      {op_names::kGreaterScalar, CompareScalar<kGreater>},
      {op_names::kIdentity, Same<kIdentity>},
      {op_names::kIsInf, IsInf},
      {op_names::kIsNan, Same<kIsNaN>},
      {op_names::kLog, Same<kLog>},
      {op_names::kLogSoftmax, Softmax<kLogSoftmax>},
      {op_names::kMatmul, Matmul},
      {op_names::kMax, Reduce<kReduceMax>},
      {op_names::kMaximum, Same<kMax>},
      {op_names::kMaximumScalar, WithScalar<kMax, false>},
      {op_names::kMean, Reduce<kReduceMean>},
      {op_names::kMinimum, Same<kMin>},
      {op_names::kMinimumScalar, WithScalar<kMin, false>},
      {op_names::kMod, Mod},
      {op_names::kMul, Same<kMul>},
      {op_names::kMulScalar, WithScalar<kMul, false>},
      {op_names::kNeg, Same<kNeg>},
      {op_names::kPooling, Pool},
      {op_names::kPow, Same<kPow>},
      {op_names::kProd, Reduce<kReduceProd>},
      {op_names::kPowScalar, WithScalar<kPow, false>},
      {op_names::kRdivScalar, WithScalar<kDiv, true>},
      {op_names::kRelu, Same<kRelu>},
      {op_names::kReshape, Reshape},
      {op_names::kRound, Same<kRound>},
      {op_names::kRpowScalar, WithScalar<kPow, true>},
      {op_names::kRsubScalar, WithScalar<kSub, true>},
      {op_names::kSigmoid, Same<kSigmoid>},
      {op_names::kSin, Same<kSin>},
      {op_names::kSinh, Same<kSinh>},
      {op_names::kSlice, Slice},
      {op_names::kSoftmax, Softmax<kSoftmax>},
      {op_names::kSqrt, Same<kSqrt>},
      {op_names::kSquare, Square},
      {op_names::kSub, Same<kSub>},
      {op_names::kSubScalar, WithScalar<kSub, false>},
      {op_names::kSum, Reduce<kReduceSum>},
      {op_names::kTan, Same<kTan>},
      {op_names::kTanh, Same<kTanh>},
      {op_names::kTranspose, Transpose},
      {op_names::kWhere, Where},
  };
  return *t;
}

}  // namespace

ExportFn FindExporter(std::string_view op) {
  auto it = Table().find(op);
  return it == Table().end() ? nullptr : it->second;
}

std::vector<std::string> ExportableOps() {
  std::vector<std::string> v;
  for (const auto& [name, fn] : Table()) v.push_back(name);
  return v;
}

}  // namespace rill::graph
