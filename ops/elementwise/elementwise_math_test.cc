// The rounding and trigonometric ops (with their backward ops and
// gradients), is_nan, is_inf and mod on every context present, every write
// request they honour, against naive host loops over <cmath> written here.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
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
using testing::BroadcastIndex;
using testing::ExpectNear;
using testing::RandomData;

using MathElementwiseTest = testing::OpTest;

struct UnaryCase {
  const char* op;
  double (*f)(double);
  double lo, hi;         // Inputs drawn from [lo, hi): inside the domain.
  double (*df)(double);  // f'; null for the piecewise-constant ops.
};

const UnaryCase kUnaryCases[] = {
    {"floor", [](double v) { return std::floor(v); }, -5, 5, nullptr},
    {"ceil", [](double v) { return std::ceil(v); }, -5, 5, nullptr},
    {"round", [](double v) { return std::nearbyint(v); }, -5, 5, nullptr},
    {"sin", [](double v) { return std::sin(v); }, -4, 4, [](double v) { return std::cos(v); }},
    {"cos", [](double v) { return std::cos(v); }, -4, 4, [](double v) { return -std::sin(v); }},
    {"tan", [](double v) { return std::tan(v); }, -1.2, 1.2,
     [](double v) { return 1 / (std::cos(v) * std::cos(v)); }},
    {"asin", [](double v) { return std::asin(v); }, -0.9, 0.9,
     [](double v) { return 1 / std::sqrt(1 - v * v); }},
    {"acos", [](double v) { return std::acos(v); }, -0.9, 0.9,
     [](double v) { return -1 / std::sqrt(1 - v * v); }},
    {"atan", [](double v) { return std::atan(v); }, -4, 4,
     [](double v) { return 1 / (1 + v * v); }},
    {"sinh", [](double v) { return std::sinh(v); }, -3, 3, [](double v) { return std::cosh(v); }},
    {"cosh", [](double v) { return std::cosh(v); }, -3, 3, [](double v) { return std::sinh(v); }},
    {"asinh", [](double v) { return std::asinh(v); }, -4, 4,
     [](double v) { return 1 / std::sqrt(v * v + 1); }},
    {"acosh", [](double v) { return std::acosh(v); }, 1.1, 5,
     [](double v) { return 1 / std::sqrt(v * v - 1); }},
    {"atanh", [](double v) { return std::atanh(v); }, -0.9, 0.9,
     [](double v) { return 1 / (1 - v * v); }},
};

// The op under write, add and in-place requests against c.f; the rounding
// ops also on every half-way case and signed zeros, exactly.
template <typename T>
void CheckUnary(engine::Engine* eng, Context ctx, const UnaryCase& c) {
  std::vector<T> x = RandomData<T>(61, 3, c.lo, c.hi);
  const bool rounding = c.df == nullptr;
  if (rounding) {
    for (T v : {-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.0, 0.0, 4.0, -0.49, 0.51})
      x.push_back(v);
  }
  const Shape s{static_cast<int64_t>(x.size())};
  std::vector<T> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = static_cast<T>(c.f(static_cast<double>(x[i])));
  const double tol = rounding ? 0 : (sizeof(T) == 4 ? 2e-6 : 1e-13);
  const std::string what = absl::StrCat(c.op, " ", DTypeName(DTypeOf<T>()), " on ", ctx.ToString());
  auto tx = *Tensor::FromHost<T>(x, s, ctx, eng);
  auto r = Invoke(c.op, {tx});
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  ExpectNear(*(*r)[0].template ToHost<T>(), want, tol, what + " write");
  if (rounding) {  // -0.0 stays negative.
    const auto got = *(*r)[0].template ToHost<T>();
    for (size_t i = 0; i < x.size(); ++i) {
      if (want[i] == 0) {
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << what << " at " << x[i];
      }
    }
  }
  const auto base = RandomData<T>(x.size(), 4, -1, 1);
  auto acc = *Tensor::FromHost<T>(base, s, ctx, eng);
  InvokeOptions add;
  add.reqs = {OpReqType::kAddTo};
  ASSERT_TRUE(Invoke(c.op, {tx}, {}, {acc}, add).ok()) << what;
  std::vector<T> want_add(want.size());
  for (size_t i = 0; i < want.size(); ++i) want_add[i] = base[i] + want[i];
  ExpectNear(*acc.template ToHost<T>(), want_add, sizeof(T) == 4 ? 2e-6 : 1e-13, what + " add");
  auto ix = *Tensor::FromHost<T>(x, s, ctx, eng);
  InvokeOptions inplace;
  inplace.reqs = {OpReqType::kWriteInplace};
  ASSERT_TRUE(Invoke(c.op, {ix}, {}, {ix}, inplace).ok()) << what;
  ExpectNear(*ix.template ToHost<T>(), want, tol, what + " inplace");
}

