// The oneDNN plugin's convolutions against naive loops written here: forward,
// backward data and backward filter, with padding, stride, dilation and
// groups, NCHW and NHWC tensors, OIHW and OHWI filters, on every host device;
// algorithm listing, choice, best-algorithm timing and workspaces.
//
// Tolerance: an output that sums k products must satisfy
//   |got - ref| <= 4 (k + 2) eps(float) sum |products|
// (ref in double): the recursive-summation bound with a factor 4 of slack,
// which any reordering (gemm, winograd excepted) stays within. Winograd
// transforms amplify rounding, so it gets 100x that.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "rill/plugins/dnn/onednn/onednn_common.h"
#include "rill/plugins/dnn/onednn/onednn_test_util.h"

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

::testing::AssertionResult Matches(const char* what, const std::vector<float>& got,
                                   const Reference& ref, double slack = 1) {
  const double eps = std::numeric_limits<float>::epsilon();
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = slack * 4 * (ref.terms + 2) * eps * ref.scale[i];
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
      {"1x1",
       {.n = 3, .c = 8, .h = 4, .w = 4},
       {.output_channels = 5, .input_channels = 8, .height = 1, .width = 1},
       {}},
      // The Fashion-MNIST CNN's layers, smaller: a 1-channel first layer
      // (blocked layouts would pad it: the plugin keeps plain ones where
      // that matters) and a 16 -> 16 layer (nChw8c blocks on AVX2, staged
      // through the workspace).
      {"first layer 5x5 pad 2",
       {.n = 2, .c = 1, .h = 12, .w = 12},
       {.output_channels = 16, .input_channels = 1, .height = 5, .width = 5},
       {.pad_h = 2, .pad_w = 2}},
      {"blocked 5x5 pad 2",
       {.n = 2, .c = 16, .h = 8, .w = 8},
       {.output_channels = 16, .input_channels = 16, .height = 5, .width = 5},
       {.pad_h = 2, .pad_w = 2}},
  };
}

