#include "rill/plugins/dnn/dnn_descriptors.h"

#include "absl/strings/str_cat.h"
#include "rill/base/checked_math.h"
#include "rill/base/status_macros.h"

namespace rill {

const char* DataLayoutName(DataLayout layout) {
  return layout == DataLayout::kNCHW ? "NCHW" : "NHWC";
}

const char* FilterLayoutName(FilterLayout layout) {
  return layout == FilterLayout::kOIHW ? "OIHW" : "OHWI";
}

const char* PoolingModeName(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::kMax:
      return "max";
    case PoolingMode::kAverageIncludePadding:
      return "avg_include_pad";
    case PoolingMode::kAverageExcludePadding:
      return "avg_exclude_pad";
  }
  return "?";
}

const char* ActivationModeName(ActivationMode mode) {
  switch (mode) {
    case ActivationMode::kRelu:
      return "relu";
    case ActivationMode::kSigmoid:
      return "sigmoid";
    case ActivationMode::kTanh:
      return "tanh";
    case ActivationMode::kElu:
      return "elu";
    case ActivationMode::kClippedRelu:
      return "clipped_relu";
  }
  return "?";
}

std::string TensorDescriptor::ToString() const {
  return absl::StrCat(DataTypeName(type), " ", DataLayoutName(layout), " [", n, ", ", c, ", ", h,
                      ", ", w, "]");
}

std::string FilterDescriptor::ToString() const {
  return absl::StrCat(DataTypeName(type), " ", FilterLayoutName(layout), " [", output_channels,
                      ", ", input_channels, ", ", height, ", ", width, "]");
}

std::string ConvolutionDescriptor::ToString() const {
  return absl::StrCat("pad ", pad_h, "x", pad_w, " stride ", stride_h, "x", stride_w, " dilation ",
                      dilation_h, "x", dilation_w, " groups ", group_count);
}

std::string PoolingDescriptor::ToString() const {
  return absl::StrCat(PoolingModeName(mode), " window ", window_h, "x", window_w, " pad ", pad_h,
                      "x", pad_w, " stride ", stride_h, "x", stride_w);
}

std::string ActivationDescriptor::ToString() const {
  return absl::StrCat(ActivationModeName(mode), "(", coefficient, ")");
}

std::string LrnDescriptor::ToString() const {
  return absl::StrCat("lrn size ", size, " alpha ", alpha, " beta ", beta, " k ", k);
}

namespace {

absl::Status AtLeast(const char* role, const char* name, int64_t value, int64_t min) {
  if (value >= min) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(role, " ", name, "=", value, " must be >= ", min));
}

// One spatial axis of a convolution or pooling: the output size, or an
// error when the (dilated) window does not fit the padded input.
absl::StatusOr<int64_t> OutputSize(const char* what, const char* axis, int64_t in, int64_t window,
                                   int64_t pad, int64_t stride, int64_t dilation) {
  RILL_ASSIGN_OR_RETURN(
      const int64_t effective,
      (CheckedInt<int64_t>(window - 1) * dilation + 1)
          .Get(absl::StrCat(what, "'s ", axis, " window ", window, " with dilation ", dilation)));
  RILL_ASSIGN_OR_RETURN(const int64_t padded,
                        (CheckedInt<int64_t>(pad) * 2 + in)
                            .Get(absl::StrCat(what, "'s padded ", axis, " ", in, " + 2x", pad)));
  if (padded < effective) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the ", axis, " window ", window, " with dilation ", dilation,
                     " spans ", effective, ", more than the padded input ", in, " + 2x", pad, " = ",
                     padded, ": the output would be empty"));
  }
  return (padded - effective) / stride + 1;
}

}  // namespace

absl::Status CheckTensor(const char* role, const TensorDescriptor& t) {
  if (!(t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(role, " ", t.ToString(), " has a size < 1"));
  }
  return (CheckedInt<int64_t>(t.n) * t.c * t.h * t.w * SizeOf(t.type))
      .Get(absl::StrCat(role, " ", t.ToString(), "'s byte count"))
      .status();
}

absl::Status CheckFilter(const char* role, const FilterDescriptor& f) {
  if (!(f.output_channels > 0 && f.input_channels > 0 && f.height > 0 && f.width > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(role, " ", f.ToString(), " has a size < 1"));
  }
  return (CheckedInt<int64_t>(f.output_channels) * f.input_channels * f.height * f.width *
          SizeOf(f.type))
      .Get(absl::StrCat(role, " ", f.ToString(), "'s byte count"))
      .status();
}

