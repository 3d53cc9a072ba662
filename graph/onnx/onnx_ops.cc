// Converters from ONNX nodes (default domain, opsets 1-17) to Rill ops.
// Each composes existing ops; values that must be known at import time
// (shapes, axes, pads for auto_pad) come from constants or the model's
// (inferred) shapes, otherwise the node is Unimplemented.

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/graph/onnx/onnx_lowering.h"
#include "rill/ops/op_names.h"

namespace rill::graph {

absl::Status Out(NodeLowering& l, Entry e) {
  l.SetOutput(0, e);
  return absl::OkStatus();
}

// reshape to `dims` (-1: unknown; at most one).
absl::StatusOr<Entry> ReshapeTo(NodeLowering& l, Entry x, const std::vector<int64_t>& dims) {
  if (std::count(dims.begin(), dims.end(), -1) > 1) {
    return NodeLowering::Unsupported(absl::StrCat(
        "needs a static input shape (the result would be [", absl::StrJoin(dims, ", "), "])"));
  }
  return l.Op(op_names::kReshape, {x}, {{"shape", IntsAttr(dims)}});
}

absl::StatusOr<int> NeedRank(const NodeLowering& l, int i, std::string_view why) {
  std::optional<int> r = l.Rank(i);
  if (!r)
    return NodeLowering::Unsupported(
        absl::StrCat("needs the rank of input ", i, " (", AsAbsl(why), ")"));
  return *r;
}

absl::StatusOr<std::vector<int64_t>> NeedDims(const NodeLowering& l, int i, std::string_view why) {
  auto d = l.StaticDims(i);
  if (!d)
    return NodeLowering::Unsupported(
        absl::StrCat("needs the static shape of input ", i, " (", AsAbsl(why), ")"));
  return *d;
}

absl::StatusOr<int64_t> NormAxis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> NormAxes(const std::vector<int64_t>& axes, int rank) {
  std::vector<int64_t> out;
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    RILL_ASSIGN_OR_RETURN(const int64_t n, NormAxis(a, rank));
    if (seen[n]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "axes [", absl::StrJoin(axes, ", "), "] name axis ", n, " twice (rank ", rank, ")"));
    }
    seen[n] = true;
    out.push_back(n);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> AxesOf(NodeLowering& l, int input_since_13) {
  if (l.opset() >= 13 && input_since_13 >= 0) {
    if (!l.has_input(input_since_13)) return std::vector<int64_t>{};
    return l.ConstInts(input_since_13, "axes");
  }
  return l.Ints("axes");
}

