// The nn ops on every context present and every write request, against
// naive host loops written here; their gradients against central finite
// differences; bad inputs get errors naming the values.

#include <cmath>
#include <functional>
#include <limits>
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

template <typename T>
using Vecs = std::vector<std::vector<T>>;

class NnTest : public testing::OpTest {
 protected:
  template <typename T>
  std::vector<Tensor> Make(const Vecs<T>& data, const std::vector<Shape>& shapes) {
    std::vector<Tensor> out;
    for (size_t i = 0; i < data.size(); ++i)
      out.push_back(*Tensor::FromHost<T>(data[i], shapes[i], ctx(), engine_.get()));
    return out;
  }

  // Runs `op` under kWriteTo, kAddTo, kNullOp (and kWriteInplace over input
  // `inplace` when >= 0), checking every output against `want`.
  template <typename T>
  void CheckRequests(const std::string& op, const Attrs& attrs, const Vecs<T>& in,
                     const std::vector<Shape>& shapes, const Vecs<T>& want, double tol,
                     int inplace = -1) {
    const std::string what = op + " on " + ctx().ToString();
    auto inputs = Make<T>(in, shapes);
    auto r = Invoke(op, inputs, attrs);
    ASSERT_TRUE(r.ok()) << what << ": " << r.status();
    ASSERT_EQ(r->size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ExpectNear(*(*r)[i].template ToHost<T>(), want[i], tol,
                 what + " write, output " + std::to_string(i));
    }
    // kAddTo over random contents, then kNullOp leaves them alone.
    std::vector<Tensor> outs;
    Vecs<T> sums;
    for (size_t i = 0; i < want.size(); ++i) {
      const auto base = RandomData<T>(want[i].size(), 50 + i, -2, 2);
      outs.push_back(*Tensor::FromHost<T>(base, (*r)[i].shape(), ctx(), engine_.get()));
      sums.emplace_back(base.size());
      for (size_t j = 0; j < base.size(); ++j) sums[i][j] = base[j] + want[i][j];
    }
    InvokeOptions add;
    add.reqs.assign(want.size(), OpReqType::kAddTo);
    auto ra = Invoke(op, inputs, attrs, outs, add);
    ASSERT_TRUE(ra.ok()) << what << ": " << ra.status();
    for (size_t i = 0; i < want.size(); ++i) {
      ExpectNear(*outs[i].template ToHost<T>(), sums[i], tol,
                 what + " add, output " + std::to_string(i));
    }
    InvokeOptions null;
    null.reqs.assign(want.size(), OpReqType::kNullOp);
    ASSERT_TRUE(Invoke(op, inputs, attrs, outs, null).ok());
    for (size_t i = 0; i < want.size(); ++i) {
      ExpectNear(*outs[i].template ToHost<T>(), sums[i], tol,
                 what + " null, output " + std::to_string(i));
    }
    if (want.size() > 1) {  // Mixed requests: add, null, write, add, ...
      std::vector<Tensor> mixed;
      Vecs<T> expect;
      InvokeOptions opts;
      for (size_t i = 0; i < want.size(); ++i) {
        const auto base = RandomData<T>(want[i].size(), 90 + i, -2, 2);
        mixed.push_back(*Tensor::FromHost<T>(base, (*r)[i].shape(), ctx(), engine_.get()));
        const OpReqType req = i % 3 == 0   ? OpReqType::kAddTo
                              : i % 3 == 1 ? OpReqType::kNullOp
                                           : OpReqType::kWriteTo;
        opts.reqs.push_back(req);
        expect.push_back(base);
        for (size_t j = 0; j < base.size(); ++j) {
          if (req == OpReqType::kAddTo) expect[i][j] += want[i][j];
          if (req == OpReqType::kWriteTo) expect[i][j] = want[i][j];
        }
      }
      ASSERT_TRUE(Invoke(op, inputs, attrs, mixed, opts).ok());
      for (size_t i = 0; i < want.size(); ++i) {
        ExpectNear(*mixed[i].template ToHost<T>(), expect[i], tol,
                   what + " mixed, output " + std::to_string(i));
      }
    }
    if (inplace >= 0) {
      auto copies = Make<T>(in, shapes);
      InvokeOptions ip;
      ip.reqs = {OpReqType::kWriteInplace};
      auto ri = Invoke(op, copies, attrs, {copies[inplace]}, ip);
      ASSERT_TRUE(ri.ok()) << what << ": " << ri.status();
      ExpectNear(*copies[inplace].template ToHost<T>(), want[0], tol, what + " inplace");
    }
  }

