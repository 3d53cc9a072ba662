// OpenCL kernels of the DNN-style nn ops (OpenCL has no DNN plugin): naive
// direct loops, one work item per output element (per channel for the
// batch-norm reductions), float only. matmul and fully_connected use the
// OpenCL BLAS plugin (nn_host.cc); CUDA uses cuDNN through the stream.

#include <string>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/device_kernel.h"
#include "rill/ops/nn/nn.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"

namespace rill::ops {
namespace {

// Geometry handed to the kernels by value; the same layout (all 64-bit) in
// OpenCL C.
struct ConvInfo {
  int64_t n, c, h, w;  // Data.
  int64_t k, oh, ow;   // Output channels and size.
  int64_t kh, kw, ph, pw, sh, sw, dh, dw, groups;
};
struct PoolInfo {
  int64_t n, c, h, w, oh, ow, kh, kw, ph, pw, sh, sw,
      mode;  // mode: 0 max, 1 avg incl. pad, 2 avg excl.
};

constexpr char kSource[] = R"CLC(
typedef struct { long n, c, h, w, k, oh, ow, kh, kw, ph, pw, sh, sw, dh, dw, groups; } ConvInfo;
typedef struct { long n, c, h, w, oh, ow, kh, kw, ph, pw, sh, sw, mode; } PoolInfo;

__kernel void conv_forward(__global const float* x, ulong x_off, __global const float* wt, ulong w_off,
                           __global float* y, ulong y_off, ConvInfo p, ulong total) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  long ox = i % p.ow, oy = (i / p.ow) % p.oh, o = (i / (p.ow * p.oh)) % p.k, n = i / (p.ow * p.oh * p.k);
  long cpg = p.c / p.groups, kpg = p.k / p.groups, g = o / kpg;
  float acc = 0;
  for (long ci = 0; ci < cpg; ++ci) {
    for (long ky = 0; ky < p.kh; ++ky) {
      long iy = oy * p.sh - p.ph + ky * p.dh;
      if (iy < 0 || iy >= p.h) continue;
      for (long kx = 0; kx < p.kw; ++kx) {
        long ix = ox * p.sw - p.pw + kx * p.dw;
        if (ix < 0 || ix >= p.w) continue;
        acc += x[x_off + ((n * p.c + g * cpg + ci) * p.h + iy) * p.w + ix] *
               wt[w_off + ((o * cpg + ci) * p.kh + ky) * p.kw + kx];
      }
    }
  }
  y[y_off + i] = acc;
}

__kernel void conv_backward_data(__global const float* dy, ulong dy_off, __global const float* wt, ulong w_off,
                                 __global float* dx, ulong dx_off, ConvInfo p, ulong total) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  long ix = i % p.w, iy = (i / p.w) % p.h, c = (i / (p.w * p.h)) % p.c, n = i / (p.w * p.h * p.c);
  long cpg = p.c / p.groups, kpg = p.k / p.groups, g = c / cpg, ci = c % cpg;
  float acc = 0;
  for (long o = g * kpg; o < (g + 1) * kpg; ++o) {
    for (long ky = 0; ky < p.kh; ++ky) {
      long ty = iy + p.ph - ky * p.dh;
      if (ty < 0 || ty % p.sh != 0) continue;
      long oy = ty / p.sh;
      if (oy >= p.oh) continue;
      for (long kx = 0; kx < p.kw; ++kx) {
        long tx = ix + p.pw - kx * p.dw;
        if (tx < 0 || tx % p.sw != 0) continue;
        long ox = tx / p.sw;
        if (ox >= p.ow) continue;
        acc += dy[dy_off + ((n * p.k + o) * p.oh + oy) * p.ow + ox] *
               wt[w_off + ((o * cpg + ci) * p.kh + ky) * p.kw + kx];
      }
    }
  }
  dx[dx_off + i] = acc;
}

