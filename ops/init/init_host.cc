// Host kernels of the init ops: vectorizable loops over whole tensors. The
// random ops generate with the host RNG plugin on ctx.stream() and finish
// with a host callback on that stream (after the numbers exist).

#include <cstring>
#include <type_traits>

#include "rill/base/status_macros.h"
#include "rill/ops/init/init.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/shape/float_to_int.h"
#include "rill/plugins/rng/rng.h"
#include "rill/stream/stream.h"

namespace rill::ops {
namespace {

template <typename Fn>
void DispatchFloat(DType dtype, Fn&& fn) {
  if (dtype == DType::kF64)
    fn(double{});
  else
    fn(float{});
}

// Calls fn(U{}) with the unsigned integer type of the element size.
template <typename Fn>
void DispatchBits(int size, Fn&& fn) {
  switch (size) {
    case 1:
      fn(uint8_t{});
      break;
    case 2:
      fn(uint16_t{});
      break;
    case 4:
      fn(uint32_t{});
      break;
    default:
      fn(uint64_t{});
      break;
  }
}

// Runs fn on the host after the work enqueued on ctx.stream() so far.
absl::Status ThenHost(OpContext& ctx, absl::AnyInvocable<absl::Status() &&> fn) {
  RILL_ASSIGN_OR_RETURN(Stream * stream, ctx.stream());
  stream->ThenDoHostCallbackWithStatus(std::move(fn));
  return stream->ok() ? absl::OkStatus() : stream->status();
}

template <typename P>
absl::Status HostFill(OpContext& ctx) {
  const TensorArg out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const uint64_t bits = FillBits(ctx.params<P>().value, out.dtype);
  return ctx.RunOnHost([out, bits]() -> absl::Status {
    DispatchBits(DTypeSize(out.dtype), [&](auto u) {
      using U = decltype(u);
      U v;
      std::memcpy(&v, &bits, sizeof(U));
      U* o = out.data<U>();
      const int64_t n = out.size();
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    });
    return absl::OkStatus();
  });
}

absl::Status HostArange(OpContext& ctx) {
  const TensorArg out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const ArangeParams p = ctx.params<ArangeParams>();
  return ctx.RunOnHost([out, p]() -> absl::Status {
    DispatchDType(out.dtype, [&](auto t) {
      using T = decltype(t);
      T* o = out.data<T>();
      const int64_t n = out.size();
      if constexpr (std::is_same_v<T, float>) {  // As the device kernels: in float.
        const float s = static_cast<float>(p.start), d = static_cast<float>(p.step);
        for (int64_t i = 0; i < n; ++i) o[i] = s + static_cast<float>(i) * d;
      } else if constexpr (std::is_integral_v<T>) {  // NaN 0, saturated, truncated.
        for (int64_t i = 0; i < n; ++i)
          o[i] = FloatToInt<T>(p.start + static_cast<double>(i) * p.step);
      } else {
        for (int64_t i = 0; i < n; ++i)
          o[i] = static_cast<T>(p.start + static_cast<double>(i) * p.step);
      }
    });
    return absl::OkStatus();
  });
}

absl::Status HostRandomUniform(OpContext& ctx) {
  const TensorArg out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const RandomUniformParams& p = ctx.params<RandomUniformParams>();
  RILL_ASSIGN_OR_RETURN(RngSupport * rng, ctx.rng());
  RILL_ASSIGN_OR_RETURN(Stream * stream, ctx.stream());
  if (out.dtype == DType::kF64) {
    DeviceMemory<double> mem(out.view());
    RILL_RETURN_IF_ERROR(rng->DoPopulateRandUniform(stream, &mem));
  } else {
    DeviceMemory<float> mem(out.view());
    RILL_RETURN_IF_ERROR(rng->DoPopulateRandUniform(stream, &mem));
  }
  const double low = p.low, range = p.high - p.low;
  return ThenHost(ctx, [out, low, range]() -> absl::Status {
    DispatchFloat(out.dtype, [&](auto t) {
      using T = decltype(t);
      T* o = out.data<T>();
      const T a = T(low), b = T(range);
      const int64_t n = out.size();
      for (int64_t i = 0; i < n; ++i) o[i] = a + b * o[i];
    });
    return absl::OkStatus();
  });
}

// Dropout: mask and y from u (training) or y = x, mask = 1.
absl::Status HostDropout(OpContext& ctx) {
  const TensorArg x = ctx.in(0), y = ctx.out(0), mask = ctx.out(1);
  if (x.size() == 0) return absl::OkStatus();
  const double p = ctx.params<DropoutParams>().p;
  if (!ctx.is_train()) {
    return ctx.RunOnHost([x, y, mask]() -> absl::Status {
      DispatchFloat(x.dtype, [&](auto t) {
        using T = decltype(t);
        const T* xi = x.data<T>();
        T* yo = y.data<T>();
        T* mo = mask.data<T>();
        const int64_t n = x.size();
        for (int64_t i = 0; i < n; ++i) {
          yo[i] = xi[i];
          mo[i] = T(1);
        }
      });
      return absl::OkStatus();
    });
  }
  RILL_ASSIGN_OR_RETURN(TensorArg u, ctx.Temp(x.shape, x.dtype));
  RILL_ASSIGN_OR_RETURN(RngSupport * rng, ctx.rng());
  RILL_ASSIGN_OR_RETURN(Stream * stream, ctx.stream());
  if (x.dtype == DType::kF64) {
    DeviceMemory<double> mem(u.view());
    RILL_RETURN_IF_ERROR(rng->DoPopulateRandUniform(stream, &mem));
  } else {
    DeviceMemory<float> mem(u.view());
    RILL_RETURN_IF_ERROR(rng->DoPopulateRandUniform(stream, &mem));
  }
  return ThenHost(ctx, [x, y, mask, u, p]() -> absl::Status {
    DispatchFloat(x.dtype, [&](auto t) {
      using T = decltype(t);
      const T* xi = x.data<T>();
      const T* ui = u.data<T>();
      T* yo = y.data<T>();
      T* mo = mask.data<T>();
      const T pt = T(p), scale = T(1 / (1 - p));
      const int64_t n = x.size();
      for (int64_t i = 0; i < n; ++i) {
        const T m = ui[i] > pt ? T(1) : T(0);
        mo[i] = m;
        yo[i] = xi[i] * m * scale;
      }
    });
    return absl::OkStatus();
  });
}

absl::Status HostDropoutBackward(OpContext& ctx) {
  const TensorArg dy = ctx.in(0), mask = ctx.in(1), dx = ctx.out(0);
  if (dx.size() == 0) return absl::OkStatus();
  const double p = ctx.params<DropoutParams>().p;
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  return ctx.RunOnHost([dy, mask, dx, p, add]() -> absl::Status {
    DispatchFloat(dy.dtype, [&](auto t) {
      using T = decltype(t);
      const T* g = dy.data<T>();
      const T* m = mask.data<T>();
      T* o = dx.data<T>();
      const T scale = T(1 / (1 - p));
      const int64_t n = dx.size();
      if (add) {
        for (int64_t i = 0; i < n; ++i) o[i] += g[i] * m[i] * scale;
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = g[i] * m[i] * scale;
      }
    });
    return absl::OkStatus();
  });
}

}  // namespace

// Normals need no transform: the plugin call is the whole kernel on every
// platform (shared with init_device.cc).
absl::Status RandomNormalKernel(OpContext& ctx) {
  const TensorArg out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const RandomNormalParams& p = ctx.params<RandomNormalParams>();
  RILL_ASSIGN_OR_RETURN(RngSupport * rng, ctx.rng());
  RILL_ASSIGN_OR_RETURN(Stream * stream, ctx.stream());
  // Normals come in pairs: an odd count goes through a temp one longer.
  TensorArg dst = out;
  if (out.size() % 2 != 0) {
    RILL_ASSIGN_OR_RETURN(dst, ctx.Temp(Shape{out.size() + 1}, out.dtype));
  }
  if (out.dtype == DType::kF64) {
    DeviceMemory<double> mem(dst.view());
    RILL_RETURN_IF_ERROR(rng->DoPopulateRandGaussian(stream, p.loc, p.scale, &mem));
  } else {
    DeviceMemory<float> mem(dst.view());
    RILL_RETURN_IF_ERROR(rng->DoPopulateRandGaussian(stream, static_cast<float>(p.loc),
                                                     static_cast<float>(p.scale), &mem));
  }
  if (dst.block.opaque() != out.block.opaque() || dst.offset != out.offset) {
    DeviceMemoryBase d = out.view();
    stream->ThenMemcpy(&d, dst.view(), out.bytes());
  }
  return stream->ok() ? absl::OkStatus() : stream->status();
}

void RegisterInitHostKernels(OpRegistry& r) {
  r.Check(r.RegisterKernel(op_names::kFill, KernelNeeds::HostMemory(),
                           {HostFill<FillParams>, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kZeros, KernelNeeds::HostMemory(),
                           {HostFill<ZerosParams>, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kOnes, KernelNeeds::HostMemory(),
                           {HostFill<OnesParams>, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kArange, KernelNeeds::HostMemory(), {HostArange, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kRandomUniform,
                           KernelNeeds::HostMemory().And({PluginKind::kRng}),
                           {HostRandomUniform, kWriteReqs}));
  // Library calls only: every device with an RNG plugin.
  r.Check(r.RegisterKernel(op_names::kRandomNormal, KernelNeeds::Libraries({PluginKind::kRng}),
                           {RandomNormalKernel, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kDropout, KernelNeeds::HostMemory().And({PluginKind::kRng}),
                           {HostDropout, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardDropout, KernelNeeds::HostMemory(),
                           {HostDropoutBackward, kWriteReqs | ReqBit(OpReqType::kAddTo)}));
}

}  // namespace rill::ops