namespace {

using L = NodeLowering;

constexpr uint32_t kFloat = kFloatTypes;
constexpr uint32_t kNumeric = kNumericTypes;

// A constant of `dims` made at import time: dims >= 0 and at most 256 MiB.
absl::Status CheckConstShape(const std::vector<int64_t>& dims, DType dtype) {
  const Shape s(dims);
  RILL_RETURN_IF_ERROR(s.Validate(DTypeSize(dtype)));
  if (s.NumElements() * DTypeSize(dtype) > (int64_t{256} << 20)) {
    return NodeLowering::Unsupported(
        absl::StrCat("a constant of ", s.ToString(), " (over 256 MiB)"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------- elementwise

template <const char* kOp>
absl::Status Unary(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(kOp, {x}));
}
template <const char* kOp>
absl::Status Binary(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry a, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry b, l.In(1));
  return Out(l, l.Op(kOp, {a, b}));
}
using op_names::kAdd, op_names::kSub, op_names::kMul, op_names::kDiv, op_names::kNeg,
    op_names::kAbs, op_names::kExp, op_names::kLog, op_names::kSqrt, op_names::kRelu,
    op_names::kSigmoid, op_names::kTanh, op_names::kErf, op_names::kFloor, op_names::kCeil,
    op_names::kRound, op_names::kSin, op_names::kCos, op_names::kTan, op_names::kAsin,
    op_names::kAcos, op_names::kAtan, op_names::kSinh, op_names::kCosh, op_names::kAsinh,
    op_names::kAcosh, op_names::kAtanh, op_names::kIsNan;

// Integer bases are raised in float64 and cast back (exact below 2^53).
absl::Status Pow(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry a, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry b, l.In(1));
  auto ta = l.InType(0), tb = l.InType(1);
  if (ta && (kFloatTypes & DTypeBit(*ta)) == 0) {
    Entry af = l.Op(op_names::kCast, {a}, {{"dtype", "float64"}});
    Entry bf = l.Op(op_names::kCast, {b}, {{"dtype", "float64"}});
    return Out(
        l, l.Op(op_names::kCast, {l.Op(op_names::kPow, {af, bf})}, {{"dtype", DTypeName(*ta)}}));
  }
  if (ta && tb && *ta != *tb) b = l.Op(op_names::kCast, {b}, {{"dtype", DTypeName(*ta)}});
  return Out(l, l.Op(op_names::kPow, {a, b}));
}

// x + bias below -lambd, x - bias above lambd, 0 between.
absl::Status Shrink(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  const double lambd = l.Float("lambd", 0.5f), bias = l.Float("bias", 0.f);
  auto t = l.InType(0);
  if (!t) return L::Unsupported("needs the element type");
  RILL_ASSIGN_OR_RETURN(Entry zero, l.Const(OnnxHostTensor::Fill(*t, Shape{}, 0)));
  Entry low =
      l.Op(op_names::kGreaterScalar, {l.Op(op_names::kNeg, {x})}, {{"scalar", FloatAttr(lambd)}});
  Entry high = l.Op(op_names::kGreaterScalar, {x}, {{"scalar", FloatAttr(lambd)}});
  Entry up = l.Op(op_names::kSubScalar, {x}, {{"scalar", FloatAttr(bias)}});
  Entry down = l.Op(op_names::kAddScalar, {x}, {{"scalar", FloatAttr(bias)}});
  return Out(l, l.Op(op_names::kWhere, {low, down, l.Op(op_names::kWhere, {high, up, zero})}));
}

// Comparisons: the ops give 1/0 in the input type; ONNX wants bool.
template <const char* kOp, bool kSwap>
absl::Status Compare(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry a, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry b, l.In(1));
  Entry c = kSwap ? l.Op(kOp, {b, a}) : l.Op(kOp, {a, b});
  return Out(l, l.Op(op_names::kCast, {c}, {{"dtype", "bool"}}));
}
using op_names::kEqual, op_names::kGreater;

// Sum, Mean, Max, Min over any number of inputs (broadcasting).
template <const char* kOp, bool kMean>
absl::Status Variadic(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry acc, l.In(0));
  int n = 1;
  for (int i = 1; i < l.num_inputs(); ++i) {
    if (!l.has_input(i)) continue;
    RILL_ASSIGN_OR_RETURN(Entry x, l.In(i));
    acc = l.Op(kOp, {acc, x});
    ++n;
  }
  if (kMean && n > 1) acc = l.Op(op_names::kDivScalar, {acc}, {{"scalar", FloatAttr(n)}});
  if (n == 1) acc = l.Op(op_names::kIdentity, {acc});
  return Out(l, acc);
}
using op_names::kMaximum, op_names::kMinimum;

absl::Status IsInf(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kIsInf, {x},
                     {{"detect_positive", absl::StrCat(l.Int("detect_positive", 1))},
                      {"detect_negative", absl::StrCat(l.Int("detect_negative", 1))}}));
}

absl::Status Mod(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry a, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry b, l.In(1));
  return Out(l, l.Op(op_names::kMod, {a, b}, {{"fmod", absl::StrCat(l.Int("fmod", 0))}}));
}

absl::Status Reciprocal(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kRdivScalar, {x}, {{"scalar", "1"}}));
}

// alpha * (exp(min(x, 0) / div) - 1): the negative part of Elu/Selu/Celu.
Entry ExpNegPart(L& l, Entry x, double alpha, double div) {
  Entry m = l.Op(op_names::kMinimumScalar, {x}, {{"scalar", "0"}});
  if (div != 1) m = l.Op(op_names::kDivScalar, {m}, {{"scalar", FloatAttr(div)}});
  Entry e = l.Op(op_names::kSubScalar, {l.Op(op_names::kExp, {m})}, {{"scalar", "1"}});
  return l.Op(op_names::kMulScalar, {e}, {{"scalar", FloatAttr(alpha)}});
}

