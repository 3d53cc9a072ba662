// The init ops on every context: fills and arange for every type and write
// request against naive loops (integers from out-of-range values included), random ops reproducible
// across contexts for one seed (the Philox generator), dropout and its backward.

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::ops {
namespace {

using engine::Context;
using testing::AllContexts;
using testing::ExpectNear;
using testing::RandomData;

class InitTest : public testing::OpTest {
 public:
  InvokeOptions On(Context c) const {
    InvokeOptions o;
    o.context = c;
    o.engine = engine_.get();
    return o;
  }
  InvokeOptions On() const { return On(ctx()); }
  absl::StatusOr<Tensor> Run(const std::string& op, const Attrs& attrs, InvokeOptions o) {
    auto r = Invoke(op, {}, attrs, {}, o);
    if (!r.ok()) return r.status();
    return (*r)[0];
  }
  absl::StatusOr<Tensor> Run(const std::string& op, const Attrs& attrs) {
    return Run(op, attrs, On());
  }
  absl::Status SeedOn(Context c, uint64_t seed) { return Seed(c, seed, engine_.get()); }
};

template <typename T>
void CheckFill(InitTest* t, engine::Engine* eng, Context ctx, const std::string& op, Attrs attrs,
               const std::vector<T>& want, const Shape& shape) {
  const std::string what = op + " " + DTypeName(DTypeOf<T>()) + " on " + ctx.ToString();
  auto r = t->Run(op, attrs);
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  EXPECT_EQ(r->shape(), shape) << what;
  ExpectNear(*r->template ToHost<T>(), want, 1e-6, what);
  // kAddTo and kNullOp into an existing tensor.
  const auto base = RandomData<T>(shape.NumElements(), 3, 0, 5);
  auto acc = *Tensor::FromHost<T>(base, shape, ctx, eng);
  InvokeOptions o;
  o.context = ctx;
  o.engine = eng;
  o.reqs = {OpReqType::kAddTo};
  ASSERT_TRUE(Invoke(op, {}, attrs, {acc}, o).ok()) << what;
  std::vector<T> sum(want);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = static_cast<T>(sum[i] + base[i]);
  ExpectNear(*acc.template ToHost<T>(), sum, 1e-6, what + " add");
  o.reqs = {OpReqType::kNullOp};
  ASSERT_TRUE(Invoke(op, {}, attrs, {acc}, o).ok()) << what;
  ExpectNear(*acc.template ToHost<T>(), sum, 1e-6, what + " null");
}

TEST_P(InitTest, FillsMatchForEveryTypeAndRequest) {
  CheckFill<float>(this, engine_.get(), ctx(), "fill", {{"shape", "(2, 3)"}, {"value", "2.5"}},
                   std::vector<float>(6, 2.5f), {2, 3});
  CheckFill<double>(this, engine_.get(), ctx(), "fill",
                    {{"shape", "(5,)"}, {"value", "-1.25"}, {"dtype", "float64"}},
                    std::vector<double>(5, -1.25), {5});
  CheckFill<int32_t>(this, engine_.get(), ctx(), "fill",
                     {{"shape", "(7)"}, {"value", "-3"}, {"dtype", "int32"}},
                     std::vector<int32_t>(7, -3), {7});
  CheckFill<int64_t>(this, engine_.get(), ctx(), "ones", {{"shape", "(3, 1)"}, {"dtype", "int64"}},
                     std::vector<int64_t>(3, 1), {3, 1});
  CheckFill<uint8_t>(this, engine_.get(), ctx(), "fill",
                     {{"shape", "(9)"}, {"value", "200"}, {"dtype", "uint8"}},
                     std::vector<uint8_t>(9, 200), {9});
  CheckFill<float>(this, engine_.get(), ctx(), "zeros", {{"shape", "(4, 0)"}}, {}, {4, 0});
  CheckFill<float>(this, engine_.get(), ctx(), "zeros", {{"shape", "()"}}, {0.f}, {});
  // float16 and bool: the stored bits.
  auto h = Run("fill", {{"shape", "(3)"}, {"value", "1.5"}, {"dtype", "float16"}});
  ASSERT_TRUE(h.ok()) << h.status();
  uint16_t hb[3];
  ASSERT_TRUE(h->ToHostBytes(hb, sizeof(hb)).ok());
  for (uint16_t b : hb) EXPECT_EQ(b, 0x3E00);
  auto b = Run("ones", {{"shape", "(2)"}, {"dtype", "bool"}});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b->ToHost<uint8_t>(), (std::vector<uint8_t>{1, 1}));
}

TEST_P(InitTest, ArangeMatchesNaiveLoops) {
  struct Case {
    double start, stop, step;
  };
  for (const Case& c : {Case{0, 10, 1}, Case{2, -3, -0.5}, Case{1, 1, 1}, Case{0.5, 7, 0.75}}) {
    const Attrs attrs = {{"start", std::to_string(c.start)},
                         {"stop", std::to_string(c.stop)},
                         {"step", std::to_string(c.step)}};
    const int64_t n =
        std::max<int64_t>(0, static_cast<int64_t>(std::ceil((c.stop - c.start) / c.step)));
    std::vector<float> wf(n);
    std::vector<double> wd(n);
    std::vector<int64_t> wi(n);
    for (int64_t i = 0; i < n; ++i) {
      wd[i] = c.start + i * c.step;
      wf[i] = static_cast<float>(wd[i]);
      wi[i] = static_cast<int64_t>(wd[i]);
    }
    CheckFill<float>(this, engine_.get(), ctx(), "arange", attrs, wf, Shape{n});
    Attrs a64 = attrs;
    a64.push_back({"dtype", "float64"});
    CheckFill<double>(this, engine_.get(), ctx(), "arange", a64, wd, Shape{n});
    Attrs ai = attrs;
    ai.push_back({"dtype", "int64"});
    CheckFill<int64_t>(this, engine_.get(), ctx(), "arange", ai, wi, Shape{n});
  }
}

// Float to integer by the rule of docs/integer-semantics.md, spelled apart
// from float_to_int.h: NaN 0; the value truncated toward zero, then
// saturated to T's range.
template <typename T>
T WantFloatToInt(double v) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  const int bits = static_cast<int>(sizeof(T)) * 8 - (std::is_signed_v<T> ? 1 : 0);
  if (t < static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (t >= std::ldexp(1.0, bits)) return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}

template <typename T>
void ExpectIntegerFill(InitTest* test, const std::string& op, Attrs attrs,
                       const std::vector<double>& values) {
  attrs.push_back({"dtype", DTypeName(DTypeOf<T>())});
  std::string what = op;
  for (const auto& [k, v] : attrs) what += " " + k + "=" + v;
  auto r = test->Run(op, attrs);
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  std::vector<T> want;
  for (double v : values) want.push_back(WantFloatToInt<T>(v));
  EXPECT_EQ(*r->template ToHost<T>(), want) << what;
}

// fill and arange of an integer dtype convert a double; beyond the type's
// range (an infinity included) it saturates and a fraction is truncated
// toward zero, on every context. (fill refuses NaN for integers.)
TEST_P(InitTest, IntegerFillAndArangeSaturate) {
  const std::string ctx_name = " on " + ctx().ToString();
  for (const char* value : {"inf", "-inf", "1e30", "-1e30", "2.9", "-2.9", "2147483647.5",
                            "-2147483649", "9.3e18", "-9.3e18", "255.9", "256", "-0.5"}) {
    SCOPED_TRACE(std::string("fill value=") + value + ctx_name);
    const double v = std::strtod(value, nullptr);
    const Attrs attrs = {{"shape", "(3)"}, {"value", value}};
    ExpectIntegerFill<int32_t>(this, "fill", attrs, {v, v, v});
    ExpectIntegerFill<int64_t>(this, "fill", attrs, {v, v, v});
    ExpectIntegerFill<uint8_t>(this, "fill", attrs, {v, v, v});
  }
  struct Case {
    const char *start, *stop, *step;
  };
  for (const Case& c : {Case{"2147483640", "2147483650", "3"}, Case{"-3", "3", "1.5"},
                        Case{"-2147483645", "-2147483655", "-4"}, Case{"250", "260", "2.5"},
                        Case{"9.2233720368547748e18", "9.2233720368547799e18", "1024"}}) {
    SCOPED_TRACE(std::string("arange start=") + c.start + ctx_name);
    const double start = std::strtod(c.start, nullptr), stop = std::strtod(c.stop, nullptr),
                 step = std::strtod(c.step, nullptr);
    const int64_t n = static_cast<int64_t>(std::ceil((stop - start) / step));
    std::vector<double> values;
    for (int64_t i = 0; i < n; ++i) values.push_back(start + static_cast<double>(i) * step);
    const Attrs attrs = {{"start", c.start}, {"stop", c.stop}, {"step", c.step}};
    ExpectIntegerFill<int32_t>(this, "arange", attrs, values);
    ExpectIntegerFill<int64_t>(this, "arange", attrs, values);
    ExpectIntegerFill<uint8_t>(this, "arange", attrs, values);
  }
}

// The same seed gives the same numbers on this context as on the CPU.
TEST_P(InitTest, RandomOpsAreReproducibleAcrossContexts) {
  for (const char* dtype : {"float32", "float64"}) {
    const Attrs u = {{"low", "-2"}, {"high", "3"}, {"shape", "(33, 3)"}, {"dtype", dtype}};
    const Attrs g = {{"loc", "1"}, {"scale", "2"}, {"shape", "(1001)"}, {"dtype", dtype}};
    std::vector<std::vector<double>> got[2];
    for (int side = 0; side < 2; ++side) {
      const Context c = side == 0 ? Context::Host() : ctx();
      absl::Status st = SeedOn(c, 1234);
      ASSERT_TRUE(st.ok()) << st;
      auto tu = Run("random_uniform", u, On(c));
      ASSERT_TRUE(tu.ok()) << tu.status();
      auto tg = Run("random_normal", g, On(c));
      ASSERT_TRUE(tg.ok()) << tg.status();
      for (const Tensor& t : {*tu, *tg}) {
        std::vector<double> v;
        if (t.dtype() == DType::kF64) {
          v = *t.ToHost<double>();
        } else {
          const std::vector<float> f = *t.ToHost<float>();
          v.assign(f.begin(), f.end());
        }
        got[side].push_back(v);
      }
    }
    ExpectNear(got[1][0], got[0][0], 1e-6,
               std::string("uniform ") + dtype + " on " + ctx().ToString());
    ExpectNear(got[1][1], got[0][1], 1e-5,
               std::string("normal ") + dtype + " on " + ctx().ToString());
    double mean = 0;
    for (double v : got[1][0]) {
      EXPECT_GT(v, -2);
      EXPECT_LE(v, 3);
      mean += v;
    }
    EXPECT_NEAR(mean / got[1][0].size(), 0.5, 0.5);
    mean = 0;
    double sq = 0;
    for (double v : got[1][1]) {
      mean += v;
      sq += v * v;
    }
    mean /= 1001;
    EXPECT_NEAR(mean, 1, 0.3);
    EXPECT_NEAR(std::sqrt(sq / 1001 - mean * mean), 2, 0.3);
  }
}

TEST_P(InitTest, DropoutMaskIsTheSameOnEveryContextForOneSeed) {
  const int64_t n = 2000;
  const auto x = RandomData<float>(n, 11);
  std::vector<float> masks[2], ys[2];
  for (int side = 0; side < 2; ++side) {
    const Context c = side == 0 ? Context::Host() : ctx();
    absl::Status st = SeedOn(c, 77);
    ASSERT_TRUE(st.ok()) << st;
    auto tx = *Tensor::FromHost<float>(x, {n}, c, engine_.get());
    auto r = Invoke("dropout", {tx}, {{"p", "0.3"}});
    ASSERT_TRUE(r.ok()) << r.status();
    ys[side] = *(*r)[0].ToHost<float>();
    masks[side] = *(*r)[1].ToHost<float>();
  }
  EXPECT_EQ(masks[1], masks[0]) << ctx().ToString();
  int kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(masks[1][i] == 0 || masks[1][i] == 1);
    kept += masks[1][i] == 1;
    EXPECT_NEAR(ys[1][i], x[i] * masks[1][i] / 0.7f, 1e-6);
  }
  EXPECT_NEAR(kept / double(n), 0.7, 0.05);
  // In place over x, and not training: y = x, mask = 1.
  auto tx = *Tensor::FromHost<float>(x, {n}, ctx(), engine_.get());
  auto m = *Tensor::Empty({n}, DType::kF32, ctx(), engine_.get());
  InvokeOptions eval;
  eval.is_train = false;
  ASSERT_TRUE(Invoke("dropout", {tx}, {{"p", "0.5"}}, {tx, m}, eval).ok());
  EXPECT_EQ(*tx.ToHost<float>(), x);
  EXPECT_EQ(*m.ToHost<float>(), std::vector<float>(n, 1.f));
}

