// The elementwise ops on every context present, every dtype they take and
// every write request, against naive host loops written here.

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::ops {
namespace {

using engine::Context;
using testing::AllContexts;
using testing::ExpectNear;
using testing::RandomData;

using ElementwiseTest = testing::OpTest;

// Naive NumPy broadcast of a (shape sa) and b (shape sb) into out (shape so).
template <typename T>
std::vector<T> NaiveBinary(const std::vector<T>& a, const Shape& sa, const std::vector<T>& b,
                           const Shape& sb, const Shape& so, const std::function<T(T, T)>& f) {
  std::vector<T> out(so.NumElements());
  for (int64_t i = 0; i < so.NumElements(); ++i) {
    int64_t rem = i, ia = 0, ib = 0, ma = 1, mb = 1;
    for (int d = so.rank() - 1; d >= 0; --d) {
      const int64_t k = rem % so[d];
      rem /= so[d];
      const int da = sa.rank() - so.rank() + d, db = sb.rank() - so.rank() + d;
      if (da >= 0) {
        ia += (sa[da] == 1 ? 0 : k) * ma;
        ma *= sa[da];
      }
      if (db >= 0) {
        ib += (sb[db] == 1 ? 0 : k) * mb;
        mb *= sb[db];
      }
    }
    out[i] = f(a[ia], b[ib]);
  }
  return out;
}

template <typename T>
void CheckBinary(engine::Engine* eng, Context ctx, const std::string& op,
                 const std::function<T(T, T)>& f, const Shape& sa, const Shape& sb) {
  const Shape so = *BroadcastShapes(sa, sb);
  const auto a = RandomData<T>(sa.NumElements(), 1, 1, 5);
  const auto b = RandomData<T>(sb.NumElements(), 2, 1, 5);
  const auto want = NaiveBinary<T>(a, sa, b, sb, so, f);
  auto ta = *Tensor::FromHost<T>(a, sa, ctx, eng);
  auto tb = *Tensor::FromHost<T>(b, sb, ctx, eng);
  const std::string what = op + " " + DTypeName(DTypeOf<T>()) + " on " + ctx.ToString();
  // kWriteTo into a new tensor.
  auto r = Invoke(op, {ta, tb});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(*(*r)[0].template ToHost<T>(), want, 1e-5, what + " write");
  // kAddTo into a tensor holding `base`.
  const auto base = RandomData<T>(so.NumElements(), 3, 0, 3);
  auto acc = *Tensor::FromHost<T>(base, so, ctx, eng);
  InvokeOptions add;
  add.reqs = {OpReqType::kAddTo};
  ASSERT_TRUE(Invoke(op, {ta, tb}, {}, {acc}, add).ok());
  std::vector<T> want_add(want.size());
  for (size_t i = 0; i < want.size(); ++i) want_add[i] = static_cast<T>(base[i] + want[i]);
  ExpectNear(*acc.template ToHost<T>(), want_add, 1e-5, what + " add");
  // kNullOp leaves the output alone.
  InvokeOptions null;
  null.reqs = {OpReqType::kNullOp};
  ASSERT_TRUE(Invoke(op, {ta, tb}, {}, {acc}, null).ok());
  ExpectNear(*acc.template ToHost<T>(), want_add, 1e-5, what + " null");
  // kWriteInplace over input a, when the shapes allow.
  if (sa == so) {
    auto ia = *Tensor::FromHost<T>(a, sa, ctx, eng);
    InvokeOptions inplace;
    inplace.reqs = {OpReqType::kWriteInplace};
    ASSERT_TRUE(Invoke(op, {ia, tb}, {}, {ia}, inplace).ok());
    ExpectNear(*ia.template ToHost<T>(), want, 1e-5, what + " inplace");
  }
}

TEST_P(ElementwiseTest, BinaryOpsMatchNaiveLoopsUnderEveryRequest) {
  const Shape shapes[][2] = {
      {{2, 3, 4}, {3, 1}}, {{5}, {5}}, {{4, 1}, {1, 6}}, {{}, {3}}, {{0, 3}, {3}}};
  for (const auto& s : shapes) {
    CheckBinary<float>(
        engine_.get(), ctx(), "add", [](float a, float b) { return a + b; }, s[0], s[1]);
    CheckBinary<double>(
        engine_.get(), ctx(), "sub", [](double a, double b) { return a - b; }, s[0], s[1]);
    CheckBinary<float>(
        engine_.get(), ctx(), "mul", [](float a, float b) { return a * b; }, s[0], s[1]);
    CheckBinary<float>(
        engine_.get(), ctx(), "div", [](float a, float b) { return a / b; }, s[0], s[1]);
    CheckBinary<float>(
        engine_.get(), ctx(), "pow", [](float a, float b) { return std::pow(a, b); }, s[0], s[1]);
    CheckBinary<int32_t>(
        engine_.get(), ctx(), "maximum", [](int32_t a, int32_t b) { return std::max(a, b); }, s[0],
        s[1]);
    CheckBinary<int64_t>(
        engine_.get(), ctx(), "minimum", [](int64_t a, int64_t b) { return std::min(a, b); }, s[0],
        s[1]);
    CheckBinary<int32_t>(
        engine_.get(), ctx(), "equal", [](int32_t a, int32_t b) { return a == b ? 1 : 0; }, s[0],
        s[1]);
    CheckBinary<float>(
        engine_.get(), ctx(), "greater", [](float a, float b) { return a > b ? 1.f : 0.f; }, s[0],
        s[1]);
    CheckBinary<uint8_t>(
        engine_.get(), ctx(), "add", [](uint8_t a, uint8_t b) { return uint8_t(a + b); }, s[0],
        s[1]);
  }
}

TEST_P(ElementwiseTest, ScalarAndUnaryOpsMatchNaiveLoops) {
  const auto x = RandomData<float>(37, 4, 0.1, 3);
  auto t = *Tensor::FromHost<float>(x, {37}, ctx(), engine_.get());
  struct Case {
    const char* op;
    std::function<float(float)> f;
    Attrs attrs;
  };
  const Case cases[] = {
      {"add_scalar", [](float v) { return v + 2.5f; }, {{"scalar", "2.5"}}},
      {"rsub_scalar", [](float v) { return 2.5f - v; }, {{"scalar", "2.5"}}},
      {"rdiv_scalar", [](float v) { return 2.f / v; }, {{"scalar", "2"}}},
      {"pow_scalar", [](float v) { return std::pow(v, 2.f); }, {{"scalar", "2"}}},
      {"neg", [](float v) { return -v; }, {}},
      {"exp", [](float v) { return std::exp(v); }, {}},
      {"log", [](float v) { return std::log(v); }, {}},
      {"sqrt", [](float v) { return std::sqrt(v); }, {}},
      {"relu", [](float v) { return v > 1 ? v : 0.f; }, {}},  // shifted below
      {"sigmoid", [](float v) { return 1 / (1 + std::exp(-v)); }, {}},
      {"tanh", [](float v) { return std::tanh(v); }, {}},
      {"gelu", [](float v) { return 0.5f * v * (1 + std::erf(v / std::sqrt(2.f))); }, {}},
  };
  for (const Case& c : cases) {
    Tensor in = t;
    std::function<float(float)> f = c.f;
    if (std::string(c.op) == "relu") {  // Inputs on both sides of 0.
      in = (*Invoke("sub_scalar", {t}, {{"scalar", "1"}}))[0];
      f = [](float v) { return v - 1 > 0 ? v - 1 : 0.f; };
    }
    auto r = Invoke(c.op, {in}, c.attrs);
    ASSERT_TRUE(r.ok()) << c.op << ": " << r.status();
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = f(x[i]);
    ExpectNear(*(*r)[0].ToHost<float>(), want, 2e-5, std::string(c.op) + " on " + ctx().ToString());
  }
}

// dy * f'(x) against a central finite difference of f.
TEST_P(ElementwiseTest, UnaryBackwardOpsMatchFiniteDifferences) {
  const auto x = RandomData<double>(16, 5, 0.2, 2);
  const auto dy = RandomData<double>(16, 6, -1, 1);
  auto tx = *Tensor::FromHost<double>(x, {16}, ctx(), engine_.get());
  auto tdy = *Tensor::FromHost<double>(dy, {16}, ctx(), engine_.get());
  for (const char* op :
       {"neg", "abs", "exp", "log", "sqrt", "relu", "sigmoid", "tanh", "gelu", "square"}) {
    auto g = Invoke(std::string("_backward_") + op, {tdy, tx});
    ASSERT_TRUE(g.ok()) << g.status();
    const double h = 1e-6;
    std::vector<double> xp(x), xm(x);
    for (auto& v : xp) v += h;
    for (auto& v : xm) v -= h;
    auto fp = *(*Invoke(op, {*Tensor::FromHost<double>(xp, {16}, ctx(), engine_.get())}))[0]
                   .ToHost<double>();
    auto fm = *(*Invoke(op, {*Tensor::FromHost<double>(xm, {16}, ctx(), engine_.get())}))[0]
                   .ToHost<double>();
    std::vector<double> want(16);
    for (int i = 0; i < 16; ++i) want[i] = dy[i] * (fp[i] - fm[i]) / (2 * h);
    ExpectNear(*(*g)[0].ToHost<double>(), want, 1e-5, std::string("_backward_") + op);
  }
}

TEST_P(ElementwiseTest, BadInputsGetClearErrors) {
  auto a = *Tensor::FromHost<float>({1, 2, 3, 4, 5, 6}, {2, 3}, ctx(), engine_.get());
  auto b = *Tensor::FromHost<float>({1, 2}, {2}, ctx(), engine_.get());
  auto r = Invoke("add", {a, b});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("[2, 3] and [2]"), std::string::npos) << r.status();
  auto i = *Tensor::FromHost<int32_t>({1, 2}, {2}, ctx(), engine_.get());
  r = Invoke("exp", {i});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("int32"), std::string::npos) << r.status();
  r = Invoke("add", {a});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  r = Invoke("ad", {a, a});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_NE(r.status().message().find("add"), std::string::npos) << r.status();
  r = Invoke("add_scalar", {a}, {{"scalar", "two"}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("float"), std::string::npos) << r.status();
  r = Invoke("add_scalar", {a}, {{"scaler", "2"}});
  EXPECT_NE(r.status().message().find("'scaler'"), std::string::npos) << r.status();
  r = Invoke("add_scalar", {a});
  EXPECT_NE(r.status().message().find("needs attribute 'scalar'"), std::string::npos) << r.status();
  auto mixed = *Tensor::FromHost<double>({1, 2}, {2}, ctx(), engine_.get());
  r = Invoke("add", {b, mixed});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  // Another context: an error naming both.
  const Context other = ctx().is_host() ? AllContexts().back() : Context::Host();
  if (other != ctx()) {
    auto c = *Tensor::FromHost<float>({1, 2}, {2}, other, engine_.get());
    r = Invoke("add", {b, c});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find(other.ToString()), std::string::npos) << r.status();
    EXPECT_NE(r.status().message().find(ctx().ToString()), std::string::npos) << r.status();
  }
  // A freed tensor.
  ASSERT_TRUE(b.Free().ok());
  r = Invoke("neg", {b});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
}

INSTANTIATE_TEST_SUITE_P(AllContexts, ElementwiseTest,
                         ::testing::ValuesIn(testing::OpSuiteContexts()), testing::ContextName);

}  // namespace
}  // namespace rill::ops