absl::Status Elu(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kAdd,
                     {l.Op(op_names::kRelu, {x}), ExpNegPart(l, x, l.Float("alpha", 1.f), 1)}));
}
absl::Status Celu(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  const double alpha = l.Float("alpha", 1.f);
  return Out(l, l.Op(op_names::kAdd, {l.Op(op_names::kRelu, {x}), ExpNegPart(l, x, alpha, alpha)}));
}
absl::Status Selu(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  const double alpha = l.Float("alpha", 1.67326319217681884765625f);
  const double gamma = l.Float("gamma", 1.05070102214813232421875f);
  Entry s = l.Op(op_names::kAdd, {l.Op(op_names::kRelu, {x}), ExpNegPart(l, x, alpha, 1)});
  return Out(l, l.Op(op_names::kMulScalar, {s}, {{"scalar", FloatAttr(gamma)}}));
}
// relu(x) - slope * relu(-x).
absl::Status LeakyRelu(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  Entry neg = l.Op(op_names::kRelu, {l.Op(op_names::kNeg, {x})});
  neg = l.Op(op_names::kMulScalar, {neg}, {{"scalar", FloatAttr(l.Float("alpha", 0.01f))}});
  return Out(l, l.Op(op_names::kSub, {l.Op(op_names::kRelu, {x}), neg}));
}
absl::Status PRelu(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry slope, l.In(1));
  Entry neg = l.Op(op_names::kMul, {l.Op(op_names::kRelu, {l.Op(op_names::kNeg, {x})}), slope});
  return Out(l, l.Op(op_names::kSub, {l.Op(op_names::kRelu, {x}), neg}));
}
// max(0, min(1, alpha * x + beta)).
Entry HardSigmoidOf(L& l, Entry x, double alpha, double beta) {
  Entry y = l.Op(op_names::kMulScalar, {x}, {{"scalar", FloatAttr(alpha)}});
  y = l.Op(op_names::kAddScalar, {y}, {{"scalar", FloatAttr(beta)}});
  y = l.Op(op_names::kMinimumScalar, {y}, {{"scalar", "1"}});
  return l.Op(op_names::kMaximumScalar, {y}, {{"scalar", "0"}});
}
absl::Status HardSigmoid(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, HardSigmoidOf(l, x, l.Float("alpha", 0.2f), l.Float("beta", 0.5f)));
}
absl::Status HardSwish(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kMul, {x, HardSigmoidOf(l, x, 1.0 / 6, 0.5)}));
}
absl::Status ThresholdedRelu(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  Entry mask = l.Op(op_names::kGreaterScalar, {x}, {{"scalar", FloatAttr(l.Float("alpha", 1.f))}});
  return Out(l, l.Op(op_names::kMul, {x, mask}));
}
absl::Status Softsign(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  Entry d = l.Op(op_names::kAddScalar, {l.Op(op_names::kAbs, {x})}, {{"scalar", "1"}});
  return Out(l, l.Op(op_names::kDiv, {x, d}));
}
absl::Status Sign(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  Entry pos = l.Op(op_names::kGreaterScalar, {x}, {{"scalar", "0"}});
  Entry neg = l.Op(op_names::kGreaterScalar, {l.Op(op_names::kNeg, {x})}, {{"scalar", "0"}});
  return Out(l, l.Op(op_names::kSub, {pos, neg}));
}
absl::Status Clip(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  Entry y = x;
  if (l.opset() < 11) {  // Attributes before opset 11.
    if (l.HasAttr("min")) {
      y = l.Op(op_names::kMaximumScalar, {y}, {{"scalar", FloatAttr(l.Float("min", 0))}});
    }
    if (l.HasAttr("max")) {
      y = l.Op(op_names::kMinimumScalar, {y}, {{"scalar", FloatAttr(l.Float("max", 0))}});
    }
  }
  for (int i : {1, 2}) {
    if (l.opset() < 11) break;
    if (!l.has_input(i)) continue;
    if (!l.info(i).constant) {  // A bound computed in the graph (a scalar).
      RILL_ASSIGN_OR_RETURN(Entry bound, l.In(i));
      y = l.Op(i == 1 ? op_names::kMaximum : op_names::kMinimum, {y, bound});
      continue;
    }
    std::vector<double> v;
    RILL_ASSIGN_OR_RETURN(v, l.ConstDoubles(i, i == 1 ? "min" : "max"));
    if (v.size() != 1) return absl::InvalidArgumentError("Clip bounds must be scalars");
    y = l.Op(i == 1 ? op_names::kMaximumScalar : op_names::kMinimumScalar, {y},
             {{"scalar", FloatAttr(v[0])}});
  }
  return Out(l, y == x ? l.Op(op_names::kIdentity, {x}) : y);
}

