#ifndef RILL_OPS_ELEMENTWISE_ELEMENTWISE_H_
#define RILL_OPS_ELEMENTWISE_ELEMENTWISE_H_

// Elementwise ops: unary math (with rounding and trigonometry), is_nan and
// is_inf, binary with NumPy broadcasting (mod among them), their scalar
// forms, comparisons, where (a select over three broadcast inputs), and the
// backward ops of the unary ones. Definitions
// in elementwise.cc; kernels for each platform beside them
// (elementwise_host.cc, elementwise_opencl.cc, elementwise.cu +
// elementwise_cuda.cc), sharing the op codes and the broadcast plan below.

#include <cstdint>

#include "absl/status/statusor.h"
#include "rill/ops/elementwise/elementwise_codes.h"
#include "rill/ops/op.h"
#include "rill/tensor/shape.h"

namespace rill::ops {

class OpRegistry;

// Op codes shared by every platform's kernels (the device kernels switch on
// them).
#define RILL_ELEMENTWISE_ENUMERATOR(k, NAME) k,
enum class BinaryCode : int32_t { RILL_BINARY_CODES(RILL_ELEMENTWISE_ENUMERATOR) };
enum class UnaryCode : int32_t { RILL_UNARY_CODES(RILL_ELEMENTWISE_ENUMERATOR) };
#undef RILL_ELEMENTWISE_ENUMERATOR

struct ScalarParams {
  double scalar = 0;
};
// mod (ONNX Mod): 0, the divisor's sign (integers only); 1, the dividend's
// (C fmod; floats and integers).
struct ModParams {
  int64_t fmod = 0;
};
// is_inf (ONNX IsInf): which infinities count (0 or 1 each).
struct IsInfParams {
  int64_t detect_positive = 1;
  int64_t detect_negative = 1;
};

// How output element i maps to the two inputs: the shapes collapsed to at
// most kMaxRank dimensions, with stride 0 along broadcast axes. Same layout
// in OpenCL C and CUDA (all 64-bit).
inline constexpr int kMaxRank = 6;
struct BroadcastPlan {
  int64_t rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
};
// Unimplemented when the collapsed rank exceeds kMaxRank.
absl::StatusOr<BroadcastPlan> MakeBroadcastPlan(const Shape& a, const Shape& b, const Shape& out);

// The same for where's three inputs (condition, x, y).
struct WherePlan {
  int64_t rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t c_strides[kMaxRank] = {};
  int64_t x_strides[kMaxRank] = {};
  int64_t y_strides[kMaxRank] = {};
};
absl::StatusOr<WherePlan> MakeWherePlan(const Shape& cond, const Shape& x, const Shape& y,
                                        const Shape& out);

void RegisterElementwiseOps(OpRegistry& registry);
void RegisterElementwiseHostKernels(OpRegistry& registry);
void RegisterElementwiseDeviceKernels(OpRegistry& registry);

}  // namespace rill::ops

#endif  // RILL_OPS_ELEMENTWISE_ELEMENTWISE_H_
