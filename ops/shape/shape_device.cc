// Device kernels of the shape ops: the strided copy and cast below in
// OpenCL C, CUDA in shape.cu (strided_copy_b32, cast_f16_f32, ...);
// contiguous copies and zero fills are stream memory operations.

#include <string>

#include "absl/strings/str_cat.h"
#include "rill/executor/stream_executor.h"
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
#else
  y[y_off + i] = (D)v;
#endif
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
          return absl::StrCat(
              f64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "", "#define S ",
              ClName(x.dtype), "\n#define D ", ClName(y.dtype), "\n#define S_HALF ",
              x.dtype == DType::kF16 ? 1 : 0, "\n#define D_HALF ", y.dtype == DType::kF16 ? 1 : 0,
              "\n#define D_BOOL ", y.dtype == DType::kBool ? 1 : 0, "\n", kCastSource);
        }));
    LaunchArgs args;
    args.Tensor(x).Tensor(y).Value<uint64_t>(y.size());
    return Launch1D(ctx, *k, y.size(), args.Take());
  }
};

}  // namespace

void RegisterShapeDeviceKernels(OpRegistry& r) {
  shape_internal::RegisterShapeKernels<DeviceImpl>(
      r, KernelNeeds::DeviceCode(DeviceCodeForms("shape", RILL_OPS_FATBIN(shape))));
}

}  // namespace rill::ops
