// The reduce ops on every context present, every dtype they take and every
// write request, against naive host loops written here (cumsum too);
// gradients against central finite differences (float64).

#include <cmath>
#include <functional>
#include <limits>
#include <random>
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

using engine::Context;
using testing::AllContexts;
using testing::ExpectNear;
using testing::RandomData;

using ReduceTest = testing::OpTest;

std::string Tuple(const std::vector<int64_t>& v) { return FormatIntTuple(v); }

// Runs `op` under kWriteTo, kAddTo, kNullOp and (when output 0 matches input
// 0) kWriteInplace, comparing with `want`.
template <typename T, typename TOut = T>
void CheckAllRequests(engine::Engine* eng, Context ctx, const std::string& op,
                      std::vector<Tensor> in, const Attrs& attrs, const std::vector<TOut>& want,
                      const Shape& want_shape, double tol, const std::string& what) {
  auto r = Invoke(op, in, attrs);
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  ASSERT_EQ((*r)[0].shape(), want_shape) << what;
  ASSERT_EQ((*r)[0].dtype(), DTypeOf<TOut>()) << what;
  auto got = (*r)[0].template ToHost<TOut>();
  ASSERT_TRUE(got.ok()) << what << ": " << got.status();
  ExpectNear(*got, want, tol, what + " write");
  const auto base = RandomData<TOut>(want_shape.NumElements(), 3, 0, 3);
  auto acc = *Tensor::FromHost<TOut>(base, want_shape, ctx, eng);
  InvokeOptions add;
  add.reqs = {OpReqType::kAddTo};
  ASSERT_TRUE(Invoke(op, in, attrs, {acc}, add).ok()) << what;
  std::vector<TOut> want_add(want.size());
  for (size_t i = 0; i < want.size(); ++i) want_add[i] = static_cast<TOut>(base[i] + want[i]);
  ExpectNear(*acc.template ToHost<TOut>(), want_add, tol, what + " add");
  InvokeOptions null;
  null.reqs = {OpReqType::kNullOp};
  ASSERT_TRUE(Invoke(op, in, attrs, {acc}, null).ok()) << what;
  ExpectNear(*acc.template ToHost<TOut>(), want_add, tol, what + " null");
  if (in[0].shape() == want_shape && in[0].dtype() == DTypeOf<TOut>()) {
    auto copy = *Tensor::FromHost<T>(*in[0].template ToHost<T>(), in[0].shape(), ctx, eng);
    in[0] = copy;
    InvokeOptions inplace;
    inplace.reqs = {OpReqType::kWriteInplace};
    ASSERT_TRUE(Invoke(op, in, attrs, {copy}, inplace).ok()) << what;
    ExpectNear(*copy.template ToHost<TOut>(), want, tol, what + " inplace");
  }
}

// Naive reduction: out[kept index] = f over the reduced elements.
enum class Kind { kSum, kMean, kMax, kProd };
template <typename T>
std::vector<T> NaiveReduce(const std::vector<T>& x, const Shape& s, const std::vector<bool>& mask,
                           Kind k) {
  std::vector<int64_t> out_dims;
  for (int d = 0; d < s.rank(); ++d) {
    if (!mask[d]) out_dims.push_back(s[d]);
  }
  int64_t n_out = 1, count = 1;
  for (int64_t d : out_dims) n_out *= d;
  for (int d = 0; d < s.rank(); ++d) {
    if (mask[d]) count *= s[d];
  }
  std::vector<double> acc(n_out, k == Kind::kMax ? -INFINITY : k == Kind::kProd ? 1.0 : 0.0);
  for (int64_t i = 0; i < s.NumElements(); ++i) {
    int64_t rem = i, o = 0, mult = 1;
    for (int d = s.rank() - 1; d >= 0; --d) {
      const int64_t idx = rem % s[d];
      rem /= s[d];
      if (!mask[d]) {
        o += idx * mult;
        mult *= s[d];
      }
    }
    const double v = static_cast<double>(x[i]);
    acc[o] = k == Kind::kMax ? std::max(acc[o], v) : k == Kind::kProd ? acc[o] * v : acc[o] + v;
  }
  std::vector<T> out(n_out);
  for (int64_t o = 0; o < n_out; ++o)
    out[o] = static_cast<T>(k == Kind::kMean ? acc[o] / count : acc[o]);
  return out;
}

Shape ReducedShape(const Shape& s, const std::vector<bool>& mask, bool keep) {
  Shape out;
  for (int d = 0; d < s.rank(); ++d) {
    if (!mask[d])
      out.mutable_dims().push_back(s[d]);
    else if (keep)
      out.mutable_dims().push_back(1);
  }
  return out;
}

