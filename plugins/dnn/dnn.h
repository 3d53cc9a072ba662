#ifndef RILL_PLUGINS_DNN_DNN_H_
#define RILL_PLUGINS_DNN_DNN_H_

// The DNN interface: DnnSupport and the argument structs of its calls.
// Shapes are described by plugins/dnn/dnn_descriptors.h. Conventions (as
// cuDNN's, without alpha/beta: every call overwrites its outputs):
//  - Tensors are 4-D, NCHW or NHWC; per-channel vectors (bias, batch norm
//    scale/offset/statistics) hold c elements.
//  - Forward calls read x and write y; backward calls read dy (and what the
//    derivative needs) and write dx (and the parameter gradients).
//  - Element type: every tensor of a call has the same DataType. A plugin
//    whose library lacks one (oneDNN has no double) returns Unimplemented.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/executor/device_memory.h"
#include "rill/plugins/dnn/dnn_descriptors.h"
#include "rill/plugins/plugin.h"

namespace rill {

class Stream;

// --- Convolution.

// The three directions share ConvolutionArgs (cuDNN's x, w, y):
//  kForward:        reads input (x) and filter (w), writes output (y).
//  kBackwardData:   reads output (dy) and filter (w), writes input (dx).
//  kBackwardFilter: reads input (x) and output (dy), writes filter (dw).
enum class ConvolutionKind { kForward, kBackwardData, kBackwardFilter };
const char* ConvolutionKindName(ConvolutionKind kind);  // "forward", "backward_data", ...

// The shape of a convolution. `output` must equal ConvolutionOutput(input,
// filter, conv) except that its layout may differ from the input's.
struct ConvolutionShape {
  TensorDescriptor input;
  FilterDescriptor filter;
  ConvolutionDescriptor conv;
  TensorDescriptor output;
  std::string ToString() const;

