// Device kernels of the elementwise ops: one source, elementwise.cl,
// compiled as OpenCL C (one program per element type, embedded at build
// time) and as CUDA (elementwise.cu, one entry per element type); the op
// code is an argument; loaded once per executor (ops/device_kernel.h).

#include <string>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/device_kernel.h"
#include "rill/ops/elementwise/elementwise.h"
#include "rill/ops/elementwise/elementwise_cl.h"  // Generated: kElementwiseClSource.
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/platform/platform.h"

RILL_OPS_DECLARE_FATBIN(elementwise);

namespace rill::ops {
namespace {

// The op codes as the kernels name them (elementwise_codes.h), and the
// macros elementwise.cl expects of its includer.
std::string OpenClPrelude() {
  std::string s = "#define KERNEL(name) name\n#define RILL_FN\n";
#define RILL_DEFINE_BIN(k, NAME) \
  absl::StrAppend(&s, "#define BIN_" #NAME " ", static_cast<int>(BinaryCode::k), "\n");
#define RILL_DEFINE_UN(k, NAME) \
  absl::StrAppend(&s, "#define UN_" #NAME " ", static_cast<int>(UnaryCode::k), "\n");
  RILL_BINARY_CODES(RILL_DEFINE_BIN)
  RILL_UNARY_CODES(RILL_DEFINE_UN)
#undef RILL_DEFINE_BIN
#undef RILL_DEFINE_UN
  return s;
}

// The OpenCL C unsigned type of an integer type (wrapping arithmetic in
// elementwise.cl); the type itself for floats.
const char* UnsignedName(DType dtype) {
  switch (dtype) {
    case DType::kI32:
      return "uint";
    case DType::kI64:
      return "ulong";
    default:
      return OpenClTypeName(dtype);  // uchar, float, double.
  }
}

absl::StatusOr<const Kernel*> Get(OpContext& ctx, DType dtype, const char* entry) {
  const std::string key = absl::StrCat("elementwise.", entry, ".", DTypeSuffix(dtype));
  return DeviceKernel(
      ctx, key, RILL_OPS_FATBIN(elementwise), absl::StrCat(entry, "_", DTypeSuffix(dtype)), entry,
      [&] {
        const bool fl = dtype == DType::kF32 || dtype == DType::kF64;
        return absl::StrCat(
            dtype == DType::kF64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "",
            "#define T ", OpenClTypeName(dtype), "\n#define UT ", UnsignedName(dtype),
            "\n#define IS_FLOAT ", fl ? 1 : 0, "\n", OpenClPrelude(), kElementwiseClSource);
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

// The condition goes as bytes with its element size and the bits that
// make it nonzero (elementwise.cl's where_true): any type, one kernel.
absl::Status ClWhere(OpContext& ctx) {
  const TensorArg &c = ctx.in(0), &x = ctx.in(1), &y = ctx.in(2), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(WherePlan plan, MakeWherePlan(c.shape, x.shape, y.shape, out.shape));
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, x.dtype, "where"));
  const int c_size = DTypeSize(c.dtype);
  uint64_t c_mask = ~uint64_t{0};
  if (c.dtype == DType::kF32) c_mask = 0x7fffffffu;
  if (c.dtype == DType::kF64) c_mask = 0x7fffffffffffffffu;
  LaunchArgs args;
  args.Tensor(c)
      .Value<int32_t>(c_size)
      .Value<uint64_t>(c_mask)
      .Tensor(x)
      .Tensor(y)
      .Tensor(out)
      .Value<uint64_t>(out.size())
      .Value(plan)
      .Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, out.size(), args.Take());
}

absl::Status ClMod(OpContext& ctx) {
  return ctx.params<ModParams>().fmod != 0 ? ClBinary<BinaryCode::kFmod>(ctx)
                                           : ClBinary<BinaryCode::kMod>(ctx);
}

// is_nan and is_inf: which of NaN, +inf, -inf make an output true.
absl::Status ClNanInf(OpContext& ctx, bool nan, bool pos, bool neg) {
  const TensorArg &x = ctx.in(0), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, x.dtype, "is_nan_inf"));
  LaunchArgs args;
  args.Value<int32_t>(nan ? 1 : 0)
      .Value<int32_t>(pos ? 1 : 0)
      .Value<int32_t>(neg ? 1 : 0)
      .Tensor(x)
      .Tensor(out)
      .Value<uint64_t>(out.size());
  return Launch1D(ctx, *k, out.size(), args.Take());
}

absl::Status ClIsNan(OpContext& ctx) { return ClNanInf(ctx, true, false, false); }
absl::Status ClIsInf(OpContext& ctx) {
  const IsInfParams& p = ctx.params<IsInfParams>();
  return ClNanInf(ctx, false, p.detect_positive != 0, p.detect_negative != 0);
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
  r.Check(r.RegisterKernel(op_names::kWhere, p, {ClWhere, kReqs}));
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
  RILL_CL_UNARY(kErf, Erf);
  RILL_CL_UNARY(kSin, Sin);
  RILL_CL_UNARY(kCos, Cos);
  RILL_CL_UNARY(kTan, Tan);
  RILL_CL_UNARY(kAsin, Asin);
  RILL_CL_UNARY(kAcos, Acos);
  RILL_CL_UNARY(kAtan, Atan);
  RILL_CL_UNARY(kSinh, Sinh);
  RILL_CL_UNARY(kCosh, Cosh);
  RILL_CL_UNARY(kAsinh, Asinh);
  RILL_CL_UNARY(kAcosh, Acosh);
  RILL_CL_UNARY(kAtanh, Atanh);
#undef RILL_CL_UNARY
  r.Check(r.RegisterKernel(op_names::kFloor, p, {ClUnary<UnaryCode::kFloor>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kCeil, p, {ClUnary<UnaryCode::kCeil>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kRound, p, {ClUnary<UnaryCode::kRound>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMod, p, {ClMod, kReqs}));
  r.Check(r.RegisterKernel(op_names::kIsNan, p, {ClIsNan, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kIsInf, p, {ClIsInf, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kIdentity, p, {ClUnary<UnaryCode::kCopy>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardCopy, p, {ClUnaryBackward<UnaryCode::kCopy>, kReqs}));
}

}  // namespace

void RegisterElementwiseDeviceKernels(OpRegistry& r) {
  RegisterDeviceKernels(
      r, KernelNeeds::DeviceCode(DeviceCodeForms("elementwise", RILL_OPS_FATBIN(elementwise))));
}

}  // namespace rill::ops
