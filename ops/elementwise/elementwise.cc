#include "rill/ops/elementwise/elementwise.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"

namespace rill::ops {

namespace {

// The output's axes for kernels that broadcast `ins` to `out`: size-1 axes
// dropped, neighbours merged where every input is contiguous across the
// pair (or broadcast along both); strides[j] are input j's, 0 along the
// axes it is broadcast over.
struct Collapsed {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;
};

absl::StatusOr<Collapsed> Collapse(absl::Span<const Shape* const> ins, const Shape& out) {
  const size_t n = ins.size();
  const int r = out.rank();
  Collapsed c;
  c.strides.resize(n);
  bool same = true;
  for (const Shape* s : ins) same = same && *s == out;
  if (same) {  // The common case: one flat axis.
    if (r > 0) {
      c.dims.push_back(out.NumElements());
      for (auto& s : c.strides) s.push_back(1);
    }
    return c;
  }
  // Each input's stride per output axis (aligned from the right).
  std::vector<std::vector<int64_t>> full(n, std::vector<int64_t>(r));
  for (size_t j = 0; j < n; ++j) {
    const Shape& s = *ins[j];
    int64_t stride = 1;
    for (int i = r - 1; i >= 0; --i) {
      const int k = s.rank() - r + i;
      const int64_t e = k >= 0 ? s[k] : 1;
      full[j][i] = e == 1 ? 0 : stride;
      stride *= e;
    }
  }
  for (int i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    bool merge = !c.dims.empty();
    for (size_t j = 0; merge && j < n; ++j) {
      const int64_t prev = c.strides[j].back(), cur = full[j][i];
      merge = (prev == 0 && cur == 0) || (cur != 0 && prev == cur * out[i]);
    }
    if (merge) {
      c.dims.back() *= out[i];
    } else {
      c.dims.push_back(out[i]);
      for (size_t j = 0; j < n; ++j) c.strides[j].push_back(0);
    }
    for (size_t j = 0; j < n; ++j) c.strides[j].back() = full[j][i];
  }
  if (c.dims.size() > static_cast<size_t>(kMaxRank)) {
    std::vector<std::string> names;
    for (const Shape* s : ins) names.push_back(s->ToString());
    return absl::UnimplementedError(absl::StrCat("broadcast of ", absl::StrJoin(names, ", "),
                                                 " to ", out.ToString(), " needs ", c.dims.size(),
                                                 " axes; kernels handle ", kMaxRank));
  }
  return c;
}

}  // namespace

absl::StatusOr<BroadcastPlan> MakeBroadcastPlan(const Shape& a, const Shape& b, const Shape& out) {
  const Shape* ins[] = {&a, &b};
  RILL_ASSIGN_OR_RETURN(Collapsed c, Collapse(ins, out));
  BroadcastPlan p;
  p.rank = static_cast<int64_t>(c.dims.size());
  for (size_t i = 0; i < c.dims.size(); ++i) {
    p.dims[i] = c.dims[i];
    p.a_strides[i] = c.strides[0][i];
    p.b_strides[i] = c.strides[1][i];
  }
  return p;
}

absl::StatusOr<WherePlan> MakeWherePlan(const Shape& cond, const Shape& x, const Shape& y,
                                        const Shape& out) {
  const Shape* ins[] = {&cond, &x, &y};
  RILL_ASSIGN_OR_RETURN(Collapsed c, Collapse(ins, out));
  WherePlan p;
  p.rank = static_cast<int64_t>(c.dims.size());
  for (size_t i = 0; i < c.dims.size(); ++i) {
    p.dims[i] = c.dims[i];
    p.c_strides[i] = c.strides[0][i];
    p.x_strides[i] = c.strides[1][i];
    p.y_strides[i] = c.strides[2][i];
  }
  return p;
}

namespace {

absl::Status BroadcastShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_ASSIGN_OR_RETURN((*out)[0], BroadcastShapes(ctx.in_shapes[0], ctx.in_shapes[1]));
  return absl::OkStatus();
}

absl::Status SameShapes(const InferContext& ctx, std::vector<Shape>* out) {
  for (size_t i = 1; i < ctx.in_shapes.size(); ++i) {
    if (ctx.in_shapes[i] != ctx.in_shapes[0]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes ", ctx.in_shapes[0].ToString(), " and ", ctx.in_shapes[i].ToString(), " differ"));
    }
  }
  (*out)[0] = ctx.in_shapes[0];
  return absl::OkStatus();
}

// Sums a gradient of `out_shape` down to `shape` (the broadcast's inverse).
absl::StatusOr<Tensor> SumTo(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  RILL_ASSIGN_OR_RETURN(auto r,
                        Invoke(op_names::kSumTo, {g}, {{"shape", FormatIntTuple(shape.span())}}));
  return r[0];
}

absl::StatusOr<Tensor> One(std::string_view op, absl::Span<const Tensor> in,
                           const Attrs& attrs = {}) {
  RILL_ASSIGN_OR_RETURN(auto r, Invoke(op, in, attrs));
  return r[0];
}

absl::StatusOr<std::vector<Tensor>> AddGrad(const GradientContext& c) {
  RILL_ASSIGN_OR_RETURN(Tensor ga, SumTo(c.out_grads[0], c.inputs[0].shape()));
  RILL_ASSIGN_OR_RETURN(Tensor gb, SumTo(c.out_grads[0], c.inputs[1].shape()));
  return std::vector<Tensor>{ga, gb};
}
absl::StatusOr<std::vector<Tensor>> SubGrad(const GradientContext& c) {
  RILL_ASSIGN_OR_RETURN(Tensor ga, SumTo(c.out_grads[0], c.inputs[0].shape()));
  RILL_ASSIGN_OR_RETURN(Tensor n, One(op_names::kNeg, {c.out_grads[0]}));
  RILL_ASSIGN_OR_RETURN(Tensor gb, SumTo(n, c.inputs[1].shape()));
  return std::vector<Tensor>{ga, gb};
}
absl::StatusOr<std::vector<Tensor>> MulGrad(const GradientContext& c) {
  RILL_ASSIGN_OR_RETURN(Tensor a, One(op_names::kMul, {c.out_grads[0], c.inputs[1]}));
  RILL_ASSIGN_OR_RETURN(Tensor b, One(op_names::kMul, {c.out_grads[0], c.inputs[0]}));
  RILL_ASSIGN_OR_RETURN(Tensor ga, SumTo(a, c.inputs[0].shape()));
  RILL_ASSIGN_OR_RETURN(Tensor gb, SumTo(b, c.inputs[1].shape()));
  return std::vector<Tensor>{ga, gb};
}
absl::StatusOr<std::vector<Tensor>> DivGrad(const GradientContext& c) {
  // d/da = g / b; d/db = -g * out / b.
  RILL_ASSIGN_OR_RETURN(Tensor a, One(op_names::kDiv, {c.out_grads[0], c.inputs[1]}));
  RILL_ASSIGN_OR_RETURN(Tensor t, One(op_names::kMul, {a, c.outputs[0]}));
  RILL_ASSIGN_OR_RETURN(Tensor b, One(op_names::kNeg, {t}));
  RILL_ASSIGN_OR_RETURN(Tensor ga, SumTo(a, c.inputs[0].shape()));
  RILL_ASSIGN_OR_RETURN(Tensor gb, SumTo(b, c.inputs[1].shape()));
  return std::vector<Tensor>{ga, gb};
}

absl::Status WhereShape(const InferContext& ctx, std::vector<Shape>* out) {
  const Shape &c = ctx.in_shapes[0], &x = ctx.in_shapes[1], &y = ctx.in_shapes[2];
  absl::StatusOr<Shape> s = BroadcastShapes(c, x);
  if (s.ok()) s = BroadcastShapes(*s, y);
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("condition ", c.ToString(), ", x ", x.ToString(),
                                                   " and y ", y.ToString(),
                                                   " do not broadcast: ", s.status().message()));
  }
  (*out)[0] = *s;
  return absl::OkStatus();
}

