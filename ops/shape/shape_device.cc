// Device kernels of the shape ops: the strided copy, cast, gather and
// gather_elements below in OpenCL C, CUDA in shape.cu (strided_copy_b32,
// cast_f16_f32, gather_b32_i64, gather_backward_f32_i32,
// gather_elements_b8_i32, check_indices_i64, ...); contiguous copies and zero fills are stream
// memory operations.

#include <string>

#include "absl/strings/str_cat.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/device_check.h"
#include "rill/ops/device_kernel.h"
#include "rill/ops/shape/shape_kernels.h"
#include "rill/platform/platform.h"
#include "rill/stream/stream.h"

RILL_OPS_DECLARE_FATBIN(shape);

namespace rill::ops {
namespace {

constexpr char kCopySource[] = R"CLC(
typedef struct { long rank; long dims[6]; long src[6]; long dst[6]; } CopyPlan;
__kernel void strided_copy(__global const B* src, ulong src_off, __global B* dst, ulong dst_off,
                           ulong n, CopyPlan p) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  long rem = (long)i, is = 0, id = 0;
  for (int d = (int)p.rank - 1; d >= 0; --d) {
    long k = rem % p.dims[d];
    rem /= p.dims[d];
    is += k * p.src[d];
    id += k * p.dst[d];
  }
  dst[dst_off + id] = src[src_off + is];
}
)CLC";

constexpr char kCastSource[] = R"CLC(
__kernel void cast(__global const S* x, ulong x_off, __global D* y, ulong y_off, ulong n) {
  ulong i = get_global_id(0);
  if (i >= n) return;
#if S_HALF
  float v = vload_half(x_off + i, x);
#else
  S v = x[x_off + i];
#endif
#if D_HALF
  vstore_half_rte((float)v, y_off + i, y);
#elif D_BOOL
  y[y_off + i] = v != 0 ? (uchar)1 : (uchar)0;
#elif FLOAT_TO_INT
  y[y_off + i] = TO_INT(v);  // convert_D_sat_rtz: NaN 0, saturated, truncated.
#else
  y[y_off + i] = (D)v;
#endif
}
)CLC";

// Gather: one work item per output element; its backward one per (outer,
// inner) position, looping over the indices, so that no two work items
// write the same element (no atomics). check_indices runs first and fails
// the op on an index out of range (as the host kernels do); the kernels
// still clamp one, so that none reads or writes out of bounds before the
// failure arrives.
constexpr char kGatherCommon[] = R"CLC(
typedef struct { long outer; long axis_dim; long inner; long count; } GatherPlan;
long gather_pos(long v, long n) {
  if (v < 0) v += n;
  return v < 0 ? 0 : (v >= n ? n - 1 : v);
}
)CLC";

// One work item: bad[0] = the position of the first index out of [-dim,
// dim) (-1: none), bad[1] = that index (ops/device_check.h's slot).
constexpr char kCheckIndicesSource[] = R"CLC(
__kernel void check_indices(__global const I* idx, ulong idx_off, long count, long dim,
                            __global long* bad, ulong bad_off) {
  if (get_global_id(0) != 0) return;
  bad += bad_off;
  bad[0] = -1;
  for (long k = 0; k < count; ++k) {
    long v = (long)idx[idx_off + k];
    if (v < -dim || v >= dim) {
      bad[0] = k;
      bad[1] = v;
      return;
    }
  }
}
)CLC";

constexpr char kGatherSource[] = R"CLC(
__kernel void gather(__global const B* data, ulong data_off, __global const I* idx, ulong idx_off,
                     __global B* out, ulong out_off, ulong n, GatherPlan p) {
  ulong t = get_global_id(0);
  if (t >= n) return;
  long i = (long)t % p.inner, r = (long)t / p.inner;
  long k = r % p.count, o = r / p.count;
  long j = gather_pos((long)idx[idx_off + k], p.axis_dim);
  out[out_off + t] = data[data_off + (o * p.axis_dim + j) * p.inner + i];
}
)CLC";

