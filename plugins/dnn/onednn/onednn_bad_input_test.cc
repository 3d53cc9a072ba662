// Bad input to the DNN interface through the oneDNN plugin: each case gets
// its status code and the values in its message, called directly
// (DnnSupport::Do*) and through a stream (the error lands in
// stream->status() with the call's context, and later calls are skipped).

#include <vector>

#include "rill/plugins/dnn/onednn/onednn_test_util.h"

namespace rill {
namespace {

using absl::StatusCode;
using testing::HasError;
using testing::IsOk;
using testing::Must;

class OneDnnBadInputTest : public testing::OneDnnTest {
 protected:
  void SetUp() override {
    testing::OneDnnTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    shape_ = ConvolutionShape{{.n = 1, .c = 4, .h = 6, .w = 6},
                              {.output_channels = 2, .input_channels = 4, .height = 3, .width = 3},
                              {.pad_h = 1, .pad_w = 1},
                              {.n = 1, .c = 2, .h = 6, .w = 6}};
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

TEST_P(OneDnnBadInputTest, GoodArgumentsWork) {
  ASSERT_TRUE(IsOk(Convolve(Args())));
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

TEST_P(OneDnnBadInputTest, ShapeMismatches) {
  ConvolutionArgs a = Args();
  a.input = Must(x_.GetSlice(0, 10));
  EXPECT_TRUE(
      HasError(Convolve(a), StatusCode::kInvalidArgument, {"input", "too small", "576 bytes"}));
  a = Args();
  a.shape.output.h = 5;
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kInvalidArgument,
                       {"[1, 2, 5, 6]", "does not match", "[1, 2, 6, 6]"}));
  a = Args();
  a.shape.filter.input_channels = 3;
  EXPECT_TRUE(
      HasError(Convolve(a), StatusCode::kInvalidArgument, {"per group 3", "input channels 4"}));
  // Activation: y holds fewer floats than the descriptor.
  TensorDescriptor t{.n = 1, .c = 4, .h = 6, .w = 6};
  DeviceMemory<float> small = Must(y_.GetSlice(0, 8));
  EXPECT_TRUE(HasError(dnn_->DoActivate(stream_.get(), ActivationArgs{{}, t, x_, small}),
                       StatusCode::kInvalidArgument, {"y", "too small", "576 bytes"}));
  // Pooling: y descriptor not the pooling output.
  PoolingDescriptor p{.window_h = 2, .window_w = 2, .stride_h = 2, .stride_w = 2};
  TensorDescriptor yt{.n = 1, .c = 4, .h = 2, .w = 3};
  EXPECT_TRUE(HasError(dnn_->DoPoolForward(stream_.get(), PoolArgs{p, t, yt, x_, y_}),
                       StatusCode::kInvalidArgument, {"[1, 4, 2, 3]", "[1, 4, 3, 3]"}));
  // Bias shorter than the channels.
  EXPECT_TRUE(
      HasError(dnn_->DoBiasAdd(stream_.get(), BiasAddArgs{t, x_, Must(w_.GetSlice(0, 3)), x_}),
               StatusCode::kInvalidArgument, {"bias", "16 bytes"}));
}

TEST_P(OneDnnBadInputTest, ConvolutionParameters) {
  ConvolutionArgs a = Args();
  a.shape.conv.pad_h = -1;
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kInvalidArgument, {"pad_h=-1", ">= 0"}));
  a = Args();
  a.shape.conv.stride_w = 0;
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kInvalidArgument, {"stride_w=0", ">= 1"}));
  a = Args();
  a.shape.conv.dilation_h = 4;  // 3 taps dilated by 4 span 9 > 6 + 2.
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kInvalidArgument,
                       {"dilation 4", "spans 9", "6 + 2x1 = 8", "empty"}));
  a = Args();
  a.shape.conv.group_count = 3;
  EXPECT_TRUE(
      HasError(Convolve(a), StatusCode::kInvalidArgument, {"input channels 4", "group_count 3"}));
  PoolingDescriptor p{.window_h = 2, .window_w = 2, .stride_h = 0, .stride_w = 2};
  TensorDescriptor t{.n = 1, .c = 4, .h = 6, .w = 6};
  EXPECT_TRUE(HasError(dnn_->DoPoolForward(stream_.get(), PoolArgs{p, t, t, x_, y_}),
                       StatusCode::kInvalidArgument, {"stride_h=0"}));
}

