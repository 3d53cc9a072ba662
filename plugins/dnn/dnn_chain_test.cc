// Fallback chains of DNN plugins (plugins/plugin_chain.h): a call the first
// plugin does not support runs on the next and is counted; chains from
// SetPlugin and RILL_DNN; calls that choose their plugin; a fused
// convolution unfused for a plugin that does not fuse. The first plugin is
// a test double (FakeDnn, NHWC only) computing with oneDNN; the results
// are checked against naive loops.

#include <cmath>
#include <cstdlib>

#include "gtest/gtest.h"
#include "rill/plugins/dnn/dnn_test_reference.h"
#include "rill/plugins/dnn/fake_dnn_test_util.h"
#include "rill/plugins/dnn/onednn/onednn_test_util.h"
#include "rill/plugins/plugin_chain.h"

namespace rill::testing {
namespace {

const bool kRegistered = RegisterFakeDnn();

class DnnChain : public OneDnnTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kRegistered);
    OneDnnTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "fake_nhwc, onednn")));
    dnn_ = exec_->AsDnn();
    fake_ = static_cast<FakeDnn*>(Must(exec_->GetPlugin(PluginKind::kDnn, "fake_nhwc")));
    onednn_ = static_cast<DnnSupport*>(Must(exec_->GetPlugin(PluginKind::kDnn, "onednn")));
  }
  void TearDown() override {
    if (exec_ != nullptr) {
      EXPECT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "onednn")));
    }
  }

  // relu(x) on `desc` through `dnn`, checked against the loop.
  void Relu(DnnSupport* dnn, const TensorDescriptor& desc) {
    const std::vector<float> x = RandomFloats(desc.ElementCount(), 7);
    DeviceMemory<float> dx = Upload(x), dy = Output(x.size());
    ASSERT_TRUE(IsOk(dnn->DoActivate(stream_.get(), {{ActivationMode::kRelu}, desc, dx, dy})));
    const std::vector<float> y = Download(dy);
    std::vector<double> ref(x.size());
    for (size_t i = 0; i < x.size(); ++i) ref[i] = std::max(0.0f, x[i]);
    EXPECT_TRUE(AllNear("relu", y, ref, 0, 0));
  }

  FakeDnn* fake_ = nullptr;
  DnnSupport* onednn_ = nullptr;
};

TEST_P(DnnChain, TheChainIsLinkedInOrder) {
  EXPECT_EQ(dnn_, fake_);
  EXPECT_EQ(fake_->fallback(), onednn_);
  EXPECT_EQ(onednn_->fallback(), nullptr);
  EXPECT_EQ(Must(exec_->PluginChain(PluginKind::kDnn)),
            (std::vector<std::string>{"fake_nhwc", "onednn"}));
  EXPECT_EQ(Must(exec_->PluginName(PluginKind::kDnn)), "fake_nhwc");
}

TEST_P(DnnChain, AnUnsupportedCallFallsBackAndIsCounted) {
  const uint64_t handed = fake_->calls_handed_on(), taken = onednn_->calls_taken_over();
  const int calls = fake_->calls;
  Relu(dnn_, {.n = 2, .c = 3, .h = 4, .w = 5, .layout = DataLayout::kNHWC});  // The fake runs it.
  EXPECT_EQ(fake_->calls, calls + 1);
  EXPECT_EQ(fake_->calls_handed_on(), handed);
  Relu(dnn_, {.n = 2, .c = 3, .h = 4, .w = 5, .layout = DataLayout::kNCHW});  // oneDNN runs it.
  EXPECT_EQ(fake_->calls, calls + 1);
  EXPECT_EQ(fake_->calls_handed_on(), handed + 1);
  EXPECT_EQ(onednn_->calls_taken_over(), taken + 1);
}

TEST_P(DnnChain, CapabilityQueriesAnswerWithTheReason) {
  DnnOperation op;
  op.op = DnnOp::kActivate;
  op.input = op.output = {.n = 1, .c = 2, .h = 3, .w = 4, .layout = DataLayout::kNCHW};
  EXPECT_TRUE(HasError(fake_->Supports(op), absl::StatusCode::kUnimplemented, {"fake_nhwc: NCHW"}));
  EXPECT_TRUE(IsOk(onednn_->Supports(op)));
  op.input.type = DataType::kDouble;
  EXPECT_TRUE(
      HasError(onednn_->Supports(op), absl::StatusCode::kUnimplemented, {"onednn", "double"}));
}