// log(1 + exp(x)) computed as relu(x) + log(1 + exp(-|x|)), exact for large |x|.
absl::Status Softplus(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  Entry e = l.Op(op_names::kExp, {l.Op(op_names::kNeg, {l.Op(op_names::kAbs, {x})})});
  Entry lg = l.Op(op_names::kLog, {l.Op(op_names::kAddScalar, {e}, {{"scalar", "1"}})});
  return Out(l, l.Op(op_names::kAdd, {l.Op(op_names::kRelu, {x}), lg}));
}

absl::Status Identity(L& l) {
  const ValueState& v = l.info(0);
  if (v.constant) {
    l.SetConstOutput(0, *v.constant);
    return absl::OkStatus();
  }
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, x);
}

absl::Status Cast(L& l) {
  RILL_ASSIGN_OR_RETURN(DType to, DTypeFromOnnx(static_cast<int32_t>(l.Int("to", 0))));
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kCast, {x}, {{"dtype", DTypeName(to)}}));
}

absl::Status Dropout(L& l) {
  if (l.has_input(2)) {
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> t, l.ConstInts(2, "training_mode"));
    if (!t.empty() && t[0] != 0)
      return L::Unsupported("training_mode=true (Rill imports inference graphs)");
  }
  if (l.wants_output(1)) {
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "the mask output"));
    RILL_RETURN_IF_ERROR(CheckConstShape(dims, DType::kBool));
    l.SetConstOutput(1, OnnxHostTensor::Fill(DType::kBool, Shape(dims), 1));
  }
  return Identity(l);
}

// ------------------------------------------------------------------ constants

absl::Status Constant(L& l) {
  if (const auto* a = l.Attr("value")) {
    RILL_ASSIGN_OR_RETURN(OnnxHostTensor t, HostTensorFromProto(a->t(), l.state().budget));
    l.SetConstOutput(0, std::move(t));
  } else if (const auto* a = l.Attr("value_float")) {
    l.SetConstOutput(0, OnnxHostTensor::Fill(DType::kF32, Shape{}, a->f()));
  } else if (const auto* a = l.Attr("value_floats")) {
    OnnxHostTensor t = OnnxHostTensor::Fill(DType::kF32, Shape{a->floats_size()}, 0);
    std::copy(a->floats().begin(), a->floats().end(), reinterpret_cast<float*>(t.bytes.data()));
    l.SetConstOutput(0, std::move(t));
  } else if (const auto* a = l.Attr("value_int")) {
    l.SetConstOutput(0, OnnxHostTensor::FromInt64s({a->i()}, Shape{}));
  } else if (const auto* a = l.Attr("value_ints")) {
    l.SetConstOutput(
        0, OnnxHostTensor::FromInt64s({a->ints().begin(), a->ints().end()}, Shape{a->ints_size()}));
  } else {
    return L::Unsupported("only value, value_float(s) and value_int(s) are supported");
  }
  return absl::OkStatus();
}

absl::Status ShapeOp(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        NeedDims(l, 0, "Shape is computed at import time"));
  const int r = static_cast<int>(dims.size());
  int64_t start = std::clamp<int64_t>(l.Int("start", 0), -r, r),
          end = std::clamp<int64_t>(l.Int("end", r), -r, r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  std::vector<int64_t> v(dims.begin() + start, dims.begin() + std::max(start, end));
  const int64_t n = static_cast<int64_t>(v.size());
  l.SetConstOutput(0, OnnxHostTensor::FromInt64s(v, Shape{n}));
  return absl::OkStatus();
}

absl::Status Size(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        NeedDims(l, 0, "Size is computed at import time"));
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  l.SetConstOutput(0, OnnxHostTensor::FromInt64s({n}, Shape{}));
  return absl::OkStatus();
}