  // The op's gradient (its GradientFn, through the backward ops) against
  // central differences of L = sum_j w_j y_j over output 0, for every
  // element of the inputs in `check`.
  template <typename T>
  void CheckGradient(const std::string& op, const Attrs& attrs, const Vecs<T>& in,
                     const std::vector<Shape>& shapes, double h, double tol,
                     std::vector<int> check) {
    const std::string what = op + " gradient on " + ctx().ToString();
    const OpDef* def = *OpRegistry::Global().Find(op);
    auto params = def->params().Parse(op, attrs);
    ASSERT_TRUE(params.ok()) << params.status();
    auto inputs = Make<T>(in, shapes);
    auto outs = Invoke(op, inputs, attrs);
    ASSERT_TRUE(outs.ok()) << what << ": " << outs.status();
    const auto w = RandomData<double>((*outs)[0].NumElements(), 77, -1, 1);
    std::vector<T> wt(w.begin(), w.end());
    std::vector<Tensor> out_grads((*outs).size());
    out_grads[0] = *Tensor::FromHost<T>(wt, (*outs)[0].shape(), ctx(), engine_.get());
    GradientContext gc{params->get(), inputs, *outs, out_grads};
    auto grads = def->gradient()(gc);
    ASSERT_TRUE(grads.ok()) << what << ": " << grads.status();
    auto loss = [&](const Vecs<T>& v) {
      auto r = Invoke(op, Make<T>(v, shapes), attrs);
      EXPECT_TRUE(r.ok()) << r.status();
      const auto y = *(*r)[0].template ToHost<T>();
      double l = 0;
      for (size_t j = 0; j < y.size(); ++j) l += static_cast<double>(wt[j]) * y[j];
      return l;
    };
    for (int i : check) {
      ASSERT_TRUE((*grads)[i].defined()) << what << " input " << i;
      auto got = (*grads)[i].template ToHost<T>();
      ASSERT_TRUE(got.ok()) << what << ": " << got.status();
      ASSERT_EQ(got->size(), in[i].size());
      for (size_t j = 0; j < in[i].size(); ++j) {
        Vecs<T> p = in, m = in;
        p[i][j] += static_cast<T>(h);
        m[i][j] -= static_cast<T>(h);
        const double num = (loss(p) - loss(m)) / (static_cast<double>(p[i][j]) - m[i][j]);
        ASSERT_LE(std::abs((*got)[j] - num), tol * (1 + std::abs(num)))
            << what << ", input " << i << " element " << j << ": got " << (*got)[j]
            << ", finite difference " << num;
      }
    }
  }
};

// --- Naive references.

template <typename T>
std::vector<T> NaiveMatmul(const std::vector<T>& a, const std::vector<T>& b, int64_t batch,
                           int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  std::vector<T> c(batch * m * n);
  for (int64_t q = 0; q < batch; ++q)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l) {
          const double av = ta ? a[q * m * k + l * m + i] : a[q * m * k + i * k + l];
          const double bv = tb ? b[q * k * n + j * k + l] : b[q * k * n + l * n + j];
          s += av * bv;
        }
        c[q * m * n + i * n + j] = static_cast<T>(s);
      }
  return c;
}

