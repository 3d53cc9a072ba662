#ifndef RILL_OPS_SHAPE_SHAPE_KERNELS_H_
#define RILL_OPS_SHAPE_SHAPE_KERNELS_H_

// The shape ops' kernels, written once over a platform's primitives:
//   struct Impl {
//     static absl::Status Copy(OpContext&, const StridedCopy&);
//     static absl::Status Contiguous(OpContext&, const TensorArg& src, const TensorArg& dst);
//     static absl::Status Zero(OpContext&, const TensorArg&);
//     static absl::Status Cast(OpContext&, const TensorArg& x, const TensorArg& y);
//     static absl::Status Gather(OpContext&, const TensorArg& data, const TensorArg& indices,
//                                const TensorArg& out, const GatherPlan&);
//     static absl::Status GatherBackward(OpContext&, const TensorArg& dy,
//                                        const TensorArg& indices, const TensorArg& dx,
//                                        const GatherPlan&);  // Writes all of dx.
//     static absl::Status GatherElements(OpContext&, const TensorArg& data,
//                                        const TensorArg& indices, const TensorArg& out,
//                                        const GatherElementsPlan&);
//     static absl::Status GatherElementsBackward(OpContext&, const TensorArg& dy,
//                                                const TensorArg& indices, const TensorArg& dx,
//                                                const GatherElementsPlan&);  // All of dx.
//   };
// (shape_host.cc, shape_device.cc).

#include "rill/base/status_macros.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/shape/shape.h"

namespace rill::ops::shape_internal {

template <typename Impl>
absl::Status CopyKernel(OpContext& ctx) {  // reshape, flatten.
  const TensorArg &x = ctx.in(0), &y = ctx.out(0);
  if (y.size() == 0) return absl::OkStatus();
  if (x.block.opaque() == y.block.opaque() && x.offset == y.offset) return absl::OkStatus();
  return Impl::Contiguous(ctx, x, y);
}

template <typename Impl>
absl::Status TransposeKernel(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &y = ctx.out(0);
  if (y.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                        TransposeAxes(ctx.params<TransposeParams>(), x.shape.rank()));
  RILL_ASSIGN_OR_RETURN(StridedCopy c, TransposeCopy(x, y, axes));
  return Impl::Copy(ctx, c);
}

template <typename Impl>
absl::Status SliceKernel(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &y = ctx.out(0);
  if (y.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(StridedCopy c, SliceCopy(x, y, ctx.params<SliceParams>(), false));
  return Impl::Copy(ctx, c);
}

template <typename Impl>
absl::Status SliceBackwardKernel(OpContext& ctx) {  // (dy, x) -> dx: zeros, dy in its place.
  const TensorArg &dy = ctx.in(0), &dx = ctx.out(0);
  if (dx.size() == 0) return absl::OkStatus();
  RILL_RETURN_IF_ERROR(Impl::Zero(ctx, dx));
  if (dy.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(StridedCopy c, SliceCopy(dx, dy, ctx.params<SliceParams>(), true));
  return Impl::Copy(ctx, c);
}

template <typename Impl>
absl::Status ConcatKernel(OpContext& ctx) {
  const TensorArg& y = ctx.out(0);
  if (y.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.params<ConcatParams>().axis, y.shape.rank()));
  int64_t offset = 0;
  for (const TensorArg& x : ctx.in()) {
    if (x.size() > 0) {
      RILL_ASSIGN_OR_RETURN(StridedCopy c, ConcatCopy(x, y, axis, offset));
      RILL_RETURN_IF_ERROR(Impl::Copy(ctx, c));
    }
    offset += x.shape[axis];
  }
  return absl::OkStatus();
}

template <typename Impl>
absl::Status CastKernel(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &y = ctx.out(0);
  if (y.size() == 0) return absl::OkStatus();
  return Impl::Cast(ctx, x, y);
}

template <typename Impl>
absl::Status GatherKernel(OpContext& ctx) {
  const TensorArg &data = ctx.in(0), &indices = ctx.in(1), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(GatherPlan p,
                        MakeGatherPlan(data.shape, indices.shape, ctx.params<GatherParams>().axis));
  return Impl::Gather(ctx, data, indices, out, p);
}

template <typename Impl>
absl::Status GatherBackwardKernel(OpContext& ctx) {  // (dy, data, indices) -> d data.
  const TensorArg &dy = ctx.in(0), &data = ctx.in(1), &indices = ctx.in(2), &dx = ctx.out(0);
  if (dx.size() == 0) return absl::OkStatus();
  if (dy.size() == 0) return Impl::Zero(ctx, dx);  // No indices.
  RILL_ASSIGN_OR_RETURN(GatherPlan p,
                        MakeGatherPlan(data.shape, indices.shape, ctx.params<GatherParams>().axis));
  return Impl::GatherBackward(ctx, dy, indices, dx, p);
}

template <typename Impl>
absl::Status GatherElementsKernel(OpContext& ctx) {
  const TensorArg &data = ctx.in(0), &indices = ctx.in(1), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(
      GatherElementsPlan p,
      MakeGatherElementsPlan(data.shape, indices.shape, ctx.params<GatherParams>().axis));
  return Impl::GatherElements(ctx, data, indices, out, p);
}

template <typename Impl>
absl::Status GatherElementsBackwardKernel(OpContext& ctx) {  // (dy, data, indices) -> d data.
  const TensorArg &dy = ctx.in(0), &data = ctx.in(1), &indices = ctx.in(2), &dx = ctx.out(0);
  if (dx.size() == 0) return absl::OkStatus();
  if (dy.size() == 0) return Impl::Zero(ctx, dx);  // No indices.
  RILL_ASSIGN_OR_RETURN(
      GatherElementsPlan p,
      MakeGatherElementsPlan(data.shape, indices.shape, ctx.params<GatherParams>().axis));
  return Impl::GatherElementsBackward(ctx, dy, indices, dx, p);
}

template <typename Impl>
void RegisterShapeKernels(OpRegistry& r, const KernelNeeds& platform) {
  r.Check(r.RegisterKernel("reshape", platform, {CopyKernel<Impl>, kWriteReqs}));
  r.Check(r.RegisterKernel("flatten", platform, {CopyKernel<Impl>, kWriteReqs}));
  r.Check(r.RegisterKernel("transpose", platform, {TransposeKernel<Impl>, kWriteReqs}));
  r.Check(r.RegisterKernel("slice", platform, {SliceKernel<Impl>, kWriteReqs}));
  r.Check(r.RegisterKernel("_backward_slice", platform, {SliceBackwardKernel<Impl>, kWriteReqs}));
  r.Check(r.RegisterKernel("concat", platform, {ConcatKernel<Impl>, kWriteReqs}));
  r.Check(r.RegisterKernel("cast", platform, {CastKernel<Impl>, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kGather, platform, {GatherKernel<Impl>, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardGather, platform,
                           {GatherBackwardKernel<Impl>, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kGatherElements, platform,
                           {GatherElementsKernel<Impl>, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardGatherElements, platform,
                           {GatherElementsBackwardKernel<Impl>, kWriteReqs}));
}

}  // namespace rill::ops::shape_internal

#endif  // RILL_OPS_SHAPE_SHAPE_KERNELS_H_