constexpr char kGatherBackwardSource[] = R"CLC(
__kernel void gather_backward(__global const T* dy, ulong dy_off, __global const I* idx,
                              ulong idx_off, __global T* dx, ulong dx_off, ulong n, GatherPlan p) {
  ulong t = get_global_id(0);
  if (t >= n) return;
  long i = (long)t % p.inner, o = (long)t / p.inner;
  __global T* d = dx + dx_off + o * p.axis_dim * p.inner + i;
  __global const T* g = dy + dy_off + o * p.count * p.inner + i;
  for (long j = 0; j < p.axis_dim; ++j) d[j * p.inner] = (T)0;
  for (long k = 0; k < p.count; ++k) {
    long j = gather_pos((long)idx[idx_off + k], p.axis_dim);
    d[j * p.inner] += g[k * p.inner];
  }
}
)CLC";

// gather_elements: one work item per output element; its backward one per
// element of dx, summing (in order) the dy elements whose index points at
// it, so again no atomics: each scans the indices along the axis. Indices
// checked and clamped as gather's.
constexpr char kGatherElementsSource[] = R"CLC(
typedef struct { long rank; long axis; long data_dims[6]; long index_dims[6]; } GatherElementsPlan;
__kernel void gather_elements(__global const B* data, ulong data_off, __global const I* idx,
                              ulong idx_off, __global B* out, ulong out_off, ulong n,
                              GatherElementsPlan p) {
  ulong t = get_global_id(0);
  if (t >= n) return;
  long rem = (long)t, off = 0, stride = 1, axis_stride = 0;
  for (int d = (int)p.rank - 1; d >= 0; --d) {
    long k = rem % p.index_dims[d];
    rem /= p.index_dims[d];
    if (d == (int)p.axis) axis_stride = stride; else off += k * stride;
    stride *= p.data_dims[d];
  }
  long j = gather_pos((long)idx[idx_off + t], p.data_dims[p.axis]);
  out[out_off + t] = data[data_off + off + j * axis_stride];
}
)CLC";

constexpr char kGatherElementsBackwardSource[] = R"CLC(
typedef struct { long rank; long axis; long data_dims[6]; long index_dims[6]; } GatherElementsPlan;
__kernel void gather_elements_backward(__global const T* dy, ulong dy_off, __global const I* idx,
                                       ulong idx_off, __global T* dx, ulong dx_off, ulong n,
                                       GatherElementsPlan p) {
  ulong e = get_global_id(0);
  if (e >= n) return;
  long rem = (long)e, base = 0, stride = 1, axis_stride = 0, at = 0;
  int inside = 1;
  for (int d = (int)p.rank - 1; d >= 0; --d) {
    long k = rem % p.data_dims[d];
    rem /= p.data_dims[d];
    if (d == (int)p.axis) {
      at = k;
      axis_stride = stride;
    } else {
      inside = inside && k < p.index_dims[d];
      base += k * stride;
    }
    stride *= p.index_dims[d];
  }
  T acc = (T)0;
  long count = inside ? p.index_dims[p.axis] : 0, dim = p.data_dims[p.axis];
  for (long j = 0; j < count; ++j) {
    long t = base + j * axis_stride;
    if (gather_pos((long)idx[idx_off + t], dim) == at) acc += dy[dy_off + t];
  }
  dx[dx_off + e] = acc;
}
)CLC";

// Suffixes that tell float16 and bool apart (cast entries).
const char* CastSuffix(DType t) {
  switch (t) {
    case DType::kF16:
      return "f16";
    case DType::kBool:
      return "b";
    default:
      return DTypeSuffix(t);
  }
}
const char* ClName(DType t) { return t == DType::kF16 ? "half" : OpenClTypeName(t); }

// Enqueues check_indices over `indices` and a host callback that fails the
// op with the host kernels' error (BadIndexError) for the first index out
// of [-dim, dim).
absl::Status CheckIndices(OpContext& ctx, const TensorArg& indices, int64_t dim) {
  const int64_t count = indices.size();
  if (count == 0) return absl::OkStatus();
  const char* suffix = DTypeSuffix(indices.dtype);
  RILL_ASSIGN_OR_RETURN(
      const Kernel* k,
      DeviceKernel(ctx, absl::StrCat("shape.check_indices.", suffix), RILL_OPS_FATBIN(shape),
                   absl::StrCat("check_indices_", suffix), "check_indices", [&] {
                     return absl::StrCat("#define I ", OpenClTypeName(indices.dtype), "\n",
                                         kCheckIndicesSource);
                   }));
  RILL_ASSIGN_OR_RETURN(TensorArg bad, DeviceCheckSlot(ctx));
  LaunchArgs args;
  args.Tensor(indices).Value<int64_t>(count).Value<int64_t>(dim).Tensor(bad);
  RILL_RETURN_IF_ERROR(Launch1D(ctx, *k, 1, args.Take()));
  return FailIfDeviceFound(
      ctx, bad, [dim](int64_t at, int64_t index) { return BadIndexError(index, at, dim); });
}

