// The cudnn plugin's non-convolution operations against formulas computed
// here in double, NCHW and NHWC, on CUDA device 0 (skipped without one):
// bias add, activations forward/backward, pooling forward/backward,
// softmax and log-softmax forward/backward, batch normalization (inference,
// training with running statistics, backward), LRN; and double tensors.
//
// Tolerances (|got - ref| <= abs + rel |ref|), float results, as for the
// oneDNN plugin (plugins/dnn/onednn/onednn_dnn_test.cc):
//  - bias add, relu, clipped relu, max pooling: one rounding (1e-7);
//  - transcendental activations, softmax, LRN, average pooling: abs 2e-6,
//    rel 2e-5 (GPU exp/tanh/pow are a few ulp off); log-softmax abs 2e-5;
//  - batch norm: abs 1e-4, rel 1e-4 (statistics summed over n h w floats).
// Double results: abs and rel 1e-12.

#include <algorithm>
#include <cmath>
#include <vector>

#include "rill/plugins/dnn/cudnn/cudnn_test_util.h"

namespace rill {
namespace {

using testing::AllNear;
using testing::ChannelStats;
using testing::ForEach;
using testing::IsOk;
using testing::Must;
using testing::PoolReference;
using testing::RandomFloats;

constexpr DataLayout kLayouts[] = {DataLayout::kNCHW, DataLayout::kNHWC};

TensorDescriptor Tensor(DataLayout layout, int64_t n = 2, int64_t c = 5, int64_t h = 6,
                        int64_t w = 7) {
  return {.n = n, .c = c, .h = h, .w = w, .layout = layout};
}

using CudnnOpsTest = testing::CudnnTest;

TEST_F(CudnnOpsTest, BiasAdd) {
  for (DataLayout layout : kLayouts) {
    const TensorDescriptor t = Tensor(layout);
    const std::vector<float> x = RandomFloats(t.ElementCount(), 1), b = RandomFloats(t.c, 2);
    DeviceMemory<float> dx = Upload(x), db = Upload(b), y = Output(t.ElementCount());
    stream_->ThenBiasAdd(t, dx, db, &y)
        .ThenBiasAdd(t, dx, db, &dx);  // Out of place, then in place.
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    std::vector<double> ref(x.size());
    ForEach(t, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      const int64_t i = t.Offset(n, c, h, w);
      ref[i] = static_cast<double>(x[i]) + b[c];
    });
    EXPECT_TRUE(AllNear("y", Download(y), ref, 1e-7, 1e-7));
    EXPECT_TRUE(AllNear("x in place", Download(dx), ref, 1e-7, 1e-7));
  }
}

struct ActivationCase {
  ActivationDescriptor desc;
  double (*f)(double x, double coef);
  double (*df)(double x, double coef);
  double tol;
};

std::vector<ActivationCase> ActivationCases() {
  return {
      {{ActivationMode::kRelu},
       [](double x, double) { return std::max(0.0, x); },
       [](double x, double) { return x > 0 ? 1.0 : 0.0; },
       1e-7},
      {{ActivationMode::kSigmoid},
       [](double x, double) { return 1 / (1 + std::exp(-x)); },
       [](double x, double) {
         const double s = 1 / (1 + std::exp(-x));
         return s * (1 - s);
       },
       2e-5},
      {{ActivationMode::kTanh},
       [](double x, double) { return std::tanh(x); },
       [](double x, double) { return 1 - std::tanh(x) * std::tanh(x); },
       2e-5},
      {{ActivationMode::kElu, 0.7},
       [](double x, double a) { return x > 0 ? x : a * (std::exp(x) - 1); },
       [](double x, double a) { return x > 0 ? 1 : a * std::exp(x); },
       2e-5},
      {{ActivationMode::kClippedRelu, 1.5},
       [](double x, double a) { return std::min(std::max(0.0, x), a); },
       [](double x, double a) { return x > 0 && x < a ? 1.0 : 0.0; },
       1e-7},
  };
}

TEST_F(CudnnOpsTest, ActivationsForwardAndBackward) {
  for (DataLayout layout : kLayouts) {
    for (const ActivationCase& a : ActivationCases()) {
      SCOPED_TRACE(a.desc.ToString());
      const TensorDescriptor t = Tensor(layout);
      const std::vector<float> x = RandomFloats(t.ElementCount(), 3, -3, 3),
                               dy = RandomFloats(t.ElementCount(), 4);
      DeviceMemory<float> dx_in = Upload(x), ddy = Upload(dy), y = Output(x.size()),
                          dx = Output(x.size());
      stream_->ThenActivate(a.desc, t, dx_in, &y)
          .ThenActivateBackward(ActivationBackwardArgs{a.desc, t, dx_in, y, ddy, dx});
      ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
      std::vector<double> ref_y(x.size()), ref_dx(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        ref_y[i] = a.f(x[i], a.desc.coefficient);
        ref_dx[i] = a.df(x[i], a.desc.coefficient) * dy[i];
      }
      EXPECT_TRUE(AllNear("y", Download(y), ref_y, a.tol > 1e-6 ? 2e-6 : 1e-7, a.tol));
      EXPECT_TRUE(AllNear("dx", Download(dx), ref_dx, a.tol > 1e-6 ? 2e-6 : 1e-7, a.tol));
    }
  }
}

TEST_F(CudnnOpsTest, PoolingForwardAndBackward) {
  for (DataLayout layout : kLayouts) {
    for (PoolingMode mode : {PoolingMode::kMax, PoolingMode::kAverageIncludePadding,
                             PoolingMode::kAverageExcludePadding}) {
      for (const PoolingDescriptor& shape :
           {PoolingDescriptor{.window_h = 2, .window_w = 2, .stride_h = 2, .stride_w = 2},
            PoolingDescriptor{.window_h = 3,
            .window_w = 2,
            .pad_h = 1,
            .pad_w = 1,
            .stride_h = 2,
            .stride_w = 1}}) {
        PoolingDescriptor p = shape;
        p.mode = mode;
        SCOPED_TRACE(p.ToString() + " " + DataLayoutName(layout));
        const TensorDescriptor xt = Tensor(layout), yt = Must(PoolingOutput(xt, p));
        const std::vector<float> x = RandomFloats(xt.ElementCount(), 5),
                                 dy = RandomFloats(yt.ElementCount(), 6);
        DeviceMemory<float> dx_in = Upload(x), ddy = Upload(dy), y = Output(yt.ElementCount()),
                            dx = Output(xt.ElementCount());
        stream_->ThenPoolForward(p, xt, dx_in, yt, &y)
            .ThenPoolBackward(PoolBackwardArgs{p, xt, yt, dx_in, y, ddy, dx});
        ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
        std::vector<double> ref_y, ref_dx;
        PoolReference(p, xt, yt, x, dy, ref_y, ref_dx);
        EXPECT_TRUE(AllNear("y", Download(y), ref_y, 2e-6, 2e-5));
        EXPECT_TRUE(AllNear("dx", Download(dx), ref_dx, 2e-6, 2e-5));
      }
    }
  }
}

// Softmax over channels: y, and dx for `dy` (reference in double).
template <typename T>
void SoftmaxReference(const TensorDescriptor& t, bool log, const std::vector<T>& x,
                      const std::vector<T>& dy, std::vector<double>& ref_y,
                      std::vector<double>& ref_dx) {
  ref_y.assign(x.size(), 0);
  ref_dx.assign(x.size(), 0);
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t h = 0; h < t.h; ++h)
      for (int64_t w = 0; w < t.w; ++w) {
        double max = -INFINITY, sum = 0, dot = 0, dsum = 0;
        for (int64_t c = 0; c < t.c; ++c) max = std::max<double>(max, x[t.Offset(n, c, h, w)]);
        for (int64_t c = 0; c < t.c; ++c) sum += std::exp(x[t.Offset(n, c, h, w)] - max);
        for (int64_t c = 0; c < t.c; ++c) {
          const int64_t i = t.Offset(n, c, h, w);
          const double soft = std::exp(x[i] - max) / sum;
          ref_y[i] = log ? x[i] - max - std::log(sum) : soft;
          dot += dy[i] * soft;
          dsum += dy[i];
        }
        for (int64_t c = 0; c < t.c; ++c) {
          const int64_t i = t.Offset(n, c, h, w);
          const double soft = std::exp(x[i] - max) / sum;
          ref_dx[i] = log ? dy[i] - soft * dsum : soft * (dy[i] - dot);
        }
      }
}

