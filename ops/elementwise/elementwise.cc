#include "rill/ops/elementwise/elementwise.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_registry.h"

namespace rill::ops {

absl::StatusOr<BroadcastPlan> MakeBroadcastPlan(const Shape& a, const Shape& b, const Shape& out) {
  if (a == out && b == out) {  // The common case: one flat axis.
    BroadcastPlan p;
    p.rank = out.rank() == 0 ? 0 : 1;
    p.dims[0] = out.NumElements();
    p.a_strides[0] = p.b_strides[0] = 1;
    return p;
  }
  // Align to the output's rank; drop size-1 output axes; merge neighbours
  // whose broadcast pattern agrees.
  const int r = out.rank();
  std::vector<int64_t> dims, sa, sb;
  int64_t stride_a = 1, stride_b = 1;
  std::vector<int64_t> da(r), db(r);
  for (int i = r - 1; i >= 0; --i) {
    const int ia = a.rank() - r + i, ib = b.rank() - r + i;
    const int64_t ea = ia >= 0 ? a[ia] : 1, eb = ib >= 0 ? b[ib] : 1;
    da[i] = ea == 1 ? 0 : stride_a;
    db[i] = eb == 1 ? 0 : stride_b;
    stride_a *= ea;
    stride_b *= eb;
  }
  for (int i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    if (!dims.empty()) {
      const size_t k = dims.size() - 1;
      // Merge axis i into the previous one when both inputs are contiguous
      // across the pair (or both broadcast along both).
      const bool a_ok = (sa[k] == 0 && da[i] == 0) || (da[i] != 0 && sa[k] == da[i] * out[i]);
      const bool b_ok = (sb[k] == 0 && db[i] == 0) || (db[i] != 0 && sb[k] == db[i] * out[i]);
      if (a_ok && b_ok) {
        dims[k] *= out[i];
        sa[k] = da[i];
        sb[k] = db[i];
        continue;
      }
    }
    dims.push_back(out[i]);
    sa.push_back(da[i]);
    sb.push_back(db[i]);
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return absl::UnimplementedError(absl::StrCat("broadcast of ", a.ToString(), " and ",
                                                 b.ToString(), " needs ", dims.size(),
                                                 " axes; kernels handle ", kMaxRank));
  }
  BroadcastPlan p;
  p.rank = static_cast<int64_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    p.dims[i] = dims[i];
    p.a_strides[i] = sa[i];
    p.b_strides[i] = sb[i];
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
  RILL_ASSIGN_OR_RETURN(auto r, Invoke("sum_to", {g}, {{"shape", FormatIntTuple(shape.span())}}));
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
  RILL_ASSIGN_OR_RETURN(Tensor n, One("neg", {c.out_grads[0]}));
  RILL_ASSIGN_OR_RETURN(Tensor gb, SumTo(n, c.inputs[1].shape()));
  return std::vector<Tensor>{ga, gb};
}
absl::StatusOr<std::vector<Tensor>> MulGrad(const GradientContext& c) {
  RILL_ASSIGN_OR_RETURN(Tensor a, One("mul", {c.out_grads[0], c.inputs[1]}));
  RILL_ASSIGN_OR_RETURN(Tensor b, One("mul", {c.out_grads[0], c.inputs[0]}));
  RILL_ASSIGN_OR_RETURN(Tensor ga, SumTo(a, c.inputs[0].shape()));
  RILL_ASSIGN_OR_RETURN(Tensor gb, SumTo(b, c.inputs[1].shape()));
  return std::vector<Tensor>{ga, gb};
}
absl::StatusOr<std::vector<Tensor>> DivGrad(const GradientContext& c) {
  // d/da = g / b; d/db = -g * out / b.
  RILL_ASSIGN_OR_RETURN(Tensor a, One("div", {c.out_grads[0], c.inputs[1]}));
  RILL_ASSIGN_OR_RETURN(Tensor t, One("mul", {a, c.outputs[0]}));
  RILL_ASSIGN_OR_RETURN(Tensor b, One("neg", {t}));
  RILL_ASSIGN_OR_RETURN(Tensor ga, SumTo(a, c.inputs[0].shape()));
  RILL_ASSIGN_OR_RETURN(Tensor gb, SumTo(b, c.inputs[1].shape()));
  return std::vector<Tensor>{ga, gb};
}

template <UnaryCode kCode>
absl::StatusOr<std::vector<Tensor>> UnaryGrad(const GradientContext& c) {
  static const std::string name = [] {
    switch (kCode) {
      case UnaryCode::kNeg:
        return std::string("_backward_neg");
      case UnaryCode::kAbs:
        return std::string("_backward_abs");
      case UnaryCode::kExp:
        return std::string("_backward_exp");
      case UnaryCode::kLog:
        return std::string("_backward_log");
      case UnaryCode::kSqrt:
        return std::string("_backward_sqrt");
      case UnaryCode::kRelu:
        return std::string("_backward_relu");
      case UnaryCode::kSigmoid:
        return std::string("_backward_sigmoid");
      case UnaryCode::kTanh:
        return std::string("_backward_tanh");
      case UnaryCode::kGelu:
        return std::string("_backward_gelu");
      case UnaryCode::kSquare:
        return std::string("_backward_square");
      default:
        return std::string("_backward_copy");
    }
  }();
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
  if (op == "add_scalar" || op == "sub_scalar") {
    g = dy;
  } else if (op == "rsub_scalar") {  // s - x.
    RILL_ASSIGN_OR_RETURN(g, One("neg", {dy}));
  } else if (op == "mul_scalar") {
    RILL_ASSIGN_OR_RETURN(g, WithScalar("mul_scalar", dy, s));
  } else if (op == "div_scalar") {
    RILL_ASSIGN_OR_RETURN(g, WithScalar("div_scalar", dy, s));
  } else if (op == "rdiv_scalar") {  // s / x: -y / x.
    RILL_ASSIGN_OR_RETURN(Tensor q, One("div", {y, x}));
    RILL_ASSIGN_OR_RETURN(Tensor m, One("mul", {dy, q}));
    RILL_ASSIGN_OR_RETURN(g, One("neg", {m}));
  } else if (op == "pow_scalar") {  // x^s: s x^(s-1).
    RILL_ASSIGN_OR_RETURN(Tensor p, WithScalar("pow_scalar", x, s - 1));
    RILL_ASSIGN_OR_RETURN(Tensor d, WithScalar("mul_scalar", p, s));
    RILL_ASSIGN_OR_RETURN(g, One("mul", {dy, d}));
  } else if (op == "rpow_scalar") {  // s^x: ln(s) y.
    RILL_ASSIGN_OR_RETURN(Tensor d, WithScalar("mul_scalar", y, std::log(s)));
    RILL_ASSIGN_OR_RETURN(g, One("mul", {dy, d}));
  } else if (op == "maximum_scalar") {  // Where x > s.
    RILL_ASSIGN_OR_RETURN(Tensor m, WithScalar("greater_scalar", x, s));
    RILL_ASSIGN_OR_RETURN(g, One("mul", {dy, m}));
  } else if (op == "minimum_scalar") {  // Where x < s: 1 - (x >= s) is s > x.
    RILL_ASSIGN_OR_RETURN(Tensor n, One("neg", {x}));
    RILL_ASSIGN_OR_RETURN(Tensor m, WithScalar("greater_scalar", n, -s));
    RILL_ASSIGN_OR_RETURN(g, One("mul", {dy, m}));
  } else {
    return absl::UnimplementedError(absl::StrCat("op '", std::string(op), "' has no gradient"));
  }
  return std::vector<Tensor>{g};
}

template <const char* kName>
absl::StatusOr<std::vector<Tensor>> ScalarGradOf(const GradientContext& c) {
  return ScalarGrad(c, kName);
}

constexpr char kAddScalar[] = "add_scalar", kSubScalar[] = "sub_scalar",
               kRsubScalar[] = "rsub_scalar", kMulScalar[] = "mul_scalar",
               kDivScalar[] = "div_scalar", kRdivScalar[] = "rdiv_scalar",
               kPowScalar[] = "pow_scalar", kRpowScalar[] = "rpow_scalar",
               kMaxScalar[] = "maximum_scalar", kMinScalar[] = "minimum_scalar";

struct UnaryInfo {
  const char* name;
  UnaryCode code;
  uint32_t dtypes;
  GradientFn grad;
};

}  // namespace