TEST_P(DnnChain, NoPluginSupportingIsUnimplementedWithEveryReason) {
  TensorDescriptor desc{.n = 1, .c = 2, .h = 2, .w = 2, .type = DataType::kDouble};
  DeviceMemoryBase x = Upload(std::vector<float>(16, 1)), y = Output(16);
  EXPECT_TRUE(HasError(
      dnn_->DoActivate(stream_.get(), {{ActivationMode::kRelu}, desc, x, y}),
      absl::StatusCode::kUnimplemented,
      {"no dnn plugin of the chain from \"fake_nhwc\"", "fake_nhwc: NCHW", "onednn: double"}));
}

TEST_P(DnnChain, ACallOnAChosenPluginStartsThere) {
  const int calls = fake_->calls;
  const uint64_t handed = fake_->calls_handed_on();
  Relu(onednn_, {.n = 1, .c = 3, .h = 2, .w = 2, .layout = DataLayout::kNHWC});
  EXPECT_EQ(fake_->calls, calls);
  EXPECT_EQ(fake_->calls_handed_on(), handed);
}

TEST_P(DnnChain, SetPluginChecksTheNames) {
  EXPECT_TRUE(HasError(exec_->SetPlugin(PluginKind::kDnn, "fake_nhwc,nosuch"),
                       absl::StatusCode::kNotFound, {"nosuch", "onednn"}));
  EXPECT_TRUE(HasError(exec_->SetPlugin(PluginKind::kDnn, "onednn,onednn"),
                       absl::StatusCode::kInvalidArgument, {"\"onednn\" appears twice"}));
  // A failed SetPlugin leaves the chain alone.
  EXPECT_EQ(Must(exec_->PluginChain(PluginKind::kDnn)),
            (std::vector<std::string>{"fake_nhwc", "onednn"}));
  // A shorter chain: the fake has no fallback any more.
  ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "fake_nhwc")));
  EXPECT_EQ(exec_->AsDnn()->fallback(), nullptr);
}

// Setting the same chain again, or another, relinks at once: a plugin
// pointer taken before keeps working, with the fallbacks of the new chain.
TEST_P(DnnChain, SetPluginRelinksAtOnceAndKeepsInstancesAlive) {
  DnnSupport* before = exec_->AsDnn();
  ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "fake_nhwc,onednn")));
  EXPECT_EQ(before->fallback(), onednn_);
  ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "onednn,fake_nhwc")));
  EXPECT_EQ(exec_->AsDnn(), onednn_);  // The same instances, in the new order.
  EXPECT_EQ(onednn_->fallback(), fake_);
  EXPECT_EQ(fake_->fallback(), nullptr);
  EXPECT_TRUE(HasError(exec_->SetPlugin(PluginKind::kDnn, "fake_nhwc,,onednn"),
                       absl::StatusCode::kInvalidArgument, {"name 2 is empty"}));
  EXPECT_EQ(Must(exec_->PluginChain(PluginKind::kDnn)),
            (std::vector<std::string>{"onednn", "fake_nhwc"}));
}

// A fused call runs on the first plugin that runs the convolution at all
// (here oneDNN, which does not fuse), not on a later one that fuses.
TEST_P(DnnChain, AFusedCallKeepsTheChainsOrder) {
  ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "onednn,fake_nhwc")));
  ConvolutionShape s;
  s.input = {.n = 1, .c = 2, .h = 4, .w = 4, .layout = DataLayout::kNHWC};
  s.filter = {.output_channels = 2,
              .input_channels = 2,
              .height = 1,
              .width = 1,
              .layout = FilterLayout::kOHWI};
  s.output = Must(ConvolutionOutput(s.input, s.filter, s.conv));
  DeviceMemory<float> x = Upload(std::vector<float>(32, 1)), w = Upload(std::vector<float>(4, 1)),
                      b = Upload(std::vector<float>(2, -3)), y = Output(32);
  ConvolutionArgs args{s, x, w, y};
  args.bias = b;
  args.activation = ActivationDescriptor{ActivationMode::kRelu};
  const int calls = fake_->calls;
  ASSERT_TRUE(IsOk(exec_->AsDnn()->DoConvolve(stream_.get(), args)));
  EXPECT_EQ(fake_->calls, calls);
  // 1 * 1 + 1 * 1 - 3 = -1, relu'd.
  EXPECT_TRUE(AllNear("y", Download(y), std::vector<double>(32, 0.0), 0, 0));
}

