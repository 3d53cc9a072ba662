// The XNNPACK plugin's forward convolutions against the naive loops of
// plugins/dnn/dnn_test_reference.h, NHWC tensors and OHWI filters, on every
// host device: padding, stride, dilation, groups, depthwise (with a channel
// multiplier), 1x1 and larger windows, each plain, with fused bias, fused
// relu and fused clipped relu; weights that change between calls on the same
// buffers (re-packed); the algorithm listing; determinism with and without
// the shared pool; concurrent streams on one cached operator.
//
// Tolerance: an output that sums k products (plus a bias) must satisfy
//   |got - ref| <= 4 (k + 2) eps(float) (sum |products| + |bias|)
// (ref in double): the recursive-summation bound with a factor 4 of slack.
// A fused clamp only brings results closer.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include "rill/plugins/dnn/xnnpack/xnnpack_common.h"
#include "rill/plugins/dnn/xnnpack/xnnpack_test_util.h"

namespace rill {
namespace {

using absl::StatusCode;
using testing::Forward;
using testing::HasError;
using testing::IsOk;
using testing::Must;
using testing::RandomFloats;
using testing::Reference;

// The reference of act(conv(x, w) + bias): bias added to each output
// channel, its magnitude to the error scale, then the activation's clamp.
Reference FusedReference(const ConvolutionShape& s, const std::vector<float>& x,
                         const std::vector<float>& w, const std::vector<float>* bias,
                         const std::optional<ActivationDescriptor>& act) {
  Reference ref = Forward(s, x, w);
  testing::ForEach(s.output, [&](int64_t n, int64_t k, int64_t h, int64_t ww) {
    const int64_t i = s.output.Offset(n, k, h, ww);
    if (bias != nullptr) {
      ref.value[i] += (*bias)[k];
      ref.scale[i] += std::fabs((*bias)[k]);
    }
    if (act.has_value()) {
      ref.value[i] = std::max(0.0, ref.value[i]);
      if (act->mode == ActivationMode::kClippedRelu)
        ref.value[i] = std::min(act->coefficient, ref.value[i]);
    }
  });
  return ref;
}

::testing::AssertionResult Matches(const char* what, const std::vector<float>& got,
                                   const Reference& ref) {
  const double eps = std::numeric_limits<float>::epsilon();
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = 4 * (ref.terms + 2) * eps * ref.scale[i];
    if (!(std::fabs(got[i] - ref.value[i]) <= tol)) {
      return ::testing::AssertionFailure() << what << "[" << i << "] = " << got[i] << ", reference "
                                           << ref.value[i] << ", tolerance " << tol;
    }
  }
  return ::testing::AssertionSuccess();
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
      {"depthwise 5 channels, dilated",
       {.n = 2, .c = 5, .h = 8, .w = 7},
       {.output_channels = 5, .input_channels = 1, .height = 3, .width = 3},
       {.pad_h = 2, .pad_w = 2, .dilation_h = 2, .dilation_w = 2, .group_count = 5}},
      {"depthwise multiplier 2",
       {.n = 1, .c = 3, .h = 6, .w = 6},
       {.output_channels = 6, .input_channels = 1, .height = 3, .width = 3},
       {.pad_h = 1, .pad_w = 1, .group_count = 3}},
      {"1x1",
       {.n = 3, .c = 8, .h = 4, .w = 4},
       {.output_channels = 5, .input_channels = 8, .height = 1, .width = 1},
       {}},
      {"1x1 stride 2",
       {.n = 1, .c = 7, .h = 5, .w = 6},
       {.output_channels = 9, .input_channels = 7, .height = 1, .width = 1},
       {.stride_h = 2, .stride_w = 2}},
      {"first layer 5x5 pad 2",
       {.n = 2, .c = 1, .h = 12, .w = 12},
       {.output_channels = 16, .input_channels = 1, .height = 5, .width = 5},
       {.pad_h = 2, .pad_w = 2}},
      {"16 -> 16 5x5 pad 2",
       {.n = 2, .c = 16, .h = 8, .w = 8},
       {.output_channels = 16, .input_channels = 16, .height = 5, .width = 5},
       {.pad_h = 2, .pad_w = 2}},
  };
}

