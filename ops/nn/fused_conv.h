#ifndef RILL_OPS_NN_FUSED_CONV_H_
#define RILL_OPS_NN_FUSED_CONV_H_

// fused_conv2d: a forward convolution with its bias, a residual sum and an
// activation in one call, as the graph optimizer (graph/optimize.h) makes
// it from conv2d and the elementwise ops after it:
//
//   y = act(conv2d(data, weight) + bias[c] + residual)
//
// Inputs (data, weight, bias) and, with residual=true, residual (the
// output's shape). act: "" (none), "relu", "clipped_relu" (min(max(x, 0),
// clip)), "sigmoid", "tanh". The DNN plugin fuses what it can (oneDNN all
// of it, as post-ops; XNNPACK the bias and relu / clipped relu) and
// DnnSupport runs the rest after the convolution on the same stream.
//
// layout "NHWC": data, residual and output are [N, H, W, C] tensors (the
// weight stays OIHW), so consecutive convolutions hand each other their
// tensors with no conversion (oneDNN's and cuDNN's kernels read NHWC
// directly); the optimizer's nhwc_layout rewrite makes them.
//
// filter_id, when not 0, promises that the bound weight never changes (a
// constant the optimizer made; NewConstantFilterId() gives ids): the
// plugin may then keep the weight in its own layout between calls.
// Inference only: the op has no gradient.

#include <cstdint>
#include <string>
#include <vector>

#include "rill/ops/nn/nn.h"

namespace rill::ops {

struct FusedConvParams {
  std::vector<int64_t> stride;    // Default (1, 1).
  std::vector<int64_t> pad;       // Default (0, 0).
  std::vector<int64_t> dilation;  // Default (1, 1).
  int64_t num_group = 1;
  std::string act;  // "", "relu", "clipped_relu", "sigmoid", "tanh".
  double clip = 6;  // clipped_relu's ceiling (> 0).
  bool residual = false;
  int64_t filter_id = 0;
  std::string layout = "NCHW";  // Or "NHWC".

  ConvParams conv() const { return {stride, pad, dilation, num_group}; }
};

// A process-unique filter id (never 0).
int64_t NewConstantFilterId();

// Registers fused_conv2d and its DNN-library kernel (called by RegisterNnOps).
void RegisterFusedConv(OpRegistry& registry);

}  // namespace rill::ops

#endif  // RILL_OPS_NN_FUSED_CONV_H_