TEST_F(CudnnOpsTest, SoftmaxAndLogSoftmaxForwardAndBackward) {
  for (DataLayout layout : kLayouts) {
    for (bool log : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << (log ? "log-softmax " : "softmax ") << DataLayoutName(layout));
      const TensorDescriptor t = Tensor(layout, 2, 7, 3, 4);
      const std::vector<float> x = RandomFloats(t.ElementCount(), 7, -4, 4),
                               dy = RandomFloats(t.ElementCount(), 8);
      DeviceMemory<float> dx_in = Upload(x), ddy = Upload(dy), y = Output(x.size()),
                          dx = Output(x.size());
      stream_->ThenSoftmax(t, dx_in, &y, log)
          .ThenSoftmaxBackward(SoftmaxBackwardArgs{t, log, y, ddy, dx});
      ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
      std::vector<double> ref_y, ref_dx;
      SoftmaxReference(t, log, x, dy, ref_y, ref_dx);
      // log-softmax: x - max - log(sum) cancels; its error is relative to
      // the input range (8), not to the result.
      EXPECT_TRUE(AllNear("y", Download(y), ref_y, log ? 2e-5 : 2e-6, 2e-5));
      EXPECT_TRUE(AllNear("dx", Download(dx), ref_dx, 2e-6, 2e-5));
    }
  }
}