// The condition may have any type; x and y share the output's.
absl::Status WhereType(const InferContext& ctx, std::vector<DType>* out) {
  if (ctx.in_types[1] != ctx.in_types[2]) {
    return absl::InvalidArgumentError(absl::StrCat("x is ", DTypeName(ctx.in_types[1]),
                                                   " but y is ", DTypeName(ctx.in_types[2])));
  }
  (*out)[0] = ctx.in_types[1];
  return absl::OkStatus();
}

// dy where the condition holds to x, where it does not to y, each summed
// to its input's shape; none to the condition. The zeros are made from dy
// (dy > inf is 0 for every float, NaN included; dy - dy for integers).
absl::StatusOr<std::vector<Tensor>> WhereGrad(const GradientContext& c) {
  const Tensor &cond = c.inputs[0], &dy = c.out_grads[0];
  Tensor zeros;
  if (IsFloat(dy.dtype())) {
    RILL_ASSIGN_OR_RETURN(zeros, One(op_names::kGreaterScalar, {dy}, {{"scalar", "inf"}}));
  } else {
    RILL_ASSIGN_OR_RETURN(zeros, One(op_names::kSub, {dy, dy}));
  }
  RILL_ASSIGN_OR_RETURN(Tensor a, One(op_names::kWhere, {cond, dy, zeros}));
  RILL_ASSIGN_OR_RETURN(Tensor b, One(op_names::kWhere, {cond, zeros, dy}));
  RILL_ASSIGN_OR_RETURN(Tensor gx, SumTo(a, c.inputs[1].shape()));
  RILL_ASSIGN_OR_RETURN(Tensor gy, SumTo(b, c.inputs[2].shape()));
  return std::vector<Tensor>{Tensor(), gx, gy};
}

