// Device kernels of the init ops: OpenCL C below, CUDA in init.cu (entries
// fill_b32, arange_f64, uniform_affine_f32, dropout_f32, ...). Random numbers
// come from the device's RNG plugin, enqueued on the same stream first.

#include <string>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/device_kernel.h"
#include "rill/ops/init/init.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/platform/platform.h"
#include "rill/plugins/rng/rng.h"
#include "rill/stream/stream.h"

RILL_OPS_DECLARE_FATBIN(init);

namespace rill::ops {
namespace {

// Element-size programs: B is an unsigned type of the element's size.
constexpr char kBitsSource[] = R"CLC(
__kernel void fill(__global B* out, ulong out_off, ulong n, B v) {
  ulong i = get_global_id(0);
  if (i < n) out[out_off + i] = v;
}
)CLC";

// Typed programs: T the element type, IS_F32 for float, TO_INT the
// conversion of a double to an integer T (float_to_int.h's rule).
constexpr char kTypedSource[] = R"CLC(
__kernel void arange(__global T* out, ulong out_off, ulong n, double start, double step) {
  ulong i = get_global_id(0);
  if (i >= n) return;
#if IS_F32
  out[out_off + i] = (float)start + (float)i * (float)step;
#elif IS_FLOAT
  out[out_off + i] = (T)(start + (double)i * step);
#else
  out[out_off + i] = TO_INT(start + (double)i * step);  // NaN 0, saturated, truncated.
#endif
}

#if IS_FLOAT
__kernel void uniform_affine(__global T* out, ulong out_off, ulong n, T a, T b) {
  ulong i = get_global_id(0);
  if (i < n) out[out_off + i] = a + b * out[out_off + i];
}

__kernel void dropout(__global const T* x, ulong x_off, __global const T* u, ulong u_off,
                      __global T* y, ulong y_off, __global T* mask, ulong mask_off, ulong n, T p,
                      T scale, int train) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T xv = x[x_off + i];
  if (!train) {
    y[y_off + i] = xv;
    mask[mask_off + i] = (T)1;
    return;
  }
  T m = u[u_off + i] > p ? (T)1 : (T)0;
  mask[mask_off + i] = m;
  y[y_off + i] = xv * m * scale;
}

__kernel void dropout_backward(__global const T* dy, ulong dy_off, __global const T* mask,
                               ulong mask_off, __global T* dx, ulong dx_off, ulong n, T scale,
                               int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T v = dy[dy_off + i] * mask[mask_off + i] * scale;
  dx[dx_off + i] = add ? dx[dx_off + i] + v : v;
}
#endif
)CLC";

absl::StatusOr<const Kernel*> GetBits(OpContext& ctx, int size, const char* entry) {
  const std::string key = absl::StrCat("init.", entry, ".b", size * 8);
  return DeviceKernel(
      ctx, key, RILL_OPS_FATBIN(init), absl::StrCat(entry, "_b", size * 8), entry,
      [&] { return absl::StrCat("#define B ", OpenClBitsTypeName(size), "\n", kBitsSource); });
}

absl::StatusOr<const Kernel*> GetTyped(OpContext& ctx, DType dtype, const char* entry) {
  const std::string key = absl::StrCat("init.", entry, ".", DTypeSuffix(dtype));
  return DeviceKernel(
      ctx, key, RILL_OPS_FATBIN(init), absl::StrCat(entry, "_", DTypeSuffix(dtype)), entry, [&] {
        const bool fl = dtype == DType::kF32 || dtype == DType::kF64;
        return absl::StrCat(
            "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#define T ", OpenClTypeName(dtype),
            "\n#define IS_F32 ", dtype == DType::kF32 ? 1 : 0, "\n#define IS_FLOAT ", fl ? 1 : 0,
            "\n#define TO_INT convert_", OpenClTypeName(dtype), "_sat_rtz\n", kTypedSource);
      });
}

void FloatValue(LaunchArgs& args, DType dtype, double v) {
  if (dtype == DType::kF64)
    args.Value<double>(v);
  else
    args.Value<float>(static_cast<float>(v));
}

template <typename P>
absl::Status DevFill(OpContext& ctx) {
  const TensorArg& out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const int size = DTypeSize(out.dtype);
  const uint64_t bits = FillBits(ctx.params<P>().value, out.dtype);
  RILL_ASSIGN_OR_RETURN(const Kernel* k, GetBits(ctx, size, "fill"));
  LaunchArgs args;
  args.Tensor(out).Value<uint64_t>(out.size());
  switch (size) {
    case 1:
      args.Value<uint8_t>(static_cast<uint8_t>(bits));
      break;
    case 2:
      args.Value<uint16_t>(static_cast<uint16_t>(bits));
      break;
    case 4:
      args.Value<uint32_t>(static_cast<uint32_t>(bits));
      break;
    default:
      args.Value<uint64_t>(bits);
      break;
  }
  return Launch1D(ctx, *k, out.size(), args.Take());
}