__kernel void conv_backward_filter(__global const float* dy, ulong dy_off, __global const float* x, ulong x_off,
                                   __global float* dw, ulong dw_off, ConvInfo p, ulong total) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  long cpg = p.c / p.groups, kpg = p.k / p.groups;
  long kx = i % p.kw, ky = (i / p.kw) % p.kh, ci = (i / (p.kw * p.kh)) % cpg, o = i / (p.kw * p.kh * cpg);
  long c = (o / kpg) * cpg + ci;
  float acc = 0;
  for (long n = 0; n < p.n; ++n) {
    for (long oy = 0; oy < p.oh; ++oy) {
      long iy = oy * p.sh - p.ph + ky * p.dh;
      if (iy < 0 || iy >= p.h) continue;
      for (long ox = 0; ox < p.ow; ++ox) {
        long ix = ox * p.sw - p.pw + kx * p.dw;
        if (ix < 0 || ix >= p.w) continue;
        acc += dy[dy_off + ((n * p.k + o) * p.oh + oy) * p.ow + ox] * x[x_off + ((n * p.c + c) * p.h + iy) * p.w + ix];
      }
    }
  }
  dw[dw_off + i] = acc;
}

// The first maximum of window (oy, ox) as y * w + x, and the value.
long pool_argmax(__global const float* x, long base, PoolInfo p, long oy, long ox) {
  long y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw, best = -1;
  float m = 0;
  for (long yy = max(y0, 0L); yy < min(y0 + p.kh, p.h); ++yy) {
    for (long xx = max(x0, 0L); xx < min(x0 + p.kw, p.w); ++xx) {
      float v = x[base + yy * p.w + xx];
      if (best < 0 || v > m) { m = v; best = yy * p.w + xx; }
    }
  }
  return best;
}

// The divisor of an average, in float: with a pad of nearly the window, a
// window far larger than the data is valid, and kh * kw may pass 2^63.
float pool_count(PoolInfo p, long oy, long ox) {
  if (p.mode == 1) return (float)p.kh * (float)p.kw;
  long y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
  return (float)(min(y0 + p.kh, p.h) - max(y0, 0L)) * (float)(min(x0 + p.kw, p.w) - max(x0, 0L));
}

__kernel void pool_forward(__global const float* x, ulong x_off, __global float* y, ulong y_off, PoolInfo p,
                           ulong total) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  long ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh);
  long base = x_off + nc * p.h * p.w;
  if (p.mode == 0) {
    long a = pool_argmax(x, base, p, oy, ox);
    y[y_off + i] = a < 0 ? 0.0f : x[base + a];
    return;
  }
  long y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
  float s = 0;
  for (long yy = max(y0, 0L); yy < min(y0 + p.kh, p.h); ++yy)
    for (long xx = max(x0, 0L); xx < min(x0 + p.kw, p.w); ++xx) s += x[base + yy * p.w + xx];
  y[y_off + i] = s / pool_count(p, oy, ox);
}

__kernel void pool_backward(__global const float* dy, ulong dy_off, __global const float* x, ulong x_off,
                            __global float* dx, ulong dx_off, PoolInfo p, ulong total) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  long ix = i % p.w, iy = (i / p.w) % p.h, nc = i / (p.w * p.h);
  long base = x_off + nc * p.h * p.w, obase = dy_off + nc * p.oh * p.ow;
  long ty = iy + p.ph, tx = ix + p.pw;
  long oy0 = ty < p.kh ? 0 : (ty - p.kh) / p.sh + 1, oy1 = min(ty / p.sh, p.oh - 1);
  long ox0 = tx < p.kw ? 0 : (tx - p.kw) / p.sw + 1, ox1 = min(tx / p.sw, p.ow - 1);
  float acc = 0;
  for (long oy = oy0; oy <= oy1; ++oy) {
    for (long ox = ox0; ox <= ox1; ++ox) {
      float g = dy[obase + oy * p.ow + ox];
      if (p.mode == 0) {
        if (pool_argmax(x, base, p, oy, ox) == iy * p.w + ix) acc += g;
      } else {
        acc += g / pool_count(p, oy, ox);
      }
    }
  }
  dx[dx_off + i] = acc;
}

