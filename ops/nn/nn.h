#ifndef RILL_OPS_NN_NN_H_
#define RILL_OPS_NN_NN_H_

// Neural-network ops: matmul and fully_connected (BLAS on every platform),
// conv2d, pooling, batch_norm and activation (the DNN plugin on host and
// CUDA, naive OpenCL C kernels on OpenCL, which has no DNN plugin), and
// their backward ops. Definitions, shape inference and gradients in
// nn.cc; the library-call kernels in nn_host.cc (registered for host,
// OpenCL for the BLAS ops, and CUDA); the OpenCL kernels in nn_device.cc.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/ops/op.h"
#include "rill/plugins/dnn/dnn_descriptors.h"
#include "rill/tensor/shape.h"

namespace rill::ops {

class OpRegistry;

struct MatmulParams {
  bool transpose_a = false;
  bool transpose_b = false;
};

// x [N, K], weight [H, K], bias [H] (absent with no_bias) -> [N, H].
struct FullyConnectedParams {
  bool no_bias = false;
  int64_t num_hidden = 0;  // 0: from the weight; else must match it.
};

// conv2d, _backward_conv2d_data, _backward_conv2d_filter. Tuples hold one
// value (both axes) or two (h, w); empty: the default.
struct ConvParams {
  std::vector<int64_t> stride;    // Default (1, 1).
  std::vector<int64_t> pad;       // Default (0, 0).
  std::vector<int64_t> dilation;  // Default (1, 1).
  int64_t num_group = 1;
};

// pooling, _backward_pooling.
struct PoolParams {
  std::vector<int64_t> kernel;    // Required.
  std::vector<int64_t> stride;    // Default (1, 1).
  std::vector<int64_t> pad;       // Default (0, 0).
  std::string pool_type = "max";  // "max" or "avg".
  bool count_include_pad = true;  // avg: divide by the whole window.
};

// batch_norm, _backward_batch_norm.
struct BatchNormParams {
  double eps = 1e-5;
};

// activation, _backward_activation.
struct ActivationParams {
  std::string act_type;  // "relu", "sigmoid", "tanh".
};

// Matmul geometry: batch, m, n, k of row-major C[b, M, N] = op(A) op(B).
struct MatmulGeometry {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  Shape out;
};
absl::StatusOr<MatmulGeometry> MatmulGeom(const MatmulParams& p, const Shape& a, const Shape& b);

// Conv2d descriptors of data x and weight w (NCHW / OIHW, float).
struct ConvGeometry {
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
};
absl::StatusOr<ConvGeometry> ConvGeom(const ConvParams& p, const Shape& x, const Shape& w);

struct PoolGeometry {
  TensorDescriptor x, y;
  PoolingDescriptor pool;
};
absl::StatusOr<PoolGeometry> PoolGeom(const PoolParams& p, const Shape& x);

// x of rank 2 ([N, C]) or 4 (NCHW) as a 4-D descriptor.
absl::StatusOr<TensorDescriptor> BatchNormDesc(const Shape& x);

absl::StatusOr<ActivationMode> ParseActType(const std::string& act_type);

void RegisterNnOps(OpRegistry& registry);
void RegisterNnLibraryKernels(OpRegistry& registry);  // nn_host.cc
void RegisterNnDeviceKernels(OpRegistry& registry);   // nn_device.cc

}  // namespace rill::ops

#endif  // RILL_OPS_NN_NN_H_
