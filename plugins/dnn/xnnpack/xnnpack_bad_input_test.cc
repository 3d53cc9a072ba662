// Bad input to the DNN interface through the XNNPACK plugin alone (no
// fallback): DnnSupport's checks give InvalidArgument naming the values
// before the plugin is reached; what XNNPACK does not support is
// Unimplemented with Supports()'s reason; errors land in the stream with
// the call's context.

#include <vector>

#include "rill/plugins/dnn/xnnpack/xnnpack_test_util.h"

namespace rill {
namespace {

using absl::StatusCode;
using testing::HasError;
using testing::IsOk;
using testing::Must;

class XnnpackBadInputTest : public testing::XnnpackTest {
 protected:
  void SetUp() override {
    testing::XnnpackTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    shape_ = ConvolutionShape{{.n = 1, .c = 4, .h = 6, .w = 6, .layout = DataLayout::kNHWC},
                              {.output_channels = 2,
                               .input_channels = 4,
                               .height = 3,
                               .width = 3,
                               .layout = FilterLayout::kOHWI},
                              {.pad_h = 1, .pad_w = 1},
                              {.n = 1, .c = 2, .h = 6, .w = 6, .layout = DataLayout::kNHWC}};
    x_ = Upload(std::vector<float>(shape_.input.ElementCount(), 1));
    w_ = Upload(std::vector<float>(shape_.filter.ElementCount(), 1));
    y_ = Upload(std::vector<float>(shape_.output.ElementCount(), 0));
  }
  ConvolutionArgs Args() const {
    return ConvolutionArgs{shape_, x_, w_, y_, kDefaultAlgorithm, {}};
  }
  absl::Status Convolve(const ConvolutionArgs& args) {
    return dnn_->DoConvolve(stream_.get(), args);
  }

  ConvolutionShape shape_;
  DeviceMemory<float> x_, w_, y_;
};

TEST_P(XnnpackBadInputTest, GoodArgumentsWork) {
  ASSERT_TRUE(IsOk(Convolve(Args())));
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

TEST_P(XnnpackBadInputTest, ShapeMismatchesAreInvalidArgument) {
  ConvolutionArgs a = Args();
  a.input = Must(x_.GetSlice(0, 10));
  EXPECT_TRUE(
      HasError(Convolve(a), StatusCode::kInvalidArgument, {"input", "too small", "576 bytes"}));
  a = Args();
  a.shape.output.h = 5;
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kInvalidArgument, {"does not match"}));
  a = Args();
  a.shape.filter.input_channels = 3;
  EXPECT_TRUE(
      HasError(Convolve(a), StatusCode::kInvalidArgument, {"per group 3", "input channels 4"}));
  a = Args();
  a.shape.conv.stride_w = 0;
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kInvalidArgument, {"stride_w=0"}));
  a = Args();
  a.filter = DeviceMemoryBase();
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kInvalidArgument, {"filter is null"}));
  const TensorDescriptor t{.n = 1, .c = 4, .h = 6, .w = 6, .layout = DataLayout::kNHWC};
  EXPECT_TRUE(
      HasError(dnn_->DoActivate(stream_.get(), ActivationArgs{{}, t, x_, Must(y_.GetSlice(0, 8))}),
               StatusCode::kInvalidArgument, {"y", "too small"}));
  EXPECT_TRUE(HasError(
      dnn_->DoActivate(stream_.get(), ActivationArgs{{ActivationMode::kClippedRelu, 0}, t, x_, x_}),
      StatusCode::kInvalidArgument, {"coefficient"}));
  const PoolingDescriptor p{.window_h = 2, .window_w = 2, .stride_h = 2, .stride_w = 2};
  const TensorDescriptor wrong{.n = 1, .c = 4, .h = 2, .w = 3, .layout = DataLayout::kNHWC};
  EXPECT_TRUE(HasError(dnn_->DoPoolForward(stream_.get(), PoolArgs{p, t, wrong, x_, y_}),
                       StatusCode::kInvalidArgument, {"[1, 4, 2, 3]", "[1, 4, 3, 3]"}));
  EXPECT_TRUE(
      HasError(dnn_->DoBiasAdd(stream_.get(), BiasAddArgs{t, x_, Must(w_.GetSlice(0, 3)), x_}),
               StatusCode::kInvalidArgument, {"bias", "16 bytes"}));
  EXPECT_TRUE(HasError(dnn_->DoSoftmax(stream_.get(), SoftmaxArgs{t, false, x_, {}}),
                       StatusCode::kInvalidArgument, {"y is null"}));
  EXPECT_TRUE(HasError(dnn_->DoConvolve(nullptr, Args()), StatusCode::kInvalidArgument,
                       {"stream is null"}));
}