struct Conv {
  int64_t n, c, h, w, k, kh, kw, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, g = 1;
  int64_t oh() const { return (h + 2 * ph - ((kh - 1) * dh + 1)) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - ((kw - 1) * dw + 1)) / sw + 1; }
  Shape x() const { return {n, c, h, w}; }
  Shape wt() const { return {k, c / g, kh, kw}; }
  Shape y() const { return {n, k, oh(), ow()}; }
  Attrs attrs() const {
    return {{"stride", "(" + std::to_string(sh) + "," + std::to_string(sw) + ")"},
            {"pad", "(" + std::to_string(ph) + "," + std::to_string(pw) + ")"},
            {"dilation", "(" + std::to_string(dh) + "," + std::to_string(dw) + ")"},
            {"num_group", std::to_string(g)}};
  }
  // Visits every (x index, w index, y index) product of the convolution.
  void ForEach(const std::function<void(int64_t, int64_t, int64_t)>& f) const {
    const int64_t cpg = c / g, kpg = k / g;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < k; ++o)
        for (int64_t oy = 0; oy < oh(); ++oy)
          for (int64_t ox = 0; ox < ow(); ++ox)
            for (int64_t ci = 0; ci < cpg; ++ci)
              for (int64_t ky = 0; ky < kh; ++ky)
                for (int64_t kx = 0; kx < kw; ++kx) {
                  const int64_t iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  const int64_t xc = (o / kpg) * cpg + ci;
                  f(((b * c + xc) * h + iy) * w + ix, ((o * cpg + ci) * kh + ky) * kw + kx,
                    ((b * k + o) * oh() + oy) * ow() + ox);
                }
  }
};

struct Pool {
  int64_t n, c, h, w, kh, kw, sh, sw, ph = 0, pw = 0;
  bool max = true;
  int64_t oh() const { return (h + 2 * ph - kh) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - kw) / sw + 1; }
  Attrs attrs() const {
    return {{"kernel", "(" + std::to_string(kh) + "," + std::to_string(kw) + ")"},
            {"stride", "(" + std::to_string(sh) + "," + std::to_string(sw) + ")"},
            {"pad", "(" + std::to_string(ph) + "," + std::to_string(pw) + ")"},
            {"pool_type", max ? "max" : "avg"}};
  }
  // y = pool(x); dx from dy when dy is given.
  void Run(const std::vector<float>& x, std::vector<float>* y, const std::vector<float>* dy,
           std::vector<float>* dx) const {
    y->assign(n * c * oh() * ow(), 0);
    if (dx) dx->assign(x.size(), 0);
    for (int64_t nc = 0; nc < n * c; ++nc)
      for (int64_t oy = 0; oy < oh(); ++oy)
        for (int64_t ox = 0; ox < ow(); ++ox) {
          const int64_t yi = (nc * oh() + oy) * ow() + ox;
          int64_t best = -1;
          double s = 0;
          for (int64_t yy = oy * sh - ph; yy < oy * sh - ph + kh; ++yy)
            for (int64_t xx = ox * sw - pw; xx < ox * sw - pw + kw; ++xx) {
              if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
              const int64_t xi = (nc * h + yy) * w + xx;
              if (best < 0 || x[xi] > x[best]) best = xi;
              s += x[xi];
              if (!max && dx) (*dx)[xi] += (*dy)[yi] / (kh * kw);
            }
          (*y)[yi] = max ? x[best] : static_cast<float>(s / (kh * kw));
          if (max && dx) (*dx)[best] += (*dy)[yi];
        }
  }
};

// --- matmul.