TEST_P(MathElementwiseTest, RoundingAndTrigonometryMatchCmath) {
  for (const UnaryCase& c : kUnaryCases) {
    CheckUnary<float>(engine_.get(), ctx(), c);
    CheckUnary<double>(engine_.get(), ctx(), c);
  }
}

TEST_P(MathElementwiseTest, IntegerInputsAreRefused) {
  auto i = Make<int32_t>({1, 2}, {2});
  for (const char* op : {"floor", "round", "sin", "acosh", "is_nan", "is_inf"}) {
    auto r = Invoke(op, {i});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << op << ": " << r.status();
    EXPECT_NE(r.status().message().find("int32"), std::string::npos) << r.status();
  }
}

// Each backward op against a central difference of its op, and against
// dy * f'(x); the gradient function against the same closed form.
TEST_P(MathElementwiseTest, TrigonometricBackwardOpsMatchClosedFormsAndDifferences) {
  for (const UnaryCase& c : kUnaryCases) {
    if (c.df == nullptr) continue;
    const int n = 24;
    const auto x = RandomData<double>(n, 5, c.lo, c.hi);
    const auto dy = RandomData<double>(n, 6, -1, 1);
    auto tx = Make<double>(x, {n});
    auto tdy = Make<double>(dy, {n});
    const std::string what = absl::StrCat(c.op, " on ", ctx().ToString());
    const double h = 1e-6;
    std::vector<double> xp(x), xm(x), closed(n), diff(n);
    for (auto& v : xp) v += h;
    for (auto& v : xm) v -= h;
    auto fp = *(*Invoke(c.op, {Make<double>(xp, {n})}))[0].ToHost<double>();
    auto fm = *(*Invoke(c.op, {Make<double>(xm, {n})}))[0].ToHost<double>();
    for (int i = 0; i < n; ++i) {
      closed[i] = dy[i] * c.df(x[i]);
      diff[i] = dy[i] * (fp[i] - fm[i]) / (2 * h);
    }
    auto g = Invoke(std::string("_backward_") + c.op, {tdy, tx});
    ASSERT_TRUE(g.ok()) << what << ": " << g.status();
    ExpectNear(*(*g)[0].ToHost<double>(), closed, 1e-12, "_backward_" + what);
    ExpectNear(*(*g)[0].ToHost<double>(), diff, 1e-5, "_backward_" + what + " (differences)");
    const OpDef& op = BuiltinOp(c.op);
    std::vector<Tensor> in = {tx}, out = {(*Invoke(c.op, {tx}))[0]}, og = {tdy};
    auto grads = op.gradient()(GradientContext{nullptr, in, out, og});
    ASSERT_TRUE(grads.ok()) << what << ": " << grads.status();
    ExpectNear(*(*grads)[0].ToHost<double>(), closed, 1e-12, "gradient of " + what);
    // float32 too.
    std::vector<float> xf(x.begin(), x.end()), dyf(dy.begin(), dy.end()), cf(n);
    for (int i = 0; i < n; ++i) cf[i] = static_cast<float>(dyf[i] * c.df(xf[i]));
    auto gf =
        Invoke(std::string("_backward_") + c.op, {Make<float>(dyf, {n}), Make<float>(xf, {n})});
    ASSERT_TRUE(gf.ok()) << what << ": " << gf.status();
    ExpectNear(*(*gf)[0].ToHost<float>(), cf, 1e-5, "_backward_" + what + " float32");
  }
}

// floor, ceil and round are piecewise constant: no gradient flows (as
// comparisons), and they have no backward op.
TEST_P(MathElementwiseTest, RoundingPassesNoGradient) {
  auto x = Make<float>({0.5f, 1.7f}, {2});
  for (const char* name : {"floor", "ceil", "round"}) {
    const OpDef& op = BuiltinOp(name);
    ASSERT_NE(op.gradient(), nullptr) << name;
    std::vector<Tensor> in = {x}, out = {(*Invoke(name, {x}))[0]}, og = {x};
    auto g = op.gradient()(GradientContext{nullptr, in, out, og});
    ASSERT_TRUE(g.ok()) << name << ": " << g.status();
    ASSERT_EQ(g->size(), 1u);
    EXPECT_FALSE((*g)[0].defined()) << name;
    EXPECT_EQ(Invoke(std::string("_backward_") + name, {x, x}).status().code(),
              absl::StatusCode::kNotFound);
  }
}

