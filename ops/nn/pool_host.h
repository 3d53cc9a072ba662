#ifndef RILL_OPS_NN_POOL_HOST_H_
#define RILL_OPS_NN_POOL_HOST_H_

// Host kernels of `pooling` and `_backward_pooling`: plain loops over the
// NCHW planes of float tensors, run inline on the CPU context (or as one
// host callback on a host device's stream). They replace the DNN plugin on
// the host: oneDNN 2.6 has only its slow reference pooling for plain
// layouts, and its max-pooling backward needs a forward workspace that the
// op does not keep, so the plugin ran the forward twice (docs/host_cnn_speed.md).
//
// Semantics are the DNN interface's (plugins/dnn/dnn.h): padded positions
// are ignored by max and counted by kAverageIncludePadding (divisor
// window_h * window_w) but not by kAverageExcludePadding; the max gradient
// goes to the first maximum of each window (row-major), recomputed from x.
// Windows may overlap (stride < window): gradients add up.

#include <cstdint>

#include "absl/status/status.h"
#include "rill/plugins/dnn/dnn_descriptors.h"

namespace rill::ops {

class OpContext;

// y = pool(x) for NCHW x (x_desc) and y (y_desc = PoolingOutput(x_desc, p)).
void PoolForwardNchw(const PoolingDescriptor& p, const TensorDescriptor& x_desc,
                     const TensorDescriptor& y_desc, const float* x, float* y);

// dx (overwritten) from dy and x.
void PoolBackwardNchw(const PoolingDescriptor& p, const TensorDescriptor& x_desc,
                      const TensorDescriptor& y_desc, const float* x, const float* dy, float* dx);

// Kernels: pooling (x) -> y; _backward_pooling (dy, x, y) -> dx.
absl::Status HostPoolForwardKernel(OpContext& ctx);
absl::Status HostPoolBackwardKernel(OpContext& ctx);

}  // namespace rill::ops

#endif  // RILL_OPS_NN_POOL_HOST_H_