TEST_P(InitTest, DropoutBackwardMatchesFiniteDifferences) {
  const int64_t n = 64;
  const auto x = RandomData<double>(n, 12);
  const auto dy = RandomData<double>(n, 13);
  auto forward = [&](const std::vector<double>& xv) {
    absl::Status st = SeedOn(ctx(), 5);
    EXPECT_TRUE(st.ok()) << st;
    auto r = *Invoke("dropout", {*Tensor::FromHost<double>(xv, {n}, ctx(), engine_.get())},
                     {{"p", "0.4"}});
    return std::make_pair(*r[0].ToHost<double>(), r[1]);
  };
  auto [y, mask] = forward(x);
  auto tdy = *Tensor::FromHost<double>(dy, {n}, ctx(), engine_.get());
  auto g = Invoke("_backward_dropout", {tdy, mask}, {{"p", "0.4"}});
  ASSERT_TRUE(g.ok()) << g.status();
  const double h = 1e-6;
  std::vector<double> xp(x), xm(x);
  for (auto& v : xp) v += h;
  for (auto& v : xm) v -= h;
  auto fp = forward(xp).first, fm = forward(xm).first;
  std::vector<double> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = dy[i] * (fp[i] - fm[i]) / (2 * h);
  ExpectNear(*(*g)[0].ToHost<double>(), want, 1e-6, "_backward_dropout on " + ctx().ToString());
  // kAddTo.
  const auto base = RandomData<double>(n, 14);
  auto acc = *Tensor::FromHost<double>(base, {n}, ctx(), engine_.get());
  InvokeOptions add;
  add.reqs = {OpReqType::kAddTo};
  ASSERT_TRUE(Invoke("_backward_dropout", {tdy, mask}, {{"p", "0.4"}}, {acc}, add).ok());
  for (int64_t i = 0; i < n; ++i) want[i] += base[i];
  ExpectNear(*acc.ToHost<double>(), want, 1e-6, "_backward_dropout add");
  // The gradient function gives the same.
  const OpDef& op = BuiltinOp("dropout");
  GradientContext gc;
  auto params = *op.params().Parse("dropout", {{"p", "0.4"}});
  gc.params = params.get();
  std::vector<Tensor> outs = {*Tensor::FromHost<double>(y, {n}, ctx(), engine_.get()), mask};
  std::vector<Tensor> grads = {tdy};
  gc.outputs = outs;
  gc.out_grads = grads;
  auto gg = op.gradient()(gc);
  ASSERT_TRUE(gg.ok()) << gg.status();
  ExpectNear(*(*gg)[0].ToHost<double>(), *(*g)[0].ToHost<double>(), 0, "gradient fn");
}

