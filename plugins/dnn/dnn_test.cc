// Tests of the DNN descriptors and shape rules (plugins/dnn/dnn_descriptors.h),
// and of the Stream::Then* DNN calls on an executor without a DNN plugin.
// No library needed.

#include "rill/plugins/dnn/dnn.h"

#include "gtest/gtest.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using testing::HasError;
using testing::IsOk;
using testing::Must;

TEST(DnnDescriptors, OffsetsFollowTheLayout) {
  TensorDescriptor nchw{.n = 2, .c = 3, .h = 4, .w = 5};
  TensorDescriptor nhwc = nchw;
  nhwc.layout = DataLayout::kNHWC;
  EXPECT_EQ(nchw.Offset(1, 2, 3, 4), ((1 * 3 + 2) * 4 + 3) * 5 + 4);
  EXPECT_EQ(nhwc.Offset(1, 2, 3, 4), ((1 * 4 + 3) * 5 + 4) * 3 + 2);
  EXPECT_EQ(nchw.ElementCount(), 120);
  EXPECT_EQ(nchw.Bytes(), 480u);
  nchw.type = DataType::kDouble;
  EXPECT_EQ(nchw.Bytes(), 960u);
  FilterDescriptor oihw{.output_channels = 4, .input_channels = 3, .height = 2, .width = 2};
  FilterDescriptor ohwi = oihw;
  ohwi.layout = FilterLayout::kOHWI;
  EXPECT_EQ(oihw.Offset(3, 2, 1, 0), ((3 * 3 + 2) * 2 + 1) * 2 + 0);
  EXPECT_EQ(ohwi.Offset(3, 2, 1, 0), ((3 * 2 + 1) * 2 + 0) * 3 + 2);
  EXPECT_EQ(nhwc.ToString(), "float NHWC [2, 3, 4, 5]");
  EXPECT_EQ(ohwi.ToString(), "float OHWI [4, 3, 2, 2]");
}

TEST(DnnDescriptors, ConvolutionOutputShape) {
  TensorDescriptor x{.n = 2, .c = 8, .h = 10, .w = 9, .layout = DataLayout::kNHWC};
  FilterDescriptor w{.output_channels = 6, .input_channels = 4, .height = 3, .width = 2};
  ConvolutionDescriptor conv{.pad_h = 1,
                             .pad_w = 0,
                             .stride_h = 2,
                             .stride_w = 1,
                             .dilation_h = 2,
                             .dilation_w = 3,
                             .group_count = 2};
  absl::StatusOr<TensorDescriptor> y = ConvolutionOutput(x, w, conv);
  ASSERT_TRUE(IsOk(y.status()));
  // h: (10 + 2 - 5) / 2 + 1 = 4; w: (9 - 4) / 1 + 1 = 6.
  EXPECT_EQ(*y, (TensorDescriptor{.n = 2, .c = 6, .h = 4, .w = 6, .layout = DataLayout::kNHWC}));
}

TEST(DnnDescriptors, ConvolutionRejectsBadParameters) {
  TensorDescriptor x{.n = 1, .c = 6, .h = 5, .w = 5};
  FilterDescriptor w{.output_channels = 4, .input_channels = 3, .height = 3, .width = 3};
  ConvolutionDescriptor ok{.group_count = 2};
  ASSERT_TRUE(IsOk(ConvolutionOutput(x, w, ok).status()));

  ConvolutionDescriptor c = ok;
  c.pad_w = -1;
  EXPECT_TRUE(HasError(ConvolutionOutput(x, w, c).status(), absl::StatusCode::kInvalidArgument,
                       {"pad_w=-1"}));
  c = ok;
  c.stride_h = 0;
  EXPECT_TRUE(HasError(ConvolutionOutput(x, w, c).status(), absl::StatusCode::kInvalidArgument,
                       {"stride_h=0"}));
  c = ok;
  c.dilation_h = 0;
  EXPECT_TRUE(HasError(ConvolutionOutput(x, w, c).status(), absl::StatusCode::kInvalidArgument,
                       {"dilation_h=0"}));
  c = ok;
  c.dilation_w = 3;  // Window 3 dilated by 3 spans 7 > 5.
  EXPECT_TRUE(HasError(ConvolutionOutput(x, w, c).status(), absl::StatusCode::kInvalidArgument,
                       {"spans 7", "5 + 2x0 = 5", "empty"}));
  c = ok;
  c.group_count = 4;  // 6 channels in 4 groups.
  EXPECT_TRUE(HasError(ConvolutionOutput(x, w, c).status(), absl::StatusCode::kInvalidArgument,
                       {"input channels 6", "group_count 4"}));
  c = ok;
  c.group_count =
      3;  // 6 / 3 = 2 per group, but the filter says 3; and 4 outputs do not split in 3.
  EXPECT_TRUE(HasError(ConvolutionOutput(x, w, c).status(), absl::StatusCode::kInvalidArgument,
                       {"output channels 4", "group_count 3"}));
  c = ok;
  c.group_count = 1;
  EXPECT_TRUE(HasError(ConvolutionOutput(x, w, c).status(), absl::StatusCode::kInvalidArgument,
                       {"per group 3", "!= input channels 6"}));
  TensorDescriptor empty = x;
  empty.h = 0;
  EXPECT_TRUE(HasError(ConvolutionOutput(empty, w, ok).status(), absl::StatusCode::kInvalidArgument,
                       {"size < 1"}));
  FilterDescriptor dw = w;
  dw.type = DataType::kDouble;
  EXPECT_TRUE(HasError(ConvolutionOutput(x, dw, ok).status(), absl::StatusCode::kInvalidArgument,
                       {"double"}));
}