std::vector<bool> MaskOf(const Shape& s, const std::vector<int64_t>& axes) {
  std::vector<bool> m(s.rank(), axes.empty());
  for (int64_t a : axes) m[a < 0 ? a + s.rank() : a] = true;
  return m;
}

// `x`: the input data (empty: uniform in [-5, 5)).
template <typename T>
void CheckReduce(engine::Engine* eng, Context ctx, const std::string& op, Kind kind, const Shape& s,
                 const std::vector<int64_t>& axes, bool keep, std::vector<T> x = {}) {
  if (x.empty()) x = RandomData<T>(s.NumElements(), 7, -5, 5);
  auto t = *Tensor::FromHost<T>(x, s, ctx, eng);
  const auto mask = MaskOf(s, axes);
  const auto want = NaiveReduce<T>(x, s, mask, kind);
  const std::string what = op + " " + DTypeName(DTypeOf<T>()) + s.ToString() + " axes " +
                           Tuple(axes) + (keep ? " keepdims" : "") + " on " + ctx.ToString();
  CheckAllRequests<T>(eng, ctx, op, {t},
                      {{"axes", Tuple(axes)}, {"keepdims", keep ? "true" : "false"}}, want,
                      ReducedShape(s, mask, keep), 1e-5, what);
}

TEST_P(ReduceTest, SumMeanMaxMatchNaiveLoopsUnderEveryRequest) {
  struct Case {
    Shape s;
    std::vector<int64_t> axes;
  };
  const Case cases[] = {{{2, 3, 4}, {}},      {{2, 3, 4}, {0}},    {{2, 3, 4}, {1}},
                        {{2, 3, 4}, {-1}},    {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {1, 2}},
                        {{2, 3, 4}, {0, 1}},  {{5}, {0}},          {{}, {}},
                        {{3, 1, 70, 5}, {2}}, {{4, 1, 3}, {1}},    {{2, 3, 2, 3, 2}, {0, 2, 4}}};
  for (const Case& c : cases) {
    for (bool keep : {false, true}) {
      CheckReduce<float>(engine_.get(), ctx(), "sum", Kind::kSum, c.s, c.axes, keep);
      CheckReduce<double>(engine_.get(), ctx(), "sum", Kind::kSum, c.s, c.axes, keep);
      CheckReduce<int32_t>(engine_.get(), ctx(), "sum", Kind::kSum, c.s, c.axes, keep);
      CheckReduce<int64_t>(engine_.get(), ctx(), "sum", Kind::kSum, c.s, c.axes, keep);
      CheckReduce<float>(engine_.get(), ctx(), "mean", Kind::kMean, c.s, c.axes, keep);
      CheckReduce<double>(engine_.get(), ctx(), "mean", Kind::kMean, c.s, c.axes, keep);
      CheckReduce<float>(engine_.get(), ctx(), "max", Kind::kMax, c.s, c.axes, keep);
      CheckReduce<double>(engine_.get(), ctx(), "max", Kind::kMax, c.s, c.axes, keep);
    }
  }
}

// prod's data: both signs, magnitudes near 1 (floats in [0.5, 1.5), integers
// 1 or 2 with a 2 in eight), so that long products neither overflow nor
// vanish; with_zeros puts a zero at every fifth element.
template <typename T>
std::vector<T> ProdData(int64_t n, uint64_t seed, bool with_zeros) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const double sign = u(rng) < 0.5 ? -1 : 1;
    const double mag = std::is_integral_v<T> ? (u(rng) < 0.125 ? 2 : 1) : 0.5 + u(rng);
    v[i] = with_zeros && i % 5 == 2 ? T(0) : static_cast<T>(sign * mag);
  }
  return v;
}

TEST_P(ReduceTest, ProdMatchesNaiveLoopsUnderEveryRequest) {
  struct Case {
    Shape s;
    std::vector<int64_t> axes;
  };
  const Case cases[] = {{{2, 3, 4}, {}},      {{2, 3, 4}, {0}},    {{2, 3, 4}, {1}},
                        {{2, 3, 4}, {-1}},    {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {-2, -1}},
                        {{2, 3, 4}, {0, 1}},  {{5}, {0}},          {{}, {}},
                        {{3, 1, 70, 5}, {2}}, {{4, 1, 3}, {1}},    {{2, 3, 2, 3, 2}, {0, 2, 4}}};
  for (const Case& c : cases) {
    const int64_t n = c.s.NumElements();
    for (bool zeros : {false, true}) {
      for (bool keep : {false, true}) {
        auto* e = engine_.get();
        CheckReduce<float>(e, ctx(), "prod", Kind::kProd, c.s, c.axes, keep,
                           ProdData<float>(n, 31, zeros));
        CheckReduce<double>(e, ctx(), "prod", Kind::kProd, c.s, c.axes, keep,
                            ProdData<double>(n, 32, zeros));
        CheckReduce<int32_t>(e, ctx(), "prod", Kind::kProd, c.s, c.axes, keep,
                             ProdData<int32_t>(n, 33, zeros));
        CheckReduce<int64_t>(e, ctx(), "prod", Kind::kProd, c.s, c.axes, keep,
                             ProdData<int64_t>(n, 34, zeros));
      }
    }
  }
  // The typed wrapper.
  auto y = ops::Prod(Make<int64_t>({1, -2, 3, 0, 5, 6}, {2, 3}), {-1}, /*keepdims=*/true);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 1}));
  EXPECT_EQ(*y->ToHost<int64_t>(), (std::vector<int64_t>{-6, 0}));
}