struct DeviceImpl {
  static absl::Status Copy(OpContext& ctx, const StridedCopy& c) {
    const int size = DTypeSize(c.src.dtype);
    const std::string key = absl::StrCat("shape.strided_copy.b", size * 8);
    RILL_ASSIGN_OR_RETURN(
        const Kernel* k,
        DeviceKernel(ctx, key, RILL_OPS_FATBIN(shape), absl::StrCat("strided_copy_b", size * 8),
                     "strided_copy", [&] {
                       return absl::StrCat("#define B ", OpenClBitsTypeName(size), "\n",
                                           kCopySource);
                     }));
    TensorArg src = c.src, dst = c.dst;
    src.offset += static_cast<uint64_t>(c.src_base) * size;
    dst.offset += static_cast<uint64_t>(c.dst_base) * size;
    LaunchArgs args;
    args.Tensor(src).Tensor(dst).Value<uint64_t>(c.count).Value(c.plan);
    return Launch1D(ctx, *k, c.count, args.Take());
  }
  static absl::Status Contiguous(OpContext& ctx, const TensorArg& src, const TensorArg& dst) {
    RILL_ASSIGN_OR_RETURN(Stream * stream, ctx.stream());
    DeviceMemoryBase d = dst.view();
    stream->ThenMemcpy(&d, src.view(), dst.bytes());
    return stream->ok() ? absl::OkStatus() : stream->status();
  }
  static absl::Status Zero(OpContext& ctx, const TensorArg& t) {
    RILL_ASSIGN_OR_RETURN(Stream * stream, ctx.stream());
    DeviceMemoryBase d = t.view();
    stream->ThenMemZero(&d, t.bytes());
    return stream->ok() ? absl::OkStatus() : stream->status();
  }
  static absl::Status Cast(OpContext& ctx, const TensorArg& x, const TensorArg& y) {
    const std::string key =
        absl::StrCat("shape.cast.", CastSuffix(x.dtype), ".", CastSuffix(y.dtype));
    const std::string cuda_entry =
        absl::StrCat("cast_", CastSuffix(x.dtype), "_", CastSuffix(y.dtype));
    RILL_ASSIGN_OR_RETURN(
        const Kernel* k, DeviceKernel(ctx, key, RILL_OPS_FATBIN(shape), cuda_entry, "cast", [&] {
          const bool f64 = x.dtype == DType::kF64 || y.dtype == DType::kF64;
          const bool float_to_int =
              IsFloat(x.dtype) && !IsFloat(y.dtype) && y.dtype != DType::kBool;
          return absl::StrCat(
              f64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "", "#define S ",
              ClName(x.dtype), "\n#define D ", ClName(y.dtype), "\n#define S_HALF ",
              x.dtype == DType::kF16 ? 1 : 0, "\n#define D_HALF ", y.dtype == DType::kF16 ? 1 : 0,
              "\n#define D_BOOL ", y.dtype == DType::kBool ? 1 : 0, "\n#define FLOAT_TO_INT ",
              float_to_int ? 1 : 0, "\n#define TO_INT convert_", ClName(y.dtype), "_sat_rtz\n",
              kCastSource);
        }));
    LaunchArgs args;
    args.Tensor(x).Tensor(y).Value<uint64_t>(y.size());
    return Launch1D(ctx, *k, y.size(), args.Take());
  }
  static absl::Status Gather(OpContext& ctx, const TensorArg& data, const TensorArg& indices,
                             const TensorArg& out, const GatherPlan& p) {
    RILL_RETURN_IF_ERROR(CheckIndices(ctx, indices, p.axis_dim));
    const int size = DTypeSize(data.dtype);
    const std::string suffix = absl::StrCat("b", size * 8, "_", DTypeSuffix(indices.dtype));
    RILL_ASSIGN_OR_RETURN(
        const Kernel* k,
        DeviceKernel(ctx, absl::StrCat("shape.gather.", suffix), RILL_OPS_FATBIN(shape),
                     absl::StrCat("gather_", suffix), "gather", [&] {
                       return absl::StrCat("#define B ", OpenClBitsTypeName(size), "\n#define I ",
                                           OpenClTypeName(indices.dtype), "\n", kGatherCommon,
                                           kGatherSource);
                     }));
    LaunchArgs args;
    args.Tensor(data).Tensor(indices).Tensor(out).Value<uint64_t>(out.size()).Value(p);
    return Launch1D(ctx, *k, out.size(), args.Take());
  }
  static absl::Status GatherBackward(OpContext& ctx, const TensorArg& dy, const TensorArg& indices,
                                     const TensorArg& dx, const GatherPlan& p) {
    RILL_RETURN_IF_ERROR(CheckIndices(ctx, indices, p.axis_dim));
    const std::string suffix = absl::StrCat(DTypeSuffix(dx.dtype), "_", DTypeSuffix(indices.dtype));
    RILL_ASSIGN_OR_RETURN(
        const Kernel* k,
        DeviceKernel(
            ctx, absl::StrCat("shape.gather_backward.", suffix), RILL_OPS_FATBIN(shape),
            absl::StrCat("gather_backward_", suffix), "gather_backward", [&] {
              return absl::StrCat(
                  dx.dtype == DType::kF64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "",
                  "#define T ", OpenClTypeName(dx.dtype), "\n#define I ",
                  OpenClTypeName(indices.dtype), "\n", kGatherCommon, kGatherBackwardSource);
            }));
    const uint64_t n = static_cast<uint64_t>(p.outer) * p.inner;
    LaunchArgs args;
    args.Tensor(dy).Tensor(indices).Tensor(dx).Value<uint64_t>(n).Value(p);
    return Launch1D(ctx, *k, n, args.Take());
  }
  static absl::Status GatherElements(OpContext& ctx, const TensorArg& data,
                                     const TensorArg& indices, const TensorArg& out,
                                     const GatherElementsPlan& p) {
    RILL_RETURN_IF_ERROR(CheckIndices(ctx, indices, p.data_dims[p.axis]));
    const int size = DTypeSize(data.dtype);
    const std::string suffix = absl::StrCat("b", size * 8, "_", DTypeSuffix(indices.dtype));
    RILL_ASSIGN_OR_RETURN(
        const Kernel* k,
        DeviceKernel(ctx, absl::StrCat("shape.gather_elements.", suffix), RILL_OPS_FATBIN(shape),
                     absl::StrCat("gather_elements_", suffix), "gather_elements", [&] {
                       return absl::StrCat("#define B ", OpenClBitsTypeName(size), "\n#define I ",
                                           OpenClTypeName(indices.dtype), "\n", kGatherCommon,
                                           kGatherElementsSource);
                     }));
    LaunchArgs args;
    args.Tensor(data).Tensor(indices).Tensor(out).Value<uint64_t>(out.size()).Value(p);
    return Launch1D(ctx, *k, out.size(), args.Take());
  }
  static absl::Status GatherElementsBackward(OpContext& ctx, const TensorArg& dy,
                                             const TensorArg& indices, const TensorArg& dx,
                                             const GatherElementsPlan& p) {
    RILL_RETURN_IF_ERROR(CheckIndices(ctx, indices, p.data_dims[p.axis]));
    const std::string suffix = absl::StrCat(DTypeSuffix(dx.dtype), "_", DTypeSuffix(indices.dtype));
    RILL_ASSIGN_OR_RETURN(
        const Kernel* k,
        DeviceKernel(
            ctx, absl::StrCat("shape.gather_elements_backward.", suffix), RILL_OPS_FATBIN(shape),
            absl::StrCat("gather_elements_backward_", suffix), "gather_elements_backward", [&] {
              return absl::StrCat(
                  dx.dtype == DType::kF64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "",
                  "#define T ", OpenClTypeName(dx.dtype), "\n#define I ",
                  OpenClTypeName(indices.dtype), "\n", kGatherCommon,
                  kGatherElementsBackwardSource);
            }));
    LaunchArgs args;
    args.Tensor(dy).Tensor(indices).Tensor(dx).Value<uint64_t>(dx.size()).Value(p);
    return Launch1D(ctx, *k, dx.size(), args.Take());
  }
};

}  // namespace

void RegisterShapeDeviceKernels(OpRegistry& r) {
  shape_internal::RegisterShapeKernels<DeviceImpl>(
      r, KernelNeeds::DeviceCode(DeviceCodeForms("shape", RILL_OPS_FATBIN(shape))));
}

}  // namespace rill::ops
