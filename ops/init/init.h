#ifndef RILL_OPS_INIT_INIT_H_
#define RILL_OPS_INIT_INIT_H_

// Init ops: fill, zeros, ones, arange, random_uniform, random_normal (no
// inputs: InvokeOptions::context says where), and dropout with its backward.
// Definitions in init.cc; host kernels in init_host.cc; OpenCL and CUDA
// launch code in init_device.cc, CUDA kernels in init.cu. Random numbers
// come from the device's RNG plugin (Philox: the same seed gives the same
// numbers on host, OpenCL and CUDA).

#include <cstdint>
#include <vector>

#include "rill/ops/op.h"

namespace rill::ops {

class OpRegistry;

struct FillParams {
  std::vector<int64_t> shape;
  double value = 0;
  DType dtype = DType::kF32;
};
struct ZerosParams {
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  double value = 0;  // Not an attribute.
};
struct OnesParams {
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  double value = 1;  // Not an attribute.
};
struct ArangeParams {
  double start = 0;
  double stop = 0;
  double step = 1;
  DType dtype = DType::kF32;
};
struct RandomUniformParams {
  double low = 0;
  double high = 1;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
};
struct RandomNormalParams {
  double loc = 0;
  double scale = 1;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
};
struct DropoutParams {
  double p = 0.5;
};

// The bits of `value` as one element of `dtype` (little end first), for
// fill kernels that work on element sizes: 1, 2, 4 or 8 bytes. An integer
// dtype takes FloatToInt's value (float_to_int.h): NaN 0, beyond the range
// saturated, otherwise truncated toward zero.
uint64_t FillBits(double value, DType dtype);
// Number of elements of arange; InvalidArgument naming a bad value.
absl::StatusOr<int64_t> ArangeCount(const ArangeParams& p);

// The random_normal kernel of every platform (the RNG plugin call).
absl::Status RandomNormalKernel(OpContext& ctx);

void RegisterInitHostKernels(OpRegistry& registry);
void RegisterInitDeviceKernels(OpRegistry& registry);

}  // namespace rill::ops

#endif  // RILL_OPS_INIT_INIT_H_
