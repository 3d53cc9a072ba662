// Stream::Then* DNN calls: one-line forwards to the executor's DnnSupport.

#include "rill/plugins/dnn/dnn.h"
#include "rill/stream/stream_plugin.h"

namespace rill {
namespace {

std::string ConvContext(const char* name, const ConvolutionArgs& a) {
  return absl::StrCat(name, "(", a.shape.ToString(), ", algorithm ", a.algorithm, ")");
}

std::string TensorContext(const char* name, const TensorDescriptor& desc,
                          const std::string& extra = "") {
  return absl::StrCat(name, "(", desc.ToString(), extra.empty() ? "" : ", ", extra, ")");
}

DeviceMemoryBase Or(DeviceMemory<float>* memory) { return memory ? *memory : DeviceMemoryBase(); }

}  // namespace

#define RILL_STREAM_DNN(Name, Args, context)                                                   \
  Stream& Stream::Then##Name(const Args& args) {                                               \
    return ThenPlugin<DnnSupport>([&] { return context; },                                     \
                                  [&](DnnSupport* dnn) { return dnn->Do##Name(this, args); }); \
  }
RILL_STREAM_DNN(Convolve, ConvolutionArgs, ConvContext("ThenConvolve", args))
RILL_STREAM_DNN(ConvolveBackwardData, ConvolutionArgs,
                ConvContext("ThenConvolveBackwardData", args))
RILL_STREAM_DNN(ConvolveBackwardFilter, ConvolutionArgs,
                ConvContext("ThenConvolveBackwardFilter", args))
RILL_STREAM_DNN(BiasAdd, BiasAddArgs, TensorContext("ThenBiasAdd", args.desc))
RILL_STREAM_DNN(Activate, ActivationArgs,
                TensorContext("ThenActivate", args.desc, args.activation.ToString()))
RILL_STREAM_DNN(ActivateBackward, ActivationBackwardArgs,
                TensorContext("ThenActivateBackward", args.desc, args.activation.ToString()))
RILL_STREAM_DNN(PoolForward, PoolArgs,
                TensorContext("ThenPoolForward", args.x_desc, args.pool.ToString()))
RILL_STREAM_DNN(PoolBackward, PoolBackwardArgs,
                TensorContext("ThenPoolBackward", args.x_desc, args.pool.ToString()))
RILL_STREAM_DNN(Softmax, SoftmaxArgs,
                TensorContext("ThenSoftmax", args.desc, args.log ? "log" : ""))
RILL_STREAM_DNN(SoftmaxBackward, SoftmaxBackwardArgs,
                TensorContext("ThenSoftmaxBackward", args.desc, args.log ? "log" : ""))
RILL_STREAM_DNN(BatchNormForwardInference, BatchNormInferenceArgs,
                TensorContext("ThenBatchNormForwardInference", args.desc))
RILL_STREAM_DNN(BatchNormForwardTraining, BatchNormTrainingArgs,
                TensorContext("ThenBatchNormForwardTraining", args.desc))
RILL_STREAM_DNN(BatchNormBackward, BatchNormBackwardArgs,
                TensorContext("ThenBatchNormBackward", args.desc))
RILL_STREAM_DNN(Lrn, LrnArgs, TensorContext("ThenLrn", args.desc, args.lrn.ToString()))
#undef RILL_STREAM_DNN

Stream& Stream::ThenConvolve(const TensorDescriptor& input_desc, const DeviceMemory<float>& input,
                             const FilterDescriptor& filter_desc, const DeviceMemory<float>& filter,
                             const ConvolutionDescriptor& conv, const TensorDescriptor& output_desc,
                             DeviceMemory<float>* output, int64_t algorithm,
                             DeviceMemoryBase workspace) {
  return ThenConvolve(ConvolutionArgs{{input_desc, filter_desc, conv, output_desc},
                                      input,
                                      filter,
                                      Or(output),
                                      algorithm,
                                      workspace});
}

Stream& Stream::ThenBiasAdd(const TensorDescriptor& desc, const DeviceMemory<float>& input,
                            const DeviceMemory<float>& bias, DeviceMemory<float>* output) {
  return ThenBiasAdd(BiasAddArgs{desc, input, bias, Or(output)});
}

Stream& Stream::ThenActivate(const ActivationDescriptor& activation, const TensorDescriptor& desc,
                             const DeviceMemory<float>& x, DeviceMemory<float>* y) {
  return ThenActivate(ActivationArgs{activation, desc, x, Or(y)});
}

Stream& Stream::ThenPoolForward(const PoolingDescriptor& pool, const TensorDescriptor& x_desc,
                                const DeviceMemory<float>& x, const TensorDescriptor& y_desc,
                                DeviceMemory<float>* y) {
  return ThenPoolForward(PoolArgs{pool, x_desc, y_desc, x, Or(y)});
}

Stream& Stream::ThenSoftmax(const TensorDescriptor& desc, const DeviceMemory<float>& x,
                            DeviceMemory<float>* y, bool log) {
  return ThenSoftmax(SoftmaxArgs{desc, log, x, Or(y)});
}

}  // namespace rill
