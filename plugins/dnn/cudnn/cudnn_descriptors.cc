#include "rill/plugins/dnn/cudnn/cudnn_descriptors.h"

#include <initializer_list>
#include <limits>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"

namespace rill::cudnn {

namespace {

// `values` as cuDNN's ints, into `out`; InvalidArgument naming `what`
// when one does not fit.
absl::Status Ints(const char* what, std::initializer_list<int64_t> values, int* out) {
  for (int64_t value : values) {
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " ", value, " does not fit cuDNN's int"));
    }
    *out++ = static_cast<int>(value);
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorDesc> Tensor4d(const char* what, cudnnTensorFormat_t format, DataType type,
                                    int64_t n, int64_t c, int64_t h, int64_t w) {
  int d[4];
  RILL_RETURN_IF_ERROR(Ints(what, {n, c, h, w}, d));
  RILL_ASSIGN_OR_RETURN(TensorDesc desc, TensorDesc::Create());
  RILL_CUDNN_RETURN_IF_ERROR(
      cudnnSetTensor4dDescriptor(desc.get(), format, ToCudnn(type), d[0], d[1], d[2], d[3]));
  return desc;
}

}  // namespace

cudnnDataType_t ToCudnn(DataType type) {
  return type == DataType::kDouble ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

cudnnTensorFormat_t ToCudnn(DataLayout layout) {
  return layout == DataLayout::kNHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}

cudnnTensorFormat_t ToCudnn(FilterLayout layout) {
  return layout == FilterLayout::kOHWI ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}

FilterLayout MatchingFilterLayout(DataLayout layout) {
  return layout == DataLayout::kNHWC ? FilterLayout::kOHWI : FilterLayout::kOIHW;
}

const void* One(DataType type) {
  static const float kFloat = 1;
  static const double kDouble = 1;
  return type == DataType::kDouble ? static_cast<const void*>(&kDouble)
                                   : static_cast<const void*>(&kFloat);
}

const void* Zero(DataType type) {
  static const float kFloat = 0;
  static const double kDouble = 0;
  return type == DataType::kDouble ? static_cast<const void*>(&kDouble)
                                   : static_cast<const void*>(&kFloat);
}

absl::StatusOr<TensorDesc> MakeTensor(const TensorDescriptor& t) { return MakeTensor(t, t.layout); }

absl::StatusOr<TensorDesc> MakeTensor(const TensorDescriptor& t, DataLayout layout) {
  return Tensor4d("tensor size", ToCudnn(layout), t.type, t.n, t.c, t.h, t.w);
}

absl::StatusOr<TensorDesc> MakeChannelVector(const TensorDescriptor& t) {
  return Tensor4d("channels", ToCudnn(t.layout), t.type, 1, t.c, 1, 1);
}

absl::StatusOr<FilterDesc> MakeFilter(const FilterDescriptor& f, FilterLayout layout) {
  int d[4];
  RILL_RETURN_IF_ERROR(
      Ints("filter size", {f.output_channels, f.input_channels, f.height, f.width}, d));
  RILL_ASSIGN_OR_RETURN(FilterDesc desc, FilterDesc::Create());
  RILL_CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(desc.get(), ToCudnn(f.type),
                                                        ToCudnn(layout), d[0], d[1], d[2], d[3]));
  return desc;
}

absl::StatusOr<TensorDesc> MakeFilterAsTensor(const FilterDescriptor& f, FilterLayout layout) {
  return Tensor4d("filter size", ToCudnn(layout), f.type, f.output_channels, f.input_channels,
                  f.height, f.width);
}

absl::StatusOr<ConvolutionDesc> MakeConvolution(const ConvolutionDescriptor& c, DataType type) {
  int v[7];  // pad h, w; stride h, w; dilation h, w; groups.
  RILL_RETURN_IF_ERROR(Ints(
      "convolution parameter",
      {c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w, c.group_count}, v));
  RILL_ASSIGN_OR_RETURN(ConvolutionDesc desc, ConvolutionDesc::Create());
  RILL_CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(
      desc.get(), v[0], v[1], v[2], v[3], v[4], v[5], CUDNN_CROSS_CORRELATION, ToCudnn(type)));
  RILL_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(desc.get(), v[6]));
  RILL_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(desc.get(), CUDNN_FMA_MATH));
  return desc;
}

absl::StatusOr<PoolingDesc> MakePooling(const PoolingDescriptor& p) {
  int v[6];  // window h, w; pad h, w; stride h, w.
  RILL_RETURN_IF_ERROR(Ints("pooling parameter",
                            {p.window_h, p.window_w, p.pad_h, p.pad_w, p.stride_h, p.stride_w}, v));
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX_DETERMINISTIC;
  if (p.mode == PoolingMode::kAverageIncludePadding)
    mode = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  if (p.mode == PoolingMode::kAverageExcludePadding)
    mode = CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  RILL_ASSIGN_OR_RETURN(PoolingDesc desc, PoolingDesc::Create());
  RILL_CUDNN_RETURN_IF_ERROR(cudnnSetPooling2dDescriptor(desc.get(), mode, CUDNN_NOT_PROPAGATE_NAN,
                                                         v[0], v[1], v[2], v[3], v[4], v[5]));
  return desc;
}

absl::StatusOr<ActivationDesc> MakeActivation(const ActivationDescriptor& a) {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  // Relu gets an unreachable ceiling: some cuDNN versions read coef as
  // relu's upper bound (as PyTorch does, pass the largest double).
  double coef = std::numeric_limits<double>::max();
  switch (a.mode) {
    case ActivationMode::kRelu:
      break;
    case ActivationMode::kSigmoid:
      mode = CUDNN_ACTIVATION_SIGMOID;
      coef = 0;
      break;
    case ActivationMode::kTanh:
      mode = CUDNN_ACTIVATION_TANH;
      coef = 0;
      break;
    case ActivationMode::kElu:
      mode = CUDNN_ACTIVATION_ELU;
      coef = a.coefficient;
      break;
    case ActivationMode::kClippedRelu:
      mode = CUDNN_ACTIVATION_CLIPPED_RELU;
      coef = a.coefficient;
      break;
  }
  RILL_ASSIGN_OR_RETURN(ActivationDesc desc, ActivationDesc::Create());
  RILL_CUDNN_RETURN_IF_ERROR(
      cudnnSetActivationDescriptor(desc.get(), mode, CUDNN_NOT_PROPAGATE_NAN, coef));
  return desc;
}

absl::StatusOr<LrnDesc> MakeLrn(const LrnDescriptor& l) {
  if (l.size < 1 || l.size > std::numeric_limits<unsigned>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(l.ToString(), ": size does not fit cuDNN's unsigned"));
  }
  RILL_ASSIGN_OR_RETURN(LrnDesc desc, LrnDesc::Create());
  RILL_CUDNN_RETURN_IF_ERROR(
      cudnnSetLRNDescriptor(desc.get(), static_cast<unsigned>(l.size), l.alpha, l.beta, l.k));
  return desc;
}

}  // namespace rill::cudnn