ConvolutionShape Nhwc(const Case& c) {
  ConvolutionShape s{c.input, c.filter, c.conv, {}};
  s.input.layout = DataLayout::kNHWC;
  s.filter.layout = FilterLayout::kOHWI;
  s.output = Must(ConvolutionOutput(s.input, s.filter, s.conv));
  return s;
}

struct Fusion {
  const char* name;
  bool bias;
  std::optional<ActivationDescriptor> activation;
};

class XnnpackConvTest : public testing::XnnpackTest {};

TEST_P(XnnpackConvTest, EveryCaseWithAndWithoutFusion) {
  const Fusion fusions[] = {
      {"plain", false, std::nullopt},
      {"bias", true, std::nullopt},
      {"bias + relu", true, ActivationDescriptor{ActivationMode::kRelu}},
      {"clipped relu", false, ActivationDescriptor{ActivationMode::kClippedRelu, 0.5}},
      {"bias + clipped relu", true, ActivationDescriptor{ActivationMode::kClippedRelu, 0.5}},
  };
  for (const Case& c : Cases()) {
    const ConvolutionShape shape = Nhwc(c);
    const std::vector<float> x = RandomFloats(shape.input.ElementCount(), 1);
    const std::vector<float> w = RandomFloats(shape.filter.ElementCount(), 2);
    const std::vector<float> b = RandomFloats(shape.filter.output_channels, 3);
    DeviceMemory<float> dx = Upload(x), dw = Upload(w), db = Upload(b);
    for (const Fusion& f : fusions) {
      SCOPED_TRACE(::testing::Message() << c.name << ", " << f.name << ": " << shape.ToString());
      DeviceMemory<float> y = Output(shape.output.ElementCount());
      ConvolutionArgs args{
          shape, dx, dw, y, kDefaultAlgorithm, {}, f.bias ? db : DeviceMemoryBase(), f.activation};
      ASSERT_TRUE(IsOk(dnn_->DoConvolve(stream_.get(), args)));
      ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
      EXPECT_TRUE(Matches("y", Download(y),
                          FusedReference(shape, x, w, f.bias ? &b : nullptr, f.activation)));
    }
  }
}

// A fused activation XNNPACK cannot clamp (sigmoid, elu) is refused by
// Supports(); DnnSupport then convolves, adds the bias and activates, all on
// this plugin.
TEST_P(XnnpackConvTest, ActivationsItDoesNotFuseRunUnfused) {
  const ConvolutionShape s = Nhwc(Cases()[2]);
  const std::vector<float> x = RandomFloats(s.input.ElementCount(), 17),
                           w = RandomFloats(s.filter.ElementCount(), 18);
  const std::vector<float> b = RandomFloats(s.filter.output_channels, 19);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w), db = Upload(b);
  const uint64_t handed_on = dnn_->calls_handed_on();
  for (const ActivationDescriptor& act : {ActivationDescriptor{ActivationMode::kSigmoid},
                                          ActivationDescriptor{ActivationMode::kElu, 0.5}}) {
    SCOPED_TRACE(act.ToString());
    DeviceMemory<float> y = Output(s.output.ElementCount());
    ASSERT_TRUE(IsOk(dnn_->DoConvolve(
        stream_.get(), ConvolutionArgs{s, dx, dw, y, kDefaultAlgorithm, {}, db, act})));
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    Reference ref = FusedReference(s, x, w, &b, std::nullopt);
    std::vector<double> want(ref.value.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const double v = ref.value[i];
      want[i] = act.mode == ActivationMode::kSigmoid ? 1 / (1 + std::exp(-v))
                : v > 0                              ? v
                                                     : 0.5 * (std::exp(v) - 1);
    }
    // Both functions have slope <= 1: the convolution's bound, plus the
    // activation's own few ulp.
    const double eps = std::numeric_limits<float>::epsilon();
    const std::vector<float> got = Download(y);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i],
                  4 * (ref.terms + 2) * eps * ref.scale[i] + 2e-6 + 2e-5 * std::fabs(want[i]))
          << "y[" << i << "]";
    }
  }
  EXPECT_EQ(dnn_->calls_handed_on(), handed_on) << "no fallback: nothing to hand on";
}

