// Host kernels of the elementwise ops: vectorizable loops over whole
// tensors, run inline on the CPU context or as one host callback on a host
// device's stream.

#include <cmath>
#include <cstring>
#include <type_traits>

#include "rill/base/status_macros.h"
#include "rill/ops/elementwise/elementwise.h"
#include "rill/ops/elementwise/elementwise_math.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"

namespace rill::ops {
namespace {

template <typename T>
inline void Store(T* out, int64_t i, T v, bool add) {
  out[i] = add ? WrapAdd(out[i], v) : v;
}

// out[i] (+)= f(a[i * sa], b[i * sb]) for i < n, with sa, sb in {0, 1} known
// at compile time so that the loop vectorizes.
template <BinaryCode C, typename T, bool kA, bool kB>
void Inner(const T* a, const T* b, T* out, int64_t n, bool add) {
  if (add) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = WrapAdd(out[i], ApplyBinary<C>(a[kA ? i : 0], b[kB ? i : 0]));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = ApplyBinary<C>(a[kA ? i : 0], b[kB ? i : 0]);
  }
}

template <BinaryCode C, typename T>
void BinaryLoop(const T* a, const T* b, T* out, const BroadcastPlan& p, bool add) {
  if (p.rank == 0) {  // One element.
    Store(out, 0, ApplyBinary<C>(a[0], b[0]), add);
    return;
  }
  const int inner = static_cast<int>(p.rank) - 1;
  const int64_t n = p.dims[inner];
  const int64_t sa = p.a_strides[inner], sb = p.b_strides[inner];
  int64_t outer = 1;
  for (int i = 0; i < inner; ++i) outer *= p.dims[i];
  int64_t idx[kMaxRank] = {};
  for (int64_t o = 0; o < outer; ++o) {
    int64_t ia = 0, ib = 0;
    for (int d = 0; d < inner; ++d) {
      ia += idx[d] * p.a_strides[d];
      ib += idx[d] * p.b_strides[d];
    }
    T* dst = out + o * n;
    if (sa == 1 && sb == 1)
      Inner<C, T, true, true>(a + ia, b + ib, dst, n, add);
    else if (sa == 1)
      Inner<C, T, true, false>(a + ia, b + ib, dst, n, add);
    else if (sb == 1)
      Inner<C, T, false, true>(a + ia, b + ib, dst, n, add);
    else
      Inner<C, T, false, false>(a + ia, b + ib, dst, n, add);
    for (int d = inner - 1; d >= 0; --d) {  // Odometer over the outer axes.
      if (++idx[d] < p.dims[d]) break;
      idx[d] = 0;
    }
  }
}

template <BinaryCode C>
absl::Status HostBinary(OpContext& ctx) {
  const TensorArg a = ctx.in(0), b = ctx.in(1), out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(a.shape, b.shape, out.shape));
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  return ctx.RunOnHost([a, b, out, plan, add]() -> absl::Status {
    DispatchDType(a.dtype, [&](auto t) {
      using T = decltype(t);
      BinaryLoop<C, T>(a.data<T>(), b.data<T>(), out.data<T>(), plan, add);
    });
    return absl::OkStatus();
  });
}

template <BinaryCode C>
absl::Status HostScalar(OpContext& ctx) {
  const TensorArg x = ctx.in(0), out = ctx.out(0);
  const double s = ctx.params<ScalarParams>().scalar;
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  if (out.size() == 0) return absl::OkStatus();
  return ctx.RunOnHost([x, out, s, add]() -> absl::Status {
    DispatchDType(x.dtype, [&](auto t) {
      using T = decltype(t);
      const T v = static_cast<T>(s);
      Inner<C, T, true, false>(x.data<T>(), &v, out.data<T>(), x.size(), add);
    });
    return absl::OkStatus();
  });
}

template <UnaryCode C>
absl::Status HostUnary(OpContext& ctx) {
  const TensorArg x = ctx.in(0), out = ctx.out(0);
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  if (out.size() == 0) return absl::OkStatus();
  return ctx.RunOnHost([x, out, add]() -> absl::Status {
    DispatchDType(x.dtype, [&](auto t) {
      using T = decltype(t);
      const T* in = x.data<T>();
      T* o = out.data<T>();
      const int64_t n = x.size();
      if (add) {
        for (int64_t i = 0; i < n; ++i) o[i] = WrapAdd(o[i], ApplyUnary<C>(in[i]));
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = ApplyUnary<C>(in[i]);
      }
    });
    return absl::OkStatus();
  });
}