const char* BackwardName(UnaryCode code);

// dx = dy * f'(x), by the op's backward op (kUnaries).
template <UnaryCode kCode>
absl::StatusOr<std::vector<Tensor>> UnaryGrad(const GradientContext& c) {
  static const std::string name = BackwardName(kCode);
  // relu'(x) is 1 exactly where relu(x) > 0: reading the output instead of
  // the input lets a graph run relu in place (the input need not survive).
  const Tensor& at = kCode == UnaryCode::kRelu ? c.outputs[0] : c.inputs[0];
  RILL_ASSIGN_OR_RETURN(Tensor g, One(name, {c.out_grads[0], at}));
  return std::vector<Tensor>{g};
}

// Gradients of the scalar forms, composed from existing ops.
absl::StatusOr<Tensor> WithScalar(const char* op, const Tensor& x, double scalar) {
  return One(op, {x}, {{"scalar", absl::StrCat(scalar)}});
}

absl::StatusOr<std::vector<Tensor>> ScalarGrad(const GradientContext& c, std::string_view op) {
  const Tensor &dy = c.out_grads[0], &x = c.inputs[0], &y = c.outputs[0];
  const double s = c.p<ScalarParams>().scalar;
  Tensor g;
  if (op == op_names::kAddScalar || op == op_names::kSubScalar) {
    g = dy;
  } else if (op == op_names::kRsubScalar) {  // s - x.
    RILL_ASSIGN_OR_RETURN(g, One(op_names::kNeg, {dy}));
  } else if (op == op_names::kMulScalar) {
    RILL_ASSIGN_OR_RETURN(g, WithScalar(op_names::kMulScalar, dy, s));
  } else if (op == op_names::kDivScalar) {
    RILL_ASSIGN_OR_RETURN(g, WithScalar(op_names::kDivScalar, dy, s));
  } else if (op == op_names::kRdivScalar) {  // s / x: -y / x.
    RILL_ASSIGN_OR_RETURN(Tensor q, One(op_names::kDiv, {y, x}));
    RILL_ASSIGN_OR_RETURN(Tensor m, One(op_names::kMul, {dy, q}));
    RILL_ASSIGN_OR_RETURN(g, One(op_names::kNeg, {m}));
  } else if (op == op_names::kPowScalar) {  // x^s: s x^(s-1).
    RILL_ASSIGN_OR_RETURN(Tensor p, WithScalar(op_names::kPowScalar, x, s - 1));
    RILL_ASSIGN_OR_RETURN(Tensor d, WithScalar(op_names::kMulScalar, p, s));
    RILL_ASSIGN_OR_RETURN(g, One(op_names::kMul, {dy, d}));
  } else if (op == op_names::kRpowScalar) {  // s^x: ln(s) y.
    RILL_ASSIGN_OR_RETURN(Tensor d, WithScalar(op_names::kMulScalar, y, std::log(s)));
    RILL_ASSIGN_OR_RETURN(g, One(op_names::kMul, {dy, d}));
  } else if (op == op_names::kMaximumScalar) {  // Where x > s.
    RILL_ASSIGN_OR_RETURN(Tensor m, WithScalar(op_names::kGreaterScalar, x, s));
    RILL_ASSIGN_OR_RETURN(g, One(op_names::kMul, {dy, m}));
  } else if (op == op_names::kMinimumScalar) {  // Where x < s: 1 - (x >= s) is s > x.
    RILL_ASSIGN_OR_RETURN(Tensor n, One(op_names::kNeg, {x}));
    RILL_ASSIGN_OR_RETURN(Tensor m, WithScalar(op_names::kGreaterScalar, n, -s));
    RILL_ASSIGN_OR_RETURN(g, One(op_names::kMul, {dy, m}));
  } else {
    return absl::UnimplementedError(absl::StrCat("op '", std::string(op), "' has no gradient"));
  }
  return std::vector<Tensor>{g};
}