// Per channel: mean and 1 / sqrt(biased variance + eps).
__kernel void bn_stats(__global const float* x, ulong x_off, __global float* mean, ulong mean_off,
                       __global float* inv_std, ulong inv_off, long n, long c, long hw, float eps) {
  long ch = get_global_id(0);
  if (ch >= c) return;
  float s = 0;
  for (long b = 0; b < n; ++b)
    for (long j = 0; j < hw; ++j) s += x[x_off + (b * c + ch) * hw + j];
  float m = s / (float)(n * hw), v = 0;
  for (long b = 0; b < n; ++b)
    for (long j = 0; j < hw; ++j) { float d = x[x_off + (b * c + ch) * hw + j] - m; v += d * d; }
  mean[mean_off + ch] = m;
  inv_std[inv_off + ch] = 1.0f / sqrt(v / (float)(n * hw) + eps);
}

__kernel void bn_forward(__global const float* x, ulong x_off, __global const float* gamma, ulong g_off,
                         __global const float* beta, ulong b_off, __global const float* mean, ulong mean_off,
                         __global const float* inv_std, ulong inv_off, __global float* y, ulong y_off,
                         long c, long hw, ulong total) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  long ch = (i / hw) % c;
  y[y_off + i] = gamma[g_off + ch] * (x[x_off + i] - mean[mean_off + ch]) * inv_std[inv_off + ch] + beta[b_off + ch];
}

// Per channel: dbeta = sum dy, dgamma = sum dy * xhat.
__kernel void bn_backward_reduce(__global const float* dy, ulong dy_off, __global const float* x, ulong x_off,
                                 __global const float* mean, ulong mean_off, __global const float* inv_std,
                                 ulong inv_off, __global float* dgamma, ulong dg_off, __global float* dbeta,
                                 ulong db_off, long n, long c, long hw) {
  long ch = get_global_id(0);
  if (ch >= c) return;
  float m = mean[mean_off + ch], is = inv_std[inv_off + ch], sg = 0, sb = 0;
  for (long b = 0; b < n; ++b) {
    for (long j = 0; j < hw; ++j) {
      long k = (b * c + ch) * hw + j;
      float g = dy[dy_off + k];
      sb += g;
      sg += g * (x[x_off + k] - m) * is;
    }
  }
  dgamma[dg_off + ch] = sg;
  dbeta[db_off + ch] = sb;
}

__kernel void bn_backward_data(__global const float* dy, ulong dy_off, __global const float* x, ulong x_off,
                               __global const float* gamma, ulong g_off, __global const float* mean, ulong mean_off,
                               __global const float* inv_std, ulong inv_off, __global const float* dgamma,
                               ulong dg_off, __global const float* dbeta, ulong db_off, __global float* dx,
                               ulong dx_off, long n, long c, long hw, ulong total) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  long ch = (i / hw) % c;
  float is = inv_std[inv_off + ch], cnt = (float)(n * hw);
  float xhat = (x[x_off + i] - mean[mean_off + ch]) * is;
  dx[dx_off + i] = gamma[g_off + ch] * is *
                   (dy[dy_off + i] - dbeta[db_off + ch] / cnt - xhat * dgamma[dg_off + ch] / cnt);
}

// mode: 0 relu, 1 sigmoid, 2 tanh (ActivationMode).
__kernel void act_forward(int mode, __global const float* x, ulong x_off, __global float* y, ulong y_off,
                          ulong total) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  float v = x[x_off + i];
  y[y_off + i] = mode == 0 ? fmax(v, 0.0f) : mode == 1 ? 1.0f / (1.0f + exp(-v)) : tanh(v);
}

__kernel void act_backward(int mode, __global const float* dy, ulong dy_off, __global const float* x, ulong x_off,
                           __global const float* y, ulong y_off, __global float* dx, ulong dx_off, ulong total) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  float g = dy[dy_off + i], v = y[y_off + i];
  dx[dx_off + i] = mode == 0 ? (x[x_off + i] > 0 ? g : 0.0f) : mode == 1 ? g * v * (1.0f - v) : g * (1.0f - v * v);
}
)CLC";

absl::StatusOr<const Kernel*> Get(OpContext& ctx, const char* entry) {
  return CachedKernel(ctx.executor(), absl::StrCat("nn.", entry),
                      [&] { return KernelSpec(entry).AddOpenClSource(kSource); });
}

