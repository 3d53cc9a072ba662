// Host pooling: per NCHW plane, a fast path for the 2x2 stride-2 unpadded
// max pooling of CNNs and a general loop over clipped windows.

#include "rill/ops/nn/pool_host.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "rill/base/status_macros.h"
#include "rill/ops/nn/nn.h"
#include "rill/ops/op.h"

namespace rill::ops {
namespace {

// One plane's sizes: data h x w, output oh x ow.
struct Plane {
  int64_t h, w, oh, ow;
};

// The window of output index o along one axis, clipped to [0, size).
struct Span {
  int64_t lo, hi;
};
inline Span Window(int64_t o, int64_t stride, int64_t pad, int64_t window, int64_t size) {
  const int64_t start = o * stride - pad;
  return {std::max<int64_t>(start, 0), std::min(start + window, size)};
}

bool Is2x2Stride2(const PoolingDescriptor& p) {
  return p.mode == PoolingMode::kMax && p.window_h == 2 && p.window_w == 2 && p.stride_h == 2 &&
         p.stride_w == 2 && p.pad_h == 0 && p.pad_w == 0;
}

// Four windows of a row pair at a time (SSE2, the x86-64 baseline: the
// build's -O2 does not vectorize these strided loops): the 2x2 maxima into
// out[0, 4 k) and, with `grad`, dy at each window's first maximum and 0
// elsewhere into d0/d1. Returns 4 k, the windows done.
int64_t Max2x2Simd(const float* r0, const float* r1, int64_t ow, float* out, const float* grad,
                   float* d0, float* d1) {
  int64_t ox = 0;
#if defined(__SSE2__)
  const __m128 ones = _mm_castsi128_ps(_mm_set1_epi32(-1));
  for (; ox + 4 <= ow; ox += 4) {
    const __m128 t0 = _mm_loadu_ps(r0 + 2 * ox), t1 = _mm_loadu_ps(r0 + 2 * ox + 4);
    const __m128 u0 = _mm_loadu_ps(r1 + 2 * ox), u1 = _mm_loadu_ps(r1 + 2 * ox + 4);
    const __m128 a = _mm_shuffle_ps(t0, t1, _MM_SHUFFLE(2, 0, 2, 0)),
                 b = _mm_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 1, 3, 1));
    const __m128 c = _mm_shuffle_ps(u0, u1, _MM_SHUFFLE(2, 0, 2, 0)),
                 d = _mm_shuffle_ps(u0, u1, _MM_SHUFFLE(3, 1, 3, 1));
    const __m128 m = _mm_max_ps(_mm_max_ps(a, b), _mm_max_ps(c, d));
    if (grad == nullptr) {
      _mm_storeu_ps(out + ox, m);
      continue;
    }
    const __m128 ka = _mm_cmpeq_ps(a, m), kb = _mm_andnot_ps(ka, _mm_cmpeq_ps(b, m));
    const __m128 kc = _mm_andnot_ps(_mm_or_ps(ka, kb), _mm_cmpeq_ps(c, m));
    const __m128 kd = _mm_andnot_ps(_mm_or_ps(_mm_or_ps(ka, kb), kc), ones);
    const __m128 v = _mm_loadu_ps(grad + ox);
    const __m128 ga = _mm_and_ps(ka, v), gb = _mm_and_ps(kb, v), gc = _mm_and_ps(kc, v),
                 gd = _mm_and_ps(kd, v);
    _mm_storeu_ps(d0 + 2 * ox, _mm_unpacklo_ps(ga, gb));
    _mm_storeu_ps(d0 + 2 * ox + 4, _mm_unpackhi_ps(ga, gb));
    _mm_storeu_ps(d1 + 2 * ox, _mm_unpacklo_ps(gc, gd));
    _mm_storeu_ps(d1 + 2 * ox + 4, _mm_unpackhi_ps(gc, gd));
  }
#endif
  return ox;
}

void MaxForward2x2(const Plane& g, const float* x, float* y) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const float* r0 = x + 2 * oy * g.w;
    const float* r1 = r0 + g.w;
    float* out = y + oy * g.ow;
    for (int64_t ox = Max2x2Simd(r0, r1, g.ow, out, nullptr, nullptr, nullptr); ox < g.ow; ++ox) {
      out[ox] =
          std::max(std::max(r0[2 * ox], r0[2 * ox + 1]), std::max(r1[2 * ox], r1[2 * ox + 1]));
    }
  }
}

// Every element of dx written: dy at each window's first maximum, 0 elsewhere
// (and in the odd last row or column no window covers). Branch-free: after
// relu windows often tie at 0, and branches on the comparisons mispredicted
// (4x slower).
void MaxBackward2x2(const Plane& g, const float* x, const float* dy, float* dx) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const float* r0 = x + 2 * oy * g.w;
    const float* r1 = r0 + g.w;
    float* d0 = dx + 2 * oy * g.w;
    float* d1 = d0 + g.w;
    const float* grad = dy + oy * g.ow;
    for (int64_t ox = Max2x2Simd(r0, r1, g.ow, nullptr, grad, d0, d1); ox < g.ow; ++ox) {
      const float a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
      const float m = std::max(std::max(a, b), std::max(c, d));
      const uint32_t ka = a == m, kb = (b == m) & (ka ^ 1), kc = (c == m) & ((ka | kb) ^ 1),
                     kd = (ka | kb | kc) ^ 1;
      const uint32_t v = std::bit_cast<uint32_t>(grad[ox]);
      d0[2 * ox] = std::bit_cast<float>(v & (0u - ka));
      d0[2 * ox + 1] = std::bit_cast<float>(v & (0u - kb));
      d1[2 * ox] = std::bit_cast<float>(v & (0u - kc));
      d1[2 * ox + 1] = std::bit_cast<float>(v & (0u - kd));
    }
    if (g.w % 2 != 0) d0[g.w - 1] = d1[g.w - 1] = 0.f;
  }
  if (g.h % 2 != 0) std::fill(dx + (g.h - 1) * g.w, dx + g.h * g.w, 0.f);
}