TEST_P(NnTest, MatmulMatchesNaiveLoopsUnderEveryRequest) {
  struct Case {
    std::vector<int64_t> batch;
    int64_t m, n, k;
    bool ta, tb;
  };
  const Case cases[] = {{{}, 3, 4, 5, false, false},  {{}, 3, 4, 5, true, false},
                        {{}, 3, 4, 5, false, true},   {{}, 2, 7, 3, true, true},
                        {{2}, 3, 4, 5, false, false}, {{2, 3}, 2, 3, 4, true, true},
                        {{}, 1, 1, 1, false, false}};
  for (const Case& c : cases) {
    int64_t batch = 1;
    Shape sa(absl::MakeConstSpan(c.batch)), sb(absl::MakeConstSpan(c.batch));
    for (int64_t b : c.batch) batch *= b;
    sa.mutable_dims().push_back(c.ta ? c.k : c.m);
    sa.mutable_dims().push_back(c.ta ? c.m : c.k);
    sb.mutable_dims().push_back(c.tb ? c.n : c.k);
    sb.mutable_dims().push_back(c.tb ? c.k : c.n);
    const Attrs attrs{{"transpose_a", c.ta ? "true" : "false"},
                      {"transpose_b", c.tb ? "true" : "false"}};
    const auto a = RandomData<double>(sa.NumElements(), 1),
               b = RandomData<double>(sb.NumElements(), 2);
    CheckRequests<double>("matmul", attrs, {a, b}, {sa, sb},
                          {NaiveMatmul(a, b, batch, c.m, c.n, c.k, c.ta, c.tb)}, 1e-12);
    const std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
    CheckRequests<float>("matmul", attrs, {af, bf}, {sa, sb},
                         {NaiveMatmul(af, bf, batch, c.m, c.n, c.k, c.ta, c.tb)}, 1e-5);
  }
}

TEST_P(NnTest, MatmulWithEmptyInnerDimensionIsZero) {
  auto r = Invoke("matmul", Make<float>({{}, {}}, {{3, 0}, {0, 2}}));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(*(*r)[0].ToHost<float>(), std::vector<float>(6, 0.f), 0, "matmul k=0");
}

TEST_P(NnTest, MatmulGradientMatchesFiniteDifferences) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Shape sa = ta ? Shape{2, 4, 3} : Shape{2, 3, 4},
                  sb = tb ? Shape{2, 5, 4} : Shape{2, 4, 5};
      CheckGradient<double>(
          "matmul", {{"transpose_a", ta ? "1" : "0"}, {"transpose_b", tb ? "1" : "0"}},
          {RandomData<double>(24, 3), RandomData<double>(40, 4)}, {sa, sb}, 1e-6, 1e-6, {0, 1});
    }
  }
}

// --- fully_connected.

TEST_P(NnTest, FullyConnectedMatchesNaiveLoopsUnderEveryRequest) {
  for (int64_t n : {1, 5, 1500}) {  // 1500 rows: the ones vector is doubled on the device.
    const int64_t k = 3, h = 4;
    const auto x = RandomData<double>(n * k, 5), w = RandomData<double>(h * k, 6),
               b = RandomData<double>(h, 7);
    std::vector<double> want(n * h), want_nb(n * h);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < h; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l) s += x[i * k + l] * w[j * k + l];
        want_nb[i * h + j] = s;
        want[i * h + j] = s + b[j];
      }
    CheckRequests<double>("fully_connected", {}, {x, w, b}, {{n, k}, {h, k}, {h}}, {want}, 1e-12);
    CheckRequests<double>("fully_connected", {{"no_bias", "true"}}, {x, w}, {{n, k}, {h, k}},
                          {want_nb}, 1e-12);
    const std::vector<float> xf(x.begin(), x.end()), wf(w.begin(), w.end()), bf(b.begin(), b.end());
    CheckRequests<float>("fully_connected", {{"num_hidden", "4"}}, {xf, wf, bf},
                         {{n, k}, {h, k}, {h}}, {std::vector<float>(want.begin(), want.end())},
                         1e-5);
  }
}

TEST_P(NnTest, FullyConnectedGradientMatchesFiniteDifferences) {
  CheckGradient<double>(
      "fully_connected", {},
      {RandomData<double>(15, 8), RandomData<double>(12, 9), RandomData<double>(4, 10)},
      {{5, 3}, {4, 3}, {4}}, 1e-6, 1e-6, {0, 1, 2});
  CheckGradient<double>("fully_connected", {{"no_bias", "true"}},
                        {RandomData<double>(6, 8), RandomData<double>(6, 9)}, {{2, 3}, {2, 3}},
                        1e-6, 1e-6, {0, 1});
}