class OneDnnConvTest : public testing::OneDnnTest {
 protected:
  // Runs all three directions of `shape` with `algorithm` and checks them.
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

TEST_P(OneDnnConvTest, EveryDirectionLayoutAndCase) {
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

TEST_P(OneDnnConvTest, OutputLayoutMayDifferFromInput) {
  const Case c = Cases()[0];
  ConvolutionShape shape{c.input, c.filter, c.conv,
                         Must(ConvolutionOutput(c.input, c.filter, c.conv))};
  shape.output.layout = DataLayout::kNHWC;
  CheckAllDirections(shape, kDefaultAlgorithm);
}

TEST_P(OneDnnConvTest, PositionalThenConvolve) {
  const Case c = Cases()[1];
  const TensorDescriptor out = Must(ConvolutionOutput(c.input, c.filter, c.conv));
  const std::vector<float> x = RandomFloats(c.input.ElementCount(), 4),
                           w = RandomFloats(c.filter.ElementCount(), 5);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w), y = Output(out.ElementCount());
  stream_->ThenConvolve(c.input, dx, c.filter, dw, c.conv, out, &y);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_TRUE(Matches("y", Download(y), Forward({c.input, c.filter, c.conv, out}, x, w)));
}

// Lists auto, direct and winograd with honest availability; every available
// one computes the same convolution; best is timed once and remembered.
TEST_P(OneDnnConvTest, AlgorithmsListChooseAndBest) {
  TensorDescriptor in{.n = 1, .c = 16, .h = 12, .w = 12};
  FilterDescriptor f{.output_channels = 16, .input_channels = 16, .height = 3, .width = 3};
  ConvolutionDescriptor conv{.pad_h = 1, .pad_w = 1};
  const ConvolutionShape shape{in, f, conv, Must(ConvolutionOutput(in, f, conv))};
  for (ConvolutionKind kind : {ConvolutionKind::kForward, ConvolutionKind::kBackwardData,
                               ConvolutionKind::kBackwardFilter}) {
    std::vector<ConvolutionAlgorithm> algorithms =
        Must(dnn_->GetConvolutionAlgorithms(kind, shape));
    ASSERT_EQ(algorithms.size(), 3u);
    EXPECT_EQ(algorithms[0].name, "auto");
    EXPECT_EQ(algorithms[1].name, "direct");
    EXPECT_EQ(algorithms[2].name, "winograd");
    EXPECT_TRUE(algorithms[0].available) << algorithms[0].reason;
    EXPECT_TRUE(algorithms[1].available) << algorithms[1].reason;
    for (const ConvolutionAlgorithm& a : algorithms) {
      if (a.available) {
        EXPECT_FALSE(a.implementation.empty());
      } else {
        EXPECT_NE(a.reason.find("not available"), std::string::npos) << a.reason;
      }
    }
    ConvolutionAlgorithm best = Must(dnn_->FindBestConvolutionAlgorithm(kind, shape));
    EXPECT_TRUE(best.available);
    EXPECT_EQ(Must(dnn_->FindBestConvolutionAlgorithm(kind, shape)).id, best.id);  // Remembered.
  }
  for (const ConvolutionAlgorithm& a :
       Must(dnn_->GetConvolutionAlgorithms(ConvolutionKind::kForward, shape))) {
    if (!a.available) continue;
    SCOPED_TRACE(a.name);
    CheckAllDirections(shape, a.id, a.id == OneDnn::kWinograd ? 100 : 1);
  }
  CheckAllDirections(shape, kBestAlgorithm);
}

// An explicit workspace of exactly the reported size works; with none, the
// plugin allocates one through the executor and frees it.
TEST_P(OneDnnConvTest, Workspace) {
  const Case c = Cases()[2];
  const ConvolutionShape shape{c.input, c.filter, c.conv,
                               Must(ConvolutionOutput(c.input, c.filter, c.conv))};
  for (const ConvolutionAlgorithm& a :
       Must(dnn_->GetConvolutionAlgorithms(ConvolutionKind::kBackwardFilter, shape))) {
    if (!a.available) continue;
    const std::vector<float> x = RandomFloats(shape.input.ElementCount(), 6);
    const std::vector<float> dy = RandomFloats(shape.output.ElementCount(), 7);
    DeviceMemory<float> dx = Upload(x), ddy = Upload(dy), dw = Output(shape.filter.ElementCount());
    ScopedDeviceMemory<uint8_t> workspace;
    if (a.workspace_bytes > 0)
      workspace = Must(exec_->AllocateOwnedArray<uint8_t>(a.workspace_bytes));
    stream_->ThenConvolveBackwardFilter(ConvolutionArgs{shape, dx, dw, ddy, a.id, *workspace});
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    EXPECT_TRUE(Matches("dw", Download(dw), BackwardFilter(shape, x, dy),
                        a.id == OneDnn::kWinograd ? 100 : 1));
  }
}

// Every direction with an explicit workspace of exactly the reported size,
// filled with NaN first (the staged blocked copies and the scratchpad live
// there; nothing may read it before writing), on the blocked shape.
TEST_P(OneDnnConvTest, ExplicitWorkspaceHoldsTheStagedLayouts) {
  const Case c = Cases()[6];
  const ConvolutionShape shape{c.input, c.filter, c.conv,
                               Must(ConvolutionOutput(c.input, c.filter, c.conv))};
  const std::vector<float> x = RandomFloats(shape.input.ElementCount(), 8);
  const std::vector<float> w = RandomFloats(shape.filter.ElementCount(), 9);
  const std::vector<float> dy = RandomFloats(shape.output.ElementCount(), 10);
  DeviceMemory<float> dx_in = Upload(x), dw_in = Upload(w), ddy = Upload(dy);
  DeviceMemory<float> y = Output(shape.output.ElementCount());
  DeviceMemory<float> dx = Output(shape.input.ElementCount()),
                      dw = Output(shape.filter.ElementCount());
  for (ConvolutionKind kind : {ConvolutionKind::kForward, ConvolutionKind::kBackwardData,
                               ConvolutionKind::kBackwardFilter}) {
    const ConvolutionAlgorithm a = Must(dnn_->GetConvolutionAlgorithms(kind, shape))[0];
    ASSERT_TRUE(a.available) << a.reason;
    SCOPED_TRACE(::testing::Message() << ConvolutionKindName(kind) << " " << a.implementation
                                      << ", workspace " << a.workspace_bytes);
    ConvolutionArgs with{shape, dx_in, dw_in, y, kDefaultAlgorithm, {}};
    if (kind == ConvolutionKind::kBackwardData) with.input = dx, with.output = ddy;
    if (kind == ConvolutionKind::kBackwardFilter) with.filter = dw, with.output = ddy;
    if (a.workspace_bytes > 0) {
      DeviceMemory<float> workspace =
          Output((a.workspace_bytes + sizeof(float) - 1) / sizeof(float));
      with.workspace = DeviceMemoryBase(workspace.opaque(), a.workspace_bytes, workspace.offset());
    }
    ASSERT_TRUE(IsOk(kind == ConvolutionKind::kForward ? dnn_->DoConvolve(stream_.get(), with)
                     : kind == ConvolutionKind::kBackwardData
                         ? dnn_->DoConvolveBackwardData(stream_.get(), with)
                         : dnn_->DoConvolveBackwardFilter(stream_.get(), with)));
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  }
  EXPECT_TRUE(Matches("y", Download(y), Forward(shape, x, w)));
  EXPECT_TRUE(Matches("dx", Download(dx), BackwardData(shape, dy, w)));
  EXPECT_TRUE(Matches("dw", Download(dw), BackwardFilter(shape, x, dy)));
}

// Calls past the first alternate between the two thread counts (both run
// once, then the faster with the other retried now and then): every call
// computes the same result.
TEST_P(OneDnnConvTest, RepeatedCallsAgreeOnEitherThreadCount) {
  const Case c = Cases()[6];
  const ConvolutionShape shape{c.input, c.filter, c.conv,
                               Must(ConvolutionOutput(c.input, c.filter, c.conv))};
  const std::vector<float> x = RandomFloats(shape.input.ElementCount(), 11);
  const std::vector<float> w = RandomFloats(shape.filter.ElementCount(), 12);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w);
  const Reference want = Forward(shape, x, w);
  for (int call = 0; call < 2 * onednn::ThreadChoice::kExplore + 2; ++call) {
    DeviceMemory<float> y = Output(shape.output.ElementCount());
    stream_->ThenConvolve(ConvolutionArgs{shape, dx, dw, y, kDefaultAlgorithm, {}});
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    ASSERT_TRUE(Matches("y", Download(y), want)) << "call " << call;
  }
}

