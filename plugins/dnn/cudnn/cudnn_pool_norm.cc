// CuDnn's pooling and batch normalization.

#include <cudnn.h>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/plugins/dnn/cudnn/cudnn_context.h"
#include "rill/plugins/dnn/cudnn/cudnn_descriptors.h"
#include "rill/plugins/dnn/cudnn/cudnn_dnn.h"
#include "rill/plugins/dnn/cudnn/cudnn_status.h"

namespace rill {

namespace {

using cudnn::Session;

std::string Describe(const std::string& op, const TensorDescriptor& t) {
  return absl::StrCat("cudnn ", op, " ", t.ToString());
}

// The per-channel descriptor of batch normalization's scale, offset and
// statistics for `x` (cudnnDeriveBNTensorDescriptor, spatial mode).
absl::StatusOr<cudnn::TensorDesc> BatchNormParams(const cudnn::TensorDesc& x) {
  RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc params, cudnn::TensorDesc::Create());
  RILL_CUDNN_RETURN_IF_ERROR(
      cudnnDeriveBNTensorDescriptor(params.get(), x.get(), CUDNN_BATCHNORM_SPATIAL));
  return params;
}

}  // namespace

absl::Status CuDnn::PoolForward(Stream* stream, const PoolArgs& a) {
  return RunOn(
      stream, [&] { return Describe(a.pool.ToString(), a.x_desc); },
      [&](Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::PoolingDesc pool, cudnn::MakePooling(a.pool));
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc x, cudnn::MakeTensor(a.x_desc));
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc y, cudnn::MakeTensor(a.y_desc));
        const DataType type = a.x_desc.type;
        RILL_CUDNN_RETURN_IF_ERROR(cudnnPoolingForward(s.handle(), pool.get(), cudnn::One(type),
                                                       x.get(), CudaAddress(a.x), cudnn::Zero(type),
                                                       y.get(), CudaAddress(a.y)));
        return absl::OkStatus();
      });
}

absl::Status CuDnn::PoolBackward(Stream* stream, const PoolBackwardArgs& a) {
  return RunOn(
      stream, [&] { return Describe(a.pool.ToString() + " backward", a.x_desc); },
      [&](Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::PoolingDesc pool, cudnn::MakePooling(a.pool));
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc x, cudnn::MakeTensor(a.x_desc));
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc y, cudnn::MakeTensor(a.y_desc));
        const DataType type = a.x_desc.type;
        RILL_CUDNN_RETURN_IF_ERROR(
            cudnnPoolingBackward(s.handle(), pool.get(), cudnn::One(type), y.get(),
                                 CudaAddress(a.y), y.get(), CudaAddress(a.dy), x.get(),
                                 CudaAddress(a.x), cudnn::Zero(type), x.get(), CudaAddress(a.dx)));
        return absl::OkStatus();
      });
}

absl::Status CuDnn::BatchNormInference(Stream* stream, const BatchNormInferenceArgs& a) {
  return RunOn(
      stream, [&] { return Describe("batch norm inference", a.desc); },
      [&](Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc x, cudnn::MakeTensor(a.desc));
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc params, BatchNormParams(x));
        const DataType type = a.desc.type;
        RILL_CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationForwardInference(
            s.handle(), CUDNN_BATCHNORM_SPATIAL, cudnn::One(type), cudnn::Zero(type), x.get(),
            CudaAddress(a.x), x.get(), CudaAddress(a.y), params.get(), CudaAddress(a.scale),
            CudaAddress(a.offset), CudaAddress(a.estimated_mean), CudaAddress(a.estimated_variance),
            a.epsilon));
        return absl::OkStatus();
      });
}

absl::Status CuDnn::BatchNormTraining(Stream* stream, const BatchNormTrainingArgs& a) {
  return RunOn(
      stream, [&] { return Describe("batch norm training", a.desc); },
      [&](Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc x, cudnn::MakeTensor(a.desc));
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc params, BatchNormParams(x));
        const DataType type = a.desc.type;
        // Null running buffers (both null, as DnnSupport checks) skip the update.
        RILL_CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationForwardTraining(
            s.handle(), CUDNN_BATCHNORM_SPATIAL, cudnn::One(type), cudnn::Zero(type), x.get(),
            CudaAddress(a.x), x.get(), CudaAddress(a.y), params.get(), CudaAddress(a.scale),
            CudaAddress(a.offset), a.exponential_average_factor, CudaAddress(a.running_mean),
            CudaAddress(a.running_variance), a.epsilon, CudaAddress(a.saved_mean),
            CudaAddress(a.saved_inv_std)));
        return absl::OkStatus();
      });
}

absl::Status CuDnn::BatchNormBackward(Stream* stream, const BatchNormBackwardArgs& a) {
  return RunOn(
      stream, [&] { return Describe("batch norm backward", a.desc); },
      [&](Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc x, cudnn::MakeTensor(a.desc));
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc params, BatchNormParams(x));
        const DataType type = a.desc.type;
        const void* one = cudnn::One(type);
        const void* zero = cudnn::Zero(type);
        // dx and the parameter gradients are overwritten (alpha 1, beta 0).
        RILL_CUDNN_RETURN_IF_ERROR(cudnnBatchNormalizationBackward(
            s.handle(), CUDNN_BATCHNORM_SPATIAL, one, zero, one, zero, x.get(), CudaAddress(a.x),
            x.get(), CudaAddress(a.dy), x.get(), CudaAddress(a.dx), params.get(),
            CudaAddress(a.scale), CudaAddress(a.dscale), CudaAddress(a.doffset), a.epsilon,
            CudaAddress(a.saved_mean), CudaAddress(a.saved_inv_std)));
        return absl::OkStatus();
      });
}

}  // namespace rill