TEST(DnnDescriptors, CheckConvolutionShapeComparesTheOutput) {
  ConvolutionShape s{{.n = 1, .c = 2, .h = 4, .w = 4},
                     {.output_channels = 3, .input_channels = 2, .height = 3, .width = 3},
                     {},
                     {.n = 1, .c = 3, .h = 2, .w = 2, .layout = DataLayout::kNHWC}};
  EXPECT_TRUE(IsOk(CheckConvolutionShape(s)));  // Layouts may differ.
  s.output.w = 3;
  EXPECT_TRUE(HasError(CheckConvolutionShape(s), absl::StatusCode::kInvalidArgument,
                       {"[1, 3, 2, 3]", "does not match", "[1, 3, 2, 2]"}));
}

TEST(DnnDescriptors, PoolingOutputShape) {
  TensorDescriptor x{.n = 1, .c = 2, .h = 7, .w = 6};
  PoolingDescriptor p{.mode = PoolingMode::kMax,
                      .window_h = 3,
                      .window_w = 2,
                      .pad_h = 1,
                      .pad_w = 0,
                      .stride_h = 2,
                      .stride_w = 2};
  absl::StatusOr<TensorDescriptor> y = PoolingOutput(x, p);
  ASSERT_TRUE(IsOk(y.status()));
  EXPECT_EQ(y->h, 4);  // (7 + 2 - 3) / 2 + 1
  EXPECT_EQ(y->w, 3);  // (6 - 2) / 2 + 1
  PoolingDescriptor bad = p;
  bad.stride_w = 0;
  EXPECT_TRUE(
      HasError(PoolingOutput(x, bad).status(), absl::StatusCode::kInvalidArgument, {"stride_w=0"}));
  bad = p;
  bad.pad_h = -2;
  EXPECT_TRUE(
      HasError(PoolingOutput(x, bad).status(), absl::StatusCode::kInvalidArgument, {"pad_h=-2"}));
  bad = p;
  bad.pad_h = 3;
  EXPECT_TRUE(HasError(PoolingOutput(x, bad).status(), absl::StatusCode::kInvalidArgument,
                       {"padding 3x0", "window 3x2"}));
  bad = p;
  bad.window_w = 9;
  EXPECT_TRUE(
      HasError(PoolingOutput(x, bad).status(), absl::StatusCode::kInvalidArgument, {"empty"}));
}

TEST(DnnDescriptors, Names) {
  EXPECT_STREQ(PoolingModeName(PoolingMode::kAverageExcludePadding), "avg_exclude_pad");
  EXPECT_STREQ(ActivationModeName(ActivationMode::kClippedRelu), "clipped_relu");
  EXPECT_STREQ(ConvolutionKindName(ConvolutionKind::kBackwardFilter), "backward_filter");
  EXPECT_EQ((ConvolutionDescriptor{.pad_h = 1, .pad_w = 2}).ToString(),
            "pad 1x2 stride 1x1 dilation 1x1 groups 1");
  EXPECT_EQ((LrnDescriptor{}).ToString(), "lrn size 5 alpha 0.0001 beta 0.75 k 2");
}

// This binary links no DNN plugin: the stream says so, with the call.
TEST(DnnStream, WithoutPluginIsUnimplemented) {
  Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
  StreamExecutor* exec = Must(host->ExecutorForDevice(0));
  EXPECT_EQ(exec->AsDnn(), nullptr);
  auto stream = Must(exec->CreateStream());
  TensorDescriptor x{.n = 1, .c = 1, .h = 2, .w = 2};
  stream->ThenSoftmax(x, DeviceMemory<float>(), nullptr);
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kUnimplemented,
                       {"ThenSoftmax", "DNN"}));
}

}  // namespace
}  // namespace rill
