#ifndef RILL_PLUGINS_DNN_XNNPACK_XNNPACK_DNN_H_
#define RILL_PLUGINS_DNN_XNNPACK_XNNPACK_DNN_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/plugins/dnn/dnn.h"

namespace rill {

class StreamExecutor;

namespace xnnpack {
class OperatorCache;
}  // namespace xnnpack

// DnnSupport for host-memory devices (the host platform;
// plugins/host_library.h) through XNNPACK (Debian's 2022 snapshot), an
// inference library: float only, forward only, NHWC tensors and OHWI filters
// (what XNNPACK computes; element-wise calls and bias add take either layout).
// Registered as "xnnpack", not the default: select it with RILL_DNN=xnnpack,
// or chain it, RILL_DNN=xnnpack,onednn, so that what it does not support
// (Supports() says why: NCHW convolutions, backward calls, batch norm, LRN,
// tanh, log-softmax, ...) runs on oneDNN.
//
// Supported: forward convolution (groups, depthwise, dilation, padding,
// stride) with fused bias and fused relu / clipped relu (an output clamp);
// max pooling and average pooling excluding padding (including it only
// without padding: XNNPACK divides by the window's valid pixels), windows
// other than 1x1; relu, clipped relu, sigmoid, elu; softmax over channels;
// bias add (XNNPACK's broadcasting add). One convolution algorithm, 0
// "xnnpack" (no workspace, deterministic).
//
// One instance per host executor (the PluginRegistry creates it; it lives as
// long as the executor), with its own operator cache; the thread pool is
// per process. Errors XNNPACK reports while a call runs land in the
// stream's status ("xnnpack convolution (run): XNNPACK
// xnn_status_out_of_memory (6)").
//
// Operators are created once per shape and cached (each setup + run under
// the operator's own mutex, since an operator keeps the pointers of its last
// setup; setup runs on every call and is cheap when sizes repeat). Most are
// created on the calling thread, so a parameter XNNPACK rejects fails the
// Then* call. A convolution packs its weights when created, so it is created
// on the stream's worker, from the weights the stream order gives, and
// cached by every shape parameter plus the filter and bias addresses with a
// copy of what it packed; every run compares (memcmp) the buffers with that
// copy and re-creates the operator when they differ. Weights that change
// between calls (training) are therefore always used as they are, at the
// cost of one weights-sized compare per call and one copy per operator.
//
// Threading: one process-wide pthreadpool of RILL_DNN_THREADS threads (else
// one per core). A call runs on it only when no other XNNPACK call holds it
// (an atomic try-acquire, never a wait); otherwise on its stream's worker
// thread alone. So concurrent streams do not oversubscribe the cores or
// queue on pthreadpool's internal mutex.
//
// Over-read: XNNPACK may read up to XNN_EXTRA_BYTES (16) past an input;
// Rill buffers are exact-size. A read that stays within the input's last
// page cannot fault and only feeds lanes XNNPACK discards; when it could
// cross into the next page, the input is first copied into a buffer with
// the slack (xnnpack::ReadableInput).
//
//   RILL_RETURN_IF_ERROR(exec->SetPlugin(PluginKind::kDnn, "xnnpack,onednn"));
//   stream->ThenConvolve(ConvolutionArgs{{x_desc, w_desc, conv, y_desc}, x, w, y,
//                                        kDefaultAlgorithm, {}, bias, ActivationDescriptor{}});
//
// Thread-safe.
class XnnpackDnn : public DnnSupport {
 public:
  static constexpr char kName[] = "xnnpack";
  static constexpr int64_t kAlgorithm = 0;  // The one convolution algorithm, "xnnpack".

  static absl::StatusOr<std::unique_ptr<XnnpackDnn>> Create(StreamExecutor* executor);
  ~XnnpackDnn() override;

  std::string Name() const override { return kName; }
  std::string Version() const override { return LibraryVersion(); }
  // "XNNPACK 0.0~git20220216 (Debian), 2 threads" (the shared pool's size):
  // xnnpack.h has no version macro, so the snapshot is a constant here.
  static std::string LibraryVersion();

  absl::Status Supports(const DnnOperation& op) const override;

  // Operators cached so far, and how many times convolution weights were
  // packed, for tests.
  size_t CachedOperators() const;
  int64_t WeightPacks() const;

 protected:
  absl::StatusOr<std::vector<ConvolutionAlgorithm>> ConvolutionAlgorithms(
      ConvolutionKind kind, const ConvolutionShape& shape) override;
  absl::StatusOr<ConvolutionAlgorithm> BestConvolutionAlgorithm(
      ConvolutionKind kind, const ConvolutionShape& shape) override;
  absl::Status Convolve(Stream* stream, ConvolutionKind kind, const ConvolutionArgs& args) override;
  absl::Status BiasAdd(Stream* stream, const BiasAddArgs& args) override;
  absl::Status Activate(Stream* stream, const ActivationArgs& args) override;
  absl::Status ActivateBackward(Stream* stream, const ActivationBackwardArgs& args) override;
  absl::Status PoolForward(Stream* stream, const PoolArgs& args) override;
  absl::Status PoolBackward(Stream* stream, const PoolBackwardArgs& args) override;
  absl::Status Softmax(Stream* stream, const SoftmaxArgs& args) override;
  absl::Status SoftmaxBackward(Stream* stream, const SoftmaxBackwardArgs& args) override;
  absl::Status BatchNormInference(Stream* stream, const BatchNormInferenceArgs& args) override;
  absl::Status BatchNormTraining(Stream* stream, const BatchNormTrainingArgs& args) override;
  absl::Status BatchNormBackward(Stream* stream, const BatchNormBackwardArgs& args) override;
  absl::Status Lrn(Stream* stream, const LrnArgs& args) override;

 private:
  explicit XnnpackDnn(StreamExecutor* executor);

  StreamExecutor* const executor_;  // Owns this plugin.
  const std::unique_ptr<xnnpack::OperatorCache> cache_;
  // Weight packings so far; shared with the convolution tasks in flight.
  const std::shared_ptr<std::atomic<int64_t>> packs_;
};

}  // namespace rill

#endif  // RILL_PLUGINS_DNN_XNNPACK_XNNPACK_DNN_H_
