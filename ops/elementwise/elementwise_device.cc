// Device kernels of the elementwise ops, for OpenCL (the source below, one
// program per element type) and CUDA (elementwise.cu, one entry per element
// type): the op code is an argument; loaded once per executor
// (ops/device_kernel.h).

#include <string>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/device_kernel.h"
#include "rill/ops/elementwise/elementwise.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/platform/platform.h"

RILL_OPS_DECLARE_FATBIN(elementwise);

namespace rill::ops {
namespace {

constexpr char kSource[] = R"CLC(
typedef struct { long rank; long dims[6]; long a_strides[6]; long b_strides[6]; } BroadcastPlan;

T apply_binary(int op, T a, T b) {
  switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
#if IS_FLOAT
    case 3: return a / b;
    case 4: return pow(a, b);
    case 10: return b / a;
    case 11: return pow(b, a);
#else
    case 3: return b == 0 ? (T)0 : (T)(a / b);
    case 10: return a == 0 ? (T)0 : (T)(b / a);
#endif
    case 5: return a > b ? a : b;
    case 6: return a < b ? a : b;
    case 7: return a == b ? (T)1 : (T)0;
    case 8: return a > b ? (T)1 : (T)0;
    case 9: return b - a;
  }
  return (T)0;
}

__kernel void binary(int op, __global const T* a, ulong a_off, __global const T* b, ulong b_off,
                     __global T* out, ulong out_off, ulong n, BroadcastPlan p, int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  long rem = (long)i, ia = 0, ib = 0;
  for (int d = (int)p.rank - 1; d >= 0; --d) {
    long k = rem % p.dims[d];
    rem /= p.dims[d];
    ia += k * p.a_strides[d];
    ib += k * p.b_strides[d];
  }
  T v = apply_binary(op, a[a_off + ia], b[b_off + ib]);
  out[out_off + i] = add ? (T)(out[out_off + i] + v) : v;
}

__kernel void scalar(int op, __global const T* x, ulong x_off, T s, __global T* out, ulong out_off,
                     ulong n, int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T v = apply_binary(op, x[x_off + i], s);
  out[out_off + i] = add ? (T)(out[out_off + i] + v) : v;
}

T apply_unary(int op, T x) {
  switch (op) {
    case 0: return -x;
#if IS_FLOAT
    case 1: return fabs(x);
    case 2: return exp(x);
    case 3: return log(x);
    case 4: return sqrt(x);
    case 6: return (T)1 / ((T)1 + exp(-x));
    case 7: return tanh(x);
    case 8: return (T)0.5 * x * ((T)1 + erf(x * (T)0.70710678118654752440));
#else
    case 1: return x < 0 ? (T)(-x) : x;
#endif
    case 5: return x > 0 ? x : (T)0;
    case 9: return x * x;
  }
  return x;
}

T apply_unary_backward(int op, T dy, T x) {
  switch (op) {
    case 0: return -dy;
    case 1: return x > 0 ? dy : (x < 0 ? (T)(-dy) : (T)0);
#if IS_FLOAT
    case 2: return dy * exp(x);
    case 3: return dy / x;
    case 4: return dy / ((T)2 * sqrt(x));
    case 6: { T s = (T)1 / ((T)1 + exp(-x)); return dy * s * ((T)1 - s); }
    case 7: { T t = tanh(x); return dy * ((T)1 - t * t); }
    case 8: {
      T cdf = (T)0.5 * ((T)1 + erf(x * (T)0.70710678118654752440));
      T pdf = exp((T)(-0.5) * x * x) * (T)0.39894228040143267794;
      return dy * (cdf + x * pdf);
    }
#endif
    case 5: return x > 0 ? dy : (T)0;
    case 9: return dy * (T)2 * x;
  }
  return dy;
}

__kernel void unary(int op, __global const T* x, ulong x_off, __global T* out, ulong out_off, ulong n,
                    int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T v = apply_unary(op, x[x_off + i]);
  out[out_off + i] = add ? (T)(out[out_off + i] + v) : v;
}

__kernel void unary_backward(int op, __global const T* dy, ulong dy_off, __global const T* x,
                             ulong x_off, __global T* out, ulong out_off, ulong n, int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T v = apply_unary_backward(op, dy[dy_off + i], x[x_off + i]);
  out[out_off + i] = add ? (T)(out[out_off + i] + v) : v;
}
)CLC";

absl::StatusOr<const Kernel*> Get(OpContext& ctx, DType dtype, const char* entry) {
  const std::string key = absl::StrCat("elementwise.", entry, ".", DTypeSuffix(dtype));
  return DeviceKernel(
      ctx, key, RILL_OPS_FATBIN(elementwise), absl::StrCat(entry, "_", DTypeSuffix(dtype)), entry,
      [&] {
        const bool fl = dtype == DType::kF32 || dtype == DType::kF64;
        return absl::StrCat(
            dtype == DType::kF64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "",
            "#define T ", OpenClTypeName(dtype), "\n#define IS_FLOAT ", fl ? 1 : 0, "\n", kSource);
      });
}

int AddFlag(OpContext& ctx) { return ctx.req(0) == OpReqType::kAddTo ? 1 : 0; }