TEST_P(ReduceTest, EmptyReductionsGiveIdentityOrError) {
  auto t = Make<float>({}, {0, 3});
  auto r = Invoke("sum", {t}, {{"axes", "(0,)"}});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(*(*r)[0].ToHost<float>(), {0, 0, 0}, 0, "sum of [0, 3] over axis 0");
  r = Invoke("sum", {t}, {{"axes", "(1,)"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].shape(), Shape{0});
  r = Invoke("prod", {t}, {{"axes", "(0,)"}});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(*(*r)[0].ToHost<float>(), {1, 1, 1}, 0, "prod of [0, 3] over axis 0");
  r = Invoke("max", {t}, {{"axes", "(0,)"}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("[0, 3]"), std::string::npos) << r.status();
}

TEST_P(ReduceTest, MaxAndArgmaxPropagateNaNAndTakeTheFirstMaximum) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto t = Make<float>({1, 5, 5, 2, nan, 3}, {2, 3});
  auto m = Invoke("max", {t}, {{"axes", "(1,)"}});
  ASSERT_TRUE(m.ok()) << m.status();
  auto mv = *(*m)[0].ToHost<float>();
  EXPECT_EQ(mv[0], 5);
  EXPECT_TRUE(std::isnan(mv[1]));
  auto a = Invoke("argmax", {t}, {{"axis", "1"}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*(*a)[0].ToHost<int64_t>(), (std::vector<int64_t>{1, 1}));
}

TEST_P(ReduceTest, ArgmaxMatchesNaiveLoopsUnderEveryRequest) {
  const Shape s{3, 4, 5};
  const auto x = RandomData<double>(s.NumElements(), 9, -5, 5);
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    for (bool keep : {false, true}) {
      const int a = axis < 0 ? axis + 3 : axis;
      std::vector<bool> mask(3, false);
      mask[a] = true;
      const Shape os = ReducedShape(s, mask, keep);
      std::vector<int64_t> want(os.NumElements());
      int64_t outer = 1, inner = 1;
      for (int d = 0; d < a; ++d) outer *= s[d];
      for (int d = a + 1; d < 3; ++d) inner *= s[d];
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < inner; ++j) {
          int64_t best = 0;
          for (int64_t k = 1; k < s[a]; ++k) {
            if (x[(o * s[a] + k) * inner + j] > x[(o * s[a] + best) * inner + j]) best = k;
          }
          want[o * inner + j] = best;
        }
      }
      for (bool f32 : {false, true}) {
        const std::string what = "argmax axis " + std::to_string(axis) + (f32 ? " f32" : " f64") +
                                 " on " + ctx().ToString();
        const Attrs attrs = {{"axis", std::to_string(axis)}, {"keepdims", keep ? "1" : "0"}};
        if (f32) {
          std::vector<float> xf(x.begin(), x.end());
          CheckAllRequests<float, int64_t>(engine_.get(), ctx(), "argmax", {Make<float>(xf, s)},
                                           attrs, want, os, 0, what);
        } else {
          CheckAllRequests<double, int64_t>(engine_.get(), ctx(), "argmax", {Make<double>(x, s)},
                                            attrs, want, os, 0, what);
        }
      }
    }
  }
}

