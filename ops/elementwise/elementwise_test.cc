// The elementwise ops on every context present, every dtype they take and
// every write request, against naive host loops written here.

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/ops.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::ops {
namespace {

using engine::Context;
using testing::AllContexts;
using testing::BroadcastIndex;
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
      {"erf", [](float v) { return std::erf(v); }, {}},
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
       {"neg", "abs", "exp", "log", "sqrt", "relu", "sigmoid", "tanh", "gelu", "square", "erf"}) {
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

// erf on both sides of 0 in float32 and float64, its backward op and its
// gradient function against dy * 2/sqrt(pi) * exp(-x^2).
template <typename T>
void CheckErf(engine::Engine* eng, Context ctx) {
  const auto x = RandomData<T>(41, 7, -3, 3);
  const auto dy = RandomData<T>(41, 8, -1, 1);
  auto tx = *Tensor::FromHost<T>(x, {41}, ctx, eng);
  auto tdy = *Tensor::FromHost<T>(dy, {41}, ctx, eng);
  std::vector<T> want(41), want_g(41);
  for (int i = 0; i < 41; ++i) {
    want[i] = std::erf(x[i]);
    want_g[i] = dy[i] * T(2 / std::sqrt(M_PI)) * std::exp(-x[i] * x[i]);
  }
  const std::string what = std::string(DTypeName(DTypeOf<T>())) + " on " + ctx.ToString();
  auto y = ops::Erf(tx);
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear(*y->template ToHost<T>(), want, 1e-6, "erf " + what);
  auto g = Invoke("_backward_erf", {tdy, tx});
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectNear(*(*g)[0].template ToHost<T>(), want_g, 1e-6, "_backward_erf " + what);
  const OpDef& op = BuiltinOp("erf");
  std::vector<Tensor> in = {tx}, out = {*y}, og = {tdy};
  auto grads = op.gradient()(GradientContext{nullptr, in, out, og});
  ASSERT_TRUE(grads.ok()) << grads.status();
  ExpectNear(*(*grads)[0].template ToHost<T>(), want_g, 1e-6, "erf gradient " + what);
}

TEST_P(ElementwiseTest, ErfAndItsGradientMatchClosedForms) {
  CheckErf<float>(engine_.get(), ctx());
  CheckErf<double>(engine_.get(), ctx());
}

// A condition of `dtype` with `n` elements, about half of them nonzero, and
// whether each is.
Tensor MakeCond(DType dtype, int64_t n, const Shape& s, uint64_t seed, Context ctx,
                engine::Engine* eng, std::vector<bool>* truth) {
  const auto r = RandomData<double>(n, seed, -1, 1);
  truth->assign(n, false);
  std::vector<char> bytes(n * DTypeSize(dtype));
  for (int64_t i = 0; i < n; ++i) {
    const bool t = r[i] > 0;
    (*truth)[i] = t;
    DispatchDType(dtype, [&](auto z) {
      using C = decltype(z);
      // Nonzero values of either sign; zeros as they come.
      const C v = t ? static_cast<C>(dtype == DType::kBool ? 1 : (i % 3 == 0 ? -3 : 2)) : C(0);
      std::memcpy(&bytes[i * sizeof(C)], &v, sizeof(C));
    });
  }
  return *Tensor::FromHostBytes(bytes.data(), bytes.size(), s, dtype, ctx, eng);
}

template <typename T>
void CheckWhere(engine::Engine* eng, Context ctx, DType cond_type, const Shape& sc, const Shape& sx,
                const Shape& sy) {
  const Shape so = *BroadcastShapes(*BroadcastShapes(sc, sx), sy);
  std::vector<bool> truth;
  Tensor c = MakeCond(cond_type, sc.NumElements(), sc, 11, ctx, eng, &truth);
  const auto x = RandomData<T>(sx.NumElements(), 12, 0, 50);
  const auto y = RandomData<T>(sy.NumElements(), 13, 50, 100);
  auto tx = *Tensor::FromHost<T>(x, sx, ctx, eng);
  auto ty = *Tensor::FromHost<T>(y, sy, ctx, eng);
  std::vector<T> want(so.NumElements());
  for (int64_t i = 0; i < so.NumElements(); ++i) {
    want[i] = truth[BroadcastIndex(i, so, sc)] ? x[BroadcastIndex(i, so, sx)]
                                               : y[BroadcastIndex(i, so, sy)];
  }
  const std::string what =
      absl::StrCat("where(", DTypeName(cond_type), sc.ToString(), ", ", DTypeName(DTypeOf<T>()),
                   sx.ToString(), ", ", sy.ToString(), ") on ", ctx.ToString());
  auto r = ops::Where(c, tx, ty);
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  EXPECT_EQ(r->shape(), so) << what;
  ExpectNear(*r->template ToHost<T>(), want, 0, what + " write");
  // kAddTo.
  const auto base = RandomData<T>(so.NumElements(), 14, 0, 3);
  auto acc = *Tensor::FromHost<T>(base, so, ctx, eng);
  InvokeOptions add;
  add.reqs = {OpReqType::kAddTo};
  ASSERT_TRUE(Invoke("where", {c, tx, ty}, {}, {acc}, add).ok()) << what;
  std::vector<T> want_add(want.size());
  for (size_t i = 0; i < want.size(); ++i) want_add[i] = static_cast<T>(base[i] + want[i]);
  ExpectNear(*acc.template ToHost<T>(), want_add, 1e-6, what + " add");
  // kWriteInplace over x, when the shapes allow.
  if (sx == so) {
    auto ix = *Tensor::FromHost<T>(x, sx, ctx, eng);
    InvokeOptions inplace;
    inplace.reqs = {OpReqType::kWriteInplace};
    ASSERT_TRUE(Invoke("where", {c, ix, ty}, {}, {ix}, inplace).ok()) << what;
    ExpectNear(*ix.template ToHost<T>(), want, 0, what + " inplace");
  }
}

TEST_P(ElementwiseTest, WhereBroadcastsItsThreeInputsLikeNaiveLoops) {
  const Shape shapes[][3] = {{{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
                             {{3, 1}, {2, 1, 4}, {4}},
                             {{}, {5}, {1}},
                             {{4, 1}, {1, 6}, {4, 6}},
                             {{2, 1, 3}, {1}, {2, 5, 1}},
                             {{5}, {}, {}},
                             {{0, 3}, {3}, {1}}};
  for (const auto& s : shapes) {
    CheckWhere<float>(engine_.get(), ctx(), DType::kBool, s[0], s[1], s[2]);
    CheckWhere<double>(engine_.get(), ctx(), DType::kF32, s[0], s[1], s[2]);
    CheckWhere<int32_t>(engine_.get(), ctx(), DType::kI64, s[0], s[1], s[2]);
    CheckWhere<int64_t>(engine_.get(), ctx(), DType::kF64, s[0], s[1], s[2]);
    CheckWhere<uint8_t>(engine_.get(), ctx(), DType::kI32, s[0], s[1], s[2]);
    CheckWhere<float>(engine_.get(), ctx(), DType::kU8, s[0], s[1], s[2]);
  }
}

TEST_P(ElementwiseTest, WhereTakesNonzeroAsTrue) {
  // -0 is zero; NaN is not.
  auto c = Make<float>({0.f, -0.f, NAN, 1.f, -2.f, INFINITY}, {6});
  auto x = Make<int32_t>({1, 2, 3, 4, 5, 6}, {6});
  auto y = Make<int32_t>({-1, -2, -3, -4, -5, -6}, {6});
  auto r = ops::Where(c, x, y);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r->ToHost<int32_t>(), (std::vector<int32_t>{-1, -2, 3, 4, 5, 6}));
  auto cd = Make<double>({-0.0, NAN, 0.0}, {3});
  auto xd = Make<double>({1, 2, 3}, {3}), yd = Make<double>({-1, -2, -3}, {3});
  EXPECT_EQ(*(*ops::Where(cd, xd, yd)).ToHost<double>(), (std::vector<double>{-1, 2, -3}));
  // bool x and y.
  const uint8_t bx[] = {1, 1, 0}, by[] = {0, 0, 1}, bc[] = {1, 0, 0};
  auto tb = [&](const uint8_t* v) {
    return *Tensor::FromHostBytes(v, 3, {3}, DType::kBool, ctx(), engine_.get());
  };
  auto rb = ops::Where(tb(bc), tb(bx), tb(by));
  ASSERT_TRUE(rb.ok()) << rb.status();
  EXPECT_EQ(rb->dtype(), DType::kBool);
  uint8_t got[3];
  ASSERT_TRUE(rb->ToHostBytes(got, 3).ok());
  EXPECT_EQ(std::vector<uint8_t>(got, got + 3), (std::vector<uint8_t>{1, 0, 1}));
}

// The gradient: dy where the condition holds to x, elsewhere to y, each
// summed over its broadcast axes; none to the condition.
template <typename T>
void CheckWhereGradient(engine::Engine* eng, Context ctx) {
  const Shape sc{2, 4, 1}, sx{2, 1, 3}, sy{3}, so{2, 4, 3};
  std::vector<bool> truth;
  Tensor c = MakeCond(DType::kBool, sc.NumElements(), sc, 21, ctx, eng, &truth);
  auto tx = *Tensor::FromHost<T>(RandomData<T>(6, 22), sx, ctx, eng);
  auto ty = *Tensor::FromHost<T>(RandomData<T>(3, 23), sy, ctx, eng);
  const auto dy = RandomData<T>(so.NumElements(), 24, -5, 5);
  auto tdy = *Tensor::FromHost<T>(dy, so, ctx, eng);
  std::vector<T> gx(6, T(0)), gy(3, T(0));
  for (int64_t i = 0; i < so.NumElements(); ++i) {
    if (truth[BroadcastIndex(i, so, sc)])
      gx[BroadcastIndex(i, so, sx)] += dy[i];
    else
      gy[BroadcastIndex(i, so, sy)] += dy[i];
  }
  std::vector<Tensor> in = {c, tx, ty}, og = {tdy};
  std::vector<Tensor> out = {*ops::Where(c, tx, ty)};
  auto g = BuiltinOp("where").gradient()(GradientContext{nullptr, in, out, og});
  const std::string what = std::string(DTypeName(DTypeOf<T>())) + " on " + ctx.ToString();
  ASSERT_TRUE(g.ok()) << what << ": " << g.status();
  ASSERT_EQ(g->size(), 3u);
  EXPECT_FALSE((*g)[0].defined()) << what;
  EXPECT_EQ((*g)[1].shape(), sx);
  EXPECT_EQ((*g)[2].shape(), sy);
  ExpectNear(*(*g)[1].template ToHost<T>(), gx, 1e-6, "where gradient x " + what);
  ExpectNear(*(*g)[2].template ToHost<T>(), gy, 1e-6, "where gradient y " + what);
}

TEST_P(ElementwiseTest, WhereGradientMasksAndSumsToEachInput) {
  CheckWhereGradient<double>(engine_.get(), ctx());
  CheckWhereGradient<float>(engine_.get(), ctx());
  CheckWhereGradient<int32_t>(engine_.get(), ctx());
}

TEST_P(ElementwiseTest, WhereRejectsMismatchedInputs) {
  auto c = Make<float>({1, 0}, {2});
  auto x = Make<float>({1, 2}, {2});
  auto y = Make<double>({1, 2}, {2});
  auto r = Invoke("where", {c, x, y});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("float64"), std::string::npos) << r.status();
  auto z = Make<float>({1, 2, 3}, {3});
  r = Invoke("where", {c, x, z});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("[2], x [2] and y [3]"), std::string::npos) << r.status();
  r = Invoke("where", {c, x});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
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
