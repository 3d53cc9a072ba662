// The XNNPACK plugin's non-convolution operations against formulas computed
// here in double, on every host device: bias add and activations (NHWC and
// NCHW: element-wise), max and average pooling with padding, softmax; the
// staged path for inputs whose over-read could leave their page; the
// shared thread pool's lease; Supports() with its reasons; and, when oneDNN
// is built, the "xnnpack,onednn" chain.
//
// Tolerances (|got - ref| <= abs + rel |ref|), float results:
//  - bias add, relu, clipped relu, max pooling: exact up to one rounding
//    (abs 1e-7, rel 1e-7);
//  - sigmoid, elu, softmax, average pooling: abs 2e-6, rel 2e-5 (XNNPACK's
//    vectorized exp is a few ulp off).

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "rill/platform/host/host_executor.h"
#include "rill/plugins/dnn/xnnpack/xnnpack_common.h"
#include "rill/plugins/dnn/xnnpack/xnnpack_test_util.h"

namespace rill {
namespace {

using absl::StatusCode;
using testing::AllNear;
using testing::ForEach;
using testing::HasError;
using testing::IsOk;
using testing::Must;
using testing::PoolReference;
using testing::RandomFloats;

constexpr DataLayout kLayouts[] = {DataLayout::kNHWC, DataLayout::kNCHW};

// 5 channels: not a multiple of XNNPACK's SIMD width, so the remainder
// paths run.
TensorDescriptor Tensor(DataLayout layout = DataLayout::kNHWC, int64_t n = 2, int64_t c = 5,
                        int64_t h = 6, int64_t w = 7) {
  return {.n = n, .c = c, .h = h, .w = w, .layout = layout};
}

using XnnpackOpsTest = testing::XnnpackTest;

TEST_P(XnnpackOpsTest, BiasAddEitherLayout) {
  for (DataLayout layout : kLayouts) {
    for (int64_t c : {1, 5, 16}) {
      const TensorDescriptor t = Tensor(layout, 2, c);
      SCOPED_TRACE(t.ToString());
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
}

struct ActivationCase {
  ActivationDescriptor desc;
  double (*f)(double x, double coef);
  double tol;
};

std::vector<ActivationCase> ActivationCases() {
  return {
      {{ActivationMode::kRelu}, [](double x, double) { return std::max(0.0, x); }, 1e-7},
      {{ActivationMode::kClippedRelu, 1.5},
       [](double x, double a) { return std::min(std::max(0.0, x), a); },
       1e-7},
      {{ActivationMode::kSigmoid}, [](double x, double) { return 1 / (1 + std::exp(-x)); }, 2e-5},
      {{ActivationMode::kElu, 0.7},
       [](double x, double a) { return x > 0 ? x : a * (std::exp(x) - 1); },
       2e-5},
      // alpha 0 is relu; XNNPACK's elu refuses it, so it runs as a clamp.
      {{ActivationMode::kElu, 0}, [](double x, double) { return std::max(0.0, x); }, 1e-7},
  };
}

TEST_P(XnnpackOpsTest, ActivationsEitherLayoutAndInPlace) {
  for (DataLayout layout : kLayouts) {
    for (const ActivationCase& a : ActivationCases()) {
      SCOPED_TRACE(a.desc.ToString() + " " + DataLayoutName(layout));
      const TensorDescriptor t = Tensor(layout);
      const std::vector<float> x = RandomFloats(t.ElementCount(), 3, -3, 3);
      DeviceMemory<float> dx = Upload(x), y = Output(x.size());
      stream_->ThenActivate(a.desc, t, dx, &y).ThenActivate(a.desc, t, dx, &dx);
      ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
      std::vector<double> ref(x.size());
      for (size_t i = 0; i < x.size(); ++i) ref[i] = a.f(x[i], a.desc.coefficient);
      const double abs_tol = a.tol > 1e-6 ? 2e-6 : 1e-7;
      EXPECT_TRUE(AllNear("y", Download(y), ref, abs_tol, a.tol));
      EXPECT_TRUE(AllNear("x in place", Download(dx), ref, abs_tol, a.tol));
    }
  }
}

std::vector<PoolingDescriptor> PoolShapes() {
  return {
      PoolingDescriptor{.window_h = 2, .window_w = 2, .stride_h = 2, .stride_w = 2},
      PoolingDescriptor{
          .window_h = 3, .window_w = 2, .pad_h = 1, .pad_w = 1, .stride_h = 2, .stride_w = 1},
      PoolingDescriptor{
          .window_h = 3, .window_w = 3, .pad_h = 1, .pad_w = 1, .stride_h = 1, .stride_w = 1},
      PoolingDescriptor{
          .window_h = 2, .window_w = 3, .pad_h = 1, .pad_w = 2, .stride_h = 3, .stride_w = 2},
      PoolingDescriptor{
          .window_h = 1, .window_w = 3, .pad_h = 0, .pad_w = 1, .stride_h = 1, .stride_w = 2},
  };
}

// Max and average (excluding padding) with every window; average including
// padding where it has none (then the two averages agree).
TEST_P(XnnpackOpsTest, PoolingForward) {
  for (PoolingMode mode : {PoolingMode::kMax, PoolingMode::kAverageExcludePadding,
                           PoolingMode::kAverageIncludePadding}) {
    for (PoolingDescriptor p : PoolShapes()) {
      p.mode = mode;
      if (mode == PoolingMode::kAverageIncludePadding && (p.pad_h > 0 || p.pad_w > 0)) continue;
      for (int64_t c : {1, 3, 8, 17}) {
        const TensorDescriptor xt = Tensor(DataLayout::kNHWC, 2, c),
                               yt = Must(PoolingOutput(xt, p));
        SCOPED_TRACE(p.ToString() + " " + xt.ToString());
        const std::vector<float> x = RandomFloats(xt.ElementCount(), 5);
        DeviceMemory<float> dx = Upload(x), y = Output(yt.ElementCount());
        stream_->ThenPoolForward(p, xt, dx, yt, &y);
        ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
        std::vector<double> ref_y, ref_dx;
        PoolReference(p, xt, yt, x, std::vector<float>(yt.ElementCount(), 0), ref_y, ref_dx);
        if (mode == PoolingMode::kMax) {
          EXPECT_TRUE(AllNear("y", Download(y), ref_y, 0, 0));
        } else {
          EXPECT_TRUE(AllNear("y", Download(y), ref_y, 2e-6, 2e-5));
        }
      }
    }
  }
}

// With every input negative, a padded zero would win a max: it must not.
TEST_P(XnnpackOpsTest, PaddingNeverWinsAMax) {
  const PoolingDescriptor p{
      .window_h = 3, .window_w = 3, .pad_h = 2, .pad_w = 1, .stride_h = 1, .stride_w = 2};
  const TensorDescriptor xt = Tensor(DataLayout::kNHWC, 1, 3, 4, 5),
                         yt = Must(PoolingOutput(xt, p));
  const std::vector<float> x = RandomFloats(xt.ElementCount(), 6, -3, -1);
  DeviceMemory<float> y = Output(yt.ElementCount());
  stream_->ThenPoolForward(p, xt, Upload(x), yt, &y);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  std::vector<double> ref_y, ref_dx;
  PoolReference(p, xt, yt, x, std::vector<float>(yt.ElementCount(), 0), ref_y, ref_dx);
  const std::vector<float> got = Download(y);
  EXPECT_TRUE(AllNear("y", got, ref_y, 0, 0));
  EXPECT_LT(*std::max_element(got.begin(), got.end()), 0);
}

void SoftmaxReference(const TensorDescriptor& t, const std::vector<float>& x,
                      std::vector<double>& y) {
  y.assign(x.size(), 0);
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t h = 0; h < t.h; ++h)
      for (int64_t w = 0; w < t.w; ++w) {
        double max = -INFINITY, sum = 0;
        for (int64_t c = 0; c < t.c; ++c) max = std::max<double>(max, x[t.Offset(n, c, h, w)]);
        for (int64_t c = 0; c < t.c; ++c) sum += std::exp(x[t.Offset(n, c, h, w)] - max);
        for (int64_t c = 0; c < t.c; ++c)
          y[t.Offset(n, c, h, w)] = std::exp(x[t.Offset(n, c, h, w)] - max) / sum;
      }
}

TEST_P(XnnpackOpsTest, SoftmaxOverChannels) {
  for (int64_t c : {1, 7, 33}) {
    const TensorDescriptor t = Tensor(DataLayout::kNHWC, 2, c, 3, 4);
    SCOPED_TRACE(t.ToString());
    const std::vector<float> x = RandomFloats(t.ElementCount(), 7, -4, 4);
    DeviceMemory<float> dx = Upload(x), y = Output(x.size());
    stream_->ThenSoftmax(t, dx, &y).ThenSoftmax(t, dx, &dx);  // Out of place, then in place.
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    std::vector<double> ref;
    SoftmaxReference(t, x, ref);
    EXPECT_TRUE(AllNear("y", Download(y), ref, 2e-6, 2e-5));
    EXPECT_TRUE(AllNear("x in place", Download(dx), ref, 2e-6, 2e-5));
  }
}

// Inputs that end exactly at a page boundary (slices of a larger buffer):
// an over-read would leave the page, so the plugin stages a padded copy;
// the results are the same.
TEST_P(XnnpackOpsTest, InputsEndingAtAPageBoundaryAreStaged) {
  const TensorDescriptor t = Tensor(DataLayout::kNHWC, 1, 5, 3, 3);
  const uint64_t count = t.ElementCount(), page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const std::vector<float> x = RandomFloats(count, 8, -2, 2);
  DeviceMemory<float> big = Output(3 * page / sizeof(float));
  const auto base = reinterpret_cast<uintptr_t>(HostPointer(big));
  const uint64_t end = (base / page + 2) * page;  // A page boundary inside `big`.
  const uint64_t first = (end - base) / sizeof(float) - count;
  DeviceMemory<float> slice = Must(big.GetSlice(first, count));
  ASSERT_TRUE(xnnpack::OverReadLeavesPage(HostPointer(slice), count * sizeof(float)));
  ASSERT_TRUE(
      xnnpack::ReadableInput(static_cast<const float*>(HostPointer(slice)), count).staged());
  stream_->ThenMemcpy(&slice, x.data(), count * sizeof(float));

  const PoolingDescriptor p{.window_h = 2, .window_w = 2, .stride_h = 1, .stride_w = 1};
  const TensorDescriptor yt = Must(PoolingOutput(t, p));
  DeviceMemory<float> pooled = Output(yt.ElementCount()), soft = Output(count);
  stream_->ThenPoolForward(p, t, slice, yt, &pooled).ThenSoftmax(t, slice, &soft);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  std::vector<double> ref_pool, unused, ref_soft;
  PoolReference(p, t, yt, x, std::vector<float>(yt.ElementCount(), 0), ref_pool, unused);
  SoftmaxReference(t, x, ref_soft);
  EXPECT_TRUE(AllNear("max pool", Download(pooled), ref_pool, 0, 0));
  EXPECT_TRUE(AllNear("softmax", Download(soft), ref_soft, 2e-6, 2e-5));
}

// The guard itself, on memory followed by an inaccessible page: XNNPACK's
// max pooling and softmax read past 5-channel inputs on x86 (SSE
// remainders), which would fault here; through ReadableInput they do not.
TEST(XnnpackOverReadTest, StagedInputsSurviveAGuardPage) {
  ASSERT_TRUE(IsOk(xnnpack::Initialize()));
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), c = 5, pixels = 4 * 4,
               count = pixels * c;
  char* mapping = static_cast<char*>(
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mapping, MAP_FAILED);
  ASSERT_EQ(mprotect(mapping + page, page, PROT_NONE), 0);
  float* x = reinterpret_cast<float*>(mapping + page) - count;  // Ends at the guard page.
  const std::vector<float> values = RandomFloats(count, 9);
  std::copy(values.begin(), values.end(), x);
  const xnnpack::ReadableInput in(x, count);
  EXPECT_TRUE(in.staged());
  EXPECT_FALSE(xnnpack::ReadableInput(x, count - 8).staged())
      << "32 bytes before the end: no staging needed";

  std::vector<float> pooled(pixels * c), soft(count);
  xnn_operator_t pool_op = nullptr, softmax_op = nullptr;
  ASSERT_EQ(xnn_create_max_pooling2d_nhwc_f32(0, 0, 0, 0, 2, 2, 1, 1, 1, 1, c, c, c, -INFINITY,
                                              INFINITY, 0, &pool_op),
            xnn_status_success);
  xnnpack::Operator pool_owned(pool_op);
  ASSERT_EQ(xnn_setup_max_pooling2d_nhwc_f32(pool_op, 1, 4, 4, in.get(), pooled.data(), nullptr),
            xnn_status_success);
  ASSERT_EQ(xnn_run_operator(pool_op, nullptr), xnn_status_success);
  ASSERT_EQ(xnn_create_softmax_nc_f32(c, c, c, 0, &softmax_op), xnn_status_success);
  xnnpack::Operator softmax_owned(softmax_op);
  ASSERT_EQ(xnn_setup_softmax_nc_f32(softmax_op, pixels, in.get(), soft.data(), nullptr),
            xnn_status_success);
  ASSERT_EQ(xnn_run_operator(softmax_op, nullptr), xnn_status_success);
  const TensorDescriptor t{.n = 1, .c = 5, .h = 4, .w = 4, .layout = DataLayout::kNHWC};
  std::vector<double> ref;
  SoftmaxReference(t, values, ref);
  EXPECT_TRUE(AllNear("softmax", soft, ref, 2e-6, 2e-5));
  munmap(mapping, 2 * page);
}

TEST(XnnpackOverReadTest, OnlyReadsThatCouldLeaveThePageAreStaged) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto at = [](uintptr_t address) { return reinterpret_cast<const void*>(address); };
  EXPECT_FALSE(xnnpack::OverReadLeavesPage(at(10 * page), page - XNN_EXTRA_BYTES));
  EXPECT_TRUE(xnnpack::OverReadLeavesPage(at(10 * page), page - XNN_EXTRA_BYTES + 4));
  EXPECT_TRUE(xnnpack::OverReadLeavesPage(at(10 * page), page));
  EXPECT_FALSE(xnnpack::OverReadLeavesPage(at(10 * page + 64), 256));
}

// One call holds the shared pool at a time; others run without it.
TEST(XnnpackThreadsTest, OneLeaseHoldsThePool) {
  if (xnnpack::PoolThreads() < 2)
    GTEST_SKIP() << "a one-thread pool is never created (RILL_DNN_THREADS=1 or 1 core)";
  {
    xnnpack::PoolLease first;
    ASSERT_NE(first.get(), nullptr);
    EXPECT_EQ(pthreadpool_get_threads_count(first.get()),
              static_cast<size_t>(xnnpack::PoolThreads()));
    xnnpack::PoolLease second;
    EXPECT_EQ(second.get(), nullptr);
  }
  xnnpack::PoolLease again;
  EXPECT_NE(again.get(), nullptr);
}

// While another host library call runs (platform/host/host_thread_budget.h),
// XNNPACK leaves the cores to it and runs on the calling thread.
TEST(XnnpackThreadsTest, TheHostThreadBudgetKeepsThePoolIdleWhileAnotherLibraryRuns) {
  if (xnnpack::PoolThreads() < 2)
    GTEST_SKIP() << "a one-thread pool is never created (RILL_DNN_THREADS=1 or 1 core)";
  {
    HostComputeScope blas_call;  // As OpenBLAS, BLIS or oneDNN hold while they compute.
    xnnpack::PoolLease lease;
    EXPECT_EQ(lease.get(), nullptr);
  }
  xnnpack::PoolLease alone;
  EXPECT_NE(alone.get(), nullptr);
}

TEST_P(XnnpackOpsTest, OperatorsAreCachedPerShape) {
  const TensorDescriptor t = Tensor(DataLayout::kNHWC, 1, 3, 2, 2);
  DeviceMemory<float> x = Upload(RandomFloats(t.ElementCount(), 21)), y = Output(t.ElementCount());
  stream_->ThenSoftmax(t, x, &y);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  const size_t after_first = xnnpack_->CachedOperators();
  for (int i = 0; i < 5; ++i) stream_->ThenSoftmax(t, x, &y);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(xnnpack_->CachedOperators(), after_first);
  EXPECT_NE(dnn_->Version().find("XNNPACK 0.0~git20220216 (Debian)"), std::string::npos)
      << dnn_->Version();
}

// --- Supports().

DnnOperation Conv(DataLayout layout = DataLayout::kNHWC,
                  FilterLayout filter_layout = FilterLayout::kOHWI,
                  DataType type = DataType::kFloat) {
  ConvolutionShape s{{.n = 1, .c = 4, .h = 6, .w = 6, .layout = layout, .type = type},
                     {.output_channels = 2,
                      .input_channels = 4,
                      .height = 3,
                      .width = 3,
                      .layout = filter_layout,
                      .type = type},
                     {.pad_h = 1, .pad_w = 1},
                     {}};
  s.output = Must(ConvolutionOutput(s.input, s.filter, s.conv));
  return DnnOperation::Of(s, ConvolutionKind::kForward);
}

DnnOperation Op(DnnOp kind, const TensorDescriptor& t) {
  DnnOperation op;
  op.op = kind;
  op.input = op.output = t;
  return op;
}

TEST_P(XnnpackOpsTest, SupportsSaysWhatAndWhy) {
  EXPECT_TRUE(IsOk(dnn_->Supports(Conv())));
  EXPECT_TRUE(HasError(dnn_->Supports(Conv(DataLayout::kNCHW)), StatusCode::kUnimplemented,
                       {"xnnpack", "NCHW tensors (it computes NHWC)"}));
  EXPECT_TRUE(HasError(dnn_->Supports(Conv(DataLayout::kNHWC, FilterLayout::kOIHW)),
                       StatusCode::kUnimplemented, {"xnnpack", "OIHW filters"}));
  EXPECT_TRUE(
      HasError(dnn_->Supports(Conv(DataLayout::kNHWC, FilterLayout::kOHWI, DataType::kDouble)),
               StatusCode::kUnimplemented, {"xnnpack", "double tensors"}));
  DnnOperation op = Conv();
  op.op = DnnOp::kConvolveBackwardData;
  EXPECT_TRUE(
      HasError(dnn_->Supports(op), StatusCode::kUnimplemented, {"backward_data", "forward"}));
  op.op = DnnOp::kConvolveBackwardFilter;
  EXPECT_TRUE(HasError(dnn_->Supports(op), StatusCode::kUnimplemented, {"backward_filter"}));
  // Fused bias, relu and clipped relu; not sigmoid (the base runs it after).
  op = Conv();
  op.fused_bias = true;
  op.fused_activation = ActivationDescriptor{ActivationMode::kRelu};
  EXPECT_TRUE(IsOk(dnn_->Supports(op)));
  op.fused_activation = ActivationDescriptor{ActivationMode::kClippedRelu, 6};
  EXPECT_TRUE(IsOk(dnn_->Supports(op)));
  op.fused_activation = ActivationDescriptor{ActivationMode::kSigmoid};
  EXPECT_TRUE(HasError(dnn_->Supports(op), StatusCode::kUnimplemented, {"fused sigmoid"}));

  const TensorDescriptor nhwc = Tensor(), nchw = Tensor(DataLayout::kNCHW);
  for (DnnOp bn :
       {DnnOp::kBatchNormInference, DnnOp::kBatchNormTraining, DnnOp::kBatchNormBackward}) {
    EXPECT_TRUE(HasError(dnn_->Supports(Op(bn, nhwc)), StatusCode::kUnimplemented,
                         {"batch normalization"}));
  }
  EXPECT_TRUE(HasError(dnn_->Supports(Op(DnnOp::kLrn, nhwc)), StatusCode::kUnimplemented, {"LRN"}));
  for (DnnOp backward : {DnnOp::kActivateBackward, DnnOp::kPoolBackward, DnnOp::kSoftmaxBackward}) {
    EXPECT_TRUE(
        HasError(dnn_->Supports(Op(backward, nhwc)), StatusCode::kUnimplemented, {"backward"}));
  }
  op = Op(DnnOp::kActivate, nchw);
  op.activation = {ActivationMode::kElu, 1};
  EXPECT_TRUE(IsOk(dnn_->Supports(op))) << "element-wise: either layout";
  op.activation = {ActivationMode::kTanh};
  EXPECT_TRUE(HasError(dnn_->Supports(op), StatusCode::kUnimplemented, {"tanh"}));
  op = Op(DnnOp::kSoftmax, nhwc);
  EXPECT_TRUE(IsOk(dnn_->Supports(op)));
  op.log = true;
  EXPECT_TRUE(HasError(dnn_->Supports(op), StatusCode::kUnimplemented, {"log-softmax"}));
  EXPECT_TRUE(
      HasError(dnn_->Supports(Op(DnnOp::kSoftmax, nchw)), StatusCode::kUnimplemented, {"NCHW"}));
  EXPECT_TRUE(IsOk(dnn_->Supports(Op(DnnOp::kBiasAdd, nchw))));
  op = Op(DnnOp::kBiasAdd, nhwc);
  op.input.type = DataType::kDouble;
  EXPECT_TRUE(HasError(dnn_->Supports(op), StatusCode::kUnimplemented, {"double"}));

  op = Op(DnnOp::kPoolForward, nhwc);
  op.pool = {.mode = PoolingMode::kAverageIncludePadding,
             .window_h = 3,
             .window_w = 3,
             .pad_h = 1,
             .pad_w = 1};
  EXPECT_TRUE(HasError(dnn_->Supports(op), StatusCode::kUnimplemented,
                       {"counts the padding", "avg_exclude_pad"}));
  op.pool.pad_h = op.pool.pad_w = 0;
  EXPECT_TRUE(IsOk(dnn_->Supports(op)));
  op.pool = {.mode = PoolingMode::kMax, .window_h = 1, .window_w = 1, .stride_h = 2, .stride_w = 2};
  EXPECT_TRUE(HasError(dnn_->Supports(op), StatusCode::kUnimplemented, {"1x1 pooling"}));
  op = Op(DnnOp::kPoolForward, nchw);
  op.pool = {.window_h = 2, .window_w = 2};
  EXPECT_TRUE(HasError(dnn_->Supports(op), StatusCode::kUnimplemented, {"NCHW"}));
}

#ifdef RILL_XNNPACK_TEST_WITH_ONEDNN
// Chained with oneDNN, what XNNPACK does not support (NCHW softmax, tanh,
// log-softmax, pooling backward) runs there, counted as handed on.
TEST_P(XnnpackOpsTest, ChainHandsTheRestToOneDnn) {
  ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "xnnpack,onednn")));
  DnnSupport* dnn = exec_->AsDnn();
  ASSERT_EQ(dnn->Name(), "xnnpack");
  ASSERT_NE(dnn->fallback(), nullptr);
  EXPECT_EQ(dnn->fallback()->Name(), "onednn");
  const uint64_t handed_before = dnn->calls_handed_on();
  const TensorDescriptor nchw = Tensor(DataLayout::kNCHW, 2, 7, 3, 4),
                         nhwc = Tensor(DataLayout::kNHWC, 2, 7, 3, 4);
  const std::vector<float> x = RandomFloats(nchw.ElementCount(), 10, -3, 3);
  DeviceMemory<float> dx = Upload(x), soft = Output(x.size()), tanh_y = Output(x.size()),
                      relu_y = Output(x.size());
  stream_->ThenSoftmax(nchw, dx, &soft)
      .ThenActivate({ActivationMode::kTanh}, nhwc, dx, &tanh_y)
      .ThenActivate({ActivationMode::kRelu}, nhwc, dx, &relu_y);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  std::vector<double> ref_soft, ref_tanh(x.size()), ref_relu(x.size());
  SoftmaxReference(nchw, x, ref_soft);
  for (size_t i = 0; i < x.size(); ++i)
    ref_tanh[i] = std::tanh(x[i]), ref_relu[i] = std::max(0.0f, x[i]);
  EXPECT_TRUE(AllNear("softmax", Download(soft), ref_soft, 2e-6, 2e-5));
  EXPECT_TRUE(AllNear("tanh", Download(tanh_y), ref_tanh, 2e-6, 2e-5));
  EXPECT_TRUE(AllNear("relu", Download(relu_y), ref_relu, 0, 0));
  EXPECT_EQ(dnn->calls_handed_on() - handed_before, 2u) << "softmax NCHW and tanh; relu stays";
  ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, XnnpackDnn::kName)));
}
#endif

INSTANTIATE_TEST_SUITE_P(HostDevices, XnnpackOpsTest, ::testing::Values(0, 1), testing::DeviceName);

}  // namespace
}  // namespace rill