// Without a fallback, what XNNPACK does not support fails with the reason.
TEST_P(XnnpackBadInputTest, UnsupportedIsUnimplementedWithTheReason) {
  ConvolutionArgs a = Args();
  a.shape.input.layout = a.shape.output.layout = DataLayout::kNCHW;
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kUnimplemented,
                       {"xnnpack", "NCHW tensors (it computes NHWC)"}));
  EXPECT_TRUE(HasError(dnn_->DoConvolveBackwardData(stream_.get(), Args()),
                       StatusCode::kUnimplemented, {"xnnpack", "forward convolutions only"}));
  const TensorDescriptor t{.n = 1, .c = 4, .h = 6, .w = 6, .layout = DataLayout::kNHWC};
  EXPECT_TRUE(HasError(dnn_->DoLrn(stream_.get(), LrnArgs{{}, t, x_, x_}),
                       StatusCode::kUnimplemented, {"LRN"}));
  EXPECT_TRUE(
      HasError(dnn_->DoActivate(stream_.get(), ActivationArgs{{ActivationMode::kTanh}, t, x_, x_}),
               StatusCode::kUnimplemented, {"tanh"}));
  const TensorDescriptor td{
      .n = 1, .c = 4, .h = 6, .w = 6, .layout = DataLayout::kNHWC, .type = DataType::kDouble};
  DeviceMemory<double> xd = Must(exec_->AllocateArray<double>(td.ElementCount()));
  EXPECT_TRUE(HasError(dnn_->DoSoftmax(stream_.get(), SoftmaxArgs{td, false, xd, xd}),
                       StatusCode::kUnimplemented, {"double"}));
  EXPECT_TRUE(IsOk(exec_->Deallocate(&xd)));
}

TEST_P(XnnpackBadInputTest, OtherExecutorsStream) {
  Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
  if (host->VisibleDeviceCount() < 2)
    GTEST_SKIP() << "needs two host devices (RILL_HOST_DEVICES=2)";
  StreamExecutor* other = Must(host->ExecutorForDevice(1 - GetParam()));
  auto other_stream = Must(other->CreateStream());
  ScopedDeviceMemory<float> ox =
      Must(other->AllocateOwnedArray<float>(shape_.input.ElementCount()));
  ScopedDeviceMemory<float> ow =
      Must(other->AllocateOwnedArray<float>(shape_.filter.ElementCount()));
  ScopedDeviceMemory<float> oy =
      Must(other->AllocateOwnedArray<float>(shape_.output.ElementCount()));
  const ConvolutionArgs foreign{shape_, *ox, *ow, *oy, kDefaultAlgorithm, {}};
  EXPECT_TRUE(HasError(dnn_->DoConvolve(other_stream.get(), foreign), StatusCode::kInvalidArgument,
                       {"stream belongs to", "xnnpack", "AsDnn()"}));
}

TEST_P(XnnpackBadInputTest, StreamKeepsTheFirstErrorWithContext) {
  ConvolutionArgs bad = Args();
  bad.shape.conv.stride_h = 0;
  stream_->ThenConvolve(bad).ThenConvolve(Args());
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), StatusCode::kInvalidArgument,
                       {"ThenConvolve", "[xnnpack]", "stride_h=0"}));
  auto fresh = Must(exec_->CreateStream());
  ConvolutionArgs unknown = Args();
  unknown.algorithm = 9;
  fresh->ThenConvolve(unknown);
  EXPECT_TRUE(HasError(fresh->BlockHostUntilDone(), StatusCode::kNotFound,
                       {"ThenConvolve", "algorithm 9"}));
}

INSTANTIATE_TEST_SUITE_P(HostDevices, XnnpackBadInputTest, ::testing::Values(0, 1),
                         testing::DeviceName);

}  // namespace
}  // namespace rill