// --- conv2d.

const Conv kConvs[] = {
    {.n = 2, .c = 3, .h = 5, .w = 6, .k = 4, .kh = 3, .kw = 3},
    {.n = 1,
     .c = 4,
     .h = 7,
     .w = 6,
     .k = 6,
     .kh = 3,
     .kw = 2,
     .sh = 2,
     .sw = 1,
     .ph = 1,
     .pw = 1,
     .g = 2},
    {.n = 2,
     .c = 2,
     .h = 6,
     .w = 6,
     .k = 2,
     .kh = 2,
     .kw = 2,
     .sh = 1,
     .sw = 2,
     .ph = 0,
     .pw = 1,
     .dh = 2,
     .dw = 2},
};

TEST_P(NnTest, Conv2dAndBackwardMatchNaiveLoopsUnderEveryRequest) {
  for (const Conv& c : kConvs) {
    const auto x = RandomData<float>(c.x().NumElements(), 11),
               w = RandomData<float>(c.wt().NumElements(), 12);
    const auto dy = RandomData<float>(c.y().NumElements(), 13);
    std::vector<double> y(c.y().NumElements()), dx(x.size()), dw(w.size());
    c.ForEach([&](int64_t xi, int64_t wi, int64_t yi) {
      y[yi] += double(x[xi]) * w[wi];
      dx[xi] += double(dy[yi]) * w[wi];
      dw[wi] += double(dy[yi]) * x[xi];
    });
    auto f = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
    CheckRequests<float>("conv2d", c.attrs(), {x, w}, {c.x(), c.wt()}, {f(y)}, 1e-5);
    CheckRequests<float>("_backward_conv2d_data", c.attrs(), {dy, x, w}, {c.y(), c.x(), c.wt()},
                         {f(dx)}, 1e-5);
    CheckRequests<float>("_backward_conv2d_filter", c.attrs(), {dy, x, w}, {c.y(), c.x(), c.wt()},
                         {f(dw)}, 1e-5);
  }
}

TEST_P(NnTest, Conv2dGradientMatchesFiniteDifferences) {
  const Conv c{
      .n = 1, .c = 2, .h = 4, .w = 4, .k = 2, .kh = 3, .kw = 3, .sh = 2, .sw = 1, .ph = 1, .pw = 1};
  CheckGradient<float>("conv2d", c.attrs(), {RandomData<float>(32, 14), RandomData<float>(36, 15)},
                       {c.x(), c.wt()}, 1e-2, 2e-3, {0, 1});
}

// --- pooling.

TEST_P(NnTest, PoolingAndBackwardMatchNaiveLoopsUnderEveryRequest) {
  const Pool pools[] = {
      {.n = 2, .c = 3, .h = 6, .w = 5, .kh = 2, .kw = 2, .sh = 2, .sw = 2},
      {.n = 1, .c = 2, .h = 5, .w = 5, .kh = 3, .kw = 3, .sh = 2, .sw = 1, .ph = 1, .pw = 1},
      {.n = 2, .c = 2, .h = 6, .w = 5, .kh = 2, .kw = 3, .sh = 2, .sw = 2, .max = false},
      {.n = 1,
       .c = 3,
       .h = 5,
       .w = 5,
       .kh = 3,
       .kw = 3,
       .sh = 2,
       .sw = 2,
       .ph = 1,
       .pw = 1,
       .max = false}};
  for (const Pool& p : pools) {
    const Shape sx{p.n, p.c, p.h, p.w}, sy{p.n, p.c, p.oh(), p.ow()};
    const auto x = RandomData<float>(sx.NumElements(), 16);
    const auto dy = RandomData<float>(sy.NumElements(), 17);
    std::vector<float> y, dx;
    p.Run(x, &y, &dy, &dx);
    CheckRequests<float>("pooling", p.attrs(), {x}, {sx}, {y}, 1e-5);
    CheckRequests<float>("_backward_pooling", p.attrs(), {dy, x, y}, {sy, sx, sy}, {dx}, 1e-5);
  }
}

