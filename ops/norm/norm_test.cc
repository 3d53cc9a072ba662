// layer_norm on every context present against a naive loop written here
// (double accumulation), over the last axis and over two; its errors.

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/ops/ops.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::ops {
namespace {

using testing::ExpectNear;
using ::testing::HasSubstr;
using testing::RandomData;
using NormTest = testing::OpTest;

std::vector<float> Naive(const std::vector<float>& x, const std::vector<float>& g,
                         const std::vector<float>& b, int64_t cols, double eps) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < cols; ++i) mean += x[r * cols + i];
    mean /= cols;
    for (int64_t i = 0; i < cols; ++i) var += std::pow(x[r * cols + i] - mean, 2);
    var /= cols;
    for (int64_t i = 0; i < cols; ++i)
      y[r * cols + i] =
          static_cast<float>((x[r * cols + i] - mean) / std::sqrt(var + eps) * g[i] + b[i]);
  }
  return y;
}

TEST_P(NormTest, LayerNormMatchesNaiveLoop) {
  struct Case {
    Shape x, gb;
    const char* axis;
    double eps;
  };
  for (const Case& c : {Case{{4, 7}, {7}, "-1", 1e-5}, Case{{2, 3, 4, 5}, {4, 5}, "2", 1e-2},
                        Case{{3, 64}, {64}, "1", 1e-6}}) {
    const int64_t cols = c.gb.NumElements();
    const auto x = RandomData<float>(c.x.NumElements(), 1, -3, 5);
    const auto g = RandomData<float>(cols, 2), b = RandomData<float>(cols, 3);
    auto y = Invoke("layer_norm", {Make(x, c.x), Make(g, c.gb), Make(b, c.gb)},
                    {{"axis", c.axis}, {"eps", std::to_string(c.eps)}});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ((*y)[0].shape(), c.x);
    auto got = (*y)[0].ToHost<float>();
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectNear(*got, Naive(x, g, b, cols, c.eps), 1e-4, c.x.ToString());
  }
}

TEST_P(NormTest, LayerNormRefusesBadShapesAxesAndEps) {
  const Tensor x = Make(RandomData<float>(6, 1), {2, 3});
  const Tensor g3 = Make(RandomData<float>(3, 2), {3}), g2 = Make(RandomData<float>(2, 2), {2});
  auto bad_gamma = Invoke("layer_norm", {x, g2, g3}, {});
  EXPECT_THAT(bad_gamma.status().message(), HasSubstr("gamma [2] is not [3]"));
  auto bad_axis = Invoke("layer_norm", {x, g3, g3}, {{"axis", "2"}});
  EXPECT_THAT(bad_axis.status().message(), HasSubstr("axis 2 is out of range"));
  auto bad_eps = Invoke("layer_norm", {x, g3, g3}, {{"eps", "0"}});
  EXPECT_THAT(bad_eps.status().message(), HasSubstr("eps must be > 0"));
}

INSTANTIATE_TEST_SUITE_P(AllContexts, NormTest, ::testing::ValuesIn(testing::OpSuiteContexts()),
                         testing::ContextName);

}  // namespace
}  // namespace rill::ops