template <UnaryCode C>
absl::Status HostUnaryBackward(OpContext& ctx) {
  const TensorArg dy = ctx.in(0), x = ctx.in(1), out = ctx.out(0);
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  if (out.size() == 0) return absl::OkStatus();
  return ctx.RunOnHost([dy, x, out, add]() -> absl::Status {
    DispatchDType(x.dtype, [&](auto t) {
      using T = decltype(t);
      const T* g = dy.data<T>();
      const T* in = x.data<T>();
      T* o = out.data<T>();
      const int64_t n = x.size();
      if (add) {
        for (int64_t i = 0; i < n; ++i) o[i] = WrapAdd(o[i], ApplyUnaryBackward<C>(g[i], in[i]));
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = ApplyUnaryBackward<C>(g[i], in[i]);
      }
    });
    return absl::OkStatus();
  });
}

// out (+)= c ? x : y over the plan: an odometer over the outer axes, a
// strided inner loop.
template <typename T, typename C>
void WhereLoop(const C* c, const T* x, const T* y, T* out, const WherePlan& p, bool add) {
  if (p.rank == 0) {
    Store(out, 0, c[0] != C(0) ? x[0] : y[0], add);
    return;
  }
  const int inner = static_cast<int>(p.rank) - 1;
  const int64_t n = p.dims[inner];
  const int64_t sc = p.c_strides[inner], sx = p.x_strides[inner], sy = p.y_strides[inner];
  int64_t outer = 1;
  for (int i = 0; i < inner; ++i) outer *= p.dims[i];
  int64_t idx[kMaxRank] = {};
  for (int64_t o = 0; o < outer; ++o) {
    int64_t ic = 0, ix = 0, iy = 0;
    for (int d = 0; d < inner; ++d) {
      ic += idx[d] * p.c_strides[d];
      ix += idx[d] * p.x_strides[d];
      iy += idx[d] * p.y_strides[d];
    }
    T* dst = out + o * n;
    for (int64_t i = 0; i < n; ++i) {
      Store(dst, i, c[ic + i * sc] != C(0) ? x[ix + i * sx] : y[iy + i * sy], add);
    }
    for (int d = inner - 1; d >= 0; --d) {
      if (++idx[d] < p.dims[d]) break;
      idx[d] = 0;
    }
  }
}

absl::Status HostWhere(OpContext& ctx) {
  const TensorArg c = ctx.in(0), x = ctx.in(1), y = ctx.in(2), out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(WherePlan plan, MakeWherePlan(c.shape, x.shape, y.shape, out.shape));
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  return ctx.RunOnHost([c, x, y, out, plan, add]() -> absl::Status {
    DispatchDType(x.dtype, [&](auto t) {
      using T = decltype(t);
      DispatchDType(c.dtype, [&](auto k) {
        using C = decltype(k);
        WhereLoop<T, C>(c.data<C>(), x.data<T>(), y.data<T>(), out.data<T>(), plan, add);
      });
    });
    return absl::OkStatus();
  });
}

// fmod=0: the floored remainder; 1: C's fmod (ModParams).
absl::Status HostMod(OpContext& ctx) {
  return ctx.params<ModParams>().fmod != 0 ? HostBinary<BinaryCode::kFmod>(ctx)
                                           : HostBinary<BinaryCode::kMod>(ctx);
}

// out = whether x is NaN (nan) or an infinity of a sign asked for (bools).
absl::Status NanInfLoop(OpContext& ctx, bool nan, bool pos, bool neg) {
  const TensorArg x = ctx.in(0), out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  return ctx.RunOnHost([x, out, nan, pos, neg]() -> absl::Status {
    DispatchDType(x.dtype, [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) {
        const T* in = x.data<T>();
        uint8_t* o = out.data<uint8_t>();
        for (int64_t i = 0; i < x.size(); ++i) {
          const T v = in[i];
          const bool inf = std::isinf(v);
          o[i] = (nan && std::isnan(v)) || (pos && inf && v > 0) || (neg && inf && v < 0);
        }
      }
    });
    return absl::OkStatus();
  });
}

absl::Status HostIsNan(OpContext& ctx) { return NanInfLoop(ctx, true, false, false); }
absl::Status HostIsInf(OpContext& ctx) {
  const IsInfParams& p = ctx.params<IsInfParams>();
  return NanInfLoop(ctx, false, p.detect_positive != 0, p.detect_negative != 0);
}

constexpr uint32_t kReqs = kWriteReqs | ReqBit(OpReqType::kAddTo);

// `backward`: null for an op without one.
template <UnaryCode C>
void RegisterUnary(OpRegistry& r, const char* name, const char* backward) {
  r.Check(r.RegisterKernel(name, KernelNeeds::HostMemory(), {HostUnary<C>, kReqs}));
  if (backward == nullptr) return;
  r.Check(r.RegisterKernel(backward, KernelNeeds::HostMemory(), {HostUnaryBackward<C>, kReqs}));
}

}  // namespace

