// The integer semantics of docs/integer-semantics.md on every context
// present: each integer op over every pair of edge values (INT_MIN, -1, 0,
// INT_MAX, ...) of int32, int64 and uint8, against naive loops here that
// compute the exact result in 128 bits and wrap it to the type. Division
// by zero and INT_MIN / -1 used to trap (SIGFPE) on the host and PoCL.

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/ops.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::ops {
namespace {

using Wide = __int128;
using IntegerSemanticsTest = testing::OpTest;

// Every value of the types tested fits (for messages and comparisons).
template <typename T>
int64_t I64(T v) {
  return static_cast<int64_t>(v);
}

// The exact value wrapped modulo 2^bits (two's complement).
template <typename T>
T Wrap(Wide v) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<unsigned __int128>(v)));
}

template <typename T>
std::vector<T> Edges() {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_signed_v<T>) {
    return {L::min(), T(L::min() + 1), T(-7),   T(-2), T(-1), T(0), T(1),
            T(3),     T(L::max() - 1), L::max()};
  } else {
    return {T(0), T(1), T(2), T(3), T(7), T(128), T(254), L::max()};
  }
}

// Naive references: the exact result in 128 bits, then wrapped.
template <typename T>
T NaiveDiv(T a, T b) {
  return b == 0 ? T(0) : Wrap<T>(Wide(a) / Wide(b));
}
template <typename T>
T NaiveMod(T a, T b, bool floored) {
  if (b == 0) return T(0);
  Wide r = Wide(a) % Wide(b);
  if (floored && r != 0 && ((r < 0) != (b < 0))) r += b;
  return Wrap<T>(r);
}

template <typename T>
T NaiveBinary(const std::string& op, T a, T b) {
  if (op == "add") return Wrap<T>(Wide(a) + Wide(b));
  if (op == "sub") return Wrap<T>(Wide(a) - Wide(b));
  if (op == "mul") return Wrap<T>(Wide(a) * Wide(b));
  if (op == "div") return NaiveDiv(a, b);
  if (op == "mod") return NaiveMod(a, b, true);
  if (op == "fmod") return NaiveMod(a, b, false);
  if (op == "maximum") return a > b ? a : b;
  return a < b ? a : b;  // minimum
}

template <typename T>
T NaiveUnary(const std::string& op, T x) {
  if (op == "neg") return Wrap<T>(-Wide(x));
  if (op == "abs") return Wrap<T>(x < 0 ? -Wide(x) : Wide(x));
  if (op == "square") return Wrap<T>(Wide(x) * Wide(x));
  return x > 0 ? x : T(0);  // relu
}

template <typename T>
void CheckBinaryOps(engine::Engine* eng, engine::Context ctx) {
  const std::vector<T> e = Edges<T>();
  const int64_t n = static_cast<int64_t>(e.size());
  std::vector<T> a, b;  // Every pair.
  for (T x : e) {
    for (T y : e) a.push_back(x), b.push_back(y);
  }
  const Tensor ta = *Tensor::FromHost<T>(a, {n, n}, ctx, eng);
  const Tensor tb = *Tensor::FromHost<T>(b, {n, n}, ctx, eng);
  for (std::string op : {"add", "sub", "mul", "div", "mod", "fmod", "maximum", "minimum"}) {
    const std::string what = absl::StrCat(op, " ", DTypeName(DTypeOf<T>()), " on ", ctx.ToString());
    Attrs attrs;
    std::string name = op;
    if (op == "mod" || op == "fmod") {
      name = "mod";
      attrs = {{"fmod", op == "fmod" ? "1" : "0"}};
    }
    auto r = Invoke(name, {ta, tb}, attrs);
    ASSERT_TRUE(r.ok()) << what << ": " << r.status();
    auto got = (*r)[0].template ToHost<T>();
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(I64((*got)[i]), I64(NaiveBinary<T>(op, a[i], b[i])))
          << what << " of " << I64(a[i]) << " and " << I64(b[i]);
    }
    // Accumulating (kAddTo) into the operand wraps too.
    const Tensor acc = *Tensor::FromHost<T>(a, {n, n}, ctx, eng);
    InvokeOptions add;
    add.reqs = {OpReqType::kAddTo};
    ASSERT_TRUE(Invoke(name, {ta, tb}, attrs, {acc}, add).ok()) << what;
    got = acc.template ToHost<T>();
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(I64((*got)[i]), I64(Wrap<T>(Wide(a[i]) + NaiveBinary<T>(op, a[i], b[i]))))
          << what << " added to " << I64(a[i]) << ", operand " << I64(b[i]);
    }
  }
}