  friend bool operator==(const ConvolutionShape&, const ConvolutionShape&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ConvolutionShape& s) {
    return H::combine(std::move(h), s.input, s.filter, s.conv, s.output);
  }
};

// Algorithm ids are the plugin's (GetConvolutionAlgorithms lists them;
// for cuDNN, the cudnnConvolution*Algo_t values). Two special ids:
inline constexpr int64_t kDefaultAlgorithm = -1;  // The plugin's default ("auto" for oneDNN).
inline constexpr int64_t kBestAlgorithm = -2;  // The fastest for the shape: timed once, remembered.

// One algorithm a plugin offers for a convolution shape and direction.
struct ConvolutionAlgorithm {
  int64_t id = 0;
  std::string name;              // "auto", "direct", "winograd", ...
  bool available = false;        // Whether it runs this shape on this machine.
  std::string reason;            // Why not, when unavailable.
  std::string implementation;    // The library's kernel, when known ("jit:avx2", "gemm:jit").
  uint64_t workspace_bytes = 0;  // Workspace it needs for this shape.
  // Whether two runs on the same inputs give the same bits (cuDNN's
  // CUDNN_NON_DETERMINISTIC algorithms, atomics-based reductions, do not).
  bool deterministic = true;
};

// A convolution in one direction. `workspace` is scratch memory of the
// executor for the algorithm's use, at least its workspace_bytes; when null,
// the plugin allocates what it needs through the executor for the call (and
// a failed allocation is ResourceExhausted). A non-null workspace that is
// too small is InvalidArgument.
//
// Forward only, optionally fused:
//   output = act(conv(input, filter) + bias + side_input)
// with `bias` (output channels elements), `side_input` (a tensor of the
// output's shape and layout: a residual sum; it may be `output` itself) and
// `activation`. Where the plugin that runs the convolution does not fuse
// them (Supports() says), the call is a convolution, a bias add, an add of
// the side input (the stream's BLAS axpy) and an activation on the same
// stream.
//
// `filter_id`, when not 0, promises that every call with this id passes the
// same filter bytes (a constant of a bound inference graph: see
// ops/nn/fused_conv.h for where ids come from): a plugin may then keep the
// filter in its own layout between calls (oneDNN's blocked weights) instead
// of converting it each time. 0 (the default): the filter may change between
// calls.
struct ConvolutionArgs {
  ConvolutionShape shape;
  DeviceMemoryBase input, filter, output;
  int64_t algorithm = kDefaultAlgorithm;
  DeviceMemoryBase workspace = {};
  DeviceMemoryBase bias = {};                                     // Null: no bias.
  std::optional<ActivationDescriptor> activation = std::nullopt;  // Empty: none.
  DeviceMemoryBase side_input = {};                               // Null: none.
  uint64_t filter_id = 0;
};

// --- Other operations.

// output = input + bias[c] for every element of channel c. `output` may be
// `input` (in place).
struct BiasAddArgs {
  TensorDescriptor desc;
  DeviceMemoryBase input, bias, output;
};

// y = f(x) (y may be x).
struct ActivationArgs {
  ActivationDescriptor activation;
  TensorDescriptor desc;
  DeviceMemoryBase x, y;
};

// dx = f'(x) * dy, with y = f(x) from the forward call (cuDNN reads y, oneDNN
// x: both are given).
struct ActivationBackwardArgs {
  ActivationDescriptor activation;
  TensorDescriptor desc;
  DeviceMemoryBase x, y, dy, dx;
};

// y = pool(x); y_desc must equal PoolingOutput(x_desc, pool) up to layout.
struct PoolArgs {
  PoolingDescriptor pool;
  TensorDescriptor x_desc, y_desc;
  DeviceMemoryBase x, y;
};

// dx from dy (y_desc), with x and y = pool(x) of the forward call. For max
// pooling the gradient goes to the first maximum of each window.
struct PoolBackwardArgs {
  PoolingDescriptor pool;
  TensorDescriptor x_desc, y_desc;
  DeviceMemoryBase x, y, dy, dx;
};

// Softmax over the channels of each (n, h, w) position (cuDNN
// CUDNN_SOFTMAX_MODE_CHANNEL, accurate): y = exp(x - max) / sum; with `log`,
// y = x - max - log(sum exp(x - max)).
struct SoftmaxArgs {
  TensorDescriptor desc;
  bool log = false;
  DeviceMemoryBase x, y;
};

// dx = y (dy - sum_c dy y), or with `log`, dx = dy - exp(y) sum_c dy.
struct SoftmaxBackwardArgs {
  TensorDescriptor desc;
  bool log = false;
  DeviceMemoryBase y, dy, dx;
};

// Batch normalization per channel (spatial mode, cuDNN
// CUDNN_BATCHNORM_SPATIAL): y = scale (x - mean) / sqrt(variance + epsilon)
// + offset. scale, offset and every statistic hold desc.c elements.
// Inference uses the given estimated statistics.
struct BatchNormInferenceArgs {
  TensorDescriptor desc;
  DeviceMemoryBase x, scale, offset, estimated_mean, estimated_variance, y;
  double epsilon = 1e-5;
};

// Training computes the batch's mean and (biased) variance over n, h, w,
// writes y, and, as cuDNN does:
//  - saved_mean = mean and saved_inv_std = 1 / sqrt(variance + epsilon),
//    for the backward call (both required);
//  - running_mean = (1 - f) running_mean + f mean, and running_variance =
//    (1 - f) running_variance + f variance m / (m - 1) (the unbiased
//    estimate, m = n h w), f = exponential_average_factor; skipped when
//    both running buffers are null (f = 1 overwrites them: a cumulative
//    average uses f = 1 / (1 + calls)).
struct BatchNormTrainingArgs {
  TensorDescriptor desc;
  DeviceMemoryBase x, scale, offset, y;
  DeviceMemoryBase running_mean, running_variance;
  DeviceMemoryBase saved_mean, saved_inv_std;
  double epsilon = 1e-5;
  double exponential_average_factor = 1;
};

// Gradients of the training forward: dx, dscale, doffset from x, dy, scale
// and the forward's saved_mean and saved_inv_std (epsilon as given there).
struct BatchNormBackwardArgs {
  TensorDescriptor desc;
  DeviceMemoryBase x, dy, scale, saved_mean, saved_inv_std;
  DeviceMemoryBase dx, dscale, doffset;
  double epsilon = 1e-5;
};

// y = lrn(x), forward only.
struct LrnArgs {
  LrnDescriptor lrn;
  TensorDescriptor desc;
  DeviceMemoryBase x, y;
};

// --- Capability queries.

// Every operation of the interface, for Supports() and statistics.
enum class DnnOp {
  kConvolveForward,
  kConvolveBackwardData,
  kConvolveBackwardFilter,
  kBiasAdd,
  kActivate,
  kActivateBackward,
  kPoolForward,
  kPoolBackward,
  kSoftmax,
  kSoftmaxBackward,
  kBatchNormInference,
  kBatchNormTraining,
  kBatchNormBackward,
  kLrn,
};
const char* DnnOpName(DnnOp op);  // "convolve_forward", "pool_forward", ...

// What a capability query asks about: the operation and the descriptors it
// would run with (no buffers). Only the fields of `op` are meaningful;
// DnnOperation::Of builds one from a call's arguments.
struct DnnOperation {
  DnnOp op = DnnOp::kConvolveForward;
  TensorDescriptor input;                 // x; a convolution's input; dy for backward data.
  TensorDescriptor output;                // y of convolutions and pooling; else input's shape.
  FilterDescriptor filter;                // Convolutions.
  ConvolutionDescriptor conv;             // Convolutions.
  int64_t algorithm = kDefaultAlgorithm;  // Convolutions.
  bool fused_bias = false;                // Forward convolution with bias.
  bool fused_side_input = false;          // Forward convolution with a side input.
  std::optional<ActivationDescriptor> fused_activation;  // Forward convolution with activation.
  PoolingDescriptor pool;                                // Pooling.
  ActivationDescriptor activation;                       // Activations.
  bool log = false;                                      // Softmax.
  LrnDescriptor lrn;                                     // LRN.

