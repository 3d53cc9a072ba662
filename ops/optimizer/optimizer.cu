// CUDA build of the optimizer kernels: optimizer.cl, the same source the
// OpenCL backend compiles, once per element type (entries sgd_f32,
// adam_f64, ...). optimizer_device.cc launches them.
#include "../device_code_cuda.h"

#define T float
#define RILL_KERNEL_SUFFIX f32
#include "optimizer.cl"
#undef T
#undef RILL_KERNEL_SUFFIX

#define T double
#define RILL_KERNEL_SUFFIX f64
#include "optimizer.cl"
#undef T
#undef RILL_KERNEL_SUFFIX
