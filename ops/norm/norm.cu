// CUDA build of norm.cl (the OpenCL backend compiles the same source):
// entry layer_norm_f32. norm.cc launches it.
#include "../device_code_cuda.h"

#define T float
#define RILL_KERNEL_SUFFIX f32
#include "norm.cl"
#undef T
#undef RILL_KERNEL_SUFFIX