TEST_P(OneDnnBadInputTest, Algorithms) {
  ConvolutionArgs a = Args();
  a.algorithm = 7;
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kNotFound,
                       {"algorithm 7", "0 auto, 1 direct, 2 winograd"}));
  a.algorithm = -5;
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kNotFound, {"algorithm -5"}));
  // An algorithm oneDNN cannot run for this shape (winograd on a 4-channel
  // 3x3 conv, where it is unavailable) is Unimplemented with the reason.
  for (const ConvolutionAlgorithm& alg :
       Must(dnn_->GetConvolutionAlgorithms(ConvolutionKind::kForward, shape_))) {
    if (alg.available) continue;
    a.algorithm = alg.id;
    EXPECT_TRUE(
        HasError(Convolve(a), StatusCode::kUnimplemented, {alg.name, "not available", "oneDNN"}));
  }
}

TEST_P(OneDnnBadInputTest, WorkspaceTooSmall) {
  // Backward filter of a plain-layout conv uses gemm with an im2col
  // scratchpad; find a direction that needs a workspace.
  for (ConvolutionKind kind : {ConvolutionKind::kBackwardFilter, ConvolutionKind::kForward,
                               ConvolutionKind::kBackwardData}) {
    const ConvolutionAlgorithm auto_alg = Must(dnn_->GetConvolutionAlgorithms(kind, shape_))[0];
    if (auto_alg.workspace_bytes == 0) continue;
    ScopedDeviceMemory<uint8_t> ws =
        Must(exec_->AllocateOwnedArray<uint8_t>(auto_alg.workspace_bytes - 1));
    ConvolutionArgs a = Args();
    a.workspace = *ws;
    a.algorithm = OneDnn::kAuto;
    absl::Status s = kind == ConvolutionKind::kForward ? dnn_->DoConvolve(stream_.get(), a)
                     : kind == ConvolutionKind::kBackwardData
                         ? dnn_->DoConvolveBackwardData(stream_.get(), a)
                         : dnn_->DoConvolveBackwardFilter(stream_.get(), a);
    EXPECT_TRUE(
        HasError(s, StatusCode::kInvalidArgument,
                 {"workspace", "too small", std::to_string(auto_alg.workspace_bytes) + " bytes"}));
    return;
  }
  GTEST_SKIP() << "no direction of this shape needs a workspace on this machine";
}

TEST_P(OneDnnBadInputTest, NullBuffersAndStream) {
  ConvolutionArgs a = Args();
  a.filter = DeviceMemoryBase();
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kInvalidArgument, {"filter is null"}));
  EXPECT_TRUE(HasError(dnn_->DoConvolve(nullptr, Args()), StatusCode::kInvalidArgument,
                       {"stream is null"}));
  TensorDescriptor t{.n = 1, .c = 4, .h = 6, .w = 6};
  EXPECT_TRUE(HasError(dnn_->DoSoftmax(stream_.get(), SoftmaxArgs{t, false, x_, {}}),
                       StatusCode::kInvalidArgument, {"y is null"}));
}

