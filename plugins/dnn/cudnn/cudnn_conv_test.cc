// The cudnn plugin's convolutions against naive loops written here, on CUDA
// device 0 (skipped without one): forward, backward data and backward
// filter with padding, stride, dilation and groups; NCHW and NHWC tensors
// with OIHW and OHWI filters (uniform layouts run natively, mixed ones
// through the plugin's staging); every available algorithm; the
// heuristics' default and the remembered best; explicit, too small and
// cached workspaces; double precision.
//
// Tolerance (as for the oneDNN plugin): an output that sums k products must
// satisfy |got - ref| <= 4 (k + 2) eps sum |products| (ref in double), the
// recursive-summation bound with a factor 4 of slack. The plugin asks for
// CUDNN_FMA_MATH, so no TF32 rounding (which would break this bound on
// Ampere and newer). FFT and Winograd algorithms transform the operands and
// amplify rounding: they get 100x.

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "rill/plugins/dnn/cudnn/cudnn_test_util.h"

namespace rill {
namespace {

using testing::BackwardData;
using testing::BackwardFilter;
using testing::Forward;
using testing::HasError;
using testing::IsOk;
using testing::Must;
using testing::RandomFloats;
using testing::Reference;

template <typename T>
::testing::AssertionResult Matches(const char* what, const std::vector<T>& got,
                                   const Reference& ref, double slack = 1) {
  const double eps = std::numeric_limits<T>::epsilon();
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = slack * 4 * (ref.terms + 2) * eps * ref.scale[i];
    if (!(std::fabs(got[i] - ref.value[i]) <= tol)) {
      return ::testing::AssertionFailure() << what << "[" << i << "] = " << got[i] << ", reference "
                                           << ref.value[i] << ", tolerance " << tol;
    }
  }
  return ::testing::AssertionSuccess();
}

// FFT and Winograd algorithms get 100x the bound.
double Slack(const std::string& algorithm_name) {
  return algorithm_name.find("fft") != std::string::npos ||
                 algorithm_name.find("winograd") != std::string::npos
             ? 100
             : 1;
}

struct Case {
  const char* name;
  TensorDescriptor input;
  FilterDescriptor filter;
  ConvolutionDescriptor conv;
};

std::vector<Case> Cases() {
  return {
      {"3x3 pad 1",
       {.n = 2, .c = 3, .h = 7, .w = 6},
       {.output_channels = 4, .input_channels = 3, .height = 3, .width = 3},
       {.pad_h = 1, .pad_w = 1}},
      {"stride, dilation, uneven pad",
       {.n = 1, .c = 5, .h = 11, .w = 9},
       {.output_channels = 3, .input_channels = 5, .height = 3, .width = 2},
       {.pad_h = 2, .pad_w = 0, .stride_h = 2, .stride_w = 1, .dilation_h = 2, .dilation_w = 3}},
      {"2 groups",
       {.n = 2, .c = 4, .h = 6, .w = 7},
       {.output_channels = 6, .input_channels = 2, .height = 3, .width = 2},
       {.pad_h = 1,
        .pad_w = 1,
        .stride_h = 1,
        .stride_w = 2,
        .dilation_h = 1,
        .dilation_w = 2,
        .group_count = 2}},
      {"depthwise",
       {.n = 1, .c = 4, .h = 5, .w = 5},
       {.output_channels = 4, .input_channels = 1, .height = 3, .width = 3},
       {.pad_h = 1, .pad_w = 1, .stride_h = 2, .stride_w = 2, .group_count = 4}},
      {"1x1",
       {.n = 3, .c = 8, .h = 4, .w = 4},
       {.output_channels = 5, .input_channels = 8, .height = 1, .width = 1},
       {}},
  };
}

ConvolutionShape Shape(const Case& c) {
  return {c.input, c.filter, c.conv, Must(ConvolutionOutput(c.input, c.filter, c.conv))};
}

class CudnnConvTest : public testing::CudnnTest {
 protected:
  // Runs all three directions of `shape` with `algorithm` (the same id in
  // every direction, or a special id) and checks them.
  void CheckAllDirections(const ConvolutionShape& shape, int64_t algorithm, double slack = 1) {
    const std::vector<float> x = RandomFloats(shape.input.ElementCount(), 1);
    const std::vector<float> w = RandomFloats(shape.filter.ElementCount(), 2);
    const std::vector<float> dy = RandomFloats(shape.output.ElementCount(), 3);
    DeviceMemory<float> dx_in = Upload(x), dw_in = Upload(w), ddy = Upload(dy);
    DeviceMemory<float> y = Output(shape.output.ElementCount());
    DeviceMemory<float> dx = Output(shape.input.ElementCount()),
                        dw = Output(shape.filter.ElementCount());
    stream_->ThenConvolve(ConvolutionArgs{shape, dx_in, dw_in, y, algorithm, {}})
        .ThenConvolveBackwardData(ConvolutionArgs{shape, dx, dw_in, ddy, algorithm, {}})
        .ThenConvolveBackwardFilter(ConvolutionArgs{shape, dx_in, dw, ddy, algorithm, {}});
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    EXPECT_TRUE(Matches("y", Download(y), Forward(shape, x, w), slack));
    EXPECT_TRUE(Matches("dx", Download(dx), BackwardData(shape, dy, w), slack));
    EXPECT_TRUE(Matches("dw", Download(dw), BackwardFilter(shape, x, dy), slack));
  }
};

TEST_F(CudnnConvTest, EveryDirectionLayoutAndCase) {
  for (const Case& c : Cases()) {
    for (DataLayout layout : {DataLayout::kNCHW, DataLayout::kNHWC}) {
      for (FilterLayout filter_layout : {FilterLayout::kOIHW, FilterLayout::kOHWI}) {
        ConvolutionShape shape{c.input, c.filter, c.conv, {}};
        shape.input.layout = layout;
        shape.filter.layout = filter_layout;
        shape.output = Must(ConvolutionOutput(shape.input, shape.filter, shape.conv));
        SCOPED_TRACE(::testing::Message() << c.name << ": " << shape.ToString());
        CheckAllDirections(shape, kDefaultAlgorithm);
      }
    }
  }
}

TEST_F(CudnnConvTest, OutputLayoutMayDifferFromInput) {
  for (DataLayout out : {DataLayout::kNCHW, DataLayout::kNHWC}) {
    ConvolutionShape shape = Shape(Cases()[0]);
    shape.input.layout = out == DataLayout::kNCHW ? DataLayout::kNHWC : DataLayout::kNCHW;
    shape.output.layout = out;
    SCOPED_TRACE(shape.ToString());
    CheckAllDirections(shape, kDefaultAlgorithm);
  }
}

TEST_F(CudnnConvTest, PositionalThenConvolve) {
  const Case c = Cases()[1];
  const TensorDescriptor out = Must(ConvolutionOutput(c.input, c.filter, c.conv));
  const std::vector<float> x = RandomFloats(c.input.ElementCount(), 4),
                           w = RandomFloats(c.filter.ElementCount(), 5);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w), y = Output(out.ElementCount());
  stream_->ThenConvolve(c.input, dx, c.filter, dw, c.conv, out, &y);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_TRUE(Matches("y", Download(y), Forward({c.input, c.filter, c.conv, out}, x, w)));
}