TEST_P(DnnChain, TheEnvironmentNamesAChain) {
  ASSERT_EQ(setenv("RILL_DNN", "fake_nhwc,onednn", 1), 0);
  EXPECT_EQ(Must(PluginRegistry::Default().DefaultChain(kHostPlatformId, PluginKind::kDnn)),
            (std::vector<std::string>{"fake_nhwc", "onednn"}));
  ASSERT_EQ(setenv("RILL_DNN", "onednn,nosuch", 1), 0);
  EXPECT_TRUE(
      HasError(PluginRegistry::Default().DefaultChain(kHostPlatformId, PluginKind::kDnn).status(),
               absl::StatusCode::kNotFound, {"RILL_DNN=onednn,nosuch", "nosuch"}));
  ASSERT_EQ(unsetenv("RILL_DNN"), 0);
}

// conv + bias + relu: neither plugin fuses, so the call runs unfused on the
// plugin that supports the layout.
TEST_P(DnnChain, AFusedConvolutionRunsUnfusedWhereNotFused) {
  for (DataLayout layout : {DataLayout::kNHWC, DataLayout::kNCHW}) {
    ConvolutionShape s;
    s.input = {.n = 2, .c = 3, .h = 6, .w = 5, .layout = layout};
    s.filter = {.output_channels = 4, .input_channels = 3, .height = 3, .width = 3};
    s.conv = {.pad_h = 1, .pad_w = 1};
    s.output = Must(ConvolutionOutput(s.input, s.filter, s.conv));
    const std::vector<float> x = RandomFloats(s.input.ElementCount(), 1),
                             w = RandomFloats(s.filter.ElementCount(), 2), b = RandomFloats(4, 3);
    DeviceMemory<float> dx = Upload(x), dw = Upload(w), db = Upload(b),
                        dy = Output(s.output.ElementCount());
    ConvolutionArgs args{s, dx, dw, dy};
    args.bias = db;
    args.activation = ActivationDescriptor{ActivationMode::kRelu};
    const int calls = fake_->calls;
    ASSERT_TRUE(IsOk(dnn_->DoConvolve(stream_.get(), args)));
    const std::vector<float> y = Download(dy);
    // Conv, bias add and relu on the fake for NHWC; none of them for NCHW.
    EXPECT_EQ(fake_->calls - calls, layout == DataLayout::kNHWC ? 3 : 0) << DataLayoutName(layout);
    const Reference ref = Forward(s, x, w);
    std::vector<double> expected(ref.value.size());
    for (int64_t n = 0; n < s.output.n; ++n)
      for (int64_t k = 0; k < s.output.c; ++k)
        for (int64_t h = 0; h < s.output.h; ++h)
          for (int64_t v = 0; v < s.output.w; ++v) {
            const int64_t i = s.output.Offset(n, k, h, v);
            expected[i] = std::max(0.0, ref.value[i] + b[k]);
          }
    EXPECT_TRUE(AllNear("conv+bias+relu", y, expected, 1e-5, 1e-5)) << DataLayoutName(layout);
  }
}

TEST_P(DnnChain, AFusedBackwardConvolutionIsRejected) {
  ConvolutionShape s;
  s.input = {.n = 1, .c = 2, .h = 4, .w = 4};
  s.filter = {.output_channels = 2, .input_channels = 2, .height = 1, .width = 1};
  s.output = Must(ConvolutionOutput(s.input, s.filter, s.conv));
  DeviceMemory<float> x = Output(32), w = Output(4), y = Output(32);
  ConvolutionArgs args{s, x, w, y};
  args.activation = ActivationDescriptor{ActivationMode::kRelu};
  EXPECT_TRUE(HasError(dnn_->DoConvolveBackwardData(stream_.get(), args),
                       absl::StatusCode::kInvalidArgument,
                       {"forward convolutions only", "backward_data"}));
}

INSTANTIATE_TEST_SUITE_P(Devices, DnnChain, ::testing::Values(0, 1), DeviceName);

}  // namespace
}  // namespace rill::testing