TEST_P(ReduceTest, SumToInvertsBroadcasting) {
  struct Case {
    Shape in;
    std::vector<int64_t> to;
  };
  const Case cases[] = {{{2, 3, 4}, {3, 1}}, {{2, 3, 4}, {1, 4}}, {{2, 3, 4}, {2, 1, 1}},
                        {{2, 3, 4}, {4}},    {{2, 3, 4}, {}},     {{2, 3, 4}, {2, 3, 4}},
                        {{3, 1}, {1}},       {{5, 6}, {5, 1}},    {{1, 6}, {1, 1, 6}}};
  for (const Case& c : cases) {
    if (c.to.size() > static_cast<size_t>(c.in.rank())) {
      auto r =
          Invoke("sum_to", {Make<float>(std::vector<float>(6, 1), c.in)}, {{"shape", Tuple(c.to)}});
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
      continue;
    }
    std::vector<bool> mask(c.in.rank());
    for (int d = 0; d < c.in.rank(); ++d) {
      const int td = d - (c.in.rank() - static_cast<int>(c.to.size()));
      mask[d] = td < 0 || c.to[td] == 1;
    }
    const Shape want_shape{absl::MakeConstSpan(c.to)};
    const std::string what =
        "sum_to " + c.in.ToString() + " -> " + Tuple(c.to) + " on " + ctx().ToString();
    const auto x = RandomData<double>(c.in.NumElements(), 11, -3, 3);
    CheckAllRequests<double>(
        engine_.get(), ctx(), "sum_to", {Make<double>(x, c.in)}, {{"shape", Tuple(c.to)}},
        NaiveReduce<double>(x, c.in, mask, Kind::kSum), want_shape, 1e-12, what);
    const auto xi = RandomData<int32_t>(c.in.NumElements(), 12, -9, 9);
    CheckAllRequests<int32_t>(
        engine_.get(), ctx(), "sum_to", {Make<int32_t>(xi, c.in)}, {{"shape", Tuple(c.to)}},
        NaiveReduce<int32_t>(xi, c.in, mask, Kind::kSum), want_shape, 0, what + " i32");
  }
}

template <typename T>
std::vector<T> NaiveSoftmax(const std::vector<T>& x, const Shape& s, int axis, bool log) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (int d = axis + 1; d < s.rank(); ++d) inner *= s[d];
  const int64_t n = s[axis];
  std::vector<T> out(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + j; };
      double m = -INFINITY, sum = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, static_cast<double>(x[at(k)]));
      for (int64_t k = 0; k < n; ++k) sum += std::exp(x[at(k)] - m);
      for (int64_t k = 0; k < n; ++k) {
        out[at(k)] =
            static_cast<T>(log ? x[at(k)] - m - std::log(sum) : std::exp(x[at(k)] - m) / sum);
      }
    }
  }
  return out;
}

TEST_P(ReduceTest, SoftmaxAndLogSoftmaxMatchNaiveLoopsUnderEveryRequest) {
  const Shape s{3, 4, 5};
  const auto x = RandomData<double>(s.NumElements(), 13, -30, 30);  // Wide: needs the max shift.
  std::vector<float> xf(x.begin(), x.end());
  for (int64_t axis : {0, 1, 2, -1}) {
    const int a = axis < 0 ? axis + 3 : axis;
    for (const char* op : {"softmax", "log_softmax"}) {
      const bool log = std::string(op) == "log_softmax";
      const std::string what =
          std::string(op) + " axis " + std::to_string(axis) + " on " + ctx().ToString();
      const Attrs attrs = {{"axis", std::to_string(axis)}};
      CheckAllRequests<double>(engine_.get(), ctx(), op, {Make<double>(x, s)}, attrs,
                               NaiveSoftmax<double>(x, s, a, log), s, 1e-12, what);
      CheckAllRequests<float>(engine_.get(), ctx(), op, {Make<float>(xf, s)}, attrs,
                              NaiveSoftmax<float>(xf, s, a, log), s, 1e-5, what + " f32");
    }
  }
  // Huge logits stay finite.
  auto big = Invoke("softmax", {Make<float>({1000, 1000, -1000}, {3})});
  ASSERT_TRUE(big.ok()) << big.status();
  ExpectNear(*(*big)[0].ToHost<float>(), {0.5f, 0.5f, 0.f}, 1e-6, "softmax of huge logits");
}

TEST_P(ReduceTest, SoftmaxBackwardOpsMatchNaiveLoopsUnderEveryRequest) {
  const Shape s{3, 4};
  const auto x = RandomData<double>(s.NumElements(), 14, -2, 2);
  const auto dy = RandomData<double>(s.NumElements(), 15, -1, 1);
  for (int axis : {0, 1}) {
    for (bool log : {false, true}) {
      const auto y = NaiveSoftmax<double>(x, s, axis, log);
      std::vector<double> want(y.size());
      const int64_t n = s[axis], inner = axis == 0 ? 4 : 1, outer = axis == 0 ? 1 : 3;
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < inner; ++j) {
          auto at = [&](int64_t k) { return (o * n + k) * inner + j; };
          double dot = 0;
          for (int64_t k = 0; k < n; ++k) dot += log ? dy[at(k)] : dy[at(k)] * y[at(k)];
          for (int64_t k = 0; k < n; ++k) {
            want[at(k)] = log ? dy[at(k)] - std::exp(y[at(k)]) * dot : y[at(k)] * (dy[at(k)] - dot);
          }
        }
      }
      const std::string op = log ? "_backward_log_softmax" : "_backward_softmax";
      CheckAllRequests<double>(engine_.get(), ctx(), op, {Make<double>(dy, s), Make<double>(y, s)},
                               {{"axis", std::to_string(axis)}}, want, s, 1e-12,
                               op + " axis " + std::to_string(axis) + " on " + ctx().ToString());
    }
  }
}