// act(conv + bias[c] + side) for an NCHW output, from the plain reference.
Reference Fused(const ConvolutionShape& shape, const Reference& conv,
                const std::vector<float>& bias, const std::vector<float>& side,
                const ActivationDescriptor& act) {
  Reference r = conv;
  const int64_t hw = shape.output.h * shape.output.w;
  for (size_t i = 0; i < r.value.size(); ++i) {
    const double b = bias[(i / hw) % shape.output.c];
    double v = r.value[i] + b + side[i];
    r.scale[i] += std::fabs(b) + std::fabs(side[i]);
    if (act.mode == ActivationMode::kRelu) v = std::max(v, 0.0);
    if (act.mode == ActivationMode::kClippedRelu) v = std::min(std::max(v, 0.0), act.coefficient);
    r.value[i] = v;
  }
  return r;
}

// Bias, side input (sum post-op) and activation fused into one primitive,
// for blocked and plain layouts, the side input also in place in the
// output; a filter id keeps the converted filter, and a new id with other
// weights is not served the kept one.
TEST_P(OneDnnConvTest, FusedBiasSideInputActivationAndConstantFilters) {
  const std::vector<Case> cases = Cases();
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const ConvolutionShape shape{c.input, c.filter, c.conv,
                                 Must(ConvolutionOutput(c.input, c.filter, c.conv))};
    SCOPED_TRACE(c.name);
    const int64_t n = shape.output.ElementCount();
    const std::vector<float> x = RandomFloats(shape.input.ElementCount(), 21);
    const std::vector<float> w = RandomFloats(shape.filter.ElementCount(), 22);
    const std::vector<float> w2 = RandomFloats(shape.filter.ElementCount(), 25);
    const std::vector<float> b = RandomFloats(shape.output.c, 23);
    const std::vector<float> side = RandomFloats(n, 24);
    DeviceMemory<float> dx = Upload(x), dw = Upload(w), dw2 = Upload(w2), db = Upload(b);
    const uint64_t id = 1000 + 2 * k;
    for (ActivationDescriptor act : {ActivationDescriptor{ActivationMode::kRelu},
                                     ActivationDescriptor{ActivationMode::kClippedRelu, 0.5}}) {
      for (int call = 0; call < 3; ++call) {
        const bool in_place = call == 1, other = call == 2;
        DeviceMemory<float> ds = Upload(side);
        DeviceMemory<float> y = in_place ? ds : Output(n);
        ConvolutionArgs args{shape, dx, other ? dw2 : dw, y, kDefaultAlgorithm, {}};
        args.bias = db;
        args.side_input = ds;
        args.activation = act;
        args.filter_id = other ? id + 1 : id;
        stream_->ThenConvolve(args);
        ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
        EXPECT_TRUE(Matches("y", Download(y),
                            Fused(shape, Forward(shape, x, other ? w2 : w), b, side, act)))
            << act.ToString() << " call " << call;
      }
    }
  }
  EXPECT_GT(onednn::ConstFilters::BytesKept(), 0u);
}

