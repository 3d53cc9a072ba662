#ifndef RILL_OPS_REDUCE_REDUCE_H_
#define RILL_OPS_REDUCE_REDUCE_H_

// Reductions (sum, prod, mean, max, argmax, sum_to), softmax and log_softmax with
// their backward ops, softmax cross-entropy, and cumsum. Definitions in reduce.cc;
// kernels beside them (reduce_host.cc, reduce_device.cc with the OpenCL C
// source and the CUDA launch path, reduce.cu), sharing the op codes and the
// reduce plan below.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/ops/op.h"
#include "rill/tensor/shape.h"

namespace rill::ops {

class OpRegistry;

// Op codes shared by every platform's kernels (the device kernels' `op`
// argument: 0 sum, 1 mean, 2 max, 3 prod).
enum class ReduceCode : int32_t { kSum, kMean, kMax, kProd };

struct ReduceParams {
  std::vector<int64_t> axes;  // Empty: every axis.
  bool keepdims = false;
};
struct ArgmaxParams {
  int64_t axis = -1;
  bool keepdims = false;
};
struct SumToParams {
  std::vector<int64_t> shape;
};
struct SoftmaxParams {
  int64_t axis = -1;
};
// cumsum (ONNX CumSum); exclusive and reverse are 0 or 1.
struct CumsumParams {
  int64_t axis = 0;       // Negative from the end.
  int64_t exclusive = 0;  // 1: each element left out of its own sum.
  int64_t reverse = 0;    // 1: sums from the end of the axis.
};

// How output element o maps to input elements: the input's axes with size-1
// axes dropped and neighbours of the same kind merged, split into kept axes
// (row-major order of the output) and reduced axes, each with its input
// stride. Same layout in OpenCL C and CUDA (all 64-bit).
inline constexpr int kMaxReduceRank = 6;
struct ReducePlan {
  int64_t out_rank = 0;
  int64_t out_dims[kMaxReduceRank] = {};
  int64_t out_strides[kMaxReduceRank] = {};
  int64_t red_rank = 0;
  int64_t red_dims[kMaxReduceRank] = {};
  int64_t red_strides[kMaxReduceRank] = {};
  int64_t red_size = 1;  // Elements reduced into each output (may be 0).
  // 1 when the innermost (stride 1) input axis is reduced; meaningful when
  // out_rank + red_rank > 0. (64-bit for the device structs' layout.)
  int64_t inner_reduced = 0;
};
// `reduced[i]`: whether input axis i is reduced. Unimplemented when the
// collapsed kept or reduced axes exceed kMaxReduceRank.
absl::StatusOr<ReducePlan> MakeReducePlan(const Shape& in, const std::vector<bool>& reduced);

// A shape split around one axis: [outer, n, inner] elements.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit SplitAt(const Shape& shape, int axis);

// Which input axes a reduction reduces: from ReduceParams (sum, prod, mean, max),
// SumToParams (sum_to) or ArgmaxParams (argmax), checked.
absl::StatusOr<std::vector<bool>> ReduceMask(const Shape& in, const ReduceParams& p);
absl::StatusOr<std::vector<bool>> SumToMask(const Shape& in, const std::vector<int64_t>& target);
absl::StatusOr<std::vector<bool>> ArgmaxMask(const Shape& in, int64_t axis);
// softmax_cross_entropy's error for `label` of row `row`, not a class index
// in [0, classes): every platform's kernels report it alike.
absl::Status BadLabelError(double label, int64_t row, int64_t classes);

// The plan of the reduction `ctx` runs (by its op's name and parameters).
absl::StatusOr<ReducePlan> PlanFor(const OpContext& ctx);

void RegisterReduceHostKernels(OpRegistry& registry);
void RegisterReduceDeviceKernels(OpRegistry& registry);

}  // namespace rill::ops

#endif  // RILL_OPS_REDUCE_REDUCE_H_