ConvInfo MakeConvInfo(const ConvGeometry& g) {
  return ConvInfo{g.x.n,
                  g.x.c,
                  g.x.h,
                  g.x.w,
                  g.y.c,
                  g.y.h,
                  g.y.w,
                  g.w.height,
                  g.w.width,
                  g.conv.pad_h,
                  g.conv.pad_w,
                  g.conv.stride_h,
                  g.conv.stride_w,
                  g.conv.dilation_h,
                  g.conv.dilation_w,
                  g.conv.group_count};
}

PoolInfo MakePoolInfo(const PoolGeometry& g) {
  const int64_t mode = g.pool.mode == PoolingMode::kMax                     ? 0
                       : g.pool.mode == PoolingMode::kAverageIncludePadding ? 1
                                                                            : 2;
  return PoolInfo{g.x.n,        g.x.c,        g.x.h,           g.x.w,
                  g.y.h,        g.y.w,        g.pool.window_h, g.pool.window_w,
                  g.pool.pad_h, g.pool.pad_w, g.pool.stride_h, g.pool.stride_w,
                  mode};
}

absl::Status ClConv(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(ConvGeometry g,
                        ConvGeom(ctx.params<ConvParams>(), ctx.in(0).shape, ctx.in(1).shape));
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, "conv_forward"));
  const TensorArg& y = ctx.out(0);
  LaunchArgs a;
  a.Tensor(ctx.in(0)).Tensor(ctx.in(1)).Tensor(y).Value(MakeConvInfo(g)).Value<uint64_t>(y.size());
  return Launch1D(ctx, *k, y.size(), a.Take());
}

absl::Status ClConvBackwardData(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(ConvGeometry g,
                        ConvGeom(ctx.params<ConvParams>(), ctx.in(1).shape, ctx.in(2).shape));
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, "conv_backward_data"));
  const TensorArg& dx = ctx.out(0);
  LaunchArgs a;
  a.Tensor(ctx.in(0))
      .Tensor(ctx.in(2))
      .Tensor(dx)
      .Value(MakeConvInfo(g))
      .Value<uint64_t>(dx.size());
  return Launch1D(ctx, *k, dx.size(), a.Take());
}

absl::Status ClConvBackwardFilter(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(ConvGeometry g,
                        ConvGeom(ctx.params<ConvParams>(), ctx.in(1).shape, ctx.in(2).shape));
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, "conv_backward_filter"));
  const TensorArg& dw = ctx.out(0);
  LaunchArgs a;
  a.Tensor(ctx.in(0))
      .Tensor(ctx.in(1))
      .Tensor(dw)
      .Value(MakeConvInfo(g))
      .Value<uint64_t>(dw.size());
  return Launch1D(ctx, *k, dw.size(), a.Take());
}

absl::Status ClPool(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(PoolGeometry g, PoolGeom(ctx.params<PoolParams>(), ctx.in(0).shape));
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, "pool_forward"));
  const TensorArg& y = ctx.out(0);
  LaunchArgs a;
  a.Tensor(ctx.in(0)).Tensor(y).Value(MakePoolInfo(g)).Value<uint64_t>(y.size());
  return Launch1D(ctx, *k, y.size(), a.Take());
}

// Inputs (dy, x, y).
absl::Status ClPoolBackward(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(PoolGeometry g, PoolGeom(ctx.params<PoolParams>(), ctx.in(1).shape));
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, "pool_backward"));
  const TensorArg& dx = ctx.out(0);
  LaunchArgs a;
  a.Tensor(ctx.in(0))
      .Tensor(ctx.in(1))
      .Tensor(dx)
      .Value(MakePoolInfo(g))
      .Value<uint64_t>(dx.size());
  return Launch1D(ctx, *k, dx.size(), a.Take());
}

absl::Status ClBatchNorm(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(TensorDescriptor d, BatchNormDesc(ctx.in(0).shape));
  RILL_ASSIGN_OR_RETURN(const Kernel* stats, Get(ctx, "bn_stats"));
  RILL_ASSIGN_OR_RETURN(const Kernel* fwd, Get(ctx, "bn_forward"));
  const int64_t hw = d.h * d.w;
  const float eps = static_cast<float>(ctx.params<BatchNormParams>().eps);
  LaunchArgs s;
  s.Tensor(ctx.in(0))
      .Tensor(ctx.out(1))
      .Tensor(ctx.out(2))
      .Value<int64_t>(d.n)
      .Value<int64_t>(d.c)
      .Value<int64_t>(hw)
      .Value(eps);
  RILL_RETURN_IF_ERROR(Launch1D(ctx, *stats, d.c, s.Take()));
  const TensorArg& y = ctx.out(0);
  LaunchArgs f;
  f.Tensor(ctx.in(0))
      .Tensor(ctx.in(1))
      .Tensor(ctx.in(2))
      .Tensor(ctx.out(1))
      .Tensor(ctx.out(2))
      .Tensor(y)
      .Value<int64_t>(d.c)
      .Value<int64_t>(hw)
      .Value<uint64_t>(y.size());
  return Launch1D(ctx, *fwd, y.size(), f.Take());
}