void RegisterElementwiseOps(OpRegistry& r) {
  const struct {
    const char* name;
    GradientFn grad;
    uint32_t dtypes;
  } binaries[] = {
      {"add", AddGrad, kNumericTypes},        {"sub", SubGrad, kNumericTypes},
      {"mul", MulGrad, kNumericTypes},        {"div", DivGrad, kNumericTypes},
      {"pow", nullptr, kFloatTypes},          {"maximum", nullptr, kNumericTypes},
      {"minimum", nullptr, kNumericTypes},    {"equal", NoGradient, kNumericTypes},
      {"greater", NoGradient, kNumericTypes},
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
  // out += src: the framework's kAddTo for kernels that cannot add themselves.
  r.Check(r.Register(OpDef("_accumulate")
                         .set_inputs({"dst", "src"})
                         .set_infer_shape(SameShapes)
                         .set_dtypes(kNumericTypes)
                         .set_inplace({{0, 0}})));
  const struct {
    const char* name;
    GradientFn grad;
  } scalars[] = {{kAddScalar, ScalarGradOf<kAddScalar>},
                 {kSubScalar, ScalarGradOf<kSubScalar>},
                 {kRsubScalar, ScalarGradOf<kRsubScalar>},
                 {kMulScalar, ScalarGradOf<kMulScalar>},
                 {kDivScalar, ScalarGradOf<kDivScalar>},
                 {kRdivScalar, ScalarGradOf<kRdivScalar>},
                 {kPowScalar, ScalarGradOf<kPowScalar>},
                 {kRpowScalar, ScalarGradOf<kRpowScalar>},
                 {kMaxScalar, ScalarGradOf<kMaxScalar>},
                 {kMinScalar, ScalarGradOf<kMinScalar>},
                 {"equal_scalar", nullptr},
                 {"greater_scalar", nullptr}};
  for (const auto& sc : scalars) {
    const bool fl = std::string(sc.name).find("pow") != std::string::npos;
    r.Check(r.Register(OpDef(sc.name)
                           .set_params(ParamSchema::For<ScalarParams>().Required(
                               "scalar", &ScalarParams::scalar, "the scalar operand"))
                           .set_dtypes(fl ? kFloatTypes : kNumericTypes)
                           .set_inplace({{0, 0}})
                           .set_gradient(sc.grad)));
  }
  const UnaryInfo unaries[] = {
      {"neg", UnaryCode::kNeg, kNumericTypes, UnaryGrad<UnaryCode::kNeg>},
      {"abs", UnaryCode::kAbs, kNumericTypes, UnaryGrad<UnaryCode::kAbs>},
      {"exp", UnaryCode::kExp, kFloatTypes, UnaryGrad<UnaryCode::kExp>},
      {"log", UnaryCode::kLog, kFloatTypes, UnaryGrad<UnaryCode::kLog>},
      {"sqrt", UnaryCode::kSqrt, kFloatTypes, UnaryGrad<UnaryCode::kSqrt>},
      {"relu", UnaryCode::kRelu, kNumericTypes, UnaryGrad<UnaryCode::kRelu>},
      {"sigmoid", UnaryCode::kSigmoid, kFloatTypes, UnaryGrad<UnaryCode::kSigmoid>},
      {"tanh", UnaryCode::kTanh, kFloatTypes, UnaryGrad<UnaryCode::kTanh>},
      {"gelu", UnaryCode::kGelu, kFloatTypes, UnaryGrad<UnaryCode::kGelu>},
      {"square", UnaryCode::kSquare, kNumericTypes, UnaryGrad<UnaryCode::kSquare>},
      {"identity", UnaryCode::kCopy, kAllTypesMask & ~DTypeBit(DType::kF16),
       UnaryGrad<UnaryCode::kCopy>},
  };
  for (const UnaryInfo& u : unaries) {
    r.Check(
        r.Register(OpDef(u.name).set_dtypes(u.dtypes).set_inplace({{0, 0}}).set_gradient(u.grad)));
    // dx = dy * f'(x): inputs (dy, x).
    r.Check(r.Register(
        OpDef(absl::StrCat("_backward_", u.name == std::string("identity") ? "copy" : u.name))
            .set_inputs({"dy", "x"})
            .set_infer_shape(SameShapes)
            .set_dtypes(u.dtypes)
            .set_inplace({{0, 0}})));
  }
  RegisterElementwiseHostKernels(r);
  RegisterElementwiseDeviceKernels(r);
}

}  // namespace rill::ops