std::vector<uint8_t> Bools(const Tensor& t) {
  std::vector<uint8_t> v(t.shape().NumElements());
  EXPECT_TRUE(t.ToHostBytes(v.data(), v.size()).ok());
  return v;
}

template <typename T>
void CheckNanInf(engine::Engine* eng, Context ctx) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T big = std::numeric_limits<T>::max(), tiny = std::numeric_limits<T>::denorm_min();
  const std::vector<T> x = {0, T(-1.5), nan, inf, -inf, big, -big, tiny, T(-0.0), -nan, inf, 7};
  auto tx = *Tensor::FromHost<T>(x, {3, 4}, ctx, eng);
  const std::string what = absl::StrCat(DTypeName(DTypeOf<T>()), " on ", ctx.ToString());
  auto want = [&](bool n, bool pos, bool neg) {
    std::vector<uint8_t> w;
    for (T v : x) w.push_back((n && std::isnan(v)) || (pos && v == inf) || (neg && v == -inf));
    return w;
  };
  auto r = ops::IsNan(tx);
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  EXPECT_EQ(r->dtype(), DType::kBool);
  EXPECT_EQ(r->shape(), Shape({3, 4}));
  EXPECT_EQ(Bools(*r), want(true, false, false)) << "is_nan " << what;
  for (bool pos : {true, false}) {
    for (bool neg : {true, false}) {
      auto i = ops::IsInf(tx, pos, neg);
      ASSERT_TRUE(i.ok()) << what << ": " << i.status();
      EXPECT_EQ(i->dtype(), DType::kBool);
      EXPECT_EQ(Bools(*i), want(false, pos, neg)) << "is_inf " << pos << neg << " " << what;
    }
  }
  // By attributes, defaults both.
  auto a = Invoke("is_inf", {tx});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Bools((*a)[0]), want(false, true, true)) << what;
  a = Invoke("is_inf", {tx}, {{"detect_negative", "0"}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Bools((*a)[0]), want(false, true, false)) << what;
}

TEST_P(MathElementwiseTest, IsNanAndIsInfFindEachKindOfSpecialValue) {
  CheckNanInf<float>(engine_.get(), ctx());
  CheckNanInf<double>(engine_.get(), ctx());
  auto x = Make<float>({1, 2}, {2});
  auto r = Invoke("is_inf", {x}, {{"detect_positive", "2"}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("got 2"), std::string::npos) << r.status();
  for (const char* name : {"is_nan", "is_inf"}) {
    std::vector<Tensor> in = {x}, out = {(*Invoke(name, {x}))[0]}, og = {x};
    auto g = BuiltinOp(name).gradient()(GradientContext{nullptr, in, out, og});
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_FALSE((*g)[0].defined()) << name;
  }
}

// a mod b as the naive definitions: C's % (fmod) or the floored remainder,
// 0 for an integer divisor of 0.
template <typename T>
T NaiveMod(T a, T b, bool fmod) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    if (b == 0) return 0;
    if (std::is_signed_v<T> && b == T(-1)) return 0;
    T r = static_cast<T>(a % b);
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  }
}

template <typename T>
void CheckMod(engine::Engine* eng, Context ctx, bool fmod, const Shape& sa, const Shape& sb) {
  const Shape so = *BroadcastShapes(sa, sb);
  const double lo = std::is_signed_v<T> ? -20 : 0;
  const auto a = RandomData<T>(sa.NumElements(), 7, lo, 20);
  auto b = RandomData<T>(sb.NumElements(), 8, std::is_signed_v<T> ? -6 : 0, 7);
  if constexpr (std::is_floating_point_v<T>) {
    for (T& v : b) v = v == 0 ? T(1.25) : v;  // fmod(x, 0) is NaN: left to <cmath>.
  }
  std::vector<T> want(so.NumElements());
  for (int64_t i = 0; i < so.NumElements(); ++i) {
    want[i] = NaiveMod(a[BroadcastIndex(i, so, sa)], b[BroadcastIndex(i, so, sb)], fmod);
  }
  const std::string what = absl::StrCat("mod fmod=", fmod, " ", DTypeName(DTypeOf<T>()),
                                        sa.ToString(), " ", sb.ToString(), " on ", ctx.ToString());
  auto ta = *Tensor::FromHost<T>(a, sa, ctx, eng);
  auto tb = *Tensor::FromHost<T>(b, sb, ctx, eng);
  auto r = ops::Mod(ta, tb, fmod);
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  EXPECT_EQ(r->shape(), so) << what;
  ExpectNear(*r->template ToHost<T>(), want, 1e-6, what + " write");
  const auto base = RandomData<T>(so.NumElements(), 9, 0, 3);
  auto acc = *Tensor::FromHost<T>(base, so, ctx, eng);
  InvokeOptions add;
  add.reqs = {OpReqType::kAddTo};
  ASSERT_TRUE(Invoke("mod", {ta, tb}, {{"fmod", fmod ? "1" : "0"}}, {acc}, add).ok()) << what;
  std::vector<T> want_add(want.size());
  for (size_t i = 0; i < want.size(); ++i) want_add[i] = static_cast<T>(base[i] + want[i]);
  ExpectNear(*acc.template ToHost<T>(), want_add, 1e-6, what + " add");
}