template <typename L>
void CheckCrossEntropy(ReduceTest* t, engine::Engine* eng, Context ctx) {
  const int64_t n = 5, c = 4;
  const auto x = RandomData<double>(n * c, 16, -3, 3);
  const std::vector<L> labels = {L(0), L(3), L(1), L(1), L(2)};
  double loss = 0;
  std::vector<double> d(n * c);
  for (int64_t i = 0; i < n; ++i) {
    double m = -INFINITY, sum = 0;
    for (int64_t k = 0; k < c; ++k) m = std::max(m, x[i * c + k]);
    for (int64_t k = 0; k < c; ++k) sum += std::exp(x[i * c + k] - m);
    loss += m + std::log(sum) - x[i * c + static_cast<int64_t>(labels[i])];
    for (int64_t k = 0; k < c; ++k) {
      d[i * c + k] =
          (std::exp(x[i * c + k] - m) / sum - (k == static_cast<int64_t>(labels[i]) ? 1 : 0)) / n;
    }
  }
  auto tx = *Tensor::FromHost<double>(x, {n, c}, ctx, eng);
  auto tl = *Tensor::FromHost<L>(labels, {n}, ctx, eng);
  const std::string what =
      std::string("labels ") + DTypeName(DTypeOf<L>()) + " on " + ctx.ToString();
  CheckAllRequests<double>(eng, ctx, "softmax_cross_entropy", {tx, tl}, {}, {loss / n}, Shape{},
                           1e-12, "softmax_cross_entropy " + what);
  CheckAllRequests<double>(eng, ctx, "_backward_softmax_cross_entropy", {tx, tl}, {}, d,
                           Shape{n, c}, 1e-12, "_backward_softmax_cross_entropy " + what);
  std::vector<float> xf(x.begin(), x.end());
  auto r = Invoke("softmax_cross_entropy", {*Tensor::FromHost<float>(xf, {n, c}, ctx, eng), tl});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(*(*r)[0].template ToHost<float>(), {static_cast<float>(loss / n)}, 1e-5,
             "f32 " + what);
}

TEST_P(ReduceTest, SoftmaxCrossEntropyMatchesNaiveLoopsForEveryLabelType) {
  CheckCrossEntropy<int32_t>(this, engine_.get(), ctx());
  CheckCrossEntropy<int64_t>(this, engine_.get(), ctx());
  CheckCrossEntropy<float>(this, engine_.get(), ctx());
  CheckCrossEntropy<double>(this, engine_.get(), ctx());
}

// The op's gradient function against central differences of
// L(x) = sum(g * f(x)) in input 0, float64.
void GradCheck(engine::Engine* eng, Context ctx, const std::string& op, const Attrs& attrs,
               const std::vector<double>& x, const Shape& s, std::vector<Tensor> rest = {}) {
  const OpDef* def = *OpRegistry::Global().Find(op);
  ASSERT_NE(def->gradient(), nullptr) << op;
  auto params = def->params().Parse(op, attrs);
  ASSERT_TRUE(params.ok()) << params.status();
  auto eval = [&](const std::vector<double>& v) {
    std::vector<Tensor> in{*Tensor::FromHost<double>(v, s, ctx, eng)};
    in.insert(in.end(), rest.begin(), rest.end());
    return (*Invoke(op, in, attrs))[0];
  };
  std::vector<Tensor> in{*Tensor::FromHost<double>(x, s, ctx, eng)};
  in.insert(in.end(), rest.begin(), rest.end());
  auto out = Invoke(op, in, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  const Shape os = (*out)[0].shape();
  const auto g = RandomData<double>(os.NumElements(), 17, -1, 1);
  std::vector<Tensor> gt{*Tensor::FromHost<double>(g, os, ctx, eng)};
  GradientContext gc{params->get(), in, *out, gt};
  auto grads = def->gradient()(gc);
  ASSERT_TRUE(grads.ok()) << op << ": " << grads.status();
  ASSERT_EQ((*grads)[0].shape(), s) << op;
  auto got = (*grads)[0].ToHost<double>();
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<double> want(x.size());
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<double> xp(x), xm(x);
    xp[i] += h;
    xm[i] -= h;
    const auto fp = *eval(xp).ToHost<double>(), fm = *eval(xm).ToHost<double>();
    double l = 0;
    for (size_t k = 0; k < g.size(); ++k) l += g[k] * (fp[k] - fm[k]);
    want[i] = l / (2 * h);
  }
  ExpectNear(*got, want, 1e-6, op + " gradient on " + ctx.ToString());
}

