#ifndef RILL_PLUGINS_FFT_FFT_TEST_UTIL_H_
#define RILL_PLUGINS_FFT_FFT_TEST_UTIL_H_

// Test-only helpers shared by the FftSupport implementations' tests (fftw,
// clfft, cufft): a naive DFT in double as the independent reference, the
// addressing of a resolved FftPlanSpec's layouts, inputs, error bounds and
// plan specs.

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

#include "rill/plugins/fft/fft.h"
#include "tests/testing/random_testing.h"

namespace rill::fft_testing {

using Cd = std::complex<double>;

using ::rill::testing::Random;  // Uniform in [-1, 1), reproducible from a seed.

// The normwise FFT error bound 4 (log2 n + 1) eps(T) ||.|| (Higham,
// "Accuracy and Stability of Numerical Algorithms", 24.1) for a reference
// of 2-norm `norm`.
template <typename T>
double Tolerance(int64_t n, double norm) {
  return 4 * (std::log2(static_cast<double>(n)) + 1) * std::numeric_limits<T>::epsilon() * norm;
}

// ||got - scale x|| / ||scale x||, for round trips (scale = n).
template <typename T>
double RelativeError(const std::vector<T>& got, const std::vector<T>& x, double scale) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (got[i] - scale * x[i]) * (got[i] - scale * x[i]);
    norm += scale * x[i] * scale * x[i];
  }
  return std::sqrt(err / norm);
}

// A plan spec with the usual defaults (one transform, out of place, packed
// layouts, float).
inline FftPlanSpec Spec(FftType type, FftDirection direction, std::vector<int64_t> dims,
                        int64_t batch = 1, FftPlacement placement = FftPlacement::kOutOfPlace,
                        FftLayout in = {}, FftLayout out = {},
                        DataType precision = DataType::kFloat) {
  return FftPlanSpec{precision, type,      direction,     std::move(dims),
                     batch,     placement, std::move(in), std::move(out)};
}

inline int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// The logical sizes of one side of `spec` (last one n/2 + 1 on the complex
// side of a real transform).
inline std::vector<int64_t> SideDims(const FftPlanSpec& spec, bool real_side) {
  std::vector<int64_t> dims = spec.dims;
  if (spec.type != FftType::kC2C && !real_side) dims.back() = dims.back() / 2 + 1;
  return dims;
}

// Index, in elements of the side's type, of logical element `linear`
// (row-major over `dims`) of batch entry `b` in layout `l`.
inline int64_t ElementIndex(const FftLayout& l, const std::vector<int64_t>& dims, int64_t b,
                            int64_t linear) {
  int64_t offset = 0, pitch = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    offset += (linear % dims[i]) * pitch;
    linear /= dims[i];
    pitch *= l.embed[i];
  }
  return b * l.distance + offset * l.stride;
}

// Row-major multi-index of `linear` over `dims`.
inline std::vector<int64_t> Unravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    idx[i] = linear % dims[i];
    linear /= dims[i];
  }
  return idx;
}

// The naive multi-dimensional DFT of `x` (row-major over `dims`):
// y[k] = sum_j x[j] exp(sign 2 pi i sum_d j_d k_d / n_d), sign -1 forward.
// Phases are reduced exactly (j_d k_d mod n_d) before the one rounding.
inline std::vector<Cd> NaiveDft(const std::vector<Cd>& x, const std::vector<int64_t>& dims,
                                bool forward) {
  const int64_t n = Product(dims);
  std::vector<std::vector<int64_t>> index(n);
  for (int64_t j = 0; j < n; ++j) index[j] = Unravel(j, dims);
  std::vector<Cd> y(n);
  const double sign = forward ? -1 : 1;
  for (int64_t k = 0; k < n; ++k) {
    Cd sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      double turns = 0;
      for (size_t d = 0; d < dims.size(); ++d) {
        turns += static_cast<double>((index[j][d] * index[k][d]) % dims[d]) /
                 static_cast<double>(dims[d]);
      }
      sum += x[j] * std::polar(1.0, sign * 2 * std::numbers::pi * turns);
    }
    y[k] = sum;
  }
  return y;
}

// The full spectrum (row-major over `dims`) whose non-redundant half
// (last dim n/2 + 1) is `half`, by Hermitian symmetry
// X[k] = conj(X[-k mod dims]).
inline std::vector<Cd> HermitianExtend(const std::vector<Cd>& half,
                                       const std::vector<int64_t>& dims) {
  std::vector<int64_t> half_dims = dims;
  half_dims.back() = dims.back() / 2 + 1;
  const int64_t n = Product(dims);
  std::vector<Cd> full(n);
  for (int64_t k = 0; k < n; ++k) {
    std::vector<int64_t> idx = Unravel(k, dims);
    bool mirror = idx.back() >= half_dims.back();
    if (mirror) {
      for (size_t d = 0; d < dims.size(); ++d) idx[d] = (dims[d] - idx[d]) % dims[d];
    }
    int64_t h = 0;
    for (size_t d = 0; d < dims.size(); ++d) h = h * half_dims[d] + idx[d];
    full[k] = mirror ? std::conj(half[h]) : half[h];
  }
  return full;
}

// The first n/2 + 1 entries of the last dimension of `full`.
inline std::vector<Cd> HalfSpectrum(const std::vector<Cd>& full, const std::vector<int64_t>& dims) {
  std::vector<int64_t> half_dims = dims;
  half_dims.back() = dims.back() / 2 + 1;
  std::vector<Cd> half;
  half.reserve(Product(half_dims));
  for (int64_t k = 0; k < Product(dims); ++k) {
    if (Unravel(k, dims).back() < half_dims.back()) half.push_back(full[k]);
  }
  return half;
}

}  // namespace rill::fft_testing

#endif  // RILL_PLUGINS_FFT_FFT_TEST_UTIL_H_