template <const char* kName>
absl::StatusOr<std::vector<Tensor>> ScalarGradOf(const GradientContext& c) {
  return ScalarGrad(c, kName);
}

// mod's types: one, and fmod=0 (the divisor's sign) for integers only, as
// ONNX Mod.
absl::Status ModType(const InferContext& ctx, std::vector<DType>* out) {
  RILL_RETURN_IF_ERROR(SameTypeAsInputs(ctx, out));
  const int64_t f = ctx.p<ModParams>().fmod;
  if (f != 0 && f != 1) {
    return absl::InvalidArgumentError(absl::StrCat("fmod must be 0 or 1, got ", f));
  }
  if (f == 0 && IsFloat(ctx.in_types[0])) {
    return absl::InvalidArgumentError(
        absl::StrCat("fmod=0 (the divisor's sign) takes integers, got ", DTypeName(ctx.in_types[0]),
                     "; fmod=1 (C fmod) takes floats"));
  }
  return absl::OkStatus();
}

// `v` as its shortest text that reads back the same ("0.5", "2147483648",
// "nan", "-inf"): StrCat's six digits would hide the bad value.
std::string ScalarText(double v) {
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// The scalar forms' types: an integer input takes a whole scalar in its
// type's range (docs/integer-semantics.md), so that the kernels' conversion
// is exact: not NaN, an infinity, a fraction or a value that would wrap.
absl::Status ScalarType(const InferContext& ctx, std::vector<DType>* out) {
  RILL_RETURN_IF_ERROR(SameTypeAsInputs(ctx, out));
  const DType t = ctx.in_types[0];
  if (IsFloat(t)) return absl::OkStatus();
  const double s = ctx.p<ScalarParams>().scalar;
  return DispatchDType(t, [&](auto v) -> absl::Status {
    using T = decltype(v);
    // [lo, top): both are 0 or powers of two, exact as doubles (int64's
    // max rounds up to 2^63 as a double).
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double top = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
    if (!(s >= lo && s < top && s == std::floor(s))) {
      return absl::InvalidArgumentError(
          absl::StrCat("scalar ", ScalarText(s), " is not a value of ", DTypeName(t),
                       ": an integer input takes a whole number in [",
                       +std::numeric_limits<T>::min(), ", ", +std::numeric_limits<T>::max(), "]"));
    }
    return absl::OkStatus();
  });
}

absl::Status BoolType(const InferContext& ctx, std::vector<DType>* out) {
  (*out)[0] = DType::kBool;
  return absl::OkStatus();
}

absl::Status IsInfType(const InferContext& ctx, std::vector<DType>* out) {
  const IsInfParams& p = ctx.p<IsInfParams>();
  for (int64_t v : {p.detect_positive, p.detect_negative}) {
    if (v != 0 && v != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("detect_positive and detect_negative are 0 or 1, got ", v));
    }
  }
  return BoolType(ctx, out);
}

// The unary ops: each with its backward op `_backward_<name>` (inputs dy,
// x), whose kernels take the same op code; the piecewise-constant ones
// (floor, ceil, round) have none, and no gradient flows through them.
struct UnaryInfo {
  const char* name;
  const char* backward;
  UnaryCode code;
  uint32_t dtypes;
  GradientFn grad;
};

template <UnaryCode kCode>
constexpr UnaryInfo Unary(const char* name, const char* backward, uint32_t dtypes) {
  return {name, backward, kCode, dtypes, UnaryGrad<kCode>};
}
constexpr UnaryInfo Step(const char* name, UnaryCode code) {
  return {name, nullptr, code, kFloatTypes, NoGradient};
}