TEST_P(NnTest, PoolingGradientMatchesFiniteDifferences) {
  for (bool max : {true, false}) {
    const Pool p{.n = 1,
                 .c = 2,
                 .h = 5,
                 .w = 4,
                 .kh = 2,
                 .kw = 2,
                 .sh = 2,
                 .sw = 1,
                 .ph = 1,
                 .pw = 0,
                 .max = max};
    CheckGradient<float>("pooling", p.attrs(), {RandomData<float>(40, 18)}, {{1, 2, 5, 4}}, 1e-3,
                         5e-3, {0});
  }
}

// --- batch_norm.

TEST_P(NnTest, BatchNormAndBackwardMatchNaiveLoopsUnderEveryRequest) {
  for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{6, 4}}) {
    const int64_t n = s[0], c = s[1], hw = s.NumElements() / (n * c), m = n * hw;
    const double eps = 1e-3;
    const auto x = RandomData<float>(s.NumElements(), 19, -2, 3),
               gamma = RandomData<float>(c, 20, 0.5, 2), beta = RandomData<float>(c, 21),
               dy = RandomData<float>(s.NumElements(), 22);
    std::vector<float> y(x.size()), mean(c), inv(c), dx(x.size()), dg(c), db(c);
    for (int64_t ch = 0; ch < c; ++ch) {
      double sum = 0, var = 0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t j = 0; j < hw; ++j) sum += x[(b * c + ch) * hw + j];
      const double mu = sum / m;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t j = 0; j < hw; ++j) var += std::pow(x[(b * c + ch) * hw + j] - mu, 2);
      const double is = 1 / std::sqrt(var / m + eps);
      mean[ch] = mu;
      inv[ch] = is;
      double sg = 0, sb = 0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t j = 0; j < hw; ++j) {
          const int64_t i = (b * c + ch) * hw + j;
          y[i] = gamma[ch] * (x[i] - mu) * is + beta[ch];
          sb += dy[i];
          sg += dy[i] * (x[i] - mu) * is;
        }
      dg[ch] = sg;
      db[ch] = sb;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t j = 0; j < hw; ++j) {
          const int64_t i = (b * c + ch) * hw + j;
          dx[i] = gamma[ch] * is * (dy[i] - sb / m - (x[i] - mu) * is * sg / m);
        }
    }
    const Attrs attrs{{"eps", "0.001"}};
    CheckRequests<float>("batch_norm", attrs, {x, gamma, beta}, {s, {c}, {c}}, {y, mean, inv},
                         1e-4);
    CheckRequests<float>("_backward_batch_norm", attrs, {dy, x, gamma, mean, inv},
                         {s, s, {c}, {c}, {c}}, {dx, dg, db}, 1e-4);
  }
}

TEST_P(NnTest, BatchNormGradientMatchesFiniteDifferences) {
  CheckGradient<float>("batch_norm", {},
                       {RandomData<float>(24, 23, -2, 2), RandomData<float>(3, 24, 0.5, 2),
                        RandomData<float>(3, 25)},
                       {{2, 3, 2, 2}, {3}, {3}}, 1e-2, 1e-2, {0, 1, 2});
}

// --- activation.

std::vector<float> AwayFromZero(std::vector<float> v) {
  for (float& x : v) x = x < 0 ? x - 0.1f : x + 0.1f;
  return v;
}