// Inputs (dy, x, gamma, saved_mean, saved_inv_std); outputs (dx, dgamma, dbeta).
absl::Status ClBatchNormBackward(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(TensorDescriptor d, BatchNormDesc(ctx.in(1).shape));
  RILL_ASSIGN_OR_RETURN(const Kernel* reduce, Get(ctx, "bn_backward_reduce"));
  RILL_ASSIGN_OR_RETURN(const Kernel* data, Get(ctx, "bn_backward_data"));
  const int64_t hw = d.h * d.w;
  LaunchArgs r;
  r.Tensor(ctx.in(0))
      .Tensor(ctx.in(1))
      .Tensor(ctx.in(3))
      .Tensor(ctx.in(4))
      .Tensor(ctx.out(1))
      .Tensor(ctx.out(2))
      .Value<int64_t>(d.n)
      .Value<int64_t>(d.c)
      .Value<int64_t>(hw);
  RILL_RETURN_IF_ERROR(Launch1D(ctx, *reduce, d.c, r.Take()));
  const TensorArg& dx = ctx.out(0);
  LaunchArgs a;
  a.Tensor(ctx.in(0))
      .Tensor(ctx.in(1))
      .Tensor(ctx.in(2))
      .Tensor(ctx.in(3))
      .Tensor(ctx.in(4))
      .Tensor(ctx.out(1))
      .Tensor(ctx.out(2))
      .Tensor(dx)
      .Value<int64_t>(d.n)
      .Value<int64_t>(d.c)
      .Value<int64_t>(hw)
      .Value<uint64_t>(dx.size());
  return Launch1D(ctx, *data, dx.size(), a.Take());
}

absl::Status ClActivation(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(ActivationMode mode, ParseActType(ctx.params<ActivationParams>().act_type));
  const TensorArg& y = ctx.out(0);
  if (y.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, "act_forward"));
  LaunchArgs a;
  a.Value<int32_t>(static_cast<int32_t>(mode))
      .Tensor(ctx.in(0))
      .Tensor(y)
      .Value<uint64_t>(y.size());
  return Launch1D(ctx, *k, y.size(), a.Take());
}

// Inputs (dy, x, y).
absl::Status ClActivationBackward(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(ActivationMode mode, ParseActType(ctx.params<ActivationParams>().act_type));
  const TensorArg& dx = ctx.out(0);
  if (dx.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, "act_backward"));
  LaunchArgs a;
  a.Value<int32_t>(static_cast<int32_t>(mode))
      .Tensor(ctx.in(0))
      .Tensor(ctx.in(1))
      .Tensor(ctx.in(2))
      .Tensor(dx)
      .Value<uint64_t>(dx.size());
  return Launch1D(ctx, *k, dx.size(), a.Take());
}

}  // namespace

void RegisterNnDeviceKernels(OpRegistry& r) {
  // OpenCL C only (no .cu: CUDA runs these ops through cuDNN).
  const KernelNeeds p = KernelNeeds::DeviceCode(DeviceCodeForms("nn", {}));
  r.Check(r.RegisterKernel(op_names::kConv2d, p, {ClConv, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardConv2dData, p, {ClConvBackwardData, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardConv2dFilter, p, {ClConvBackwardFilter, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kPooling, p, {ClPool, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardPooling, p, {ClPoolBackward, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBatchNorm, p, {ClBatchNorm, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardBatchNorm, p, {ClBatchNormBackward, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kActivation, p, {ClActivation, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardActivation, p, {ClActivationBackward, kWriteReqs}));
}

}  // namespace rill::ops
