// XNNPACK and oneDNN in one process: each call lands in the library that
// was chosen -- by the chain (what the first plugin supports), by calling a
// plugin directly, or by the algorithm selector -- and stream listeners
// (verbose mode, traces) name the plugin that actually ran it. "Lands" is
// checked three ways: the two libraries are distinct objects in the
// process (dladdr), the plugin's operator/primitive cache grows, and the
// result matches the naive loop.

#include <dlfcn.h>

#include <memory>
#include <string>
#include <vector>

#include "rill/base/mutex.h"
#include "rill/plugins/dnn/algorithm_selector.h"
#include "rill/plugins/dnn/onednn/onednn_dnn.h"
#include "rill/plugins/dnn/xnnpack/xnnpack_test_util.h"
#include "rill/stream/stream_listener.h"

namespace rill::testing {
namespace {

std::string ObjectOf(const char* symbol) {
  Dl_info info;
  void* address = dlsym(RTLD_DEFAULT, symbol);
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

// Remembers the plugin named for each completed ThenConvolve.
class PluginRecorder : public StreamListener {
 public:
  void OnCompleted(const StreamOp& op) override {
    MutexLock lock(&mu_);
    if (op.name == "ThenConvolve") plugins_.push_back(op.plugin);
  }
  std::vector<std::string> plugins() {
    MutexLock lock(&mu_);
    return plugins_;
  }

 private:
  Mutex mu_;
  std::vector<std::string> plugins_ ABSL_GUARDED_BY(mu_);
};

class TwoLibraries : public XnnpackTest {
 protected:
  void SetUp() override {
    XnnpackTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "xnnpack,onednn")));
    xnn_ = static_cast<XnnpackDnn*>(exec_->AsDnn());
    one_ = static_cast<OneDnn*>(Must(exec_->GetPlugin(PluginKind::kDnn, "onednn")));
  }
  void TearDown() override {
    if (exec_ != nullptr) {
      EXPECT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, XnnpackDnn::kName)));
    }
  }

  // A 3x3 convolution in `layout` through `dnn`, checked against the loop.
  void Convolve(DnnSupport* dnn, DataLayout layout, int64_t algorithm = kDefaultAlgorithm) {
    ConvolutionShape s;
    s.input = {.n = 1, .c = 4, .h = 6, .w = 5, .layout = layout};
    s.filter = {.output_channels = 3,
                .input_channels = 4,
                .height = 3,
                .width = 3,
                .layout = layout == DataLayout::kNHWC ? FilterLayout::kOHWI : FilterLayout::kOIHW};
    s.conv = {.pad_h = 1, .pad_w = 1};
    s.output = Must(ConvolutionOutput(s.input, s.filter, s.conv));
    const std::vector<float> x = RandomFloats(s.input.ElementCount(), 3),
                             w = RandomFloats(s.filter.ElementCount(), 4);
    DeviceMemory<float> dx = Upload(x), dw = Upload(w), dy = Output(s.output.ElementCount());
    const ConvolutionArgs args{s, dx, dw, dy, algorithm};
    if (dnn == exec_->AsDnn()) {
      stream_->ThenConvolve(args);  // Seen by stream listeners.
    } else {
      ASSERT_TRUE(IsOk(dnn->DoConvolve(stream_.get(), args)));
    }
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    EXPECT_TRUE(AllNear("conv", Download(dy), Forward(s, x, w).value, 1e-5, 1e-5));
  }

  XnnpackDnn* xnn_ = nullptr;
  OneDnn* one_ = nullptr;
};

TEST_P(TwoLibraries, AreDistinctObjectsInOneProcess) {
  const std::string xnnpack = ObjectOf("xnn_run_operator"),
                    dnnl = ObjectOf("dnnl_primitive_execute");
  EXPECT_NE(xnnpack.find("libXNNPACK"), std::string::npos) << xnnpack;
  EXPECT_NE(dnnl.find("libdnnl"), std::string::npos) << dnnl;
  EXPECT_EQ(ObjectOf("xnn_run_operator").find("dnnl"), std::string::npos);
}

TEST_P(TwoLibraries, EachCallLandsInTheChosenLibrary) {
  auto recorder = std::make_shared<PluginRecorder>();
  AddStreamListener(recorder);
  size_t xnn_ops = xnn_->CachedOperators(), one_ops = one_->CachedPrimitives();
  // The chain: NHWC runs on XNNPACK...
  Convolve(exec_->AsDnn(), DataLayout::kNHWC);
  EXPECT_GT(xnn_->CachedOperators(), xnn_ops);
  EXPECT_EQ(one_->CachedPrimitives(), one_ops);
  // ... NCHW on oneDNN.
  xnn_ops = xnn_->CachedOperators();
  Convolve(exec_->AsDnn(), DataLayout::kNCHW);
  EXPECT_EQ(xnn_->CachedOperators(), xnn_ops);
  EXPECT_GT(one_->CachedPrimitives(), one_ops);
  // A call made on oneDNN runs there even for NHWC.
  one_ops = one_->CachedPrimitives();
  Convolve(one_, DataLayout::kNHWC);
  EXPECT_EQ(xnn_->CachedOperators(), xnn_ops);
  EXPECT_GT(one_->CachedPrimitives(), one_ops);
  RemoveStreamListener(recorder.get());
  // What verbose mode and traces print: the plugin that ran each Then* call.
  EXPECT_EQ(recorder->plugins(), (std::vector<std::string>{"xnnpack", "onednn"}));
}

TEST_P(TwoLibraries, TheSelectorsChoiceIsWhereTheCallRuns) {
  AlgorithmSelector& selector = AlgorithmSelector::Default();
  const AlgorithmSelector::Options saved = selector.options();
  AlgorithmSelector::Options options;  // Memory only.
  selector.SetOptions(options);
  auto recorder = std::make_shared<PluginRecorder>();
  AddStreamListener(recorder);
  Convolve(exec_->AsDnn(), DataLayout::kNHWC, kBestAlgorithm);
  RemoveStreamListener(recorder.get());
  ConvolutionShape s;
  s.input = {.n = 1, .c = 4, .h = 6, .w = 5, .layout = DataLayout::kNHWC};
  s.filter = {.output_channels = 3,
              .input_channels = 4,
              .height = 3,
              .width = 3,
              .layout = FilterLayout::kOHWI};
  s.conv = {.pad_h = 1, .pad_w = 1};
  s.output = Must(ConvolutionOutput(s.input, s.filter, s.conv));
  const AlgorithmChoice choice =
      Must(selector.Select(exec_, exec_->AsDnn(), ConvolutionKind::kForward, s));
  selector.SetOptions(saved);
  EXPECT_EQ(choice.source, ChoiceSource::kMemory);
  ASSERT_EQ(recorder->plugins().size(), 1u);
  EXPECT_EQ(recorder->plugins()[0], choice.plugin);
}

INSTANTIATE_TEST_SUITE_P(HostDevices, TwoLibraries, ::testing::Values(0, 1), testing::DeviceName);

}  // namespace
}  // namespace rill::testing
