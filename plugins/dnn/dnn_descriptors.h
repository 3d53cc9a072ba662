#ifndef RILL_PLUGINS_DNN_DNN_DESCRIPTORS_H_
#define RILL_PLUGINS_DNN_DNN_DESCRIPTORS_H_

// Shape descriptors of the DNN interface (plugins/dnn/dnn.h): plain value
// types in Rill terms, close to cuDNN's descriptors so that a cuDNN plugin
// maps each onto one cudnn*Descriptor_t, and onto oneDNN memory descriptors
// with explicit strides.
//
//   TensorDescriptor x{.n = 8, .c = 64, .h = 56, .w = 56};          // NCHW float
//   FilterDescriptor w{.output_channels = 64, .input_channels = 64, .height = 3, .width = 3};
//   ConvolutionDescriptor conv{.pad_h = 1, .pad_w = 1};
//   RILL_ASSIGN_OR_RETURN(TensorDescriptor y, ConvolutionOutput(x, w, conv));

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/plugins/plugin.h"

namespace rill {

// Memory order of a 4-D activation tensor (cuDNN CUDNN_TENSOR_NCHW/NHWC).
enum class DataLayout { kNCHW, kNHWC };
const char* DataLayoutName(DataLayout layout);  // "NCHW", "NHWC".

// Memory order of a filter (cuDNN's filter formats NCHW/NHWC, i.e. KCRS/KRSC).
enum class FilterLayout { kOIHW, kOHWI };
const char* FilterLayoutName(FilterLayout layout);  // "OIHW", "OHWI".

// A dense 4-D tensor: batch n, channels c, height h, width w, packed in
// `layout` (no padding between elements). All sizes must be > 0 and the
// byte count must fit in int64 (CheckTensor, which every DNN call makes);
// ElementCount() and Bytes() assume a checked descriptor.
struct TensorDescriptor {
  int64_t n = 0, c = 0, h = 0, w = 0;
  DataLayout layout = DataLayout::kNCHW;
  DataType type = DataType::kFloat;

  int64_t ElementCount() const { return n * c * h * w; }
  uint64_t Bytes() const { return static_cast<uint64_t>(ElementCount()) * SizeOf(type); }
  // Offset in elements of element (n, c, h, w) in this layout.
  int64_t Offset(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return layout == DataLayout::kNCHW ? ((in * c + ic) * h + ih) * w + iw
                                       : ((in * h + ih) * w + iw) * c + ic;
  }
  // "float NCHW [8, 64, 56, 56]".
  std::string ToString() const;

  friend bool operator==(const TensorDescriptor&, const TensorDescriptor&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const TensorDescriptor& t) {
    return H::combine(std::move(h), t.n, t.c, t.h, t.w, t.layout, t.type);
  }
};

// Convolution weights: output_channels (K, all groups together),
// input_channels per group (C / group_count, as cuDNN's filter descriptor),
// height x width window. Group g owns output channels [g K/G, (g+1) K/G)
// and reads input channels [g C/G, (g+1) C/G).
struct FilterDescriptor {
  int64_t output_channels = 0, input_channels = 0, height = 0, width = 0;
  FilterLayout layout = FilterLayout::kOIHW;
  DataType type = DataType::kFloat;

  int64_t ElementCount() const { return output_channels * input_channels * height * width; }
  uint64_t Bytes() const { return static_cast<uint64_t>(ElementCount()) * SizeOf(type); }
  // Offset in elements of weight (o, i, y, x) in this layout.
  int64_t Offset(int64_t o, int64_t i, int64_t y, int64_t x) const {
    return layout == FilterLayout::kOIHW ? ((o * input_channels + i) * height + y) * width + x
                                         : ((o * height + y) * width + x) * input_channels + i;
  }
  std::string ToString() const;  // "float OIHW [64, 64, 3, 3]".

  friend bool operator==(const FilterDescriptor&, const FilterDescriptor&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const FilterDescriptor& f) {
    return H::combine(std::move(h), f.output_channels, f.input_channels, f.height, f.width,
                      f.layout, f.type);
  }
};

// Cross-correlation (cuDNN CUDNN_CROSS_CORRELATION, oneDNN's convolution)
// with symmetric zero padding, stride and dilation per spatial axis, and
// group_count groups. Dilation 1 means none (cuDNN's convention; oneDNN
// counts from 0). Valid: pad >= 0, stride >= 1, dilation >= 1, groups >= 1.
struct ConvolutionDescriptor {
  int64_t pad_h = 0, pad_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t group_count = 1;