TEST_P(ReduceTest, GradientsMatchFiniteDifferences) {
  const Shape s{3, 4};
  const auto x = RandomData<double>(12, 18, -2, 2);
  GradCheck(engine_.get(), ctx(), "sum", {{"axes", "(1,)"}}, x, s);
  GradCheck(engine_.get(), ctx(), "sum", {{"axes", "(0,)"}, {"keepdims", "true"}}, x, s);
  GradCheck(engine_.get(), ctx(), "sum", {}, x, s);
  GradCheck(engine_.get(), ctx(), "mean", {{"axes", "(-1,)"}}, x, s);
  GradCheck(engine_.get(), ctx(), "mean", {}, x, s);
  GradCheck(engine_.get(), ctx(), "sum_to", {{"shape", "(4,)"}}, x, s);
  GradCheck(engine_.get(), ctx(), "sum_to", {{"shape", "(3, 1)"}}, x, s);
  GradCheck(engine_.get(), ctx(), "softmax", {{"axis", "0"}}, x, s);
  GradCheck(engine_.get(), ctx(), "softmax", {}, x, s);
  GradCheck(engine_.get(), ctx(), "log_softmax", {{"axis", "-1"}}, x, s);
  GradCheck(engine_.get(), ctx(), "log_softmax", {{"axis", "0"}}, x, s);
  auto labels = *Tensor::FromHost<int32_t>({2, 0, 3}, {3}, ctx(), engine_.get());
  GradCheck(engine_.get(), ctx(), "softmax_cross_entropy", {}, x, s, {labels});
}

TEST_P(ReduceTest, ProdGradientIsTheProductOfTheOthers) {
  const Shape s{3, 4};
  const auto x = RandomData<double>(12, 26, -2, 2);
  GradCheck(engine_.get(), ctx(), "prod", {{"axes", "(1,)"}}, x, s);
  GradCheck(engine_.get(), ctx(), "prod", {{"axes", "(0,)"}, {"keepdims", "true"}}, x, s);
  GradCheck(engine_.get(), ctx(), "prod", {{"axes", "(-2, -1)"}}, x, s);
  GradCheck(engine_.get(), ctx(), "prod", {}, x, s);
  // Rows with no, one and two zeros: prod is linear in each element, so
  // central differences are exact there too.
  const std::vector<double> xz = {2, -3, 4, 0.5, 0, 5, -6, 1.5, 0, 0, 7, 2};
  GradCheck(engine_.get(), ctx(), "prod", {{"axes", "(1,)"}}, xz, s);
  GradCheck(engine_.get(), ctx(), "prod", {{"axes", "(0,)"}, {"keepdims", "1"}}, xz, s);
  GradCheck(engine_.get(), ctx(), "prod", {}, xz, s);
  // Closed form, dy = 1: each element gets the product of the others in its row.
  const OpDef* def = *OpRegistry::Global().Find("prod");
  const Attrs attrs = {{"axes", "(1,)"}};
  auto params = def->params().Parse("prod", attrs);
  ASSERT_TRUE(params.ok()) << params.status();
  std::vector<Tensor> in{Make<double>(xz, s)};
  auto out = Invoke("prod", in, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear(*(*out)[0].ToHost<double>(), {-12, 0, 0}, 0, "prod of rows");
  std::vector<Tensor> dy{Make<double>({1, 1, 1}, {3})};
  auto grads = def->gradient()(GradientContext{params->get(), in, *out, dy});
  ASSERT_TRUE(grads.ok()) << grads.status();
  ExpectNear(*(*grads)[0].ToHost<double>(), {-6, 4, -3, -24, -45, 0, 0, 0, 0, 0, 0, 0}, 1e-15,
             "prod gradient with zeros on " + ctx().ToString());
}

// ONNX CumSum by the definition: y[o, k, i] sums x[o, j, i] over j <= k
// (j < k exclusive; j >= k, or j > k, reversed).
template <typename T>
std::vector<T> NaiveCumsum(const std::vector<T>& x, const Shape& s, int axis, bool exclusive,
                           bool reverse) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (int d = axis + 1; d < s.rank(); ++d) inner *= s[d];
  const int64_t n = s[axis];
  std::vector<T> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t i = 0; i < inner; ++i) {
        T acc = 0;
        for (int64_t j = 0; j < n; ++j) {
          const bool take = reverse ? (exclusive ? j > k : j >= k) : (exclusive ? j < k : j <= k);
          if (take) acc = static_cast<T>(acc + x[(o * n + j) * inner + i]);
        }
        y[(o * n + k) * inner + i] = acc;
      }
    }
  }
  return y;
}