absl::StatusOr<TensorDescriptor> ConvolutionOutput(const TensorDescriptor& input,
                                                   const FilterDescriptor& filter,
                                                   const ConvolutionDescriptor& conv) {
  RILL_RETURN_IF_ERROR(CheckTensor("input", input));
  RILL_RETURN_IF_ERROR(CheckFilter("filter", filter));
  const char* c = "convolution";
  RILL_RETURN_IF_ERROR(AtLeast(c, "pad_h", conv.pad_h, 0));
  RILL_RETURN_IF_ERROR(AtLeast(c, "pad_w", conv.pad_w, 0));
  RILL_RETURN_IF_ERROR(AtLeast(c, "stride_h", conv.stride_h, 1));
  RILL_RETURN_IF_ERROR(AtLeast(c, "stride_w", conv.stride_w, 1));
  RILL_RETURN_IF_ERROR(AtLeast(c, "dilation_h", conv.dilation_h, 1));
  RILL_RETURN_IF_ERROR(AtLeast(c, "dilation_w", conv.dilation_w, 1));
  RILL_RETURN_IF_ERROR(AtLeast(c, "group_count", conv.group_count, 1));
  const int64_t g = conv.group_count;
  if (input.c % g != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("input channels ", input.c, " are not divisible by group_count ", g));
  }
  if (filter.output_channels % g != 0) {
    return absl::InvalidArgumentError(absl::StrCat("filter output channels ",
                                                   filter.output_channels,
                                                   " are not divisible by group_count ", g));
  }
  if (filter.input_channels * g != input.c) {
    return absl::InvalidArgumentError(absl::StrCat("filter input channels per group ",
                                                   filter.input_channels, " x group_count ", g,
                                                   " != input channels ", input.c));
  }
  if (filter.type != input.type) {
    return absl::InvalidArgumentError(absl::StrCat("filter type ", DataTypeName(filter.type),
                                                   " differs from input type ",
                                                   DataTypeName(input.type)));
  }
  TensorDescriptor out = input;
  out.c = filter.output_channels;
  RILL_ASSIGN_OR_RETURN(out.h, OutputSize(c, "height", input.h, filter.height, conv.pad_h,
                                          conv.stride_h, conv.dilation_h));
  RILL_ASSIGN_OR_RETURN(out.w, OutputSize(c, "width", input.w, filter.width, conv.pad_w,
                                          conv.stride_w, conv.dilation_w));
  return out;
}

absl::StatusOr<TensorDescriptor> PoolingOutput(const TensorDescriptor& input,
                                               const PoolingDescriptor& pool) {
  RILL_RETURN_IF_ERROR(CheckTensor("input", input));
  const char* p = "pooling";
  RILL_RETURN_IF_ERROR(AtLeast(p, "window_h", pool.window_h, 1));
  RILL_RETURN_IF_ERROR(AtLeast(p, "window_w", pool.window_w, 1));
  RILL_RETURN_IF_ERROR(AtLeast(p, "pad_h", pool.pad_h, 0));
  RILL_RETURN_IF_ERROR(AtLeast(p, "pad_w", pool.pad_w, 0));
  RILL_RETURN_IF_ERROR(AtLeast(p, "stride_h", pool.stride_h, 1));
  RILL_RETURN_IF_ERROR(AtLeast(p, "stride_w", pool.stride_w, 1));
  if (pool.pad_h >= pool.window_h || pool.pad_w >= pool.window_w) {
    return absl::InvalidArgumentError(absl::StrCat("pooling padding ", pool.pad_h, "x", pool.pad_w,
                                                   " must be smaller than the window ",
                                                   pool.window_h, "x", pool.window_w));
  }
  TensorDescriptor out = input;
  RILL_ASSIGN_OR_RETURN(
      out.h, OutputSize(p, "height", input.h, pool.window_h, pool.pad_h, pool.stride_h, 1));
  RILL_ASSIGN_OR_RETURN(
      out.w, OutputSize(p, "width", input.w, pool.window_w, pool.pad_w, pool.stride_w, 1));
  return out;
}

bool SameShape(const TensorDescriptor& a, const TensorDescriptor& b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w && a.type == b.type;
}

}  // namespace rill
