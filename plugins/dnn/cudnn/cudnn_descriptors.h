#ifndef RILL_PLUGINS_DNN_CUDNN_CUDNN_DESCRIPTORS_H_
#define RILL_PLUGINS_DNN_CUDNN_CUDNN_DESCRIPTORS_H_

// rill:internal -- not installed: the cuDNN plugin's implementation.

// Private to the cudnn plugin: owning wrappers for cuDNN's descriptors and
// the mapping from Rill's descriptors (plugins/dnn/dnn_descriptors.h) onto
// them. None of this needs a GPU: descriptors are host objects.
//
//   Rill                      cuDNN
//   DataType float/double     CUDNN_DATA_FLOAT/DOUBLE (also the compute type)
//   DataLayout NCHW/NHWC      CUDNN_TENSOR_NCHW/NHWC
//   FilterLayout OIHW/OHWI    filter format CUDNN_TENSOR_NCHW/NHWC (KCRS/KRSC)
//   ConvolutionDescriptor     CUDNN_CROSS_CORRELATION, group count, FMA math
//   PoolingMode               CUDNN_POOLING_MAX_DETERMINISTIC, AVERAGE_COUNT_{IN,EX}CLUDE_PADDING
//   ActivationMode            CUDNN_ACTIVATION_{RELU,SIGMOID,TANH,ELU,CLIPPED_RELU}
//
// Sizes that do not fit cuDNN's int are InvalidArgument; what cuDNN itself
// rejects comes back with its status (RILL_CUDNN_RETURN_IF_ERROR).

#include <cudnn.h>

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/plugins/dnn/cudnn/cudnn_status.h"
#include "rill/plugins/dnn/dnn_descriptors.h"

namespace rill::cudnn {

// An owned cuDNN descriptor: created by Create(), destroyed with the
// object. Movable, not copyable. Thread-compatible.
template <typename Handle, cudnnStatus_t (*kCreate)(Handle*), cudnnStatus_t (*kDestroy)(Handle)>
class UniqueDescriptor {
 public:
  UniqueDescriptor() = default;
  static absl::StatusOr<UniqueDescriptor> Create() {
    UniqueDescriptor d;
    RILL_CUDNN_RETURN_IF_ERROR(kCreate(&d.handle_));
    return d;
  }
  UniqueDescriptor(UniqueDescriptor&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)) {}
  UniqueDescriptor& operator=(UniqueDescriptor&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  UniqueDescriptor(const UniqueDescriptor&) = delete;
  UniqueDescriptor& operator=(const UniqueDescriptor&) = delete;
  ~UniqueDescriptor() { Reset(); }

  Handle get() const { return handle_; }

 private:
  void Reset() {
    if (handle_ != nullptr) kDestroy(handle_);
    handle_ = nullptr;
  }
  Handle handle_ = nullptr;
};

using TensorDesc = UniqueDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                    cudnnDestroyTensorDescriptor>;
using FilterDesc = UniqueDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                    cudnnDestroyFilterDescriptor>;
using ConvolutionDesc =
    UniqueDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                     cudnnDestroyConvolutionDescriptor>;
using PoolingDesc = UniqueDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                                     cudnnDestroyPoolingDescriptor>;
using ActivationDesc =
    UniqueDescriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                     cudnnDestroyActivationDescriptor>;
using LrnDesc =
    UniqueDescriptor<cudnnLRNDescriptor_t, cudnnCreateLRNDescriptor, cudnnDestroyLRNDescriptor>;

// --- Enumerations.
cudnnDataType_t ToCudnn(DataType type);
cudnnTensorFormat_t ToCudnn(DataLayout layout);
cudnnTensorFormat_t ToCudnn(FilterLayout layout);
// The filter layout that matches a tensor layout (NCHW <-> OIHW, NHWC <-> OHWI).
FilterLayout MatchingFilterLayout(DataLayout layout);

// The scaling factors cuDNN reads for `type`'s tensors (double for double
// tensors, float otherwise): pointers to static constants 1 and 0.
const void* One(DataType type);
const void* Zero(DataType type);

// --- Descriptors.

// `t` in its layout and type.
absl::StatusOr<TensorDesc> MakeTensor(const TensorDescriptor& t);
// `t` with another layout (same sizes and type).
absl::StatusOr<TensorDesc> MakeTensor(const TensorDescriptor& t, DataLayout layout);
// 1 x t.c x 1 x 1 in t's layout and type: per-channel vectors (bias).
absl::StatusOr<TensorDesc> MakeChannelVector(const TensorDescriptor& t);
// `f` as a filter descriptor in `layout` (f.layout unless staged).
absl::StatusOr<FilterDesc> MakeFilter(const FilterDescriptor& f, FilterLayout layout);
// `f`'s K x C x R x S weights as a 4-D tensor in `layout` (OIHW: NCHW,
// OHWI: NHWC), so cudnnTransformTensor converts between filter layouts.
absl::StatusOr<TensorDesc> MakeFilterAsTensor(const FilterDescriptor& f, FilterLayout layout);
// Cross-correlation with c's padding, strides, dilations and groups,
// computed in `type`, with CUDNN_FMA_MATH: no TF32 tensor-core rounding
// (CUDNN_DEFAULT_MATH permits TF32 for float on Ampere and newer), so
// float results stay within float rounding of the exact convolution.
absl::StatusOr<ConvolutionDesc> MakeConvolution(const ConvolutionDescriptor& c, DataType type);
absl::StatusOr<PoolingDesc> MakePooling(const PoolingDescriptor& p);
absl::StatusOr<ActivationDesc> MakeActivation(const ActivationDescriptor& a);
absl::StatusOr<LrnDesc> MakeLrn(const LrnDescriptor& l);

}  // namespace rill::cudnn

#endif  // RILL_PLUGINS_DNN_CUDNN_CUDNN_DESCRIPTORS_H_
