// The optimizer ops on every context, both float types and every write
// request, against naive host loops written here.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::ops {
namespace {

using engine::Context;
using testing::AllContexts;
using testing::ExpectNear;
using testing::RandomData;

using OptimizerTest = testing::OpTest;

double G(double g, double w, double rs, double clip, double wd) {
  g *= rs;
  if (clip >= 0) g = std::min(std::max(g, -clip), clip);
  return g + wd * w;
}

// Runs `op` on `in` under every request and checks each output against want.
template <typename T>
void CheckAllRequests(engine::Engine* eng, Context ctx, const std::string& op, const Attrs& attrs,
                      const std::vector<std::vector<T>>& in, const Shape& shape,
                      const std::vector<std::vector<T>>& want,
                      const std::vector<int>& inplace_inputs) {
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-11;
  const std::string what = op + " " + DTypeName(DTypeOf<T>()) + " on " + ctx.ToString();
  auto make_inputs = [&] {
    std::vector<Tensor> t;
    for (const auto& v : in) t.push_back(*Tensor::FromHost<T>(v, shape, ctx, eng));
    return t;
  };
  // kWriteTo into new tensors; the inputs stay.
  {
    auto ins = make_inputs();
    auto r = Invoke(op, ins, attrs);
    ASSERT_TRUE(r.ok()) << what << ": " << r.status();
    for (size_t o = 0; o < want.size(); ++o)
      ExpectNear(*(*r)[o].template ToHost<T>(), want[o], tol, what + " write");
    ExpectNear(*ins[0].template ToHost<T>(), in[0], 0, what + " input kept");
  }
  // In place: outputs are the state inputs (kWriteInplace by sharing).
  {
    auto ins = make_inputs();
    std::vector<Tensor> outs;
    for (int i : inplace_inputs) outs.push_back(ins[i]);
    auto r = Invoke(op, ins, attrs, outs);
    ASSERT_TRUE(r.ok()) << what << ": " << r.status();
    for (size_t o = 0; o < want.size(); ++o)
      ExpectNear(*outs[o].template ToHost<T>(), want[o], tol, what + " inplace");
  }
  // kAddTo then kNullOp into separate outputs.
  {
    auto ins = make_inputs();
    std::vector<Tensor> outs;
    std::vector<std::vector<T>> base, sum;
    for (size_t o = 0; o < want.size(); ++o) {
      base.push_back(RandomData<T>(shape.NumElements(), 40 + o));
      outs.push_back(*Tensor::FromHost<T>(base.back(), shape, ctx, eng));
      sum.push_back(want[o]);
      for (size_t i = 0; i < sum[o].size(); ++i) sum[o][i] += base[o][i];
    }
    InvokeOptions add;
    add.reqs.assign(want.size(), OpReqType::kAddTo);
    auto r = Invoke(op, ins, attrs, outs, add);
    ASSERT_TRUE(r.ok()) << what << ": " << r.status();
    for (size_t o = 0; o < want.size(); ++o)
      ExpectNear(*outs[o].template ToHost<T>(), sum[o], tol, what + " add");
    InvokeOptions null;
    null.reqs.assign(want.size(), OpReqType::kNullOp);
    null.reqs[0] = OpReqType::kWriteTo;  // One output written, the rest left alone.
    r = Invoke(op, ins, attrs, outs, null);
    ASSERT_TRUE(r.ok()) << what << ": " << r.status();
    ExpectNear(*outs[0].template ToHost<T>(), want[0], tol, what + " write among nulls");
    for (size_t o = 1; o < want.size(); ++o)
      ExpectNear(*outs[o].template ToHost<T>(), sum[o], tol, what + " null");
  }
}

template <typename T>
void CheckSgd(engine::Engine* eng, Context ctx, const Shape& shape) {
  const int64_t n = shape.NumElements();
  const auto w = RandomData<T>(n, 1), g = RandomData<T>(n, 2, -3, 3);
  const double lr = 0.1, wd = 0.01, rs = 0.5, clip = 1.0;
  std::vector<T> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = T(w[i] - lr * G(g[i], w[i], rs, clip, wd));
  CheckAllRequests<T>(
      eng, ctx, "sgd_update",
      {{"lr", "0.1"}, {"wd", "0.01"}, {"rescale_grad", "0.5"}, {"clip_gradient", "1"}}, {w, g},
      shape, {want}, {0});
}

template <typename T>
void CheckSgdMom(engine::Engine* eng, Context ctx, const Shape& shape) {
  const int64_t n = shape.NumElements();
  const auto w = RandomData<T>(n, 3), g = RandomData<T>(n, 4), m = RandomData<T>(n, 5);
  const double lr = 0.05, mom = 0.9, wd = 0.001;
  std::vector<T> ww(n), wm(n);
  for (int64_t i = 0; i < n; ++i) {
    wm[i] = T(mom * m[i] - lr * G(g[i], w[i], 1, -1, wd));
    ww[i] = T(w[i] + wm[i]);
  }
  CheckAllRequests<T>(eng, ctx, "sgd_mom_update",
                      {{"lr", "0.05"}, {"momentum", "0.9"}, {"wd", "0.001"}}, {w, g, m}, shape,
                      {ww, wm}, {0, 2});
}

template <typename T>
void CheckAdam(engine::Engine* eng, Context ctx, const Shape& shape, int t) {
  const int64_t n = shape.NumElements();
  const auto w = RandomData<T>(n, 6), g = RandomData<T>(n, 7), m = RandomData<T>(n, 8, -0.1, 0.1);
  const auto v = RandomData<T>(n, 9, 0, 0.1);
  const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-6, wd = 0.1;
  const double lr_t = t == 0 ? lr : lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
  std::vector<T> ww(n), wm(n), wv(n);
  for (int64_t i = 0; i < n; ++i) {
    const double gv = G(g[i], w[i], 1, -1, wd);
    wm[i] = T(b1 * m[i] + (1 - b1) * gv);
    wv[i] = T(b2 * v[i] + (1 - b2) * gv * gv);
    ww[i] = T(w[i] - lr_t * double(wm[i]) / (std::sqrt(double(wv[i])) + eps));
  }
  CheckAllRequests<T>(eng, ctx, "adam_update",
                      {{"lr", "0.01"},
                       {"beta2", "0.99"},
                       {"epsilon", "1e-6"},
                       {"wd", "0.1"},
                       {"t", std::to_string(t)}},
                      {w, g, m, v}, shape, {ww, wm, wv}, {0, 2, 3});
}

TEST_P(OptimizerTest, SgdMatchesNaiveLoops) {
  for (const Shape& s : {Shape{37}, Shape{4, 5}, Shape{0, 3}}) {
    CheckSgd<float>(engine_.get(), ctx(), s);
    CheckSgd<double>(engine_.get(), ctx(), s);
  }
}

TEST_P(OptimizerTest, SgdMomMatchesNaiveLoops) {
  for (const Shape& s : {Shape{37}, Shape{3, 7}}) {
    CheckSgdMom<float>(engine_.get(), ctx(), s);
    CheckSgdMom<double>(engine_.get(), ctx(), s);
  }
}

TEST_P(OptimizerTest, AdamMatchesNaiveLoopsWithAndWithoutBiasCorrection) {
  for (int t : {0, 1, 5}) {
    CheckAdam<float>(engine_.get(), ctx(), Shape{41}, t);
    CheckAdam<double>(engine_.get(), ctx(), Shape{2, 9}, t);
  }
}

TEST_P(OptimizerTest, RepeatedInPlaceStepsDescend) {
  // Minimise 0.5 * |w|^2 (gradient w) with in-place momentum SGD.
  auto w = Make<float>({1, -2, 3}, {3});
  auto m = Make<float>({0, 0, 0}, {3});
  for (int i = 0; i < 50; ++i) {
    Tensor g = (*Invoke("identity", {w}))[0];
    ASSERT_TRUE(
        Invoke("sgd_mom_update", {w, g, m}, {{"lr", "0.1"}, {"momentum", "0.5"}}, {w, m}).ok());
  }
  const std::vector<float> got = *w.ToHost<float>();
  for (float v : got) EXPECT_LT(std::abs(v), 1e-2);
}

TEST_P(OptimizerTest, BadInputsGetClearErrors) {
  auto w = Make<float>({1, 2, 3}, {3});
  auto g = Make<float>({1, 2}, {2});
  auto r = Invoke("sgd_update", {w, g}, {{"lr", "0.1"}});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("[2]"), std::string::npos) << r.status();
  r = Invoke("sgd_update", {w, w});
  EXPECT_NE(r.status().message().find("needs attribute 'lr'"), std::string::npos) << r.status();
  r = Invoke("sgd_update", {w, w}, {{"lr", "0.1"}, {"momentum", "0.9"}});
  EXPECT_NE(r.status().message().find("sgd_mom_update"), std::string::npos) << r.status();
  r = Invoke("sgd_update", {w, w}, {{"lr", "-1"}});
  EXPECT_NE(r.status().message().find("lr=-1"), std::string::npos) << r.status();
  r = Invoke("sgd_mom_update", {w, w, w}, {{"lr", "0.1"}, {"momentum", "1.5"}});
  EXPECT_NE(r.status().message().find("momentum=1.5"), std::string::npos) << r.status();
  r = Invoke("adam_update", {w, w, w, w}, {{"lr", "0.1"}, {"beta1", "1"}});
  EXPECT_NE(r.status().message().find("beta1=1"), std::string::npos) << r.status();
  r = Invoke("adam_update", {w, w, w, w}, {{"lr", "0.1"}, {"epsilon", "0"}});
  EXPECT_NE(r.status().message().find("epsilon=0"), std::string::npos) << r.status();
  r = Invoke("adam_update", {w, w, w, w}, {{"lr", "0.1"}, {"t", "-2"}});
  EXPECT_NE(r.status().message().find("t=-2"), std::string::npos) << r.status();
  auto i = Make<int32_t>({1, 2, 3}, {3});
  r = Invoke("sgd_update", {i, i}, {{"lr", "0.1"}});
  EXPECT_NE(r.status().message().find("int32"), std::string::npos) << r.status();
}

INSTANTIATE_TEST_SUITE_P(AllContexts, OptimizerTest,
                         ::testing::ValuesIn(testing::OpSuiteContexts()), testing::ContextName);

}  // namespace
}  // namespace rill::ops