  std::string ToString() const;  // "pad 1x1 stride 1x1 dilation 1x1 groups 1".

  friend bool operator==(const ConvolutionDescriptor&, const ConvolutionDescriptor&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ConvolutionDescriptor& c) {
    return H::combine(std::move(h), c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dilation_h,
                      c.dilation_w, c.group_count);
  }
};

// Max pooling, or average pooling counting the zero padding in the divisor
// (cuDNN ..._COUNT_INCLUDE_PADDING) or not (..._EXCLUDE_PADDING).
enum class PoolingMode { kMax, kAverageIncludePadding, kAverageExcludePadding };
const char* PoolingModeName(PoolingMode mode);  // "max", "avg_include_pad", "avg_exclude_pad".

// A pooling window with symmetric padding. Valid: window >= 1,
// 0 <= pad < window, stride >= 1. Padding never wins a max.
struct PoolingDescriptor {
  PoolingMode mode = PoolingMode::kMax;
  int64_t window_h = 0, window_w = 0;
  int64_t pad_h = 0, pad_w = 0;
  int64_t stride_h = 1, stride_w = 1;

  std::string ToString() const;  // "max window 2x2 pad 0x0 stride 2x2".

  friend bool operator==(const PoolingDescriptor&, const PoolingDescriptor&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const PoolingDescriptor& p) {
    return H::combine(std::move(h), p.mode, p.window_h, p.window_w, p.pad_h, p.pad_w, p.stride_h,
                      p.stride_w);
  }
};

// Element-wise activations (cuDNN cudnnActivationMode_t):
//   relu: max(0, x); sigmoid: 1 / (1 + e^-x); tanh;
//   elu: x > 0 ? x : coefficient (e^x - 1);
//   clipped relu: min(max(0, x), coefficient).
enum class ActivationMode { kRelu, kSigmoid, kTanh, kElu, kClippedRelu };
const char* ActivationModeName(ActivationMode mode);  // "relu", "sigmoid", ...

struct ActivationDescriptor {
  ActivationMode mode = ActivationMode::kRelu;
  double coefficient = 0;        // elu's alpha; clipped relu's ceiling (> 0). Unused otherwise.
  std::string ToString() const;  // "clipped_relu(6)".
};

// Cross-channel local response normalization (cuDNN
// CUDNN_LRN_CROSS_CHANNEL_DIM1, oneDNN lrn_across_channels):
//   y = x / (k + alpha / size * sum_{c' in window(c)} x[c']^2) ^ beta,
// window(c) = [c - (size - 1) / 2, c + size / 2] clipped to the channels
// (symmetric for odd sizes; plugins may reject even ones: oneDNN does).
struct LrnDescriptor {
  int64_t size = 5;
  double alpha = 1e-4, beta = 0.75, k = 2;
  std::string ToString() const;  // "lrn size 5 alpha 0.0001 beta 0.75 k 2".
};

// --- Shape rules (InvalidArgument naming the values when broken).

// `t` (`f`) has positive sizes and a byte count that fits in int64;
// `role` names it in messages ("input"). InvalidArgument otherwise.
absl::Status CheckTensor(const char* role, const TensorDescriptor& t);
absl::Status CheckFilter(const char* role, const FilterDescriptor& f);

// The output shape of convolving `input` with `filter` under `conv`:
//   out = (in + 2 pad - ((window - 1) dilation + 1)) / stride + 1 per axis,
// channels filter.output_channels, input's layout and type. Checks the
// descriptors, the group split (input.c and output_channels divisible by
// group_count, input.c == input_channels x group_count) and a non-empty
// output.
absl::StatusOr<TensorDescriptor> ConvolutionOutput(const TensorDescriptor& input,
                                                   const FilterDescriptor& filter,
                                                   const ConvolutionDescriptor& conv);

// The output shape of pooling `input` (floor division, as cuDNN):
//   out = (in + 2 pad - window) / stride + 1.
absl::StatusOr<TensorDescriptor> PoolingOutput(const TensorDescriptor& input,
                                               const PoolingDescriptor& pool);

// Whether `a` and `b` have the same n, c, h, w and type (layouts may differ).
bool SameShape(const TensorDescriptor& a, const TensorDescriptor& b);

}  // namespace rill

#endif  // RILL_PLUGINS_DNN_DNN_DESCRIPTORS_H_