TEST_P(OneDnnBadInputTest, DoubleIsUnimplemented) {
  ConvolutionArgs a = Args();
  a.shape.input.type = a.shape.filter.type = a.shape.output.type = DataType::kDouble;
  DeviceMemory<double> xd = Must(exec_->AllocateArray<double>(a.shape.input.ElementCount()));
  DeviceMemory<double> wd = Must(exec_->AllocateArray<double>(a.shape.filter.ElementCount()));
  DeviceMemory<double> yd = Must(exec_->AllocateArray<double>(a.shape.output.ElementCount()));
  a.input = xd;
  a.filter = wd;
  a.output = yd;
  EXPECT_TRUE(HasError(Convolve(a), StatusCode::kUnimplemented, {"double", "float"}));
  TensorDescriptor t{.n = 1, .c = 4, .h = 6, .w = 6, .type = DataType::kDouble};
  EXPECT_TRUE(HasError(dnn_->DoLrn(stream_.get(), LrnArgs{{}, t, xd, xd}),
                       StatusCode::kUnimplemented, {"double"}));
  // An even LRN window, which oneDNN centres differently from cuDNN.
  TensorDescriptor tf{.n = 1, .c = 4, .h = 6, .w = 6};
  EXPECT_TRUE(HasError(dnn_->DoLrn(stream_.get(), LrnArgs{{.size = 4}, tf, x_, x_}),
                       StatusCode::kUnimplemented, {"even size 4"}));
  for (DeviceMemoryBase* m : std::vector<DeviceMemoryBase*>{&xd, &wd, &yd})
    EXPECT_TRUE(IsOk(exec_->Deallocate(m)));
}

TEST_P(OneDnnBadInputTest, OtherExecutorsMemoryAndStream) {
  Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
  if (host->VisibleDeviceCount() < 2)
    GTEST_SKIP() << "needs two host devices (RILL_HOST_DEVICES=2)";
  StreamExecutor* other = Must(host->ExecutorForDevice(1 - GetParam()));
  ScopedDeviceMemory<float> foreign =
      Must(other->AllocateOwnedArray<float>(shape_.input.ElementCount()));
  ConvolutionArgs a = Args();
  a.input = *foreign;
  EXPECT_TRUE(
      HasError(Convolve(a), StatusCode::kInvalidArgument, {"input", "is not in an allocation of"}));
  // The other executor's stream and buffers, given to this executor's plugin.
  auto other_stream = Must(other->CreateStream());
  ScopedDeviceMemory<float> ow =
      Must(other->AllocateOwnedArray<float>(shape_.filter.ElementCount()));
  ScopedDeviceMemory<float> oy =
      Must(other->AllocateOwnedArray<float>(shape_.output.ElementCount()));
  EXPECT_TRUE(
      HasError(dnn_->DoConvolve(other_stream.get(),
                                ConvolutionArgs{shape_, *foreign, *ow, *oy, kDefaultAlgorithm, {}}),
               StatusCode::kInvalidArgument, {"stream belongs to", "onednn", "AsDnn()"}));
}

TEST_P(OneDnnBadInputTest, StreamKeepsTheFirstErrorWithContext) {
  ConvolutionArgs bad = Args();
  bad.shape.conv.stride_h = 0;
  stream_->ThenConvolve(bad).ThenConvolve(Args());
  absl::Status s = stream_->BlockHostUntilDone();
  EXPECT_TRUE(HasError(
      s, StatusCode::kInvalidArgument,
      {"ThenConvolve", "input float NCHW [1, 4, 6, 6]", "stride 0x1", "[onednn]", "stride_h=0"}));
  EXPECT_FALSE(stream_->ok());
  auto fresh = Must(exec_->CreateStream());
  ConvolutionArgs unknown = Args();
  unknown.algorithm = 9;
  fresh->ThenConvolveBackwardData(unknown);
  EXPECT_TRUE(HasError(fresh->BlockHostUntilDone(), StatusCode::kNotFound,
                       {"ThenConvolveBackwardData", "algorithm 9"}));
  auto third = Must(exec_->CreateStream());
  BatchNormTrainingArgs bn{{.n = 1, .c = 4, .h = 6, .w = 6}, x_, w_, w_, x_, {}, {}, w_, w_};
  bn.exponential_average_factor = 2;
  third->ThenBatchNormForwardTraining(bn);
  EXPECT_TRUE(HasError(third->BlockHostUntilDone(), StatusCode::kInvalidArgument,
                       {"ThenBatchNormForwardTraining", "exponential_average_factor=2"}));
}

INSTANTIATE_TEST_SUITE_P(HostDevices, OneDnnBadInputTest, ::testing::Values(0, 1),
                         testing::DeviceName);

}  // namespace
}  // namespace rill