TEST_P(InitTest, BadInputsGetClearErrors) {
  auto r = Invoke("zeros", {}, {{"shape", "(2)"}});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("InvokeOptions::context"), std::string::npos) << r.status();
  auto s = Run("zeros", {{"shape", "(2, -3)"}});
  EXPECT_NE(s.status().message().find("-3"), std::string::npos) << s.status();
  s = Run("zeros", {{"shape", "(4294967296, 4294967296)"}});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
  s = Run("fill", {{"shape", "(2)"}, {"value", "1"}, {"dtype", "complex"}});
  EXPECT_NE(s.status().message().find("complex"), std::string::npos) << s.status();
  s = Run("arange", {{"stop", "5"}, {"step", "0"}});
  EXPECT_NE(s.status().message().find("step=0"), std::string::npos) << s.status();
  s = Run("arange", {{"stop", "1e300"}, {"step", "1e-300"}});
  EXPECT_NE(s.status().message().find("too many"), std::string::npos) << s.status();
  s = Run("random_uniform", {{"shape", "(2)"}, {"dtype", "int32"}});
  EXPECT_NE(s.status().message().find("dtype=int32"), std::string::npos) << s.status();
  s = Run("random_uniform", {{"shape", "(2)"}, {"low", "3"}, {"high", "1"}});
  EXPECT_NE(s.status().message().find("low=3"), std::string::npos) << s.status();
  s = Run("random_normal", {{"shape", "(2)"}, {"scale", "-1"}});
  EXPECT_NE(s.status().message().find("scale=-1"), std::string::npos) << s.status();
  auto x = *Tensor::FromHost<float>({1, 2}, {2}, ctx(), engine_.get());
  r = Invoke("dropout", {x}, {{"p", "1"}});
  EXPECT_NE(r.status().message().find("p=1"), std::string::npos) << r.status();
  auto i = *Tensor::FromHost<int32_t>({1, 2}, {2}, ctx(), engine_.get());
  r = Invoke("dropout", {i});
  EXPECT_NE(r.status().message().find("int32"), std::string::npos) << r.status();
}

INSTANTIATE_TEST_SUITE_P(AllContexts, InitTest, ::testing::ValuesIn(testing::OpSuiteContexts()),
                         testing::ContextName);

}  // namespace
}  // namespace rill::ops