absl::Status ConstantOfShape(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, l.ConstInts(0, "shape"));
  OnnxHostTensor value = OnnxHostTensor::Fill(DType::kF32, Shape{1}, 0);
  if (const auto* a = l.Attr("value")) {
    RILL_ASSIGN_OR_RETURN(value, HostTensorFromProto(a->t(), l.state().budget));
    if (value.size() != 1)
      return absl::InvalidArgumentError("ConstantOfShape value must have one element");
  }
  RILL_RETURN_IF_ERROR(CheckConstShape(dims, value.dtype));
  l.SetConstOutput(0, OnnxHostTensor::Fill(value.dtype, Shape(dims), value.Doubles()[0]));
  return absl::OkStatus();
}

// ------------------------------------------------------------------ shape ops

absl::Status Reshape(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> shape, l.ConstInts(1, "shape"));
  if (l.Int("allowzero", 0) != 0 && std::count(shape.begin(), shape.end(), 0) > 0) {
    return L::Unsupported("allowzero=1 with a 0 in the shape");
  }
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kReshape, {x}, {{"shape", IntsAttr(shape)}}));
}

absl::Status Flatten(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  int64_t axis = l.Int("axis", 1);
  if (axis == 1) return Out(l, l.Op(op_names::kFlatten, {x}));
  if (axis == 0) return Out(l, l.Op(op_names::kReshape, {x}, {{"shape", "(1, -1)"}}));
  RILL_ASSIGN_OR_RETURN(int r, NeedRank(l, 0, "Flatten axis other than 0 or 1"));
  if (axis < -r || axis > r)
    return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " for rank ", r));
  if (axis < 0) axis += r;
  std::vector<int64_t> dims = *l.Dims(0);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < r; ++i) {
    int64_t& p = i < axis ? outer : inner;
    p = (p < 0 || dims[i] < 0) ? -1 : p * dims[i];
  }
  RILL_ASSIGN_OR_RETURN(Entry y, ReshapeTo(l, x, {outer, inner}));
  return Out(l, y);
}

absl::Status Transpose(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kTranspose, {x}, {{"axes", IntsAttr(l.Ints("perm"))}}));
}

absl::Status Concat(L& l) {
  std::vector<Entry> in;
  for (int i = 0; i < l.num_inputs(); ++i) {
    if (!l.has_input(i)) continue;
    RILL_ASSIGN_OR_RETURN(Entry x, l.In(i));
    in.push_back(x);
  }
  return Out(l, l.Op(op_names::kConcat, in, {{"axis", absl::StrCat(l.Int("axis", 0))}}));
}

absl::Status Unsqueeze(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(l, 1));
  auto dims = l.Dims(0);
  if (!dims) return L::Unsupported("needs the rank of its input");
  const int r = static_cast<int>(dims->size() + axes.size());
  RILL_ASSIGN_OR_RETURN(const std::vector<int64_t> norm, NormAxes(axes, r));
  std::vector<bool> ones(r, false);
  for (int64_t n : norm) ones[n] = true;
  std::vector<int64_t> out;
  size_t k = 0;
  for (int i = 0; i < r; ++i) out.push_back(ones[i] ? 1 : (*dims)[k++]);
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry y, ReshapeTo(l, x, out));
  return Out(l, y);
}

absl::Status Squeeze(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(l, 1));
  auto dims = l.Dims(0);
  if (!dims) return L::Unsupported("needs the rank of its input");
  const int r = static_cast<int>(dims->size());
  RILL_ASSIGN_OR_RETURN(const std::vector<int64_t> norm, NormAxes(axes, r));
  std::vector<bool> drop(r, false);
  for (int64_t n : norm) drop[n] = true;
  std::vector<int64_t> out;
  for (int i = 0; i < r; ++i) {
    if (axes.empty() && (*dims)[i] < 0)
      return L::Unsupported("Squeeze without axes needs a static shape");
    if (axes.empty() ? (*dims)[i] == 1 : drop[i]) continue;
    out.push_back((*dims)[i]);
  }
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry y, ReshapeTo(l, x, out));
  return Out(l, y);
}