template <typename T>
void CheckUnaryAndScalarOps(engine::Engine* eng, engine::Context ctx) {
  const std::vector<T> e = Edges<T>();
  const int64_t n = static_cast<int64_t>(e.size());
  const Tensor x = *Tensor::FromHost<T>(e, {n}, ctx, eng);
  const std::string type = DTypeName(DTypeOf<T>());
  for (std::string op : {"neg", "abs", "square", "relu"}) {
    auto r = Invoke(op, {x});
    ASSERT_TRUE(r.ok()) << op << ": " << r.status();
    const std::vector<T> got = *(*r)[0].template ToHost<T>();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(I64(got[i]), I64(NaiveUnary<T>(op, e[i])))
          << op << " " << type << " of " << I64(e[i]) << " on " << ctx.ToString();
    }
  }
  // The scalar forms with every edge value that a double (the scalar's
  // type) holds exactly as the scalar.
  for (T s : e) {
    const double d = static_cast<double>(s);
    if (d >= 0x1p63 || static_cast<T>(d) != s) continue;  // Near INT64_MAX.
    for (std::string op : {"div", "rdiv", "mul", "add", "rsub"}) {
      const std::string what =
          absl::StrCat(op, "_scalar ", type, " by ", I64(s), " on ", ctx.ToString());
      auto r = Invoke(op + "_scalar", {x}, {{"scalar", absl::StrCat(I64(s))}});
      ASSERT_TRUE(r.ok()) << what << ": " << r.status();
      auto got = (*r)[0].template ToHost<T>();
      ASSERT_TRUE(got.ok()) << what << ": " << got.status();
      for (int64_t i = 0; i < n; ++i) {
        const T v = e[i];
        const T want = op == "div"    ? NaiveDiv(v, s)
                       : op == "rdiv" ? NaiveDiv(s, v)
                       : op == "mul"  ? NaiveBinary<T>("mul", v, s)
                       : op == "add"  ? NaiveBinary<T>("add", v, s)
                                      : NaiveBinary<T>("sub", s, v);
        ASSERT_EQ(I64((*got)[i]), I64(want)) << what << " at " << I64(v);
      }
    }
  }
}

TEST_P(IntegerSemanticsTest, BinaryOpsWrapAndNeverTrap) {
  CheckBinaryOps<int32_t>(engine_.get(), ctx());
  CheckBinaryOps<int64_t>(engine_.get(), ctx());
  CheckBinaryOps<uint8_t>(engine_.get(), ctx());
}

TEST_P(IntegerSemanticsTest, UnaryAndScalarOpsWrapAndNeverTrap) {
  CheckUnaryAndScalarOps<int32_t>(engine_.get(), ctx());
  CheckUnaryAndScalarOps<int64_t>(engine_.get(), ctx());
  CheckUnaryAndScalarOps<uint8_t>(engine_.get(), ctx());
}

