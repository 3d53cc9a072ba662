// The host pooling loops (pool_host.h) against a naive loop written here, in
// double: max, average with and without the padding counted, padded and
// unpadded, strided and overlapping windows, odd sizes, ties; forward and
// gradient. Then the pooling ops through Invoke on every context against the
// same loop (host contexts run pool_host.cc, others their DNN library).

#include "rill/ops/nn/pool_host.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::ops {
namespace {

using testing::RandomData;

struct Case {
  int64_t n, c, h, w;
  PoolingDescriptor p;
};

std::vector<Case> Cases() {
  auto pool = [](int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    return PoolingDescriptor{
        .window_h = kh, .window_w = kw, .pad_h = ph, .pad_w = pw, .stride_h = sh, .stride_w = sw};
  };
  return {
      {2, 3, 6, 8, pool(2, 2, 2, 2, 0, 0)},   // The CNN case (fast path for max).
      {1, 2, 7, 5, pool(2, 2, 2, 2, 0, 0)},   // Odd sizes: a last row and column no window covers.
      {2, 2, 6, 22, pool(2, 2, 2, 2, 0, 0)},  // 11 windows a row: 8 four at a time, 3 one by one.
      {1, 3, 5, 19, pool(2, 2, 2, 2, 0, 0)},  // The same with odd sizes.
      {2, 2, 5, 5, pool(3, 3, 2, 2, 1, 1)},   // Padded.
      {1, 3, 6, 5, pool(3, 2, 2, 1, 1, 0)},   // Uneven window, stride and pad.
      {1, 2, 5, 6, pool(2, 2, 1, 1, 0, 0)},   // Overlapping windows.
      {1, 1, 9, 7, pool(3, 3, 3, 3, 2, 1)},   // Pad 2 of a window 3.
      {3, 2, 4, 4, pool(4, 4, 1, 1, 0, 0)},   // Global.
  };
}

// y = pool(x) and dx from dy, with the DNN interface's semantics.
void Naive(const Case& k, const TensorDescriptor& yd, const std::vector<float>& x,
           const std::vector<float>& dy, std::vector<double>& y, std::vector<double>& dx) {
  const PoolingDescriptor& p = k.p;
  y.assign(yd.ElementCount(), 0);
  dx.assign(x.size(), 0);
  for (int64_t nc = 0; nc < k.n * k.c; ++nc) {
    for (int64_t oy = 0; oy < yd.h; ++oy) {
      for (int64_t ox = 0; ox < yd.w; ++ox) {
        std::vector<int64_t> taps;  // Valid positions, row-major.
        for (int64_t r = 0; r < p.window_h; ++r) {
          for (int64_t s = 0; s < p.window_w; ++s) {
            const int64_t ih = oy * p.stride_h - p.pad_h + r, iw = ox * p.stride_w - p.pad_w + s;
            if (ih >= 0 && ih < k.h && iw >= 0 && iw < k.w)
              taps.push_back((nc * k.h + ih) * k.w + iw);
          }
        }
        const int64_t o = (nc * yd.h + oy) * yd.w + ox;
        if (p.mode == PoolingMode::kMax) {
          int64_t at = taps[0];
          for (int64_t t : taps) {
            if (x[t] > x[at]) at = t;
          }
          y[o] = x[at];
          dx[at] += dy[o];
          continue;
        }
        const double divisor = p.mode == PoolingMode::kAverageIncludePadding
                                   ? static_cast<double>(p.window_h * p.window_w)
                                   : static_cast<double>(taps.size());
        for (int64_t t : taps) {
          y[o] += x[t] / divisor;
          dx[t] += dy[o] / divisor;
        }
      }
    }
  }
}

void ExpectClose(const std::vector<float>& got, const std::vector<double>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << what << " at " << i;
  }
}

std::string Name(const Case& k) {
  return "x " + std::to_string(k.n) + "x" + std::to_string(k.c) + "x" + std::to_string(k.h) + "x" +
         std::to_string(k.w) + ", " + k.p.ToString();
}