absl::Status Slice(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        NeedDims(l, 0, "Slice bounds are resolved at import time"));
  const int r = static_cast<int>(dims.size());
  std::vector<int64_t> starts, ends, axes;
  if (l.opset() < 10) {  // Attributes before opset 10.
    starts = l.Ints("starts");
    ends = l.Ints("ends");
    axes = l.Ints("axes");
  } else {
    RILL_ASSIGN_OR_RETURN(starts, l.ConstInts(1, "starts"));
    RILL_ASSIGN_OR_RETURN(ends, l.ConstInts(2, "ends"));
  }
  if (axes.empty() && l.opset() >= 10 && l.has_input(3)) {
    RILL_ASSIGN_OR_RETURN(axes, l.ConstInts(3, "axes"));
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> steps(starts.size(), 1);
  if (l.opset() >= 10 && l.has_input(4)) {
    RILL_ASSIGN_OR_RETURN(steps, l.ConstInts(4, "steps"));
  }
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return absl::InvalidArgumentError("Slice starts, ends, axes and steps differ in length");
  }
  RILL_RETURN_IF_ERROR(NormAxes(axes, r).status());
  std::vector<int64_t> begin(r, 0), end(dims.begin(), dims.end());
  int last = -1;
  // Axes with a step other than 1: the indices they keep, gathered.
  std::vector<std::pair<int64_t, std::vector<int64_t>>> strided;
  for (size_t i = 0; i < axes.size(); ++i) {
    RILL_ASSIGN_OR_RETURN(int64_t a, NormAxis(axes[i], r));
    const int64_t n = dims[a], step = steps[i];
    if (step == 0) return absl::InvalidArgumentError("Slice step 0");
    int64_t b = starts[i] < 0 ? starts[i] + n : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + n : ends[i];
    if (step != 1) {
      // ONNX clamps to [0, n] for a positive step, [-1, n-1] for a negative one.
      b = step > 0 ? std::clamp<int64_t>(b, 0, n) : std::clamp<int64_t>(b, 0, n - 1);
      e = step > 0 ? std::clamp<int64_t>(e, 0, n) : std::clamp<int64_t>(e, -1, n - 1);
      std::vector<int64_t> keep;
      for (int64_t k = b; step > 0 ? k < e : k > e; k += step) keep.push_back(k);
      if (keep.empty()) return L::Unsupported("a Slice with an empty result");
      strided.emplace_back(a, std::move(keep));
      continue;
    }
    b = std::clamp<int64_t>(b, 0, n);
    e = std::clamp<int64_t>(e, b, n);
    begin[a] = b;
    end[a] = e;
    last = std::max(last, static_cast<int>(a));
  }
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  if (last < 0 && strided.empty()) return Out(l, l.Op(op_names::kIdentity, {x}));
  Entry y = x;
  if (last >= 0) {
    begin.resize(last + 1);
    end.resize(last + 1);
    y = l.Op(op_names::kSlice, {x}, {{"begin", IntsAttr(begin)}, {"end", IntsAttr(end)}});
  }
  for (auto& [a, keep] : strided) {
    const int64_t n = static_cast<int64_t>(keep.size());
    RILL_ASSIGN_OR_RETURN(Entry idx, l.Const(OnnxHostTensor::FromInt64s(keep, Shape{n})));
    y = l.Op(op_names::kGather, {y, idx}, {{"axis", absl::StrCat(a)}});
  }
  return Out(l, y);
}

absl::Status Expand(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> shape, l.ConstInts(1, "shape"));
  auto t = l.InType(0);
  if (!t) return L::Unsupported("needs the input's element type");
  RILL_RETURN_IF_ERROR(CheckConstShape(shape, *t));
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry zeros, l.Const(OnnxHostTensor::Fill(*t, Shape(shape), 0)));
  return Out(l, l.Op(op_names::kAdd, {x, zeros}));
}

