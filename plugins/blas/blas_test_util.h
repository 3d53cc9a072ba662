#ifndef RILL_PLUGINS_BLAS_BLAS_TEST_UTIL_H_
#define RILL_PLUGINS_BLAS_BLAS_TEST_UTIL_H_

// Test-only helpers shared by the BlasSupport implementations' tests
// (OpenBLAS/BLIS, CLBlast, cuBLAS): inputs, a naive gemm in double as the
// independent reference, and the error bound every BLAS test uses:
// |r - ref| <= 4 (terms + 2) eps(T) scale, with scale the same sum taken
// over |terms|.

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/random_testing.h"

namespace rill::blas_testing {

using ::rill::testing::Random;  // Uniform in [-1, 1), reproducible from a seed.

// Every got[i] within the bound of ref[i] for sums of `terms` products.
template <typename T>
void ExpectNear(const std::vector<T>& got, const std::vector<double>& ref,
                const std::vector<double>& scale, int64_t terms) {
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = 4.0 * (terms + 2) * std::numeric_limits<T>::epsilon() * scale[i];
    ASSERT_LE(std::fabs(got[i] - ref[i]), tol)
        << "element " << i << ": " << got[i] << " vs " << ref[i];
  }
}

// Column-major C = alpha op(A) op(B) + beta C as a naive loop: the reference
// value and the error scale of each element of one m x n matrix (stored
// compactly, element (i, j) at j * m + i).
struct GemmRef {
  std::vector<double> value, scale;
};
template <typename T>
GemmRef NaiveGemm(bool at, bool bt, int64_t m, int64_t n, int64_t k, double alpha, const T* a,
                  int64_t lda, const T* b, int64_t ldb, double beta, const T* c, int64_t ldc) {
  GemmRef r{std::vector<double>(m * n), std::vector<double>(m * n)};
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      double sum = 0, abs = 0;
      for (int64_t l = 0; l < k; ++l) {
        const double av = a[at ? i * lda + l : l * lda + i];
        const double bv = b[bt ? l * ldb + j : j * ldb + l];
        sum += av * bv;
        abs += std::fabs(av * bv);
      }
      const double cv = c[j * ldc + i];
      r.value[j * m + i] = alpha * sum + beta * cv;
      r.scale[j * m + i] = std::fabs(alpha) * abs + std::fabs(beta * cv);
    }
  }
  return r;
}

}  // namespace rill::blas_testing

#endif  // RILL_PLUGINS_BLAS_BLAS_TEST_UTIL_H_
