#ifndef RILL_BENCH_DNN_BENCH_LAYERS_H_
#define RILL_BENCH_DNN_BENCH_LAYERS_H_

// The layers bench/dnn_bench measures (dnn_bench.cc, dnn_bench_xnnpack.cc):
// ResNet-50 stage 1, float, 56x56.

#include <cstdint>
#include <string>

#include "rill/plugins/dnn/dnn.h"

namespace rill::dnn_bench {

struct Layer {
  std::string name;
  int64_t c, k, window, pad;
};
inline const Layer kLayers[] = {{"conv3x3", 64, 64, 3, 1}, {"conv1x1", 256, 64, 1, 0}};
inline constexpr int64_t kBatches[] = {1, 4};
inline constexpr int64_t kSize = 56;
// Convolutions per BlockHostUntilDone (per wait when called directly): a
// stream runs layers back to back. The *_sync variants wait after every call.
inline constexpr int kDepth = 8;

// `l` at batch `n`: NCHW with OIHW filters, or NHWC with OHWI.
inline ConvolutionShape Shape(const Layer& l, int64_t n, DataLayout layout = DataLayout::kNCHW) {
  TensorDescriptor in{.n = n, .c = l.c, .h = kSize, .w = kSize, .layout = layout};
  FilterDescriptor f{
      .output_channels = l.k,
      .input_channels = l.c,
      .height = l.window,
      .width = l.window,
      .layout = layout == DataLayout::kNHWC ? FilterLayout::kOHWI : FilterLayout::kOIHW};
  ConvolutionDescriptor conv{.pad_h = l.pad, .pad_w = l.pad};
  return {in, f, conv, ConvolutionOutput(in, f, conv).value()};
}

inline double Flops(const ConvolutionShape& s) {
  return 2.0 * s.output.ElementCount() * s.filter.input_channels * s.filter.height * s.filter.width;
}

// "/conv3x3/n1": the part of a benchmark's name after its side.
inline std::string Suffix(const Layer& l, int64_t n) {
  return "/" + l.name + "/n" + std::to_string(n);
}

}  // namespace rill::dnn_bench

#endif  // RILL_BENCH_DNN_BENCH_LAYERS_H_