TEST_P(NnTest, ActivationAndBackwardMatchNaiveLoopsUnderEveryRequest) {
  const auto x = AwayFromZero(RandomData<float>(60, 26, -3, 3));
  const auto dy = RandomData<float>(60, 27);
  for (const std::string act : {"relu", "sigmoid", "tanh"}) {
    std::vector<float> y(60), dx(60);
    for (int i = 0; i < 60; ++i) {
      if (act == "relu") {
        y[i] = x[i] > 0 ? x[i] : 0;
        dx[i] = x[i] > 0 ? dy[i] : 0;
      } else if (act == "sigmoid") {
        y[i] = 1 / (1 + std::exp(-x[i]));
        dx[i] = dy[i] * y[i] * (1 - y[i]);
      } else {
        y[i] = std::tanh(x[i]);
        dx[i] = dy[i] * (1 - y[i] * y[i]);
      }
    }
    const Attrs attrs{{"act_type", act}};
    CheckRequests<float>("activation", attrs, {x}, {{3, 4, 5}}, {y}, 1e-5, /*inplace=*/0);
    CheckRequests<float>("_backward_activation", attrs, {dy, x, y}, {{60}, {60}, {60}}, {dx}, 1e-5);
    CheckGradient<float>("activation", attrs, {std::vector<float>(x.begin(), x.begin() + 12)},
                         {{12}}, 1e-2, 1e-2, {0});
  }
}

// --- Bad inputs.

TEST_P(NnTest, BadInputsGetErrorsNamingTheValues) {
  auto expect = [](const absl::StatusOr<std::vector<Tensor>>& r, const std::string& needle) {
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status();
  };
  auto a = Make<float>({RandomData<float>(6, 1)}, {{2, 3}})[0];
  auto b = Make<float>({RandomData<float>(8, 1)}, {{4, 2}})[0];
  expect(Invoke("matmul", {a, b}), "inner dimensions differ");
  expect(Invoke("matmul", {a, b}), "[4, 2]");
  expect(Invoke("matmul", {a, b}, {{"transpose_a", "maybe"}}), "bool");
  auto a3 = Make<float>({RandomData<float>(12, 1)}, {{2, 2, 3}})[0];
  auto b3 = Make<float>({RandomData<float>(18, 1)}, {{3, 3, 2}})[0];
  expect(Invoke("matmul", {a3, b3}), "batch dimensions differ");
  auto bias = Make<float>({RandomData<float>(3, 1)}, {{3}})[0];
  auto w = Make<float>({RandomData<float>(12, 1)}, {{4, 3}})[0];
  expect(Invoke("fully_connected", {a, w, bias}), "bias must be [4], got [3]");
  expect(Invoke("fully_connected", {a, w}), "takes 3 inputs");
  expect(Invoke("fully_connected", {a, w, bias}, {{"num_hidden", "5"}}), "num_hidden 5");
  auto x = Make<float>({RandomData<float>(2 * 3 * 5 * 5, 1)}, {{2, 3, 5, 5}})[0];
  auto k = Make<float>({RandomData<float>(4 * 2 * 3 * 3, 1)}, {{4, 2, 3, 3}})[0];
  expect(Invoke("conv2d", {x, k}), "3 channels");
  auto k3 = Make<float>({RandomData<float>(4 * 3 * 3 * 3, 1)}, {{4, 3, 3, 3}})[0];
  expect(Invoke("conv2d", {x, k3}, {{"stride", "(1, 2, 3)"}}), "stride must hold 1 or 2 values");
  expect(Invoke("conv2d", {x, k3}, {{"stride", "0"}}), "stride must be >= 1");
  expect(Invoke("conv2d", {x, k3}, {{"num_group", "2"}}), "num_group 2");
  expect(Invoke("conv2d", {a, k3}), "rank 4");
  auto big = Make<float>({RandomData<float>(4 * 3 * 7 * 7, 1)}, {{4, 3, 7, 7}})[0];
  expect(Invoke("conv2d", {x, big}), "conv2d");
  expect(Invoke("pooling", {x}, {{"kernel", "2"}, {"pool_type", "sum"}}), "'sum'");
  expect(Invoke("pooling", {x}, {{"kernel", "2"}, {"pad", "2"}}), "smaller than the kernel");
  expect(Invoke("pooling", {x}), "kernel");
  expect(Invoke("pooling", {x}, {{"kernel", "9"}}), "larger than the padded data");
  expect(Invoke("activation", {x}, {{"act_type", "gelu"}}), "'gelu'");
  expect(Invoke("activation", {x}), "act_type");
  auto g4 = Make<float>({RandomData<float>(4, 1)}, {{4}})[0];
  expect(Invoke("batch_norm", {x, g4, g4}), "gamma must be [3], got [4]");
  auto d = Make<double>({RandomData<double>(6, 1)}, {{2, 3}})[0];
  expect(Invoke("activation", {d}, {{"act_type", "relu"}}), "float64");
}

