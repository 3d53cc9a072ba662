#ifndef RILL_OPS_SHAPE_SHAPE_H_
#define RILL_OPS_SHAPE_SHAPE_H_

// Shape ops: reshape, flatten (copies into new storage; Tensor::Reshape is
// the view), transpose, concat, slice (+ _backward_slice), cast, gather
// (+ _backward_gather), gather_elements (+ _backward_gather_elements).
// Every op but cast and the gathers' backward ops moves
// elements of 1, 2, 4 or 8 bytes without arithmetic (most as one strided
// copy, CopyPlan), so they take every type. Definitions in shape.cc; host
// kernels in shape_host.cc; OpenCL and CUDA launch code in shape_device.cc,
// CUDA kernels in shape.cu.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/ops/op.h"

namespace rill::ops {

class OpRegistry;

struct ReshapeParams {
  std::vector<int64_t> shape;  // -1: inferred (once); 0: the input's dimension.
};
struct TransposeParams {
  std::vector<int64_t> axes;  // Empty: reversed.
};
struct ConcatParams {
  int64_t axis = 0;
};
struct SliceParams {
  std::vector<int64_t> begin;  // Per leading axis; negative from the end.
  std::vector<int64_t> end;
};
struct CastParams {
  DType dtype = DType::kF32;
};
struct GatherParams {
  int64_t axis = 0;  // Of data; negative from the end.
};

// dst[dst_base + sum k_d dst_strides[d]] = src[src_base + sum k_d src_strides[d]]
// over k < dims, in elements. Same layout in OpenCL C and CUDA.
inline constexpr int kCopyMaxRank = 6;
struct CopyPlan {
  int64_t rank = 0;
  int64_t dims[kCopyMaxRank] = {};
  int64_t src_strides[kCopyMaxRank] = {};
  int64_t dst_strides[kCopyMaxRank] = {};
};
// A plan from full-rank dims and strides: size-1 axes dropped, mergeable
// neighbours merged; Unimplemented beyond kCopyMaxRank axes.
absl::StatusOr<CopyPlan> MakeCopyPlan(absl::Span<const int64_t> dims, absl::Span<const int64_t> src,
                                      absl::Span<const int64_t> dst);
std::vector<int64_t> ContiguousStrides(const Shape& shape);

// One strided copy: enqueued by the platform's kernel. src_base and
// dst_base (elements) are added to the tensors' offsets.
struct StridedCopy {
  TensorArg src, dst;
  int64_t src_base = 0, dst_base = 0;
  CopyPlan plan;
  int64_t count = 0;
};
// Plans for each op (shape.cc), shared by every platform's kernels.
// Transpose of `in` by `axes` (normalized) into a contiguous output.
absl::StatusOr<StridedCopy> TransposeCopy(const TensorArg& in, const TensorArg& out,
                                          absl::Span<const int64_t> axes);
// The normalized begin of each axis of `in` for `p` and the output shape.
absl::Status SliceBounds(const Shape& in, const SliceParams& p, std::vector<int64_t>* begin,
                         Shape* out);
// Slice of `big` into `small` (forward), or `small` into `big` (backward).
absl::StatusOr<StridedCopy> SliceCopy(const TensorArg& big, const TensorArg& small,
                                      const SliceParams& p, bool backward);
// Input i of concat into its place in `out`.
absl::StatusOr<StridedCopy> ConcatCopy(const TensorArg& in, const TensorArg& out, int axis,
                                       int64_t offset);
absl::StatusOr<std::vector<int64_t>> TransposeAxes(const TransposeParams& p, int rank);

// gather (ONNX Gather): data seen as [outer, axis_dim, inner] around the
// axis, the indices as `count` entries, the output as [outer, count,
// inner]. Same layout in OpenCL C and CUDA.
struct GatherPlan {
  int64_t outer = 0;
  int64_t axis_dim = 0;
  int64_t inner = 0;
  int64_t count = 0;
};
// InvalidArgument when `axis` is not an axis of `data`.
absl::StatusOr<GatherPlan> MakeGatherPlan(const Shape& data, const Shape& indices, int64_t axis);

// gather_elements (ONNX GatherElements; GatherParams): the output has the
// indices' shape, and out[c] = data[c with c[axis] = indices[c]]. The two
// shapes collapsed (axes of size 1 in both dropped; neighbours off the axis
// merged where indices span data's extent), both contiguous. Same layout in
// OpenCL C and CUDA.
struct GatherElementsPlan {
  int64_t rank = 0;
  int64_t axis = 0;  // In the collapsed axes.
  int64_t data_dims[kCopyMaxRank] = {};
  int64_t index_dims[kCopyMaxRank] = {};  // The indices' and the output's.
};
// InvalidArgument for shapes gather_elements rejects; Unimplemented beyond
// kCopyMaxRank collapsed axes.
absl::StatusOr<GatherElementsPlan> MakeGatherElementsPlan(const Shape& data, const Shape& indices,
                                                          int64_t axis);

// The error of gather, gather_elements and their backwards for `index`,
// the `at`-th (flat) index, out of [-dim, dim) along an axis of `dim`:
// InvalidArgument on every platform.
absl::Status BadIndexError(int64_t index, int64_t at, int64_t dim);

void RegisterShapeHostKernels(OpRegistry& registry);
void RegisterShapeDeviceKernels(OpRegistry& registry);

}  // namespace rill::ops

#endif  // RILL_OPS_SHAPE_SHAPE_H_