void ForwardPlane(const PoolingDescriptor& p, const Plane& g, const float* x, float* y) {
  const bool max = p.mode == PoolingMode::kMax;
  // In double: with a pad of nearly the window, a window far larger than
  // the data is valid, and its area may pass INT64_MAX.
  const float full = static_cast<float>(static_cast<double>(p.window_h) * p.window_w);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const Span rows = Window(oy, p.stride_h, p.pad_h, p.window_h, g.h);
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const Span cols = Window(ox, p.stride_w, p.pad_w, p.window_w, g.w);
      float acc = max ? -std::numeric_limits<float>::infinity() : 0.f;
      for (int64_t r = rows.lo; r < rows.hi; ++r) {
        const float* row = x + r * g.w;
        for (int64_t c = cols.lo; c < cols.hi; ++c)
          acc = max ? (row[c] > acc ? row[c] : acc) : acc + row[c];
      }
      if (!max) {
        const float count = static_cast<float>((rows.hi - rows.lo) * (cols.hi - cols.lo));
        acc /= p.mode == PoolingMode::kAverageIncludePadding ? full : count;
      }
      y[oy * g.ow + ox] = acc;
    }
  }
}

void BackwardPlane(const PoolingDescriptor& p, const Plane& g, const float* x, const float* dy,
                   float* dx) {
  std::fill(dx, dx + g.h * g.w, 0.f);
  const bool max = p.mode == PoolingMode::kMax;
  // In double: with a pad of nearly the window, a window far larger than
  // the data is valid, and its area may pass INT64_MAX.
  const float full = static_cast<float>(static_cast<double>(p.window_h) * p.window_w);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const Span rows = Window(oy, p.stride_h, p.pad_h, p.window_h, g.h);
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const Span cols = Window(ox, p.stride_w, p.pad_w, p.window_w, g.w);
      const float grad = dy[oy * g.ow + ox];
      if (max) {
        int64_t at = rows.lo * g.w + cols.lo;  // Windows are never empty (pad < window).
        for (int64_t r = rows.lo; r < rows.hi; ++r) {
          for (int64_t c = cols.lo; c < cols.hi; ++c) {
            if (x[r * g.w + c] > x[at]) at = r * g.w + c;
          }
        }
        dx[at] += grad;
        continue;
      }
      const float count = static_cast<float>((rows.hi - rows.lo) * (cols.hi - cols.lo));
      const float share = grad / (p.mode == PoolingMode::kAverageIncludePadding ? full : count);
      for (int64_t r = rows.lo; r < rows.hi; ++r) {
        for (int64_t c = cols.lo; c < cols.hi; ++c) dx[r * g.w + c] += share;
      }
    }
  }
}

}  // namespace

void PoolForwardNchw(const PoolingDescriptor& p, const TensorDescriptor& xd,
                     const TensorDescriptor& yd, const float* x, float* y) {
  const Plane g{xd.h, xd.w, yd.h, yd.w};
  const int64_t planes = xd.n * xd.c, in = g.h * g.w, out = g.oh * g.ow;
  const bool fast = Is2x2Stride2(p);
  for (int64_t i = 0; i < planes; ++i) {
    if (fast) {
      MaxForward2x2(g, x + i * in, y + i * out);
    } else {
      ForwardPlane(p, g, x + i * in, y + i * out);
    }
  }
}

void PoolBackwardNchw(const PoolingDescriptor& p, const TensorDescriptor& xd,
                      const TensorDescriptor& yd, const float* x, const float* dy, float* dx) {
  const Plane g{xd.h, xd.w, yd.h, yd.w};
  const int64_t planes = xd.n * xd.c, in = g.h * g.w, out = g.oh * g.ow;
  const bool fast = Is2x2Stride2(p);
  for (int64_t i = 0; i < planes; ++i) {
    if (fast) {
      MaxBackward2x2(g, x + i * in, dy + i * out, dx + i * in);
    } else {
      BackwardPlane(p, g, x + i * in, dy + i * out, dx + i * in);
    }
  }
}

absl::Status HostPoolForwardKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(PoolGeometry g, PoolGeom(ctx.params<PoolParams>(), ctx.in(0).shape));
  const TensorArg x = ctx.in(0), y = ctx.out(0);
  if (y.size() == 0) return absl::OkStatus();
  return ctx.RunOnHost([g, x, y]() -> absl::Status {
    PoolForwardNchw(g.pool, g.x, g.y, x.data<float>(), y.data<float>());
    return absl::OkStatus();
  });
}

// Inputs (dy, x, y): y is not needed (the maximum is found again in x).
absl::Status HostPoolBackwardKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(PoolGeometry g, PoolGeom(ctx.params<PoolParams>(), ctx.in(1).shape));
  const TensorArg dy = ctx.in(0), x = ctx.in(1), dx = ctx.out(0);
  if (dx.size() == 0) return absl::OkStatus();
  return ctx.RunOnHost([g, dy, x, dx]() -> absl::Status {
    PoolBackwardNchw(g.pool, g.x, g.y, x.data<float>(), dy.data<float>(), dx.data<float>());
    return absl::OkStatus();
  });
}

}  // namespace rill::ops
