#ifndef RILL_PLUGINS_DNN_ONEDNN_ONEDNN_DNN_H_
#define RILL_PLUGINS_DNN_ONEDNN_ONEDNN_DNN_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/plugins/dnn/dnn.h"

namespace rill {

class StreamExecutor;

namespace onednn {
class PrimitiveCache;
}  // namespace onednn

// DnnSupport for host-memory devices (the host platform;
// plugins/host_library.h) through oneDNN 2.x (CPU engine), float only: double
// tensors are Unimplemented. Registered as "onednn", the host default. Each
// call is checked (DnnSupport), its primitive looked up in a per-plugin cache
// keyed by every shape parameter (created on the calling thread on a miss, so
// an unsupported shape fails the Then* call at once), then enqueued on the
// stream and run on the stream's worker thread on that thread's own in-order
// dnnl::stream. Tensors keep the caller's layout (memory descriptors with
// explicit strides), except inside convolutions.
//
// Convolutions let oneDNN choose its layouts (format_tag::any): on AVX2 its
// JIT direct convolution with blocked layouts (nChw8c data, OIhw8i8o-style
// filters), several times faster than gemm on plain NCHW. The call reorders
// its inputs into blocked copies, convolves, and reorders the output back;
// the primitive and its reorders are cached together. Where the blocked
// layouts would pad channels (a 1- or 3-channel first layer), the caller's
// layouts are kept (gemm), which measured faster with the reorders counted.
// Algorithms: 0 "auto" (oneDNN picks; the default), 1 "direct", 2
// "winograd" (oneDNN implements it only on AVX-512 machines for some shapes:
// listed as unavailable with oneDNN's reason elsewhere). The workspace of
// an algorithm is its user-mode scratchpad plus the blocked copies.
//
// Threading: Debian's oneDNN uses the OpenMP runtime (libgomp). A primitive
// runs an OpenMP parallel region on the thread that executes it -- the host
// stream's worker -- whose team size oneDNN fixes when it creates the
// primitive. Convolutions are created twice, for the plugin's thread count
// (RILL_DNN_THREADS, else OMP_NUM_THREADS or the cores) and for one thread,
// and each call runs the one measured faster for its shape (one thread
// only when clearly faster; the other is retried every 32 calls, see
// onednn::ThreadChoice): on an idle 2-core machine two threads win; while
// another process or a spinning BLAS worker holds a core, the two-thread
// team waits at its barriers and one thread was 2-4x faster
// (docs/host_cnn_speed.md). RILL_DNN_THREADS=<n> fixes n threads for every
// call. Other primitives use the OpenMP default. Idle team threads spin
// briefly (OMP_WAIT_POLICY / GOMP_SPINCOUNT) before sleeping.
//
//   RILL_ASSIGN_OR_RETURN(StreamExecutor* exec, host->ExecutorForDevice(0));
//   stream->ThenConvolve(x_desc, x, w_desc, w, conv, y_desc, &y)
//          .ThenActivate({ActivationMode::kRelu}, y_desc, y, &y);
//
// Thread-safe.
class OneDnn : public DnnSupport {
 public:
  static constexpr char kName[] = "onednn";
  // Algorithm ids of GetConvolutionAlgorithms.
  static constexpr int64_t kAuto = 0, kDirect = 1, kWinograd = 2;

  static absl::StatusOr<std::unique_ptr<OneDnn>> Create(StreamExecutor* executor);
  ~OneDnn() override;

  std::string Name() const override { return kName; }
  std::string Version() const override { return LibraryVersion(); }
  // Float tensors of either layout; every operation of the interface but
  // LRN of an even size; no fused bias or activation.
  absl::Status Supports(const DnnOperation& op) const override;
  // "oneDNN 2.6.3 (cpu runtime OpenMP)".
  static std::string LibraryVersion();
  // Primitives created so far (cache entries), for tests.
  size_t CachedPrimitives() const;

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
  explicit OneDnn(StreamExecutor* executor);

  // Times every available algorithm of `shape` once on scratch buffers.
  absl::StatusOr<ConvolutionAlgorithm> TimeAlgorithms(ConvolutionKind kind,
                                                      const ConvolutionShape& shape);

  StreamExecutor* const executor_;  // Owns this plugin.
  const std::unique_ptr<onednn::PrimitiveCache> cache_;
  Mutex best_mu_;
  // The fastest algorithm id per (direction, shape).
  absl::flat_hash_map<std::pair<int, ConvolutionShape>, ConvolutionAlgorithm> best_
      ABSL_GUARDED_BY(best_mu_);
};

}  // namespace rill

#endif  // RILL_PLUGINS_DNN_ONEDNN_ONEDNN_DNN_H_