// Every cuDNN algorithm is listed, by its enumerator value, with honest
// availability and workspace sizes; every available one computes the same
// convolution; the best is found once and remembered.
TEST_F(CudnnConvTest, AlgorithmsListChooseAndBest) {
  TensorDescriptor in{.n = 1, .c = 16, .h = 12, .w = 12};
  FilterDescriptor f{.output_channels = 16, .input_channels = 16, .height = 3, .width = 3};
  ConvolutionDescriptor conv{.pad_h = 1, .pad_w = 1};
  const ConvolutionShape shape{in, f, conv, Must(ConvolutionOutput(in, f, conv))};
  const std::vector<float> x = RandomFloats(in.ElementCount(), 6),
                           w = RandomFloats(f.ElementCount(), 7),
                           dy = RandomFloats(shape.output.ElementCount(), 8);
  DeviceMemory<float> dx_in = Upload(x), dw_in = Upload(w), ddy = Upload(dy);
  for (ConvolutionKind kind : {ConvolutionKind::kForward, ConvolutionKind::kBackwardData,
                               ConvolutionKind::kBackwardFilter}) {
    SCOPED_TRACE(ConvolutionKindName(kind));
    const std::vector<ConvolutionAlgorithm> algorithms =
        Must(dnn_->GetConvolutionAlgorithms(kind, shape));
    ASSERT_FALSE(algorithms.empty());
    EXPECT_EQ(algorithms.size(), kind == ConvolutionKind::kForward        ? 8u
                                 : kind == ConvolutionKind::kBackwardData ? 6u
                                                                          : 7u);
    int available = 0;
    for (size_t i = 0; i < algorithms.size(); ++i) {
      const ConvolutionAlgorithm& a = algorithms[i];
      EXPECT_EQ(a.id, static_cast<int64_t>(i));
      EXPECT_FALSE(a.name.empty());
      EXPECT_NE(a.implementation.find("CUDNN_CONVOLUTION_"), std::string::npos) << a.implementation;
      if (!a.available) {
        EXPECT_NE(a.reason.find("not available"), std::string::npos) << a.reason;
        continue;
      }
      ++available;
      SCOPED_TRACE(a.implementation);
      // Run this algorithm with an explicit workspace of exactly its size.
      ScopedDeviceMemory<uint8_t> workspace;
      if (a.workspace_bytes > 0)
        workspace = Must(exec_->AllocateOwnedArray<uint8_t>(a.workspace_bytes));
      DeviceMemory<float> out =
          Output(kind == ConvolutionKind::kForward        ? shape.output.ElementCount()
                 : kind == ConvolutionKind::kBackwardData ? in.ElementCount()
                                                          : f.ElementCount());
      ConvolutionArgs args{shape, dx_in, dw_in, ddy, a.id, *workspace};
      if (kind == ConvolutionKind::kForward) args.output = out;
      if (kind == ConvolutionKind::kBackwardData) args.input = out;
      if (kind == ConvolutionKind::kBackwardFilter) args.filter = out;
      if (kind == ConvolutionKind::kForward) stream_->ThenConvolve(args);
      if (kind == ConvolutionKind::kBackwardData) stream_->ThenConvolveBackwardData(args);
      if (kind == ConvolutionKind::kBackwardFilter) stream_->ThenConvolveBackwardFilter(args);
      ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
      const Reference ref = kind == ConvolutionKind::kForward        ? Forward(shape, x, w)
                            : kind == ConvolutionKind::kBackwardData ? BackwardData(shape, dy, w)
                                                                     : BackwardFilter(shape, x, dy);
      EXPECT_TRUE(Matches("result", Download(out), ref, Slack(a.name)));
    }
    EXPECT_GT(available, 0);
    const ConvolutionAlgorithm best = Must(dnn_->FindBestConvolutionAlgorithm(kind, shape));
    EXPECT_TRUE(best.available);
    EXPECT_TRUE(algorithms[best.id].available) << best.name;
    EXPECT_EQ(best.workspace_bytes, algorithms[best.id].workspace_bytes);
    const ConvolutionAlgorithm again =
        Must(dnn_->FindBestConvolutionAlgorithm(kind, shape));  // Remembered.
    EXPECT_EQ(again.id, best.id);
    EXPECT_EQ(again.name, best.name);
  }
  CheckAllDirections(shape, kBestAlgorithm, 100);
}