TEST_P(XnnpackConvTest, PositionalThenConvolve) {
  const ConvolutionShape s = Nhwc(Cases()[1]);
  const std::vector<float> x = RandomFloats(s.input.ElementCount(), 4),
                           w = RandomFloats(s.filter.ElementCount(), 5);
  DeviceMemory<float> y = Output(s.output.ElementCount());
  stream_->ThenConvolve(s.input, Upload(x), s.filter, Upload(w), s.conv, s.output, &y);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_TRUE(Matches("y", Download(y), Forward(s, x, w)));
}

// Training: new weights and bias written into the same buffers between two
// calls give the new result (the run compares the buffers with what the
// operator packed and re-packs); unchanged ones are not packed again.
TEST_P(XnnpackConvTest, WeightsChangedInPlaceAreRepacked) {
  const ConvolutionShape s = Nhwc(Cases()[0]);
  const std::vector<float> x = RandomFloats(s.input.ElementCount(), 6);
  const std::vector<float> w1 = RandomFloats(s.filter.ElementCount(), 7),
                           w2 = RandomFloats(s.filter.ElementCount(), 8);
  const std::vector<float> b1 = RandomFloats(s.filter.output_channels, 9);
  const std::vector<float> b2 = RandomFloats(s.filter.output_channels, 10);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w1), db = Upload(b1);
  DeviceMemory<float> y1 = Output(s.output.ElementCount()), y2 = Output(s.output.ElementCount()),
                      y3 = Output(s.output.ElementCount()), y4 = Output(s.output.ElementCount());
  const int64_t packs = xnnpack_->WeightPacks();
  // All on one stream, without waiting: the writes are ordered between the
  // convolutions, as a training step's update is.
  stream_->ThenConvolve(ConvolutionArgs{s, dx, dw, y1, kDefaultAlgorithm, {}, db, std::nullopt})
      .ThenConvolve(ConvolutionArgs{s, dx, dw, y2, kDefaultAlgorithm, {}, db, std::nullopt})
      .ThenMemcpy(&dw, w2.data(), w2.size() * sizeof(float))
      .ThenConvolve(ConvolutionArgs{s, dx, dw, y3, kDefaultAlgorithm, {}, db, std::nullopt})
      .ThenMemcpy(&db, b2.data(), b2.size() * sizeof(float))
      .ThenConvolve(ConvolutionArgs{s, dx, dw, y4, kDefaultAlgorithm, {}, db, std::nullopt});
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_TRUE(Matches("y1", Download(y1), FusedReference(s, x, w1, &b1, std::nullopt)));
  EXPECT_TRUE(Matches("y2", Download(y2), FusedReference(s, x, w1, &b1, std::nullopt)));
  EXPECT_TRUE(
      Matches("y3 (new weights)", Download(y3), FusedReference(s, x, w2, &b1, std::nullopt)));
  EXPECT_TRUE(Matches("y4 (new bias)", Download(y4), FusedReference(s, x, w2, &b2, std::nullopt)));
  EXPECT_EQ(xnnpack_->WeightPacks() - packs, 3)
      << "packed for w1, w2, b2; not again for the second call";
}