constexpr UnaryInfo kUnaries[] = {
    Unary<UnaryCode::kNeg>(op_names::kNeg, op_names::kBackwardNeg, kNumericTypes),
    Unary<UnaryCode::kAbs>(op_names::kAbs, op_names::kBackwardAbs, kNumericTypes),
    Unary<UnaryCode::kExp>(op_names::kExp, op_names::kBackwardExp, kFloatTypes),
    Unary<UnaryCode::kLog>(op_names::kLog, op_names::kBackwardLog, kFloatTypes),
    Unary<UnaryCode::kSqrt>(op_names::kSqrt, op_names::kBackwardSqrt, kFloatTypes),
    Unary<UnaryCode::kRelu>(op_names::kRelu, op_names::kBackwardRelu, kNumericTypes),
    Unary<UnaryCode::kSigmoid>(op_names::kSigmoid, op_names::kBackwardSigmoid, kFloatTypes),
    Unary<UnaryCode::kTanh>(op_names::kTanh, op_names::kBackwardTanh, kFloatTypes),
    Unary<UnaryCode::kGelu>(op_names::kGelu, op_names::kBackwardGelu, kFloatTypes),
    Unary<UnaryCode::kSquare>(op_names::kSquare, op_names::kBackwardSquare, kNumericTypes),
    Unary<UnaryCode::kErf>(op_names::kErf, op_names::kBackwardErf, kFloatTypes),
    Step(op_names::kFloor, UnaryCode::kFloor),
    Step(op_names::kCeil, UnaryCode::kCeil),
    Step(op_names::kRound, UnaryCode::kRound),
    Unary<UnaryCode::kSin>(op_names::kSin, op_names::kBackwardSin, kFloatTypes),
    Unary<UnaryCode::kCos>(op_names::kCos, op_names::kBackwardCos, kFloatTypes),
    Unary<UnaryCode::kTan>(op_names::kTan, op_names::kBackwardTan, kFloatTypes),
    Unary<UnaryCode::kAsin>(op_names::kAsin, op_names::kBackwardAsin, kFloatTypes),
    Unary<UnaryCode::kAcos>(op_names::kAcos, op_names::kBackwardAcos, kFloatTypes),
    Unary<UnaryCode::kAtan>(op_names::kAtan, op_names::kBackwardAtan, kFloatTypes),
    Unary<UnaryCode::kSinh>(op_names::kSinh, op_names::kBackwardSinh, kFloatTypes),
    Unary<UnaryCode::kCosh>(op_names::kCosh, op_names::kBackwardCosh, kFloatTypes),
    Unary<UnaryCode::kAsinh>(op_names::kAsinh, op_names::kBackwardAsinh, kFloatTypes),
    Unary<UnaryCode::kAcosh>(op_names::kAcosh, op_names::kBackwardAcosh, kFloatTypes),
    Unary<UnaryCode::kAtanh>(op_names::kAtanh, op_names::kBackwardAtanh, kFloatTypes),
    Unary<UnaryCode::kCopy>(op_names::kIdentity, op_names::kBackwardCopy,
                            kAllTypesMask & ~DTypeBit(DType::kF16)),
};

const char* BackwardName(UnaryCode code) {
  for (const UnaryInfo& u : kUnaries) {
    if (u.code == code && u.backward != nullptr) return u.backward;
  }
  return op_names::kBackwardCopy;
}

}  // namespace