  DataType type() const { return input.type; }
  // "convolve_forward float NHWC [1, 64, 56, 56] filter ... (bias, relu)".
  std::string ToString() const;

  static DnnOperation Of(ConvolutionKind kind, const ConvolutionArgs& args);
  static DnnOperation Of(const ConvolutionShape& shape, ConvolutionKind kind);
  static DnnOperation Of(const BiasAddArgs& args);
  static DnnOperation Of(const ActivationArgs& args);
  static DnnOperation Of(const ActivationBackwardArgs& args);
  static DnnOperation Of(const PoolArgs& args);
  static DnnOperation Of(const PoolBackwardArgs& args);
  static DnnOperation Of(const SoftmaxArgs& args);
  static DnnOperation Of(const SoftmaxBackwardArgs& args);
  static DnnOperation Of(const BatchNormInferenceArgs& args);
  static DnnOperation Of(const BatchNormTrainingArgs& args);
  static DnnOperation Of(const BatchNormBackwardArgs& args);
  static DnnOperation Of(const LrnArgs& args);
};

// The DNN interface of one executor. Each public Do* call checks its
// arguments -- InvalidArgument naming the values for descriptors that
// disagree with each other or with the buffers, negative padding, zero
// strides, empty outputs, bad group splits, null or too-small buffers,
// memory or a stream of another executor; NotFound for an algorithm id the
// plugin does not offer -- and then calls the protected virtual, which sees
// only checked arguments and enqueues the work on `stream`. Errors found
// while the work runs land in the stream's status. Stream::Then* forward
// here.
//
// A cuDNN implementation maps: TensorDescriptor -> cudnnTensorDescriptor
// (NCHW/NHWC), FilterDescriptor -> cudnnFilterDescriptor, ConvolutionDescriptor
// -> cudnnConvolutionDescriptor (+ group count), algorithm ids ->
// cudnnConvolution*Algo_t, workspace_bytes -> cudnnGet*WorkspaceSize,
// kBestAlgorithm -> cudnnFind*Algorithm.
//
//   DnnSupport* dnn = executor->AsDnn();
//   ConvolutionArgs conv{{x_desc, w_desc, conv_desc, y_desc}, x, w, y};
//   RILL_RETURN_IF_ERROR(dnn->DoConvolve(stream, conv));
//
// Thread-safe: calls may come from several streams.
class DnnSupport : public PluginInterface {
 public:
  static constexpr PluginKind kKind = PluginKind::kDnn;

  // Whether this plugin runs `op`: OK, or Unimplemented saying why
  // ("xnnpack: NCHW tensors (it computes NHWC)"). Every Do* call asks
  // before it dispatches: a call this plugin does not support goes to its
  // fallback() (the next plugin of the executor's chain, counted and logged,
  // plugins/plugin_chain.h), and fails with this status at the chain's end.
  // A fused forward convolution (ConvolutionArgs::bias, activation) runs on
  // the first plugin that runs it unfused: fused when that plugin supports
  // the fused form, else followed by a bias add and an activation, each
  // routed the same way. The default supports everything unfused; the Do*
  // checks run first, so `op` is valid. An explicit algorithm id is an id
  // of the plugin the call lands on: to pick one plugin's algorithm, call
  // that plugin (StreamExecutor::GetPlugin(PluginKind::kDnn, name)).
  virtual absl::Status Supports(const DnnOperation& op) const;