template <BinaryCode C>
absl::Status ClBinary(OpContext& ctx) {
  const TensorArg &a = ctx.in(0), &b = ctx.in(1), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(a.shape, b.shape, out.shape));
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, a.dtype, "binary"));
  LaunchArgs args;
  args.Value<int32_t>(static_cast<int32_t>(C))
      .Tensor(a)
      .Tensor(b)
      .Tensor(out)
      .Value<uint64_t>(out.size())
      .Value(plan)
      .Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, out.size(), args.Take());
}

template <BinaryCode C>
absl::Status ClScalar(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, x.dtype, "scalar"));
  const double s = ctx.params<ScalarParams>().scalar;
  LaunchArgs args;
  args.Value<int32_t>(static_cast<int32_t>(C)).Tensor(x);
  DispatchDType(x.dtype, [&](auto t) { args.Value(static_cast<decltype(t)>(s)); });
  args.Tensor(out).Value<uint64_t>(out.size()).Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, out.size(), args.Take());
}

template <UnaryCode C>
absl::Status ClUnary(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, x.dtype, "unary"));
  LaunchArgs args;
  args.Value<int32_t>(static_cast<int32_t>(C))
      .Tensor(x)
      .Tensor(out)
      .Value<uint64_t>(out.size())
      .Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, out.size(), args.Take());
}

template <UnaryCode C>
absl::Status ClUnaryBackward(OpContext& ctx) {
  const TensorArg &dy = ctx.in(0), &x = ctx.in(1), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, x.dtype, "unary_backward"));
  LaunchArgs args;
  args.Value<int32_t>(static_cast<int32_t>(C))
      .Tensor(dy)
      .Tensor(x)
      .Tensor(out)
      .Value<uint64_t>(out.size())
      .Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, out.size(), args.Take());
}

}  // namespace

namespace {

void RegisterDeviceKernels(OpRegistry& r, const KernelNeeds& p) {
  constexpr uint32_t kReqs = kWriteReqs | ReqBit(OpReqType::kAddTo);
  r.Check(r.RegisterKernel(op_names::kAdd, p, {ClBinary<BinaryCode::kAdd>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kAccumulate, p, {ClBinary<BinaryCode::kAdd>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kSub, p, {ClBinary<BinaryCode::kSub>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMul, p, {ClBinary<BinaryCode::kMul>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kDiv, p, {ClBinary<BinaryCode::kDiv>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kPow, p, {ClBinary<BinaryCode::kPow>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMaximum, p, {ClBinary<BinaryCode::kMax>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMinimum, p, {ClBinary<BinaryCode::kMin>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kEqual, p, {ClBinary<BinaryCode::kEqual>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kGreater, p, {ClBinary<BinaryCode::kGreater>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kAddScalar, p, {ClScalar<BinaryCode::kAdd>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kSubScalar, p, {ClScalar<BinaryCode::kSub>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kRsubScalar, p, {ClScalar<BinaryCode::kRsub>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMulScalar, p, {ClScalar<BinaryCode::kMul>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kDivScalar, p, {ClScalar<BinaryCode::kDiv>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kRdivScalar, p, {ClScalar<BinaryCode::kRdiv>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kPowScalar, p, {ClScalar<BinaryCode::kPow>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kRpowScalar, p, {ClScalar<BinaryCode::kRpow>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMaximumScalar, p, {ClScalar<BinaryCode::kMax>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMinimumScalar, p, {ClScalar<BinaryCode::kMin>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kEqualScalar, p, {ClScalar<BinaryCode::kEqual>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kGreaterScalar, p, {ClScalar<BinaryCode::kGreater>, kReqs}));
#define RILL_CL_UNARY(code, name)                                                     \
  r.Check(r.RegisterKernel(op_names::k##name, p, {ClUnary<UnaryCode::code>, kReqs})); \
  r.Check(r.RegisterKernel(op_names::kBackward##name, p, {ClUnaryBackward<UnaryCode::code>, kReqs}))
  RILL_CL_UNARY(kNeg, Neg);
  RILL_CL_UNARY(kAbs, Abs);
  RILL_CL_UNARY(kExp, Exp);
  RILL_CL_UNARY(kLog, Log);
  RILL_CL_UNARY(kSqrt, Sqrt);
  RILL_CL_UNARY(kRelu, Relu);
  RILL_CL_UNARY(kSigmoid, Sigmoid);
  RILL_CL_UNARY(kTanh, Tanh);
  RILL_CL_UNARY(kGelu, Gelu);
  RILL_CL_UNARY(kSquare, Square);
#undef RILL_CL_UNARY
  r.Check(r.RegisterKernel(op_names::kIdentity, p, {ClUnary<UnaryCode::kCopy>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardCopy, p, {ClUnaryBackward<UnaryCode::kCopy>, kReqs}));
}

}  // namespace

void RegisterElementwiseDeviceKernels(OpRegistry& r) {
  RegisterDeviceKernels(
      r, KernelNeeds::DeviceCode(DeviceCodeForms("elementwise", RILL_OPS_FATBIN(elementwise))));
}

}  // namespace rill::ops