TEST_P(IntegerSemanticsTest, TheReportedDivisionsGiveTheDocumentedValues) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  auto x = Make<int32_t>({kMin, 7, -7, kMin}, {4});
  auto y = Make<int32_t>({-1, 0, 0, 0}, {4});
  auto r = Invoke("div", {x, y});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*(*r)[0].ToHost<int32_t>(), (std::vector<int32_t>{kMin, 0, 0, 0}));
  r = Invoke("div_scalar", {x}, {{"scalar", "-1"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*(*r)[0].ToHost<int32_t>(), (std::vector<int32_t>{kMin, -7, 7, kMin}));
  r = Invoke("mod", {x, y});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*(*r)[0].ToHost<int32_t>(), (std::vector<int32_t>{0, 0, 0, 0}));
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  auto x64 = Make<int64_t>({kMin64, 5}, {2});
  r = Invoke("div_scalar", {x64}, {{"scalar", "-1"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*(*r)[0].ToHost<int64_t>(), (std::vector<int64_t>{kMin64, -5}));
  r = Invoke("div_scalar", {x64}, {{"scalar", "0"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*(*r)[0].ToHost<int64_t>(), (std::vector<int64_t>{0, 0}));
}

TEST_P(IntegerSemanticsTest, AScalarThatIsNotAValueOfTheIntegerTypeIsRefused) {
  auto i32 = Make<int32_t>({1, 2}, {2});
  auto u8 = Make<uint8_t>({1, 2}, {2});
  const struct {
    Tensor x;
    const char* op;
    const char* scalar;
    const char* want;
  } cases[] = {
      {i32, "div_scalar", "nan", "scalar nan is not a value of int32"},
      {i32, "mul_scalar", "inf", "scalar inf is not a value of int32"},
      {i32, "add_scalar", "-inf", "scalar -inf is not a value of int32"},
      {i32, "div_scalar", "0.5", "scalar 0.5 is not a value of int32"},
      {i32, "equal_scalar", "2147483648", "scalar 2147483648 is not a value of int32"},
      {i32, "maximum_scalar", "-2147483649", "[-2147483648, 2147483647]"},
      {u8, "add_scalar", "256", "scalar 256 is not a value of uint8"},
      {u8, "sub_scalar", "-1", "[0, 255]"},
  };
  for (const auto& c : cases) {
    auto r = Invoke(c.op, {c.x}, {{"scalar", c.scalar}});
    ASSERT_FALSE(r.ok()) << c.op << " " << c.scalar;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << "want '" << c.want << "' in " << r.status();
  }
  // The extremes themselves are values of the type.
  EXPECT_TRUE(Invoke("add_scalar", {i32}, {{"scalar", "-2147483648"}}).ok());
  EXPECT_TRUE(Invoke("add_scalar", {u8}, {{"scalar", "255"}}).ok());
}

template <typename T>
void CheckReductionsWrap(engine::Engine* eng, engine::Context ctx) {
  constexpr T kMax = std::numeric_limits<T>::max(), kMin = std::numeric_limits<T>::min();
  const std::vector<T> x = {kMax, T(1), T(2), kMin, T(-1), T(3)};
  const Tensor t = *Tensor::FromHost<T>(x, {2, 3}, ctx, eng);
  const std::string what = absl::StrCat(DTypeName(DTypeOf<T>()), " on ", ctx.ToString());
  auto r = Invoke("sum", {t}, {{"axes", "(1,)"}});
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  EXPECT_EQ(*(*r)[0].template ToHost<T>(),
            (std::vector<T>{Wrap<T>(Wide(kMax) + 3), Wrap<T>(Wide(kMin) + 2)}))
      << what;
  r = Invoke("prod", {t}, {{"axes", "(1,)"}});
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  EXPECT_EQ(*(*r)[0].template ToHost<T>(),
            (std::vector<T>{Wrap<T>(Wide(kMax) * 2), Wrap<T>(-Wide(kMin) * 3)}))
      << what;
  r = Invoke("cumsum", {t}, {{"axis", "1"}});
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  EXPECT_EQ(*(*r)[0].template ToHost<T>(), (std::vector<T>{kMax, kMin, Wrap<T>(Wide(kMin) + 2),
                                                           kMin, kMax, Wrap<T>(Wide(kMax) + 3)}))
      << what;
}

TEST_P(IntegerSemanticsTest, IntegerReductionsWrap) {
  CheckReductionsWrap<int32_t>(engine_.get(), ctx());
  CheckReductionsWrap<int64_t>(engine_.get(), ctx());
}

INSTANTIATE_TEST_SUITE_P(AllContexts, IntegerSemanticsTest,
                         ::testing::ValuesIn(testing::OpSuiteContexts()), testing::ContextName);

}  // namespace
}  // namespace rill::ops