// Double tensors go through cuDNN in double (float scaling factors would be
// misread): softmax and relu to double precision.
TEST_F(CudnnOpsTest, DoubleTensors) {
  TensorDescriptor t = Tensor(DataLayout::kNCHW, 2, 7, 3, 4);
  t.type = DataType::kDouble;
  std::vector<double> x(t.ElementCount()), dy(t.ElementCount());
  const std::vector<float> xf = RandomFloats(x.size(), 30, -4, 4), dyf = RandomFloats(x.size(), 31);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = xf[i] + 1e-9 * static_cast<double>(i);  // Not representable in float.
    dy[i] = dyf[i];
  }
  DeviceMemory<double> dx_in = Upload(x), ddy = Upload(dy), y = Output<double>(x.size()),
                       dx = Output<double>(x.size()), r = Output<double>(x.size());
  stream_->ThenSoftmax(SoftmaxArgs{t, false, dx_in, y})
      .ThenSoftmaxBackward(SoftmaxBackwardArgs{t, false, y, ddy, dx})
      .ThenActivate(ActivationArgs{{ActivationMode::kRelu}, t, dx_in, r});
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  std::vector<double> ref_y, ref_dx, ref_r(x.size());
  SoftmaxReference(t, false, x, dy, ref_y, ref_dx);
  for (size_t i = 0; i < x.size(); ++i) ref_r[i] = std::max(0.0, x[i]);
  EXPECT_TRUE(AllNear("y", Download(y), ref_y, 1e-12, 1e-12));
  EXPECT_TRUE(AllNear("dx", Download(dx), ref_dx, 1e-12, 1e-12));
  EXPECT_TRUE(AllNear("relu", Download(r), ref_r, 0, 0));
}

TEST_F(CudnnOpsTest, BatchNormInference) {
  for (DataLayout layout : kLayouts) {
    const TensorDescriptor t = Tensor(layout);
    const std::vector<float> x = RandomFloats(t.ElementCount(), 9), scale = RandomFloats(t.c, 10),
                             offset = RandomFloats(t.c, 11), mean = RandomFloats(t.c, 12),
                             var = RandomFloats(t.c, 13, 0.5, 2);
    DeviceMemory<float> y = Output(x.size());
    const double eps = 1e-3;
    stream_->ThenBatchNormForwardInference(BatchNormInferenceArgs{
        t, Upload(x), Upload(scale), Upload(offset), Upload(mean), Upload(var), y, eps});
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    std::vector<double> ref(x.size());
    ForEach(t, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      const int64_t i = t.Offset(n, c, h, w);
      ref[i] = scale[c] * (x[i] - mean[c]) / std::sqrt(var[c] + eps) + offset[c];
    });
    EXPECT_TRUE(AllNear("y", Download(y), ref, 1e-4, 1e-4));
  }
}