TEST_P(XnnpackConvTest, OneAlgorithmListedChosenAndBest) {
  const ConvolutionShape s = Nhwc(Cases()[0]);
  std::vector<ConvolutionAlgorithm> algorithms =
      Must(dnn_->GetConvolutionAlgorithms(ConvolutionKind::kForward, s));
  ASSERT_EQ(algorithms.size(), 1u);
  EXPECT_EQ(algorithms[0].id, 0);
  EXPECT_EQ(algorithms[0].name, "xnnpack");
  EXPECT_TRUE(algorithms[0].available) << algorithms[0].reason;
  EXPECT_EQ(algorithms[0].workspace_bytes, 0u);
  EXPECT_TRUE(algorithms[0].deterministic);
  EXPECT_EQ(Must(dnn_->FindBestConvolutionAlgorithm(ConvolutionKind::kForward, s)).id, 0);
  // Backward and NCHW: listed as unavailable, with the reason.
  for (ConvolutionKind kind : {ConvolutionKind::kBackwardData, ConvolutionKind::kBackwardFilter}) {
    algorithms = Must(dnn_->GetConvolutionAlgorithms(kind, s));
    ASSERT_EQ(algorithms.size(), 1u);
    EXPECT_FALSE(algorithms[0].available);
    EXPECT_NE(algorithms[0].reason.find("forward convolutions only"), std::string::npos)
        << algorithms[0].reason;
    EXPECT_TRUE(HasError(dnn_->FindBestConvolutionAlgorithm(kind, s).status(),
                         StatusCode::kUnimplemented, {"xnnpack"}));
  }
  ConvolutionShape nchw = s;
  nchw.input.layout = nchw.output.layout = DataLayout::kNCHW;
  algorithms = Must(dnn_->GetConvolutionAlgorithms(ConvolutionKind::kForward, nchw));
  EXPECT_FALSE(algorithms[0].available);
  EXPECT_NE(algorithms[0].reason.find("NCHW"), std::string::npos) << algorithms[0].reason;

  const std::vector<float> x = RandomFloats(s.input.ElementCount(), 11),
                           w = RandomFloats(s.filter.ElementCount(), 12);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w);
  for (int64_t id : {kDefaultAlgorithm, kBestAlgorithm, XnnpackDnn::kAlgorithm}) {
    DeviceMemory<float> y = Output(s.output.ElementCount());
    ASSERT_TRUE(IsOk(dnn_->DoConvolve(stream_.get(), ConvolutionArgs{s, dx, dw, y, id, {}})));
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    EXPECT_TRUE(Matches("y", Download(y), Forward(s, x, w))) << "algorithm " << id;
  }
  DeviceMemory<float> y = Output(s.output.ElementCount());
  EXPECT_TRUE(HasError(dnn_->DoConvolve(stream_.get(), ConvolutionArgs{s, dx, dw, y, 7, {}}),
                       StatusCode::kNotFound, {"algorithm 7", "xnnpack", "0 xnnpack"}));
}

// The same bits whether a call gets the shared pool or runs alone (a lease
// held here keeps it from the call).
TEST_P(XnnpackConvTest, SameBitsWithAndWithoutThePool) {
  const ConvolutionShape s = Nhwc(Cases()[9]);
  const std::vector<float> x = RandomFloats(s.input.ElementCount(), 13),
                           w = RandomFloats(s.filter.ElementCount(), 14);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w);
  DeviceMemory<float> pooled = Output(s.output.ElementCount()),
                      alone = Output(s.output.ElementCount());
  stream_->ThenConvolve(ConvolutionArgs{s, dx, dw, pooled, kDefaultAlgorithm, {}});
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  {
    xnnpack::PoolLease held;
    stream_->ThenConvolve(ConvolutionArgs{s, dx, dw, alone, kDefaultAlgorithm, {}});
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  }
  const std::vector<float> a = Download(pooled), b = Download(alone);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  EXPECT_TRUE(Matches("y", a, Forward(s, x, w)));
}

// Several streams convolve at once: one cached operator, taken in turns
// under its lock, and the pool by whichever call finds it free. Every
// result is right.
TEST_P(XnnpackConvTest, ConcurrentStreamsShareOperatorsAndThePool) {
  const ConvolutionShape s = Nhwc(Cases()[9]);
  const std::vector<float> x = RandomFloats(s.input.ElementCount(), 15),
                           w = RandomFloats(s.filter.ElementCount(), 16);
  const Reference want = Forward(s, x, w);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w);
  constexpr int kStreams = 3, kCalls = 8;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<DeviceMemory<float>> outputs;
  for (int i = 0; i < kStreams; ++i) streams.push_back(Must(exec_->CreateStream()));
  for (int i = 0; i < kStreams * kCalls; ++i) outputs.push_back(Output(s.output.ElementCount()));
  for (int call = 0; call < kCalls; ++call) {
    for (int i = 0; i < kStreams; ++i) {
      streams[i]->ThenConvolve(
          ConvolutionArgs{s, dx, dw, outputs[call * kStreams + i], kDefaultAlgorithm, {}});
    }
  }
  for (auto& stream : streams) ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  for (size_t i = 0; i < outputs.size(); ++i)
    ASSERT_TRUE(Matches("y", Download(outputs[i]), want)) << "output " << i;
}

INSTANTIATE_TEST_SUITE_P(HostDevices, XnnpackConvTest, ::testing::Values(0, 1),
                         testing::DeviceName);

}  // namespace
}  // namespace rill