template <typename T>
void CheckCumsum(engine::Engine* eng, Context ctx, const Shape& s, int axis, bool exclusive,
                 bool reverse) {
  const int a = axis < 0 ? axis + s.rank() : axis;
  const auto x = std::is_integral_v<T> ? RandomData<T>(s.NumElements(), 23, -50, 50)
                                       : RandomData<T>(s.NumElements(), 24, -2, 2);
  const Attrs attrs = {{"axis", std::to_string(axis)},
                       {"exclusive", exclusive ? "1" : "0"},
                       {"reverse", reverse ? "1" : "0"}};
  const std::string what =
      absl::StrCat("cumsum ", DTypeName(DTypeOf<T>()), s.ToString(), " axis ", axis, " exclusive ",
                   exclusive, " reverse ", reverse, " on ", ctx.ToString());
  CheckAllRequests<T>(eng, ctx, "cumsum", {*Tensor::FromHost<T>(x, s, ctx, eng)}, attrs,
                      NaiveCumsum(x, s, a, exclusive, reverse), s, 1e-5, what);
}

TEST_P(ReduceTest, CumsumMatchesNaiveLoopsUnderEveryRequest) {
  const struct {
    Shape s;
    int axis;
  } cases[] = {{{2, 3, 4}, 1}, {{2, 3, 4}, -1}, {{2, 3, 4}, 0}, {{7}, 0}, {{0, 3}, 1}, {{2, 0}, 1}};
  for (const auto& c : cases) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        CheckCumsum<float>(engine_.get(), ctx(), c.s, c.axis, exclusive, reverse);
        CheckCumsum<double>(engine_.get(), ctx(), c.s, c.axis, exclusive, reverse);
        CheckCumsum<int32_t>(engine_.get(), ctx(), c.s, c.axis, exclusive, reverse);
        CheckCumsum<int64_t>(engine_.get(), ctx(), c.s, c.axis, exclusive, reverse);
      }
    }
  }
  // The typed wrapper.
  auto y = ops::CumSum(Make<int64_t>({1, 2, 3, 4}, {2, 2}), -1, /*exclusive=*/true,
                       /*reverse=*/true);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y->ToHost<int64_t>(), (std::vector<int64_t>{2, 0, 4, 0}));
}

TEST_P(ReduceTest, CumsumGradientIsTheReversedCumsum) {
  const Shape s{3, 4};
  const auto x = RandomData<double>(12, 25, -2, 2);
  GradCheck(engine_.get(), ctx(), "cumsum", {{"axis", "1"}}, x, s);
  GradCheck(engine_.get(), ctx(), "cumsum", {{"axis", "0"}, {"exclusive", "1"}}, x, s);
  GradCheck(engine_.get(), ctx(), "cumsum", {{"axis", "-1"}, {"reverse", "1"}}, x, s);
  GradCheck(engine_.get(), ctx(), "cumsum", {{"axis", "0"}, {"exclusive", "1"}, {"reverse", "1"}},
            x, s);
}