absl::Status DevArange(OpContext& ctx) {
  const TensorArg& out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const ArangeParams& p = ctx.params<ArangeParams>();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, GetTyped(ctx, out.dtype, "arange"));
  LaunchArgs args;
  args.Tensor(out).Value<uint64_t>(out.size()).Value<double>(p.start).Value<double>(p.step);
  return Launch1D(ctx, *k, out.size(), args.Take());
}

absl::Status Uniform(OpContext& ctx, const TensorArg& t) {
  RILL_ASSIGN_OR_RETURN(RngSupport * rng, ctx.rng());
  RILL_ASSIGN_OR_RETURN(Stream * stream, ctx.stream());
  if (t.dtype == DType::kF64) {
    DeviceMemory<double> mem(t.view());
    return rng->DoPopulateRandUniform(stream, &mem);
  }
  DeviceMemory<float> mem(t.view());
  return rng->DoPopulateRandUniform(stream, &mem);
}

absl::Status DevRandomUniform(OpContext& ctx) {
  const TensorArg& out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const RandomUniformParams& p = ctx.params<RandomUniformParams>();
  RILL_RETURN_IF_ERROR(Uniform(ctx, out));
  RILL_ASSIGN_OR_RETURN(const Kernel* k, GetTyped(ctx, out.dtype, "uniform_affine"));
  LaunchArgs args;
  args.Tensor(out).Value<uint64_t>(out.size());
  FloatValue(args, out.dtype, p.low);
  FloatValue(args, out.dtype, p.high - p.low);
  return Launch1D(ctx, *k, out.size(), args.Take());
}

absl::Status DevDropout(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &y = ctx.out(0), &mask = ctx.out(1);
  if (x.size() == 0) return absl::OkStatus();
  const double p = ctx.params<DropoutParams>().p;
  TensorArg u = x;  // Unread when not training.
  if (ctx.is_train()) {
    RILL_ASSIGN_OR_RETURN(u, ctx.Temp(x.shape, x.dtype));
    RILL_RETURN_IF_ERROR(Uniform(ctx, u));
  }
  RILL_ASSIGN_OR_RETURN(const Kernel* k, GetTyped(ctx, x.dtype, "dropout"));
  LaunchArgs args;
  args.Tensor(x).Tensor(u).Tensor(y).Tensor(mask).Value<uint64_t>(x.size());
  FloatValue(args, x.dtype, p);
  FloatValue(args, x.dtype, 1 / (1 - p));
  args.Value<int32_t>(ctx.is_train() ? 1 : 0);
  return Launch1D(ctx, *k, x.size(), args.Take());
}

absl::Status DevDropoutBackward(OpContext& ctx) {
  const TensorArg &dy = ctx.in(0), &mask = ctx.in(1), &dx = ctx.out(0);
  if (dx.size() == 0) return absl::OkStatus();
  const double p = ctx.params<DropoutParams>().p;
  RILL_ASSIGN_OR_RETURN(const Kernel* k, GetTyped(ctx, dy.dtype, "dropout_backward"));
  LaunchArgs args;
  args.Tensor(dy).Tensor(mask).Tensor(dx).Value<uint64_t>(dx.size());
  FloatValue(args, dy.dtype, 1 / (1 - p));
  args.Value<int32_t>(ctx.req(0) == OpReqType::kAddTo ? 1 : 0);
  return Launch1D(ctx, *k, dx.size(), args.Take());
}

void Register(OpRegistry& r, const KernelNeeds& platform) {
  r.Check(r.RegisterKernel(op_names::kFill, platform, {DevFill<FillParams>, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kZeros, platform, {DevFill<ZerosParams>, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kOnes, platform, {DevFill<OnesParams>, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kArange, platform, {DevArange, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kRandomUniform, KernelNeeds(platform).And({PluginKind::kRng}),
                           {DevRandomUniform, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kDropout, KernelNeeds(platform).And({PluginKind::kRng}),
                           {DevDropout, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardDropout, platform,
                           {DevDropoutBackward, kWriteReqs | ReqBit(OpReqType::kAddTo)}));
}

}  // namespace

void RegisterInitDeviceKernels(OpRegistry& r) {
  Register(r, KernelNeeds::DeviceCode(DeviceCodeForms("init", RILL_OPS_FATBIN(init))));
}

}  // namespace rill::ops
