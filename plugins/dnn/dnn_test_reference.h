#ifndef RILL_PLUGINS_DNN_DNN_TEST_REFERENCE_H_
#define RILL_PLUGINS_DNN_DNN_TEST_REFERENCE_H_

// Test-only naive references shared by the DnnSupport implementations'
// tests (onednn, cudnn): inputs, loops over tensors, pooling, batch
// statistics and convolutions in every direction, all in double.

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "rill/plugins/dnn/dnn.h"

namespace rill::testing {

// Uniform floats in [lo, hi), reproducible from `seed`.
inline std::vector<float> RandomFloats(size_t n, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(dist(gen));
  return v;
}

// Calls f(n, c, h, w) for every element of `t`.
template <typename F>
void ForEach(const TensorDescriptor& t, F f) {
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t c = 0; c < t.c; ++c)
      for (int64_t h = 0; h < t.h; ++h)
        for (int64_t w = 0; w < t.w; ++w) f(n, c, h, w);
}

// Pooling reference: y and, given dy, dx (max: to the first maximum).
inline void PoolReference(const PoolingDescriptor& p, const TensorDescriptor& xt,
                          const TensorDescriptor& yt, const std::vector<float>& x,
                          const std::vector<float>& dy, std::vector<double>& y,
                          std::vector<double>& dx) {
  y.assign(yt.ElementCount(), 0);
  dx.assign(xt.ElementCount(), 0);
  ForEach(yt, [&](int64_t n, int64_t c, int64_t oh, int64_t ow) {
    double best = -INFINITY, sum = 0;
    int64_t best_at = -1, valid = 0;
    for (int64_t r = 0; r < p.window_h; ++r)
      for (int64_t s = 0; s < p.window_w; ++s) {
        const int64_t ih = oh * p.stride_h - p.pad_h + r, iw = ow * p.stride_w - p.pad_w + s;
        if (ih < 0 || ih >= xt.h || iw < 0 || iw >= xt.w) continue;
        const int64_t i = xt.Offset(n, c, ih, iw);
        ++valid;
        sum += x[i];
        if (x[i] > best) best = x[i], best_at = i;
      }
    const int64_t o = yt.Offset(n, c, oh, ow);
    const double divisor =
        p.mode == PoolingMode::kAverageIncludePadding ? p.window_h * p.window_w : valid;
    y[o] = p.mode == PoolingMode::kMax ? best : sum / divisor;
    if (p.mode == PoolingMode::kMax) {
      dx[best_at] += dy[o];
      return;
    }
    for (int64_t r = 0; r < p.window_h; ++r)
      for (int64_t s = 0; s < p.window_w; ++s) {
        const int64_t ih = oh * p.stride_h - p.pad_h + r, iw = ow * p.stride_w - p.pad_w + s;
        if (ih >= 0 && ih < xt.h && iw >= 0 && iw < xt.w)
          dx[xt.Offset(n, c, ih, iw)] += dy[o] / divisor;
      }
  });
}

// Per-channel mean and biased variance over n, h, w.
inline void ChannelStats(const TensorDescriptor& t, const std::vector<float>& x,
                         std::vector<double>& mean, std::vector<double>& var) {
  const double m = static_cast<double>(t.n) * t.h * t.w;
  mean.assign(t.c, 0);
  var.assign(t.c, 0);
  ForEach(t, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
    mean[c] += x[t.Offset(n, c, h, w)] / m;
  });
  ForEach(t, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
    const double d = x[t.Offset(n, c, h, w)] - mean[c];
    var[c] += d * d / m;
  });
}

// --- Convolution.

// Reference sums and sums of |products| per output element.
struct Reference {
  std::vector<double> value, scale;
  int64_t terms = 0;
  explicit Reference(size_t n) : value(n, 0), scale(n, 0) {}
  void Add(int64_t i, double a, double b) {
    value[i] += a * b;
    scale[i] += std::fabs(a * b);
  }
};

// Calls f(y, x, w) -- the offsets of an output element, an input element
// and a weight -- for every (output, tap) pair that reads an input element
// inside the (unpadded) input.
template <typename F>
void ForEachTap(const ConvolutionShape& s, F f) {
  const ConvolutionDescriptor& c = s.conv;
  const int64_t k_per_group = s.filter.output_channels / c.group_count,
                c_per_group = s.filter.input_channels;
  for (int64_t n = 0; n < s.output.n; ++n)
    for (int64_t k = 0; k < s.output.c; ++k)
      for (int64_t oh = 0; oh < s.output.h; ++oh)
        for (int64_t ow = 0; ow < s.output.w; ++ow)
          for (int64_t ci = 0; ci < c_per_group; ++ci)
            for (int64_t r = 0; r < s.filter.height; ++r)
              for (int64_t q = 0; q < s.filter.width; ++q) {
                const int64_t ih = oh * c.stride_h - c.pad_h + r * c.dilation_h;
                const int64_t iw = ow * c.stride_w - c.pad_w + q * c.dilation_w;
                if (ih < 0 || ih >= s.input.h || iw < 0 || iw >= s.input.w) continue;
                const int64_t channel = (k / k_per_group) * c_per_group + ci;
                f(s.output.Offset(n, k, oh, ow), s.input.Offset(n, channel, ih, iw),
                  s.filter.Offset(k, ci, r, q));
              }
}

template <typename T>
Reference Forward(const ConvolutionShape& s, const std::vector<T>& x, const std::vector<T>& w) {
  Reference ref(s.output.ElementCount());
  ref.terms = s.filter.input_channels * s.filter.height * s.filter.width;
  ForEachTap(s, [&](int64_t y, int64_t xi, int64_t wi) { ref.Add(y, x[xi], w[wi]); });
  return ref;
}

template <typename T>
Reference BackwardData(const ConvolutionShape& s, const std::vector<T>& dy,
                       const std::vector<T>& w) {
  Reference ref(s.input.ElementCount());
  ref.terms = s.filter.output_channels / s.conv.group_count * s.filter.height * s.filter.width;
  ForEachTap(s, [&](int64_t y, int64_t xi, int64_t wi) { ref.Add(xi, dy[y], w[wi]); });
  return ref;
}

template <typename T>
Reference BackwardFilter(const ConvolutionShape& s, const std::vector<T>& x,
                         const std::vector<T>& dy) {
  Reference ref(s.filter.ElementCount());
  ref.terms = s.output.n * s.output.h * s.output.w;
  ForEachTap(s, [&](int64_t y, int64_t xi, int64_t wi) { ref.Add(wi, x[xi], dy[y]); });
  return ref;
}

}  // namespace rill::testing

#endif  // RILL_PLUGINS_DNN_DNN_TEST_REFERENCE_H_