TEST_P(MathElementwiseTest, ModMatchesNaiveLoopsWithBroadcasting) {
  const Shape shapes[][2] = {{{3, 4}, {3, 4}}, {{2, 3, 4}, {3, 1}}, {{}, {5}}, {{4, 1}, {1, 6}}};
  for (const auto& s : shapes) {
    for (bool fmod : {false, true}) {
      CheckMod<int32_t>(engine_.get(), ctx(), fmod, s[0], s[1]);
      CheckMod<int64_t>(engine_.get(), ctx(), fmod, s[0], s[1]);
      CheckMod<uint8_t>(engine_.get(), ctx(), fmod, s[0], s[1]);
    }
    CheckMod<float>(engine_.get(), ctx(), true, s[0], s[1]);
    CheckMod<double>(engine_.get(), ctx(), true, s[0], s[1]);
  }
}

TEST_P(MathElementwiseTest, ModTakesTheSignOfTheDivisorOrTheDividend) {
  auto a = Make<int32_t>({7, -7, 7, -7, 6, -6, 5, std::numeric_limits<int32_t>::min()}, {8});
  auto b = Make<int32_t>({3, 3, -3, -3, 3, -3, 0, -1}, {8});
  auto r = ops::Mod(a, b);
  ASSERT_TRUE(r.ok()) << r.status();
  // Python's %: the divisor's sign. 5 mod 0 is 0 (documented; no trap), as
  // is INT_MIN mod -1.
  EXPECT_EQ(*r->ToHost<int32_t>(), (std::vector<int32_t>{1, 2, -2, -1, 0, 0, 0, 0}));
  r = ops::Mod(a, b, /*fmod=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r->ToHost<int32_t>(), (std::vector<int32_t>{1, -1, 1, -1, 0, 0, 0, 0}));
  auto a64 = Make<int64_t>({std::numeric_limits<int64_t>::min(), -1, 9}, {3});
  auto b64 = Make<int64_t>({-1, 0, -4}, {3});
  EXPECT_EQ(*(*ops::Mod(a64, b64)).ToHost<int64_t>(), (std::vector<int64_t>{0, 0, -3}));
  auto fa = Make<double>({5.5, -5.5, 5.5, -5.5}, {4});
  auto fb = Make<double>({2, 2, -2, -2}, {4});
  EXPECT_EQ(*(*ops::Mod(fa, fb, true)).ToHost<double>(),
            (std::vector<double>{1.5, -1.5, 1.5, -1.5}));
  auto u = Make<uint8_t>({7, 200, 255}, {3});
  auto ub = Make<uint8_t>({3, 0, 255}, {3});
  EXPECT_EQ(*(*ops::Mod(u, ub)).ToHost<uint8_t>(), (std::vector<uint8_t>{1, 0, 0}));
}

TEST_P(MathElementwiseTest, ModRefusesFloatsWithoutFmodAndHasNoGradient) {
  auto f = Make<float>({1, 2}, {2});
  auto r = Invoke("mod", {f, f});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("fmod=0"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("float32"), std::string::npos) << r.status();
  auto i = Make<int32_t>({1, 2}, {2});
  r = Invoke("mod", {i, i}, {{"fmod", "2"}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  r = Invoke("mod", {i, Make<int64_t>({1, 2}, {2})});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  r = Invoke("mod", {i, Make<int32_t>({1, 2, 3}, {3})});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  // Not differentiable: autodiff reports it (as for pow, maximum).
  EXPECT_EQ(BuiltinOp("mod").gradient(), nullptr);
}

INSTANTIATE_TEST_SUITE_P(AllContexts, MathElementwiseTest,
                         ::testing::ValuesIn(testing::OpSuiteContexts()), testing::ContextName);

}  // namespace
}  // namespace rill::ops