const ConverterTable& Table() {
  static const ConverterTable* t = [] {
    auto* t = new ConverterTable{
        {"Abs", {Unary<kAbs>, kNumeric}},
        {"Acos", {Unary<kAcos>, kFloat}},
        {"Acosh", {Unary<kAcosh>, kFloat}},
        {"Add", {Binary<kAdd>, kNumeric}},
        {"Asin", {Unary<kAsin>, kFloat}},
        {"Asinh", {Unary<kAsinh>, kFloat}},
        {"Atan", {Unary<kAtan>, kFloat}},
        {"Atanh", {Unary<kAtanh>, kFloat}},
        {"Cast", {Cast, 0}},
        {"Ceil", {Unary<kCeil>, kFloat}},
        {"Celu", {Celu, kFloat}},
        {"Clip", {Clip, kNumeric}},
        {"Concat", {Concat, 0}},
        {"Constant", {Constant, 0}},
        {"ConstantOfShape", {ConstantOfShape, 0}},
        {"Cos", {Unary<kCos>, kFloat}},
        {"Cosh", {Unary<kCosh>, kFloat}},
        {"Div", {Binary<kDiv>, kNumeric}},
        {"Dropout", {Dropout, 0}},
        {"Elu", {Elu, kFloat}},
        {"Equal", {Compare<kEqual, false>, kNumeric}},
        {"Erf", {Unary<kErf>, kFloat}},
        {"Exp", {Unary<kExp>, kFloat}},
        {"Expand", {Expand, kNumeric}},
        {"Flatten", {Flatten, 0}},
        {"Floor", {Unary<kFloor>, kFloat}},
        {"Greater", {Compare<kGreater, false>, kNumeric}},
        {"HardSigmoid", {HardSigmoid, kFloat}},
        {"HardSwish", {HardSwish, kFloat}},
        {"Identity", {Identity, 0}},
        {"IsInf", {IsInf, kFloat}},
        {"IsNaN", {Unary<kIsNan>, kFloat}},
        {"LeakyRelu", {LeakyRelu, kFloat}},
        {"Less", {Compare<kGreater, true>, kNumeric}},
        {"Log", {Unary<kLog>, kFloat}},
        {"Max", {Variadic<kMaximum, false>, kNumeric}},
        {"Mean", {Variadic<kAdd, true>, kFloat}},
        {"Min", {Variadic<kMinimum, false>, kNumeric}},
        {"Mod", {Mod, kNumeric}},
        {"Mul", {Binary<kMul>, kNumeric}},
        {"Neg", {Unary<kNeg>, kNumeric}},
        {"PRelu", {PRelu, kFloat}},
        {"Pow", {Pow, kNumeric}},
        {"Reciprocal", {Reciprocal, kFloat}},
        {"Relu", {Unary<kRelu>, kNumeric}},
        {"Reshape", {Reshape, 0}},
        {"Round", {Unary<kRound>, kFloat}},
        {"Selu", {Selu, kFloat}},
        {"Shape", {ShapeOp, 0}},
        {"Shrink", {Shrink, kNumeric}},
        {"Sigmoid", {Unary<kSigmoid>, kFloat}},
        {"Sign", {Sign, kNumeric}},
        {"Sin", {Unary<kSin>, kFloat}},
        {"Sinh", {Unary<kSinh>, kFloat}},
        {"Size", {Size, 0}},
        {"Slice", {Slice, 0}},
        {"Softplus", {Softplus, kFloat}},
        {"Softsign", {Softsign, kFloat}},
        {"Sqrt", {Unary<kSqrt>, kFloat}},
        {"Squeeze", {Squeeze, 0}},
        {"Sub", {Binary<kSub>, kNumeric}},
        {"Sum", {Variadic<kAdd, false>, kNumeric}},
        {"Tan", {Unary<kTan>, kFloat}},
        {"Tanh", {Unary<kTanh>, kFloat}},
        {"ThresholdedRelu", {ThresholdedRelu, kFloat}},
        {"Transpose", {Transpose, 0}},
        {"Unsqueeze", {Unsqueeze, 0}},
    };
    AddNnConverters(*t);
    AddReduceConverters(*t);
    AddShapeConverters(*t);
    AddResizeConverters(*t);
    AddRnnConverters(*t);
    return t;
  }();
  return *t;
}

}  // namespace

const Converter* FindConverter(std::string_view op_type) {
  auto it = Table().find(op_type);
  return it == Table().end() ? nullptr : &it->second;
}

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> v;
  for (const auto& [name, c] : Table()) v.push_back(name);
  return v;
}

}  // namespace rill::graph
