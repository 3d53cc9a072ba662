#ifndef RILL_PLUGINS_DNN_FAKE_DNN_TEST_UTIL_H_
#define RILL_PLUGINS_DNN_FAKE_DNN_TEST_UTIL_H_

// A test double for the tests of what sits around DNN plugins (fallback
// chains, algorithm selection): a DnnSupport that supports only NHWC
// tensors, offers configurable convolution algorithms with configurable
// delays and determinism, counts its calls, and computes every result with
// a real oneDNN plugin inside. Registered for the host platform as
// "fake_nhwc".

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "rill/platform/host/host_platform.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/plugins/dnn/onednn/onednn_dnn.h"
#include "rill/plugins/plugin_registry.h"

namespace rill::testing {

class FakeDnn : public DnnSupport {
 public:
  static constexpr char kName[] = "fake_nhwc";
  struct Algorithm {
    ConvolutionAlgorithm info;
    absl::Duration delay;  // Slept on the calling thread per call.
  };
  // The algorithms every FakeDnn offers (tests set them before use).
  static std::vector<Algorithm>& Algorithms() {
    static auto* algorithms =
        new std::vector<Algorithm>{{{0, "plain", true, "", "", 0, true}, absl::ZeroDuration()}};
    return *algorithms;
  }

  explicit FakeDnn(std::unique_ptr<OneDnn> inner) : inner_(std::move(inner)) {}
  std::string Name() const override { return kName; }
  std::string Version() const override { return "fake 1"; }
  absl::Status Supports(const DnnOperation& op) const override {
    if (op.input.layout != DataLayout::kNHWC)
      return absl::UnimplementedError("fake_nhwc: NCHW tensors");
    return DnnSupport::Supports(op);
  }
  std::atomic<int> calls{0};
  std::map<int64_t, int> convolutions_by_algorithm;  // Written by calls on one thread at a time.

 protected:
  absl::StatusOr<std::vector<ConvolutionAlgorithm>> ConvolutionAlgorithms(
      ConvolutionKind, const ConvolutionShape&) override {
    std::vector<ConvolutionAlgorithm> out;
    for (const Algorithm& a : Algorithms()) out.push_back(a.info);
    return out;
  }
  absl::StatusOr<ConvolutionAlgorithm> BestConvolutionAlgorithm(ConvolutionKind,
                                                                const ConvolutionShape&) override {
    return Algorithms().front().info;
  }
  absl::Status Convolve(Stream* stream, ConvolutionKind kind,
                        const ConvolutionArgs& args) override {
    ++calls;
    ++convolutions_by_algorithm[args.algorithm];
    for (const Algorithm& a : Algorithms()) {
      if (a.info.id == args.algorithm) absl::SleepFor(a.delay);
    }
    ConvolutionArgs inner = args;
    inner.algorithm = kDefaultAlgorithm;
    switch (kind) {
      case ConvolutionKind::kForward:
        return inner_->DoConvolve(stream, inner);
      case ConvolutionKind::kBackwardData:
        return inner_->DoConvolveBackwardData(stream, inner);
      case ConvolutionKind::kBackwardFilter:
        return inner_->DoConvolveBackwardFilter(stream, inner);
    }
    return absl::InternalError("kind");
  }
#define RILL_FAKE_FORWARD(Virtual, Args, Do)                        \
  absl::Status Virtual(Stream* stream, const Args& args) override { \
    ++calls;                                                        \
    return inner_->Do(stream, args);                                \
  }
  RILL_FAKE_FORWARD(BiasAdd, BiasAddArgs, DoBiasAdd)
  RILL_FAKE_FORWARD(Activate, ActivationArgs, DoActivate)
  RILL_FAKE_FORWARD(ActivateBackward, ActivationBackwardArgs, DoActivateBackward)
  RILL_FAKE_FORWARD(PoolForward, PoolArgs, DoPoolForward)
  RILL_FAKE_FORWARD(PoolBackward, PoolBackwardArgs, DoPoolBackward)
  RILL_FAKE_FORWARD(Softmax, SoftmaxArgs, DoSoftmax)
  RILL_FAKE_FORWARD(SoftmaxBackward, SoftmaxBackwardArgs, DoSoftmaxBackward)
  RILL_FAKE_FORWARD(BatchNormInference, BatchNormInferenceArgs, DoBatchNormForwardInference)
  RILL_FAKE_FORWARD(BatchNormTraining, BatchNormTrainingArgs, DoBatchNormForwardTraining)
  RILL_FAKE_FORWARD(BatchNormBackward, BatchNormBackwardArgs, DoBatchNormBackward)
  RILL_FAKE_FORWARD(Lrn, LrnArgs, DoLrn)
#undef RILL_FAKE_FORWARD

 private:
  std::unique_ptr<OneDnn> inner_;
};

inline bool RegisterFakeDnn() {
  return PluginRegistry::Default()
      .Register(
          kHostPlatformId, PluginKind::kDnn, FakeDnn::kName,
          [](StreamExecutor* e) -> absl::StatusOr<std::unique_ptr<PluginInterface>> {
            absl::StatusOr<std::unique_ptr<OneDnn>> inner = OneDnn::Create(e);
            if (!inner.ok()) return inner.status();
            return std::unique_ptr<PluginInterface>(std::make_unique<FakeDnn>(std::move(*inner)));
          })
      .ok();
}

}  // namespace rill::testing

#endif  // RILL_PLUGINS_DNN_FAKE_DNN_TEST_UTIL_H_