// Without args.workspace the executor's cached workspace serves (and is
// kept); a too-small explicit workspace and unknown ids are refused.
TEST_F(CudnnConvTest, Workspaces) {
  const ConvolutionShape shape = Shape(Cases()[0]);
  const std::vector<float> x = RandomFloats(shape.input.ElementCount(), 9),
                           w = RandomFloats(shape.filter.ElementCount(), 10);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w), y = Output(shape.output.ElementCount());
  uint64_t largest = 0;
  for (const ConvolutionAlgorithm& a :
       Must(dnn_->GetConvolutionAlgorithms(ConvolutionKind::kForward, shape))) {
    if (!a.available) continue;
    SCOPED_TRACE(a.implementation);
    stream_->ThenConvolve(ConvolutionArgs{shape, dx, dw, y, a.id, {}});
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    EXPECT_TRUE(Matches("y", Download(y), Forward(shape, x, w), Slack(a.name)));
    largest = std::max(largest, a.workspace_bytes);
    if (a.workspace_bytes < 2) continue;
    ScopedDeviceMemory<uint8_t> small =
        Must(exec_->AllocateOwnedArray<uint8_t>(a.workspace_bytes - 1));
    EXPECT_TRUE(HasError(
        dnn_->DoConvolve(stream_.get(), ConvolutionArgs{shape, dx, dw, y, a.id, *small}),
        absl::StatusCode::kInvalidArgument, {"too small", std::to_string(a.workspace_bytes)}));
  }
  EXPECT_GE(static_cast<CuDnn*>(dnn_)->CachedWorkspaceBytes(), largest);
  EXPECT_TRUE(HasError(dnn_->DoConvolve(stream_.get(), ConvolutionArgs{shape, dx, dw, y, 8, {}}),
                       absl::StatusCode::kNotFound, {"algorithm 8", "0 implicit_gemm"}));
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