TEST_F(CudnnOpsTest, BatchNormTrainingAndBackward) {
  for (DataLayout layout : kLayouts) {
    SCOPED_TRACE(DataLayoutName(layout));
    const TensorDescriptor t = Tensor(layout);
    const double eps = 1e-3, factor = 0.3, m = static_cast<double>(t.n) * t.h * t.w;
    const std::vector<float> x = RandomFloats(t.ElementCount(), 14, -2, 3),
                             scale = RandomFloats(t.c, 15), offset = RandomFloats(t.c, 16),
                             running_mean0 = RandomFloats(t.c, 17),
                             running_var0 = RandomFloats(t.c, 18, 0.5, 2),
                             dy = RandomFloats(t.ElementCount(), 19);
    DeviceMemory<float> dx_in = Upload(x), dscale_in = Upload(scale), rm = Upload(running_mean0),
                        rv = Upload(running_var0), y = Output(x.size()), saved_mean = Output(t.c),
                        saved_inv_std = Output(t.c), dx = Output(x.size()), dscale = Output(t.c),
                        doffset = Output(t.c);
    stream_
        ->ThenBatchNormForwardTraining(BatchNormTrainingArgs{
            t, dx_in, dscale_in, Upload(offset), y, rm, rv, saved_mean, saved_inv_std, eps, factor})
        .ThenBatchNormBackward(BatchNormBackwardArgs{t, dx_in, Upload(dy), dscale_in, saved_mean,
                                                     saved_inv_std, dx, dscale, doffset, eps});
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    std::vector<double> mean, var;
    ChannelStats(t, x, mean, var);
    std::vector<double> ref_y(x.size()), ref_dx(x.size()), inv(t.c), rm_ref(t.c), rv_ref(t.c),
        dgamma(t.c, 0), dbeta(t.c, 0);
    for (int64_t c = 0; c < t.c; ++c) {
      inv[c] = 1 / std::sqrt(var[c] + eps);
      rm_ref[c] = (1 - factor) * running_mean0[c] + factor * mean[c];
      rv_ref[c] = (1 - factor) * running_var0[c] + factor * var[c] * m / (m - 1);
    }
    ForEach(t, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      const int64_t i = t.Offset(n, c, h, w);
      const double xhat = (x[i] - mean[c]) * inv[c];
      ref_y[i] = scale[c] * xhat + offset[c];
      dbeta[c] += dy[i];
      dgamma[c] += dy[i] * xhat;
    });
    ForEach(t, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      const int64_t i = t.Offset(n, c, h, w);
      const double xhat = (x[i] - mean[c]) * inv[c];
      ref_dx[i] = scale[c] * inv[c] / m * (m * dy[i] - dbeta[c] - xhat * dgamma[c]);
    });
    EXPECT_TRUE(AllNear("y", Download(y), ref_y, 1e-4, 1e-4));
    EXPECT_TRUE(AllNear("saved_mean", Download(saved_mean), mean, 1e-5, 1e-5));
    EXPECT_TRUE(AllNear("saved_inv_std", Download(saved_inv_std), inv, 1e-5, 1e-4));
    EXPECT_TRUE(AllNear("running_mean", Download(rm), rm_ref, 1e-5, 1e-5));
    EXPECT_TRUE(AllNear("running_variance", Download(rv), rv_ref, 1e-5, 1e-4));
    EXPECT_TRUE(AllNear("dx", Download(dx), ref_dx, 1e-4, 1e-4));
    EXPECT_TRUE(AllNear("dscale", Download(dscale), dgamma, 1e-4, 1e-4));
    EXPECT_TRUE(AllNear("doffset", Download(doffset), dbeta, 1e-4, 1e-4));
  }
}

// Training without running buffers skips their update and still writes
// the saved statistics.
TEST_F(CudnnOpsTest, BatchNormTrainingWithoutRunningStatistics) {
  const TensorDescriptor t = Tensor(DataLayout::kNCHW);
  const std::vector<float> x = RandomFloats(t.ElementCount(), 20), ones(t.c, 1), zeros(t.c, 0);
  DeviceMemory<float> y = Output(x.size()), saved_mean = Output(t.c), saved_inv_std = Output(t.c);
  stream_->ThenBatchNormForwardTraining(BatchNormTrainingArgs{
      t, Upload(x), Upload(ones), Upload(zeros), y, {}, {}, saved_mean, saved_inv_std, 1e-3});
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  std::vector<double> mean, var;
  ChannelStats(t, x, mean, var);
  EXPECT_TRUE(AllNear("saved_mean", Download(saved_mean), mean, 1e-5, 1e-5));
}

TEST_F(CudnnOpsTest, Lrn) {
  for (DataLayout layout : kLayouts) {
    // cuDNN takes even sizes too: the window is [c - (size - 1) / 2, c + size / 2].
    for (const LrnDescriptor& lrn :
         {LrnDescriptor{}, LrnDescriptor{.size = 3, .alpha = 0.5, .beta = 0.6, .k = 1.5},
          LrnDescriptor{.size = 4, .alpha = 0.3, .beta = 0.75, .k = 1}}) {
      SCOPED_TRACE(lrn.ToString() + " " + DataLayoutName(layout));
      const TensorDescriptor t = Tensor(layout, 2, 9, 3, 4);
      const std::vector<float> x = RandomFloats(t.ElementCount(), 21, -2, 2);
      DeviceMemory<float> y = Output(x.size());
      stream_->ThenLrn(LrnArgs{lrn, t, Upload(x), y});
      ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
      std::vector<double> ref(x.size());
      ForEach(t, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        double sum = 0;
        for (int64_t j = std::max<int64_t>(0, c - (lrn.size - 1) / 2);
             j <= std::min(t.c - 1, c + lrn.size / 2); ++j) {
          const double v = x[t.Offset(n, j, h, w)];
          sum += v * v;
        }
        const int64_t i = t.Offset(n, c, h, w);
        ref[i] = x[i] / std::pow(lrn.k + lrn.alpha / lrn.size * sum, lrn.beta);
      });
      EXPECT_TRUE(AllNear("y", Download(y), ref, 2e-6, 2e-5));
    }
  }
}

}  // namespace
}  // namespace rill