TEST_P(ReduceTest, BadInputsGetClearErrors) {
  auto a = Make<float>(std::vector<float>(24, 1), {2, 3, 4});
  auto expect = [](const absl::StatusOr<std::vector<Tensor>>& r, absl::StatusCode code,
                   const std::string& text) {
    EXPECT_EQ(r.status().code(), code) << r.status();
    EXPECT_NE(r.status().message().find(text), std::string::npos)
        << "want '" << text << "' in " << r.status();
  };
  expect(Invoke("sum", {a}, {{"axes", "(5,)"}}), absl::StatusCode::kInvalidArgument, "5");
  expect(Invoke("mean", {a}, {{"axes", "(-4,)"}}), absl::StatusCode::kInvalidArgument, "-4");
  expect(Invoke("max", {a}, {{"axes", "(1, -2)"}}), absl::StatusCode::kInvalidArgument,
         "axis -2 is given twice");
  expect(Invoke("sum", {a}, {{"axes", "(x)"}}), absl::StatusCode::kInvalidArgument, "int tuple");
  // Through Invoke: a tuple with an empty element, an attribute given twice.
  expect(
      Invoke("sum", {a}, {{"axes", "(0,,1)"}}), absl::StatusCode::kInvalidArgument,
      "attribute 'axes' expects int tuple: '(0,,1)' is not a valid int tuple: element 2 is empty");
  expect(Invoke("sum", {a}, {{"axes", "(0,)"}, {"axes", "(1,)"}}),
         absl::StatusCode::kInvalidArgument, "'axes' is given twice: '(0,)' and '(1,)'");
  expect(Invoke("sum", {a}, {{"axis", "1"}}), absl::StatusCode::kInvalidArgument, "'axis'");
  expect(Invoke("argmax", {a}, {{"axis", "3"}}), absl::StatusCode::kInvalidArgument, "3");
  expect(Invoke("softmax", {a}, {{"axis", "-7"}}), absl::StatusCode::kInvalidArgument, "-7");
  expect(Invoke("sum_to", {a}, {{"shape", "(2, 4)"}}), absl::StatusCode::kInvalidArgument,
         "(2, 4)");
  expect(Invoke("sum_to", {a}, {{"shape", "(1, 1, 1, 4)"}}), absl::StatusCode::kInvalidArgument,
         "(1, 1, 1, 4)");
  expect(Invoke("sum_to", {a}, {{"shape", "(-1, 4)"}}), absl::StatusCode::kInvalidArgument, "-1");
  expect(Invoke("sum_to", {a}), absl::StatusCode::kInvalidArgument, "'shape'");
  auto u8 = Make<uint8_t>({1, 2}, {2});
  expect(Invoke("sum", {u8}), absl::StatusCode::kInvalidArgument, "uint8");
  expect(Invoke("prod", {u8}), absl::StatusCode::kInvalidArgument, "uint8");
  expect(Invoke("prod", {a}, {{"axes", "(0, 3)"}}), absl::StatusCode::kInvalidArgument, "3");
  auto i32 = Make<int32_t>({1, 2}, {2});
  expect(Invoke("mean", {i32}), absl::StatusCode::kInvalidArgument, "int32");
  expect(Invoke("softmax", {i32}), absl::StatusCode::kInvalidArgument, "int32");
  // cumsum: axis, flags, types.
  expect(Invoke("cumsum", {a}), absl::StatusCode::kInvalidArgument, "needs attribute 'axis'");
  expect(Invoke("cumsum", {a}, {{"axis", "3"}}), absl::StatusCode::kInvalidArgument,
         "axis 3 is out of range for rank 3");
  expect(Invoke("cumsum", {Make<float>({1}, Shape{})}, {{"axis", "0"}}),
         absl::StatusCode::kInvalidArgument, "of a scalar");
  expect(Invoke("cumsum", {a}, {{"axis", "0"}, {"exclusive", "2"}}),
         absl::StatusCode::kInvalidArgument, "0 or 1, got 2");
  expect(Invoke("cumsum", {u8}, {{"axis", "0"}}), absl::StatusCode::kInvalidArgument, "uint8");
  // Cross-entropy: shapes, types, labels out of range.
  auto logits = Make<float>(std::vector<float>(6, 0.5f), {2, 3});
  expect(Invoke("softmax_cross_entropy", {logits, Make<int32_t>({0, 1, 2}, {3})}),
         absl::StatusCode::kInvalidArgument, "[3]");
  expect(Invoke("softmax_cross_entropy", {a, Make<int32_t>({0, 1}, {2})}),
         absl::StatusCode::kInvalidArgument, "[2, 3, 4]");
  expect(Invoke("softmax_cross_entropy", {i32, i32}), absl::StatusCode::kInvalidArgument, "int32");
  // Every platform checks every label and fails with the same error (device
  // kernels used to return NaN); the output carries it. Out of range,
  // negative, fractional, NaN and huge labels.
  const struct {
    Tensor labels;
    const char* want;
  } bad[] = {
      {Make<int32_t>({0, 7}, {2}), "label 7 of row 1 is not a class index in [0, 3)"},
      {Make<int64_t>({-1, 0}, {2}), "label -1 of row 0 is not a class index in [0, 3)"},
      {Make<int64_t>({0, 1, std::numeric_limits<int64_t>::min()}, {3}), "of row 2"},
      {Make<float>({0.5f, 1}, {2}), "label 0.5 of row 0"},
      {Make<float>({1, std::nanf("")}, {2}), "label nan of row 1"},
      {Make<double>({1e300, 1}, {2}), "label 1e+300 of row 0"},
  };
  for (const auto& b : bad) {
    const Tensor x =
        b.labels.shape()[0] == 3 ? Make<float>(std::vector<float>(9, 0.5f), {3, 3}) : logits;
    for (const char* op : {"softmax_cross_entropy", "_backward_softmax_cross_entropy"}) {
      auto r = Invoke(op, {x, b.labels});
      ASSERT_TRUE(r.ok()) << op << ": " << r.status();
      absl::Status s = (*r)[0].WaitToRead();
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << op << ": " << s;
      EXPECT_NE(s.message().find(b.want), std::string::npos)
          << op << " on " << ctx().ToString() << ": want '" << b.want << "' in " << s;
    }
  }
  // Good labels still pass after a failure.
  auto r = Invoke("softmax_cross_entropy", {logits, Make<int32_t>({2, 0}, {2})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)[0].WaitToRead().ok());
}

INSTANTIATE_TEST_SUITE_P(AllContexts, ReduceTest, ::testing::ValuesIn(testing::OpSuiteContexts()),
                         testing::ContextName);

}  // namespace
}  // namespace rill::ops