TEST(PoolHostTest, LoopsMatchNaivePoolingInEveryMode) {
  for (Case k : Cases()) {
    for (PoolingMode mode : {PoolingMode::kMax, PoolingMode::kAverageIncludePadding,
                             PoolingMode::kAverageExcludePadding}) {
      k.p.mode = mode;
      const TensorDescriptor xd{.n = k.n, .c = k.c, .h = k.h, .w = k.w};
      const TensorDescriptor yd = *PoolingOutput(xd, k.p);
      // Values from a small set, so that windows hold ties (the gradient goes
      // to the first maximum).
      std::vector<float> x = RandomData<float>(xd.ElementCount(), 1, -4, 4);
      for (float& v : x) v = std::round(v);
      const std::vector<float> dy = RandomData<float>(yd.ElementCount(), 2);
      std::vector<double> want_y, want_dx;
      Naive(k, yd, x, dy, want_y, want_dx);
      std::vector<float> y(yd.ElementCount(), std::nanf("")), dx(x.size(), std::nanf(""));
      PoolForwardNchw(k.p, xd, yd, x.data(), y.data());
      PoolBackwardNchw(k.p, xd, yd, x.data(), dy.data(), dx.data());
      ExpectClose(y, want_y, "y of " + Name(k));
      ExpectClose(dx, want_dx, "dx of " + Name(k));
    }
  }
}

class PoolOpsTest : public testing::OpTest {};

// pooling and _backward_pooling through Invoke, every pool_type and
// count_include_pad, on every context.
TEST_P(PoolOpsTest, OpsMatchNaivePooling) {
  for (const Case& k : Cases()) {
    for (const char* type : {"max", "avg_include", "avg_exclude"}) {
      const std::string t = type;
      Case m = k;
      m.p.mode = t == "max"           ? PoolingMode::kMax
                 : t == "avg_include" ? PoolingMode::kAverageIncludePadding
                                      : PoolingMode::kAverageExcludePadding;
      const Attrs attrs = {
          {"kernel", "(" + std::to_string(k.p.window_h) + "," + std::to_string(k.p.window_w) + ")"},
          {"stride", "(" + std::to_string(k.p.stride_h) + "," + std::to_string(k.p.stride_w) + ")"},
          {"pad", "(" + std::to_string(k.p.pad_h) + "," + std::to_string(k.p.pad_w) + ")"},
          {"pool_type", t == "max" ? "max" : "avg"},
          {"count_include_pad", t == "avg_exclude" ? "false" : "true"}};
      const TensorDescriptor xd{.n = k.n, .c = k.c, .h = k.h, .w = k.w};
      const TensorDescriptor yd = *PoolingOutput(xd, m.p);
      const Shape sx{k.n, k.c, k.h, k.w}, sy{yd.n, yd.c, yd.h, yd.w};
      const std::vector<float> x = RandomData<float>(sx.NumElements(), 3),
                               dy = RandomData<float>(sy.NumElements(), 4);
      std::vector<double> want_y, want_dx;
      Naive(m, yd, x, dy, want_y, want_dx);
      const std::string what = t + " " + Name(k) + " on " + ctx().ToString();
      auto y = Invoke("pooling", {Make(x, sx)}, attrs);
      ASSERT_TRUE(y.ok()) << what << ": " << y.status();
      ExpectClose(*(*y)[0].ToHost<float>(), want_y, "y of " + what);
      auto dx = Invoke("_backward_pooling", {Make(dy, sy), Make(x, sx), (*y)[0]}, attrs);
      ASSERT_TRUE(dx.ok()) << what << ": " << dx.status();
      ExpectClose(*(*dx)[0].ToHost<float>(), want_dx, "dx of " + what);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllContexts, PoolOpsTest, ::testing::ValuesIn(testing::AllContexts()),
                         testing::ContextName);

}  // namespace
}  // namespace rill::ops