TEST(ThreadChoiceTest, TriesBothThenTheFasterAndRetriesTheSlower) {
  onednn::ThreadChoice choice;
  // Both twice, alternating; the first (cold) runs do not count.
  ASSERT_EQ(choice.Pick(), 0);
  choice.Record(0, 50.0);
  ASSERT_EQ(choice.Pick(), 1);
  choice.Record(1, 50.0);
  ASSERT_EQ(choice.Pick(), 0);
  choice.Record(0, 2.0);
  ASSERT_EQ(choice.Pick(), 1);
  choice.Record(1, 1.0);
  // Variant 1 is faster: picked, with variant 0 retried after kExplore
  // calls, then after twice as many each time the retry confirms it.
  int zeros = 0;
  for (int64_t i = 0; i < 7 * onednn::ThreadChoice::kExplore; ++i) {  // 1 + 2 + 4 intervals.
    const int v = choice.Pick();
    zeros += v == 0;
    choice.Record(v, v == 0 ? 2.0 : 1.0);
  }
  EXPECT_EQ(zeros, 3);
  // Conditions change: variant 0 becomes 10x faster. The retries notice.
  for (int64_t i = 0; i < 16 * onednn::ThreadChoice::kExplore; ++i) {
    const int v = choice.Pick();
    choice.Record(v, v == 0 ? 0.1 : 1.0);
  }
  zeros = 0;
  for (int64_t i = 0; i < onednn::ThreadChoice::kExplore; ++i) {
    const int v = choice.Pick();
    zeros += v == 0;
    choice.Record(v, v == 0 ? 0.1 : 1.0);
  }
  EXPECT_GE(zeros, onednn::ThreadChoice::kExplore - 1);
}

// One thread must be clearly faster (kMargin) to be chosen over all.
TEST(ThreadChoiceTest, OneThreadOnlyWhenClearlyFaster) {
  onednn::ThreadChoice choice;
  for (int warm = 0; warm < onednn::ThreadChoice::kWarmSamples; ++warm) {
    choice.Record(choice.Pick(), 1.0);
    choice.Record(choice.Pick(), 0.9);
  }
  int ones = 0;
  for (int64_t i = 0; i < onednn::ThreadChoice::kExplore; ++i) {
    const int v = choice.Pick();
    ones += v == 1;
    choice.Record(v, v == 0 ? 1.0 : 0.9);
  }
  EXPECT_EQ(ones, 1);  // The retry only.
}

INSTANTIATE_TEST_SUITE_P(HostDevices, OneDnnConvTest, ::testing::Values(0, 1), testing::DeviceName);

}  // namespace
}  // namespace rill
