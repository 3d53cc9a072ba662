#ifndef RILL_PLUGINS_DNN_CUDNN_CUDNN_DNN_H_
#define RILL_PLUGINS_DNN_CUDNN_CUDNN_DNN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/plugins/dnn/dnn.h"

namespace rill {

class StreamExecutor;

namespace cudnn {
class Context;
class Session;
}  // namespace cudnn

// DnnSupport for the CUDA platform through cuDNN 9's legacy API, float and
// double. Registered as "cudnn", the CUDA default DNN. Each executor's
// instance owns one cudnnHandle_t (created on first use, on the executor's
// device); each call is checked (DnnSupport), builds its cuDNN descriptors,
// then, holding the handle's mutex, binds the handle to the stream's
// cudaStream_t (cudnnSetStream) and enqueues: cuDNN runs asynchronously on
// that stream. cuDNN errors fail the call itself, with cuDNN's status name,
// number and explanation ("cudnn lrn float NCHW [2, 9, 3, 4]:
// cudnnSetLRNDescriptor(...): CUDNN_STATUS_BAD_PARAM (2000): ...").
//
// Every call overwrites its outputs (alpha = 1, beta = 0), as the
// interface says:
//   convolution       cudnnConvolution{Forward,BackwardData,BackwardFilter}
//   bias add          cudaMemcpyAsync (out of place) + cudnnAddTensor
//   activation        cudnnActivation{Forward,Backward}
//   pooling           cudnnPooling{Forward,Backward} (max: MAX_DETERMINISTIC)
//   softmax           cudnnSoftmax{Forward,Backward}, ACCURATE or LOG, MODE_CHANNEL
//   batch norm        cudnnBatchNormalization{ForwardInference,ForwardTraining,Backward}, SPATIAL
//   lrn               cudnnLRNCrossChannelForward (sizes 1..16, as cuDNN)
//
// Convolutions. Algorithm ids are cuDNN's cudnnConvolution{Fwd,BwdData,
// BwdFilter}Algo_t values for the direction; GetConvolutionAlgorithms
// lists every one, available when cuDNN's heuristics
// (cudnnGetConvolution*Algorithm_v7) and its workspace query accept the
// shape. kDefaultAlgorithm runs the first available one of the heuristics'
// list; kBestAlgorithm the fastest by cudnnFindConvolution*Algorithm (run
// once per direction and shape on scratch buffers cuDNN allocates, then
// remembered). The math type is CUDNN_FMA_MATH: float convolutions never
// use TF32 tensor cores. cuDNN wants x, w and y in one format: a shape
// whose output or filter layout differs from the input's is computed in
// NCHW/OIHW, and the operands in another layout are converted
// (cudnnTransformTensor) through scratch memory that counts as workspace.
// Without args.workspace, the executor's cached workspace is used
// (cudnn_context.h: grown as needed, ordered across streams).
//
//   DnnSupport* dnn = executor->AsDnn();  // "cudnn" on the cuda platform.
//   stream->ThenConvolve(ConvolutionArgs{{x_desc, w_desc, conv, y_desc}, x, w, y})
//          .ThenActivate(ActivationArgs{{ActivationMode::kRelu}, y_desc, y, y});
//
// Thread-safe.
class CuDnn : public DnnSupport {
 public:
  static constexpr char kName[] = "cudnn";

  // InvalidArgument for an executor that is not a CUDA executor. Creates
  // no handle yet (that needs the device).
  static absl::StatusOr<std::unique_ptr<CuDnn>> Create(StreamExecutor* executor);
  ~CuDnn() override;

  std::string Name() const override { return kName; }
  std::string Version() const override;  // "cuDNN 9.19.0"
  // cudnnGetVersion: 91900 for cuDNN 9.19.0 (works without a GPU).
  static int64_t LibraryVersion();
  // Bytes of the executor's cached convolution workspace, for tests.
  uint64_t CachedWorkspaceBytes() const;

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
  CuDnn(StreamExecutor* executor, int ordinal);

  // Runs `work` with the handle bound to `stream`'s cudaStream_t (the stream
  // must belong to this executor); an error is prefixed with describe().
  absl::Status RunOn(Stream* stream, absl::FunctionRef<std::string()> describe,
                     absl::FunctionRef<absl::Status(cudnn::Session&)> work);
  // The id of the first available algorithm of cuDNN's heuristics.
  absl::StatusOr<int64_t> DefaultAlgorithm(ConvolutionKind kind, const ConvolutionShape& shape);
  // cudnnFind*Algorithm's fastest available algorithm.
  absl::StatusOr<ConvolutionAlgorithm> FindAlgorithm(ConvolutionKind kind,
                                                     const ConvolutionShape& shape);

  StreamExecutor* const executor_;  // Owns this plugin.
  const std::unique_ptr<cudnn::Context> context_;
  using AlgorithmKey = std::pair<int, ConvolutionShape>;  // (kind, shape).
  Mutex algorithms_mu_;
  absl::flat_hash_map<AlgorithmKey, int64_t> default_ ABSL_GUARDED_BY(algorithms_mu_);
  absl::flat_hash_map<AlgorithmKey, ConvolutionAlgorithm> best_ ABSL_GUARDED_BY(algorithms_mu_);
};

}  // namespace rill

#endif  // RILL_PLUGINS_DNN_CUDNN_CUDNN_DNN_H_
