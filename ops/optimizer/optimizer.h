#ifndef RILL_OPS_OPTIMIZER_OPTIMIZER_H_
#define RILL_OPS_OPTIMIZER_OPTIMIZER_H_

// Optimizer update ops (MXNet's sgd_update, sgd_mom_update, adam_update):
// they update the weight (and the optimizer state) in place. Definitions in
// optimizer.cc; host kernels in optimizer_host.cc; OpenCL and CUDA launch
// code in optimizer_device.cc, CUDA kernels in optimizer.cu.
//
// The gradient seen by every update is
//   g' = clip(rescale_grad * grad, clip_gradient) + wd * weight
// (no clipping when clip_gradient < 0), then
//   sgd_update:     weight -= lr * g'
//   sgd_mom_update: mom = momentum * mom - lr * g'; weight += mom
//   adam_update:    mean = beta1 * mean + (1 - beta1) * g'
//                   var  = beta2 * var  + (1 - beta2) * g'^2
//                   weight -= lr_t * mean / (sqrt(var) + epsilon)
//                   with lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t) for
//                   t >= 1 (bias correction), lr_t = lr for t = 0.

#include "rill/ops/op.h"

namespace rill::ops {

class OpRegistry;

struct SgdParams {
  double lr = 0;
  double momentum = 0;
  double wd = 0;
  double rescale_grad = 1;
  double clip_gradient = -1;
};

struct AdamParams {
  double lr = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double wd = 0;
  double rescale_grad = 1;
  double clip_gradient = -1;
  int64_t t = 0;
  // lr with the bias correction of step t folded in.
  double EffectiveLr() const;
};

void RegisterOptimizerHostKernels(OpRegistry& registry);
void RegisterOptimizerDeviceKernels(OpRegistry& registry);

}  // namespace rill::ops

#endif  // RILL_OPS_OPTIMIZER_OPTIMIZER_H_