  // The algorithms offered for `shape` in direction `kind`, available or
  // not (with the reason), with their workspace sizes. InvalidArgument for
  // a bad shape.
  absl::StatusOr<std::vector<ConvolutionAlgorithm>> GetConvolutionAlgorithms(
      ConvolutionKind kind, const ConvolutionShape& shape);
  // The fastest available algorithm for `shape`: timed once on scratch
  // buffers on the calling thread, then remembered per shape (what
  // kBestAlgorithm in ConvolutionArgs runs).
  absl::StatusOr<ConvolutionAlgorithm> FindBestConvolutionAlgorithm(ConvolutionKind kind,
                                                                    const ConvolutionShape& shape);

  absl::Status DoConvolve(Stream* stream, const ConvolutionArgs& args);
  absl::Status DoConvolveBackwardData(Stream* stream, const ConvolutionArgs& args);
  absl::Status DoConvolveBackwardFilter(Stream* stream, const ConvolutionArgs& args);
  absl::Status DoBiasAdd(Stream* stream, const BiasAddArgs& args);
  absl::Status DoActivate(Stream* stream, const ActivationArgs& args);
  absl::Status DoActivateBackward(Stream* stream, const ActivationBackwardArgs& args);
  absl::Status DoPoolForward(Stream* stream, const PoolArgs& args);
  absl::Status DoPoolBackward(Stream* stream, const PoolBackwardArgs& args);
  absl::Status DoSoftmax(Stream* stream, const SoftmaxArgs& args);
  absl::Status DoSoftmaxBackward(Stream* stream, const SoftmaxBackwardArgs& args);
  absl::Status DoBatchNormForwardInference(Stream* stream, const BatchNormInferenceArgs& args);
  absl::Status DoBatchNormForwardTraining(Stream* stream, const BatchNormTrainingArgs& args);
  absl::Status DoBatchNormBackward(Stream* stream, const BatchNormBackwardArgs& args);
  absl::Status DoLrn(Stream* stream, const LrnArgs& args);

 protected:
  // The protected virtuals run checked calls that Supports() accepted.
  virtual absl::StatusOr<std::vector<ConvolutionAlgorithm>> ConvolutionAlgorithms(
      ConvolutionKind kind, const ConvolutionShape& shape) = 0;
  virtual absl::StatusOr<ConvolutionAlgorithm> BestConvolutionAlgorithm(
      ConvolutionKind kind, const ConvolutionShape& shape) = 0;
  virtual absl::Status Convolve(Stream* stream, ConvolutionKind kind,
                                const ConvolutionArgs& args) = 0;
  virtual absl::Status BiasAdd(Stream* stream, const BiasAddArgs& args) = 0;
  virtual absl::Status Activate(Stream* stream, const ActivationArgs& args) = 0;
  virtual absl::Status ActivateBackward(Stream* stream, const ActivationBackwardArgs& args) = 0;
  virtual absl::Status PoolForward(Stream* stream, const PoolArgs& args) = 0;
  virtual absl::Status PoolBackward(Stream* stream, const PoolBackwardArgs& args) = 0;
  virtual absl::Status Softmax(Stream* stream, const SoftmaxArgs& args) = 0;
  virtual absl::Status SoftmaxBackward(Stream* stream, const SoftmaxBackwardArgs& args) = 0;
  virtual absl::Status BatchNormInference(Stream* stream, const BatchNormInferenceArgs& args) = 0;
  virtual absl::Status BatchNormTraining(Stream* stream, const BatchNormTrainingArgs& args) = 0;
  virtual absl::Status BatchNormBackward(Stream* stream, const BatchNormBackwardArgs& args) = 0;
  virtual absl::Status Lrn(Stream* stream, const LrnArgs& args) = 0;

 private:
  // Runs a checked convolution on the plugin of the chain from this one
  // that supports it (the AlgorithmSelector's choice for kBestAlgorithm),
  // unfusing a bias or activation that plugin does not fuse.
  absl::Status DispatchConvolution(Stream* stream, ConvolutionKind kind,
                                   const ConvolutionArgs& args);
};

// The checks DnnSupport runs on a convolution shape (exposed for plugins
// and tests): descriptors valid, output == ConvolutionOutput up to layout.
absl::Status CheckConvolutionShape(const ConvolutionShape& shape);

}  // namespace rill

#endif  // RILL_PLUGINS_DNN_DNN_H_