// Two streams sharing the cached workspace: each convolution waits for the
// previous user, so both results are right.
TEST_F(CudnnConvTest, CachedWorkspaceAcrossStreams) {
  const ConvolutionShape shape = Shape(Cases()[4]);
  std::unique_ptr<Stream> other = Must(exec_->CreateStream());
  const std::vector<float> x = RandomFloats(shape.input.ElementCount(), 11),
                           w = RandomFloats(shape.filter.ElementCount(), 12);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w), y1 = Output(shape.output.ElementCount()),
                      y2 = Output(shape.output.ElementCount());
  for (int i = 0; i < 4; ++i) {
    stream_->ThenConvolve(ConvolutionArgs{shape, dx, dw, y1, kDefaultAlgorithm, {}});
    other->ThenConvolve(ConvolutionArgs{shape, dx, dw, y2, kDefaultAlgorithm, {}});
  }
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(other->BlockHostUntilDone()));
  EXPECT_TRUE(Matches("y1", Download(y1), Forward(shape, x, w)));
  EXPECT_TRUE(Matches("y2", Download(y2), Forward(shape, x, w)));
}

TEST_F(CudnnConvTest, DoubleForward) {
  Case c = Cases()[2];
  c.input.type = DataType::kDouble;
  c.filter.type = DataType::kDouble;
  const ConvolutionShape shape = Shape(c);
  std::vector<double> x(shape.input.ElementCount()), w(shape.filter.ElementCount());
  const std::vector<float> xf = RandomFloats(x.size(), 13), wf = RandomFloats(w.size(), 14);
  for (size_t i = 0; i < x.size(); ++i) x[i] = xf[i] + 1e-10 * static_cast<double>(i);
  for (size_t i = 0; i < w.size(); ++i) w[i] = wf[i];
  DeviceMemory<double> y = Output<double>(shape.output.ElementCount());
  stream_->ThenConvolve(ConvolutionArgs{shape, Upload(x), Upload(w), y, kDefaultAlgorithm, {}});
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_TRUE(Matches("y", Download(y), Forward(shape, x, w)));
}

}  // namespace
}  // namespace rill
