#include "rill/ops/ops.h"

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/elementwise/elementwise.h"
#include "rill/ops/op_names.h"
#include "rill/ops/reduce/reduce.h"
#include "rill/ops/shape/shape.h"

namespace rill::ops {
namespace {

absl::StatusOr<Tensor> First(absl::StatusOr<std::vector<Tensor>> r) {
  if (!r.ok()) return r.status();
  return std::move((*r)[0]);
}

template <size_t N>
absl::StatusOr<Tensor> Run(const OpDef& op, const Tensor (&in)[N],
                           std::shared_ptr<const void> p = nullptr) {
  return First(Invoke(op, absl::MakeConstSpan(in, N), std::move(p)));
}

#define RILL_OP(name) static const OpDef& op = BuiltinOp(name)

}  // namespace

absl::StatusOr<Tensor> Call(std::string_view op, absl::Span<const Tensor> inputs,
                            const Attrs& attrs) {
  return First(Invoke(op, inputs, attrs));
}

absl::StatusOr<Tensor> Add(const Tensor& a, const Tensor& b) {
  RILL_OP(op_names::kAdd);
  return Run(op, {a, b});
}
absl::StatusOr<Tensor> Sub(const Tensor& a, const Tensor& b) {
  RILL_OP(op_names::kSub);
  return Run(op, {a, b});
}
absl::StatusOr<Tensor> Mul(const Tensor& a, const Tensor& b) {
  RILL_OP(op_names::kMul);
  return Run(op, {a, b});
}
absl::StatusOr<Tensor> Div(const Tensor& a, const Tensor& b) {
  RILL_OP(op_names::kDiv);
  return Run(op, {a, b});
}
absl::StatusOr<Tensor> Maximum(const Tensor& a, const Tensor& b) {
  RILL_OP(op_names::kMaximum);
  return Run(op, {a, b});
}
absl::StatusOr<Tensor> Minimum(const Tensor& a, const Tensor& b) {
  RILL_OP(op_names::kMinimum);
  return Run(op, {a, b});
}
absl::StatusOr<Tensor> AddScalar(const Tensor& a, double s) {
  RILL_OP(op_names::kAddScalar);
  return Run(op, {a}, MakeParams(ScalarParams{s}));
}
absl::StatusOr<Tensor> MulScalar(const Tensor& a, double s) {
  RILL_OP(op_names::kMulScalar);
  return Run(op, {a}, MakeParams(ScalarParams{s}));
}
absl::StatusOr<Tensor> Neg(const Tensor& x) {
  RILL_OP(op_names::kNeg);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Exp(const Tensor& x) {
  RILL_OP(op_names::kExp);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Log(const Tensor& x) {
  RILL_OP(op_names::kLog);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Relu(const Tensor& x) {
  RILL_OP(op_names::kRelu);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Sigmoid(const Tensor& x) {
  RILL_OP(op_names::kSigmoid);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Tanh(const Tensor& x) {
  RILL_OP(op_names::kTanh);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Erf(const Tensor& x) {
  RILL_OP(op_names::kErf);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Floor(const Tensor& x) {
  RILL_OP(op_names::kFloor);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Ceil(const Tensor& x) {
  RILL_OP(op_names::kCeil);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Round(const Tensor& x) {
  RILL_OP(op_names::kRound);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Sin(const Tensor& x) {
  RILL_OP(op_names::kSin);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Cos(const Tensor& x) {
  RILL_OP(op_names::kCos);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Tan(const Tensor& x) {
  RILL_OP(op_names::kTan);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Asin(const Tensor& x) {
  RILL_OP(op_names::kAsin);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Acos(const Tensor& x) {
  RILL_OP(op_names::kAcos);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Atan(const Tensor& x) {
  RILL_OP(op_names::kAtan);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Sinh(const Tensor& x) {
  RILL_OP(op_names::kSinh);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Cosh(const Tensor& x) {
  RILL_OP(op_names::kCosh);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Asinh(const Tensor& x) {
  RILL_OP(op_names::kAsinh);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Acosh(const Tensor& x) {
  RILL_OP(op_names::kAcosh);
  return Run(op, {x});
}
absl::StatusOr<Tensor> Atanh(const Tensor& x) {
  RILL_OP(op_names::kAtanh);
  return Run(op, {x});
}
absl::StatusOr<Tensor> IsNan(const Tensor& x) {
  RILL_OP(op_names::kIsNan);
  return Run(op, {x});
}
absl::StatusOr<Tensor> IsInf(const Tensor& x, bool detect_positive, bool detect_negative) {
  RILL_OP(op_names::kIsInf);
  return Run(op, {x}, MakeParams(IsInfParams{detect_positive ? 1 : 0, detect_negative ? 1 : 0}));
}
absl::StatusOr<Tensor> Mod(const Tensor& a, const Tensor& b, bool fmod) {
  RILL_OP(op_names::kMod);
  return Run(op, {a, b}, MakeParams(ModParams{fmod ? 1 : 0}));
}
absl::StatusOr<Tensor> Where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  RILL_OP(op_names::kWhere);
  return Run(op, {cond, x, y});
}
absl::StatusOr<Tensor> Gather(const Tensor& data, const Tensor& indices, int64_t axis) {
  RILL_OP(op_names::kGather);
  return Run(op, {data, indices}, MakeParams(GatherParams{axis}));
}
absl::StatusOr<Tensor> GatherElements(const Tensor& data, const Tensor& indices, int64_t axis) {
  RILL_OP(op_names::kGatherElements);
  return Run(op, {data, indices}, MakeParams(GatherParams{axis}));
}
absl::StatusOr<Tensor> CumSum(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  RILL_OP(op_names::kCumsum);
  return Run(op, {x}, MakeParams(CumsumParams{axis, exclusive ? 1 : 0, reverse ? 1 : 0}));
}

absl::Status AddTo(const Tensor& y, const Tensor& x) {
  RILL_OP(op_names::kAdd);
  const Tensor in[2] = {y, x};
  return InvokeInto(op, in, nullptr, absl::MakeConstSpan(&y, 1));
}

absl::StatusOr<Tensor> Sum(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return Call(op_names::kSum, {x},
              {{"axes", FormatIntTuple(axes)}, {"keepdims", keepdims ? "1" : "0"}});
}
absl::StatusOr<Tensor> Prod(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return Call(op_names::kProd, {x},
              {{"axes", FormatIntTuple(axes)}, {"keepdims", keepdims ? "1" : "0"}});
}
absl::StatusOr<Tensor> Mean(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
  return Call(op_names::kMean, {x},
              {{"axes", FormatIntTuple(axes)}, {"keepdims", keepdims ? "1" : "0"}});
}
absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b) {
  return Call(op_names::kMatmul, {a, b});
}

}  // namespace rill::ops
