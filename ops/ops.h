#ifndef RILL_OPS_OPS_H_
#define RILL_OPS_OPS_H_

// The imperative C++ API over Invoke: one function per common op, each
// returning the op's output (or the argument error; errors while the op
// runs poison the output, see Tensor).
//
//   RILL_ASSIGN_OR_RETURN(Tensor c, ops::Add(a, b));
//   RILL_RETURN_IF_ERROR(ops::AddTo(y, x));           // y += x, in place
//   RILL_ASSIGN_OR_RETURN(Tensor s, ops::Sum(c, {1}, /*keepdims=*/true));

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/ops/invoke.h"
#include "rill/tensor/tensor.h"

namespace rill::ops {

// The first output of `op` on `inputs` with `attrs`.
absl::StatusOr<Tensor> Call(std::string_view op, absl::Span<const Tensor> inputs,
                            const Attrs& attrs = {});

absl::StatusOr<Tensor> Add(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Sub(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Mul(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Div(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Maximum(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Minimum(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> AddScalar(const Tensor& a, double s);
absl::StatusOr<Tensor> MulScalar(const Tensor& a, double s);
absl::StatusOr<Tensor> Neg(const Tensor& x);
absl::StatusOr<Tensor> Exp(const Tensor& x);
absl::StatusOr<Tensor> Log(const Tensor& x);
absl::StatusOr<Tensor> Relu(const Tensor& x);
absl::StatusOr<Tensor> Sigmoid(const Tensor& x);
absl::StatusOr<Tensor> Tanh(const Tensor& x);
absl::StatusOr<Tensor> Erf(const Tensor& x);
// Rounding and trigonometry, of float32 and float64. round goes half to
// even (as ONNX Round and numpy.round); no gradient flows through floor,
// ceil and round.
absl::StatusOr<Tensor> Floor(const Tensor& x);
absl::StatusOr<Tensor> Ceil(const Tensor& x);
absl::StatusOr<Tensor> Round(const Tensor& x);
absl::StatusOr<Tensor> Sin(const Tensor& x);
absl::StatusOr<Tensor> Cos(const Tensor& x);
absl::StatusOr<Tensor> Tan(const Tensor& x);
absl::StatusOr<Tensor> Asin(const Tensor& x);
absl::StatusOr<Tensor> Acos(const Tensor& x);
absl::StatusOr<Tensor> Atan(const Tensor& x);
absl::StatusOr<Tensor> Sinh(const Tensor& x);
absl::StatusOr<Tensor> Cosh(const Tensor& x);
absl::StatusOr<Tensor> Asinh(const Tensor& x);
absl::StatusOr<Tensor> Acosh(const Tensor& x);
absl::StatusOr<Tensor> Atanh(const Tensor& x);
// bool tensors of x's shape: where x (float32 or float64) is NaN; where it
// is +inf (when detect_positive) or -inf (when detect_negative).
absl::StatusOr<Tensor> IsNan(const Tensor& x);
absl::StatusOr<Tensor> IsInf(const Tensor& x, bool detect_positive = true,
                             bool detect_negative = true);
// ONNX Mod, a and b broadcast (NumPy): fmod=false, the remainder with the
// divisor's sign (Python's %; integers only); fmod=true, C's fmod (the
// dividend's sign; floats and integers). An integer divisor of 0 gives 0.
absl::StatusOr<Tensor> Mod(const Tensor& a, const Tensor& b, bool fmod = false);
// x where `cond` is nonzero, else y; the three broadcast (NumPy). cond of
// any type; x and y of one type, the output's.
absl::StatusOr<Tensor> Where(const Tensor& cond, const Tensor& x, const Tensor& y);
// ONNX Gather: the slices of `data` along `axis` (negative from the end)
// at `indices` (int32 or int64; negative from the end); the output is
// data.shape[:axis] + indices.shape + data.shape[axis+1:]. An index out of
// range fails the op on host memory and is clamped by device kernels.
absl::StatusOr<Tensor> Gather(const Tensor& data, const Tensor& indices, int64_t axis = 0);
// ONNX GatherElements: out has the shape of `indices` (int32 or int64, the
// rank of `data`, no larger than it off `axis`); out[i][j][k] =
// data[indices[i][j][k]][j][k] for axis 0, and so on. Negative indices
// count from the end; out of range fails the op on host memory and is
// clamped by device kernels.
absl::StatusOr<Tensor> GatherElements(const Tensor& data, const Tensor& indices, int64_t axis = 0);
// ONNX CumSum along `axis` (negative from the end): exclusive leaves each
// element out of its own sum; reverse sums from the end. float32, float64,
// int32, int64.
absl::StatusOr<Tensor> CumSum(const Tensor& x, int64_t axis, bool exclusive = false,
                              bool reverse = false);
// y += x (same shape, or x broadcast to y), in place: one engine function.
absl::Status AddTo(const Tensor& y, const Tensor& x);
// Reductions over `axes` (empty: all). Sum and Prod take float32,
// float64, int32 and int64 (integer products wrap on overflow on host
// kernels); an empty extent gives 0 (sum) or 1 (prod). Prod's gradient is
// the product of the other elements, exact where x holds zeros.
absl::StatusOr<Tensor> Sum(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
absl::StatusOr<Tensor> Prod(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
absl::StatusOr<Tensor> Mean(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false);
absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b);

}  // namespace rill::ops

#endif  // RILL_OPS_OPS_H_
