#ifndef RILL_TESTS_TESTING_RANDOM_TESTING_H_
#define RILL_TESTS_TESTING_RANDOM_TESTING_H_

// Reproducible test inputs shared by the plugin tests.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace rill::testing {

// n values uniform in [-1, 1), the same for the same `seed` on every run.
template <typename T>
std::vector<T> Random(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(dist(gen));
  return v;
}

}  // namespace rill::testing

#endif  // RILL_TESTS_TESTING_RANDOM_TESTING_H_
