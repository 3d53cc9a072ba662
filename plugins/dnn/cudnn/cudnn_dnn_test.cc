// The cudnn plugin's set-up, everywhere (no GPU needed): registration for
// the cuda platform, the cudnnStatus_t mapping, the mapping of Rill's
// descriptors onto cuDNN's (checked through cuDNN's own getters and
// output-shape functions, which run on the host), creation on a wrong
// executor. With a CUDA device: the plugin is the cuda default and cuDNN's
// errors reach the caller and the stream with the call named.

#include <cudnn.h>

#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "rill/platform/cuda/cuda_platform.h"
#include "rill/plugins/dnn/cudnn/cudnn_descriptors.h"
#include "rill/plugins/dnn/cudnn/cudnn_status.h"
#include "rill/plugins/dnn/cudnn/cudnn_test_util.h"

namespace rill {
namespace {

using testing::HasError;
using testing::IsOk;
using testing::Must;

TEST(CudnnRegistrationTest, RegisteredForTheCudaPlatformAsDefault) {
  bool found = false;
  for (const PluginRegistry::Entry& e : PluginRegistry::Default().List()) {
    if (e.platform != kCudaPlatformId || e.kind != PluginKind::kDnn || e.name != CuDnn::kName)
      continue;
    found = true;
    if (std::getenv("RILL_DNN") == nullptr) {
      EXPECT_TRUE(e.is_default);
    }
  }
  EXPECT_TRUE(found) << "no \"cudnn\" DNN plugin registered for the cuda platform";
  EXPECT_TRUE(
      IsOk(PluginRegistry::Default().CheckRegistered(kCudaPlatformId, PluginKind::kDnn, "cudnn")));
  if (std::getenv("RILL_DNN") == nullptr) {
    EXPECT_EQ(Must(PluginRegistry::Default().DefaultName(kCudaPlatformId, PluginKind::kDnn)),
              "cudnn");
  }
  // The cuda platform itself is listed even without a device.
  EXPECT_TRUE(PlatformManager::Default().PlatformWithName("cuda").ok());
  EXPECT_EQ(CuDnn::LibraryVersion(), CUDNN_VERSION);
}

TEST(CudnnRegistrationTest, RefusesExecutorsOfOtherPlatforms) {
  StreamExecutor* host =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  EXPECT_TRUE(HasError(CuDnn::Create(host).status(), absl::StatusCode::kInvalidArgument,
                       {"cudnn runs on the cuda platform", host->DebugName()}));
  EXPECT_TRUE(
      HasError(CuDnn::Create(nullptr).status(), absl::StatusCode::kInvalidArgument, {"null"}));
}

TEST(CudnnStatusTest, MapsEachCategoryToItsCanonicalCode) {
  EXPECT_TRUE(IsOk(CudnnStatus(CUDNN_STATUS_SUCCESS, "x")));
  EXPECT_TRUE(HasError(CudnnStatus(CUDNN_STATUS_BAD_PARAM, "cudnnConvolutionForward"),
                       absl::StatusCode::kInvalidArgument,
                       {"cudnnConvolutionForward: CUDNN_STATUS_BAD_PARAM (2000)"}));
  EXPECT_TRUE(HasError(CudnnStatus(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "f"),
                       absl::StatusCode::kInvalidArgument,
                       {"CUDNN_STATUS_BAD_PARAM_NULL_POINTER (2002)"}));
  EXPECT_TRUE(HasError(CudnnStatus(CUDNN_STATUS_NOT_SUPPORTED, "f"),
                       absl::StatusCode::kUnimplemented, {"CUDNN_STATUS_NOT_SUPPORTED (3000)"}));
  EXPECT_TRUE(HasError(CudnnStatus(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, "f"),
                       absl::StatusCode::kUnimplemented,
                       {"CUDNN_STATUS_NOT_SUPPORTED_LAYOUT (3004)"}));
  EXPECT_TRUE(HasError(CudnnStatus(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "f"),
                       absl::StatusCode::kResourceExhausted, {"(4003)"}));
  EXPECT_TRUE(HasError(CudnnStatus(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, "f"),
                       absl::StatusCode::kResourceExhausted, {"(4004)"}));
  EXPECT_TRUE(HasError(CudnnStatus(CUDNN_STATUS_NOT_INITIALIZED, "cudnnCreate"),
                       absl::StatusCode::kUnavailable,
                       {"cudnnCreate: CUDNN_STATUS_NOT_INITIALIZED (1001)"}));
  EXPECT_TRUE(HasError(CudnnStatus(CUDNN_STATUS_INTERNAL_ERROR, "f"), absl::StatusCode::kInternal,
                       {"CUDNN_STATUS_INTERNAL_ERROR (4000)"}));
  EXPECT_TRUE(HasError(CudnnStatus(CUDNN_STATUS_EXECUTION_FAILED, "f"), absl::StatusCode::kInternal,
                       {"(5000)"}));
  EXPECT_TRUE(HasError(CudnnStatus(static_cast<cudnnStatus_t>(1234), "f"),
                       absl::StatusCode::kInternal, {"CUDNN_UNKNOWN_STATUS (1234)"}));
  EXPECT_TRUE(HasError(CudnnStatus(CUDNN_STATUS_BAD_PARAM, "f", "k must be > 0"),
                       absl::StatusCode::kInvalidArgument,
                       {"f: CUDNN_STATUS_BAD_PARAM (2000): k must be > 0"}));
}

// A real failing call (descriptors need no GPU) keeps cuDNN's explanation.
TEST(CudnnStatusTest, FailingCallsNameTheCallAndCudnnsReason) {
  const absl::Status status = cudnn::MakeTensor({.n = -1, .c = 2, .h = 3, .w = 4}).status();
  EXPECT_TRUE(HasError(status, absl::StatusCode::kInvalidArgument,
                       {"cudnnSetTensor4dDescriptor", "CUDNN_STATUS_BAD_PARAM (2000)"}));
  EXPECT_TRUE(HasError(cudnn::MakeTensor({.n = int64_t{1} << 40, .c = 2, .h = 3, .w = 4}).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"1099511627776", "does not fit cuDNN's int"}));
  EXPECT_TRUE(HasError(cudnn::MakeLrn({.size = 17}).status(), absl::StatusCode::kInvalidArgument,
                       {"cudnnSetLRNDescriptor", "CUDNN_STATUS_BAD_PARAM"}));
}

TEST(CudnnDescriptorTest, TensorsKeepLayoutSizesAndType) {
  for (DataLayout layout : {DataLayout::kNCHW, DataLayout::kNHWC}) {
    for (DataType type : {DataType::kFloat, DataType::kDouble}) {
      const TensorDescriptor t{.n = 2, .c = 3, .h = 4, .w = 5, .layout = layout, .type = type};
      cudnn::TensorDesc desc = Must(cudnn::MakeTensor(t));
      cudnnDataType_t got_type;
      int n, c, h, w, ns, cs, hs, ws;
      ASSERT_EQ(
          cudnnGetTensor4dDescriptor(desc.get(), &got_type, &n, &c, &h, &w, &ns, &cs, &hs, &ws),
          CUDNN_STATUS_SUCCESS);
      EXPECT_EQ(got_type, type == DataType::kDouble ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT);
      EXPECT_EQ(std::vector<int>({n, c, h, w}), std::vector<int>({2, 3, 4, 5}));
      // Each stride is the distance Rill's Offset() gives for that axis.
      EXPECT_EQ(std::vector<int64_t>({ns, cs, hs, ws}),
                std::vector<int64_t>({t.Offset(1, 0, 0, 0), t.Offset(0, 1, 0, 0),
                                      t.Offset(0, 0, 1, 0), t.Offset(0, 0, 0, 1)}));
    }
  }
  cudnn::TensorDesc bias = Must(cudnn::MakeChannelVector({.n = 2, .c = 3, .h = 4, .w = 5}));
  cudnnDataType_t type;
  int n, c, h, w, ns, cs, hs, ws;
  ASSERT_EQ(cudnnGetTensor4dDescriptor(bias.get(), &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(std::vector<int>({n, c, h, w}), std::vector<int>({1, 3, 1, 1}));
}

// cuDNN's output shape for Rill's descriptors equals ConvolutionOutput:
// padding, stride, dilation and the group split (filter input channels per
// group) mean the same on both sides.
TEST(CudnnDescriptorTest, ConvolutionOutputMatchesCudnn) {
  struct Case {
    TensorDescriptor input;
    FilterDescriptor filter;
    ConvolutionDescriptor conv;
  };
  const std::vector<Case> cases = {
      {{.n = 2, .c = 3, .h = 7, .w = 6},
       {.output_channels = 4, .input_channels = 3, .height = 3, .width = 3},
       {.pad_h = 1, .pad_w = 1}},
      {{.n = 1, .c = 5, .h = 11, .w = 9},
       {.output_channels = 3, .input_channels = 5, .height = 3, .width = 2},
       {.pad_h = 2, .pad_w = 0, .stride_h = 2, .stride_w = 1, .dilation_h = 2, .dilation_w = 3}},
      {{.n = 2, .c = 4, .h = 6, .w = 7, .layout = DataLayout::kNHWC},
       {.output_channels = 6,
        .input_channels = 2,
        .height = 3,
        .width = 2,
        .layout = FilterLayout::kOHWI},
       {.pad_h = 1,
        .pad_w = 1,
        .stride_h = 1,
        .stride_w = 2,
        .dilation_h = 1,
        .dilation_w = 2,
        .group_count = 2}},
      {{.n = 1, .c = 4, .h = 5, .w = 5, .type = DataType::kDouble},
       {.output_channels = 4,
        .input_channels = 1,
        .height = 3,
        .width = 3,
        .type = DataType::kDouble},
       {.pad_h = 1, .pad_w = 1, .stride_h = 2, .stride_w = 2, .group_count = 4}},
  };
  for (const Case& k : cases) {
    const TensorDescriptor expected = Must(ConvolutionOutput(k.input, k.filter, k.conv));
    SCOPED_TRACE(expected.ToString());
    cudnn::TensorDesc x = Must(cudnn::MakeTensor(k.input));
    cudnn::FilterDesc w = Must(cudnn::MakeFilter(k.filter, k.filter.layout));
    cudnn::ConvolutionDesc conv = Must(cudnn::MakeConvolution(k.conv, k.input.type));
    int n, c, h, wd;
    ASSERT_EQ(cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), w.get(), &n, &c, &h, &wd),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>({n, c, h, wd}),
              std::vector<int64_t>({expected.n, expected.c, expected.h, expected.w}));
    int groups = 0;
    cudnnMathType_t math;
    ASSERT_EQ(cudnnGetConvolutionGroupCount(conv.get(), &groups), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnGetConvolutionMathType(conv.get(), &math), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(groups, k.conv.group_count);
    EXPECT_EQ(math, CUDNN_FMA_MATH);  // No TF32.
  }
}

TEST(CudnnDescriptorTest, PoolingOutputMatchesCudnn) {
  const TensorDescriptor x{.n = 2, .c = 5, .h = 6, .w = 7};
  for (const PoolingDescriptor& p :
       {PoolingDescriptor{.window_h = 2, .window_w = 2, .stride_h = 2, .stride_w = 2},
        PoolingDescriptor{.mode = PoolingMode::kAverageExcludePadding,
        .window_h = 3,
        .window_w = 2,
        .pad_h = 1,
        .pad_w = 1,
        .stride_h = 2,
        .stride_w = 1}}) {
    const TensorDescriptor expected = Must(PoolingOutput(x, p));
    cudnn::PoolingDesc pool = Must(cudnn::MakePooling(p));
    cudnn::TensorDesc xd = Must(cudnn::MakeTensor(x));
    int n, c, h, w;
    ASSERT_EQ(cudnnGetPooling2dForwardOutputDim(pool.get(), xd.get(), &n, &c, &h, &w),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>({n, c, h, w}),
              std::vector<int64_t>({expected.n, expected.c, expected.h, expected.w}));
  }
}

TEST(CudnnDescriptorTest, ActivationsCarryTheirCoefficient) {
  cudnn::ActivationDesc clipped = Must(cudnn::MakeActivation({ActivationMode::kClippedRelu, 6}));
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef = 0;
  ASSERT_EQ(cudnnGetActivationDescriptor(clipped.get(), &mode, &nan, &coef), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(mode, CUDNN_ACTIVATION_CLIPPED_RELU);
  EXPECT_EQ(coef, 6);
  cudnn::ActivationDesc elu = Must(cudnn::MakeActivation({ActivationMode::kElu, 0.5}));
  ASSERT_EQ(cudnnGetActivationDescriptor(elu.get(), &mode, &nan, &coef), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(mode, CUDNN_ACTIVATION_ELU);
  EXPECT_EQ(coef, 0.5);
}

// --- With a CUDA device.

using CudnnPluginTest = testing::CudnnTest;

TEST_F(CudnnPluginTest, IsTheCudaDefaultDnn) {
  if (std::getenv("RILL_DNN") == nullptr) {
    EXPECT_EQ(Must(exec_->PluginName(PluginKind::kDnn)), "cudnn");
  }
}

TEST_F(CudnnPluginTest, CudnnErrorsNameTheOpAndReachTheStream) {
  const TensorDescriptor t{.n = 1, .c = 20, .h = 2, .w = 2};
  DeviceMemory<float> x = Upload(testing::RandomFloats(t.ElementCount(), 1)),
                      y = Output(t.ElementCount());
  // cuDNN's LRN windows hold at most 16 channels.
  const LrnArgs lrn{{.size = 17}, t, x, y};
  EXPECT_TRUE(
      HasError(dnn_->DoLrn(stream_.get(), lrn), absl::StatusCode::kInvalidArgument,
               {"cudnn lrn size 17", "cudnnSetLRNDescriptor", "CUDNN_STATUS_BAD_PARAM (2000)"}));
  stream_->ThenLrn(lrn);
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"cudnnSetLRNDescriptor"}));
}

}  // namespace
}  // namespace rill