void RegisterElementwiseHostKernels(OpRegistry& r) {
  r.Check(r.RegisterKernel(op_names::kAdd, KernelNeeds::HostMemory(),
                           {HostBinary<BinaryCode::kAdd>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kAccumulate, KernelNeeds::HostMemory(),
                           {HostBinary<BinaryCode::kAdd>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kSub, KernelNeeds::HostMemory(),
                           {HostBinary<BinaryCode::kSub>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMul, KernelNeeds::HostMemory(),
                           {HostBinary<BinaryCode::kMul>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kDiv, KernelNeeds::HostMemory(),
                           {HostBinary<BinaryCode::kDiv>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kPow, KernelNeeds::HostMemory(),
                           {HostBinary<BinaryCode::kPow>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMaximum, KernelNeeds::HostMemory(),
                           {HostBinary<BinaryCode::kMax>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMinimum, KernelNeeds::HostMemory(),
                           {HostBinary<BinaryCode::kMin>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kEqual, KernelNeeds::HostMemory(),
                           {HostBinary<BinaryCode::kEqual>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kGreater, KernelNeeds::HostMemory(),
                           {HostBinary<BinaryCode::kGreater>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kAddScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kAdd>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kSubScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kSub>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kRsubScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kRsub>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMulScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kMul>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kDivScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kDiv>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kRdivScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kRdiv>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kPowScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kPow>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kRpowScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kRpow>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMaximumScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kMax>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMinimumScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kMin>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kEqualScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kEqual>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kGreaterScalar, KernelNeeds::HostMemory(),
                           {HostScalar<BinaryCode::kGreater>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kWhere, KernelNeeds::HostMemory(), {HostWhere, kReqs}));
  RegisterUnary<UnaryCode::kNeg>(r, op_names::kNeg, op_names::kBackwardNeg);
  RegisterUnary<UnaryCode::kAbs>(r, op_names::kAbs, op_names::kBackwardAbs);
  RegisterUnary<UnaryCode::kExp>(r, op_names::kExp, op_names::kBackwardExp);
  RegisterUnary<UnaryCode::kLog>(r, op_names::kLog, op_names::kBackwardLog);
  RegisterUnary<UnaryCode::kSqrt>(r, op_names::kSqrt, op_names::kBackwardSqrt);
  RegisterUnary<UnaryCode::kRelu>(r, op_names::kRelu, op_names::kBackwardRelu);
  RegisterUnary<UnaryCode::kSigmoid>(r, op_names::kSigmoid, op_names::kBackwardSigmoid);
  RegisterUnary<UnaryCode::kTanh>(r, op_names::kTanh, op_names::kBackwardTanh);
  RegisterUnary<UnaryCode::kGelu>(r, op_names::kGelu, op_names::kBackwardGelu);
  RegisterUnary<UnaryCode::kSquare>(r, op_names::kSquare, op_names::kBackwardSquare);
  RegisterUnary<UnaryCode::kErf>(r, op_names::kErf, op_names::kBackwardErf);
  RegisterUnary<UnaryCode::kFloor>(r, op_names::kFloor, nullptr);
  RegisterUnary<UnaryCode::kCeil>(r, op_names::kCeil, nullptr);
  RegisterUnary<UnaryCode::kRound>(r, op_names::kRound, nullptr);
  RegisterUnary<UnaryCode::kSin>(r, op_names::kSin, op_names::kBackwardSin);
  RegisterUnary<UnaryCode::kCos>(r, op_names::kCos, op_names::kBackwardCos);
  RegisterUnary<UnaryCode::kTan>(r, op_names::kTan, op_names::kBackwardTan);
  RegisterUnary<UnaryCode::kAsin>(r, op_names::kAsin, op_names::kBackwardAsin);
  RegisterUnary<UnaryCode::kAcos>(r, op_names::kAcos, op_names::kBackwardAcos);
  RegisterUnary<UnaryCode::kAtan>(r, op_names::kAtan, op_names::kBackwardAtan);
  RegisterUnary<UnaryCode::kSinh>(r, op_names::kSinh, op_names::kBackwardSinh);
  RegisterUnary<UnaryCode::kCosh>(r, op_names::kCosh, op_names::kBackwardCosh);
  RegisterUnary<UnaryCode::kAsinh>(r, op_names::kAsinh, op_names::kBackwardAsinh);
  RegisterUnary<UnaryCode::kAcosh>(r, op_names::kAcosh, op_names::kBackwardAcosh);
  RegisterUnary<UnaryCode::kAtanh>(r, op_names::kAtanh, op_names::kBackwardAtanh);
  RegisterUnary<UnaryCode::kCopy>(r, op_names::kIdentity, op_names::kBackwardCopy);
  r.Check(r.RegisterKernel(op_names::kMod, KernelNeeds::HostMemory(), {HostMod, kReqs}));
  r.Check(r.RegisterKernel(op_names::kIsNan, KernelNeeds::HostMemory(), {HostIsNan, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kIsInf, KernelNeeds::HostMemory(), {HostIsInf, kWriteReqs}));
}

}  // namespace rill::ops