void RegisterElementwiseOps(OpRegistry& r) {
  const struct {
    const char* name;
    GradientFn grad;
    uint32_t dtypes;
  } binaries[] = {
      {op_names::kAdd, AddGrad, kNumericTypes},
      {op_names::kSub, SubGrad, kNumericTypes},
      {op_names::kMul, MulGrad, kNumericTypes},
      {op_names::kDiv, DivGrad, kNumericTypes},
      {op_names::kPow, nullptr, kFloatTypes},
      {op_names::kMaximum, nullptr, kNumericTypes},
      {op_names::kMinimum, nullptr, kNumericTypes},
      {op_names::kEqual, NoGradient, kNumericTypes},
      {op_names::kGreater, NoGradient, kNumericTypes},
  };
  for (const auto& b : binaries) {
    OpDef def(b.name);
    def.set_inputs({"a", "b"})
        .set_infer_shape(BroadcastShape)
        .set_dtypes(b.dtypes)
        .set_inplace({{0, 0}, {1, 0}})
        .set_gradient(b.grad);
    r.Check(r.Register(std::move(def)));
  }
  // where(condition, x, y): x where the condition is nonzero, else y; the
  // three broadcast (NumPy) to the output. The condition may be bool or any
  // numeric type; x and y share a type, the output's.
  r.Check(r.Register(OpDef(op_names::kWhere)
                         .set_inputs({"condition", "x", "y"})
                         .set_infer_shape(WhereShape)
                         .set_infer_type(WhereType)
                         .set_dtypes(kNumericTypes | DTypeBit(DType::kBool))
                         .set_inplace({{1, 0}, {2, 0}})
                         .set_gradient(WhereGrad)));
  // mod(a, b) (ONNX Mod), broadcasting: fmod=0 the floored remainder (the
  // divisor's sign, Python's %; integers only), fmod=1 C's fmod (the
  // dividend's sign). An integer divisor of 0 gives 0 (no trap). No
  // gradient.
  r.Check(r.Register(OpDef(op_names::kMod)
                         .set_inputs({"a", "b"})
                         .set_params(ParamSchema::For<ModParams>().Field(
                             "fmod", &ModParams::fmod,
                             "0 (default): the divisor's sign, integers only; 1: C fmod"))
                         .set_infer_shape(BroadcastShape)
                         .set_infer_type(ModType)
                         .set_dtypes(kNumericTypes)
                         .set_inplace({{0, 0}, {1, 0}})));
  // out += src: the framework's kAddTo for kernels that cannot add themselves.
  r.Check(r.Register(OpDef(op_names::kAccumulate)
                         .set_inputs({"dst", "src"})
                         .set_infer_shape(SameShapes)
                         .set_dtypes(kNumericTypes)
                         .set_inplace({{0, 0}})));
  const struct {
    const char* name;
    GradientFn grad;
  } scalars[] = {{op_names::kAddScalar, ScalarGradOf<op_names::kAddScalar>},
                 {op_names::kSubScalar, ScalarGradOf<op_names::kSubScalar>},
                 {op_names::kRsubScalar, ScalarGradOf<op_names::kRsubScalar>},
                 {op_names::kMulScalar, ScalarGradOf<op_names::kMulScalar>},
                 {op_names::kDivScalar, ScalarGradOf<op_names::kDivScalar>},
                 {op_names::kRdivScalar, ScalarGradOf<op_names::kRdivScalar>},
                 {op_names::kPowScalar, ScalarGradOf<op_names::kPowScalar>},
                 {op_names::kRpowScalar, ScalarGradOf<op_names::kRpowScalar>},
                 {op_names::kMaximumScalar, ScalarGradOf<op_names::kMaximumScalar>},
                 {op_names::kMinimumScalar, ScalarGradOf<op_names::kMinimumScalar>},
                 {op_names::kEqualScalar, nullptr},
                 {op_names::kGreaterScalar, nullptr}};
  for (const auto& sc : scalars) {
    const bool fl = std::string(sc.name).find("pow") != std::string::npos;
    r.Check(r.Register(OpDef(sc.name)
                           .set_params(ParamSchema::For<ScalarParams>().Required(
                               "scalar", &ScalarParams::scalar, "the scalar operand"))
                           .set_infer_type(ScalarType)
                           .set_dtypes(fl ? kFloatTypes : kNumericTypes)
                           .set_inplace({{0, 0}})
                           .set_gradient(sc.grad)));
  }
  for (const UnaryInfo& u : kUnaries) {
    r.Check(
        r.Register(OpDef(u.name).set_dtypes(u.dtypes).set_inplace({{0, 0}}).set_gradient(u.grad)));
    if (u.backward == nullptr) continue;
    // dx = dy * f'(x): inputs (dy, x).
    r.Check(r.Register(OpDef(u.backward)
                           .set_inputs({"dy", "x"})
                           .set_infer_shape(SameShapes)
                           .set_dtypes(u.dtypes)
                           .set_inplace({{0, 0}})));
  }
  // is_nan, is_inf (ONNX IsNaN, IsInf): bool, of float32 or float64.
  r.Check(r.Register(OpDef(op_names::kIsNan).set_infer_type(BoolType).set_gradient(NoGradient)));
  r.Check(r.Register(OpDef(op_names::kIsInf)
                         .set_params(ParamSchema::For<IsInfParams>()
                                         .Field("detect_positive", &IsInfParams::detect_positive,
                                                "1 (default): +inf counts; 0: it does not")
                                         .Field("detect_negative", &IsInfParams::detect_negative,
                                                "1 (default): -inf counts; 0: it does not"))
                         .set_infer_type(IsInfType)
                         .set_gradient(NoGradient)));
  RegisterElementwiseHostKernels(r);
  RegisterElementwiseDeviceKernels(r);
}

}  // namespace rill::ops