// Geometry from attributes near INT64_MAX: pooling's padded extent and
// conv2d's channel count used to overflow signed arithmetic (UBSan).
TEST_P(NnTest, GeometryThatOverflowsIsRefusedNamingTheAttribute) {
  auto expect = [](const absl::StatusOr<std::vector<Tensor>>& r,
                   std::initializer_list<std::string> needles) {
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    for (const std::string& n : needles)
      EXPECT_NE(r.status().message().find(n), std::string::npos)
          << "want '" << n << "' in " << r.status();
  };
  auto x = Make<float>({RandomData<float>(2 * 3 * 5 * 5, 1)}, {{2, 3, 5, 5}})[0];
  const std::string max = std::to_string(std::numeric_limits<int64_t>::max());
  const std::string max1 = std::to_string(std::numeric_limits<int64_t>::max() - 1);
  expect(Invoke("pooling", {x}, {{"kernel", max}, {"pad", max1}}),
         {"pooling pad (" + max1 + ")", "padded height", "overflows a 64-bit size"});
  expect(Invoke("pooling", {x}, {{"kernel", "(2, " + max + ")"}, {"pad", "(1, " + max1 + ")"}}),
         {"pooling pad (1, " + max1 + ")", "padded width", "overflows"});
  auto k = Make<float>({RandomData<float>(4 * 3 * 3 * 3, 1)}, {{4, 3, 3, 3}})[0];
  const std::string big_group = std::to_string(int64_t{1} << 62);
  expect(Invoke("conv2d", {x, k}, {{"num_group", big_group}}),
         {"num_group " + big_group, "overflows a 64-bit size"});
}

// A pad of nearly the window makes a window far larger than the data valid;
// its area (2^80 here) used to overflow the average's divisor.
TEST_P(NnTest, AWindowFarLargerThanTheDataAverages) {
  auto x = Make<float>({{3.f}}, {{1, 1, 1, 1}})[0];
  const std::string k = std::to_string(int64_t{1} << 40),
                    p = std::to_string((int64_t{1} << 40) - 1),
                    s = std::to_string(int64_t{1} << 62);
  for (const char* include : {"1", "0"}) {
    auto r = Invoke("pooling", {x},
                    {{"kernel", k},
                     {"pad", p},
                     {"stride", s},
                     {"pool_type", "avg"},
                     {"count_include_pad", include}});
    const absl::Status status = r.ok() ? (*r)[0].WaitToRead() : r.status();
    if (ctx().ToString().rfind("cuda", 0) == 0 && !status.ok()) {
      // cuDNN takes 32-bit windows: refused, not overflowed.
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      continue;
    }
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_EQ((*r)[0].shape(), Shape({1, 1, 1, 1}));
    const float want = include[0] == '1' ? 3.f * std::ldexp(1.f, -80) : 3.f;
    const float got = (*(*r)[0].ToHost<float>())[0];
    EXPECT_NEAR(got, want, 1e-6 * want) << "count_include_pad=" << include;
  }
}

INSTANTIATE_TEST_SUITE_P(AllContexts, NnTest, ::testing::ValuesIn(testing::OpSuiteContexts()),
                         testing::ContextName);

}  // namespace
}  // namespace rill::ops
