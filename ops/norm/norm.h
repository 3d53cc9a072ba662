#ifndef RILL_OPS_NORM_NORM_H_
#define RILL_OPS_NORM_NORM_H_

// layer_norm: y = (x - mean) / sqrt(var + eps) * gamma + beta, mean and
// (biased) variance over the axes from `axis` to the last, gamma and beta
// shaped as those axes. Inputs (data, gamma, beta); float. The graph
// optimizer makes it from the ops an ONNX LayerNormalization (or the
// ReduceMean/Sub/Pow/Sqrt/Div chain torch.onnx writes at opset 13) lowers
// to (graph/optimize.h, fuse_layer_norm). Kernels: host (norm.cc), OpenCL
// and CUDA (norm.cl, one work-item per row). Inference only: no gradient.

#include <cstdint>

namespace rill::ops {

class OpRegistry;

struct LayerNormParams {
  int64_t axis = -1;
  double eps = 1e-5;
};

void RegisterNormOps(OpRegistry& registry);

}  // namespace rill::ops

#endif  // RILL_OPS_NORM_NORM_H_
