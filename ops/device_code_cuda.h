// Compiles an op family's device kernels, written once in OpenCL C
// (ops/<family>/<family>.cl), as CUDA: included by the family's .cu, which
// then defines T, IS_FLOAT and RILL_KERNEL_SUFFIX and includes the .cl once
// per element type (entries binary_f32, binary_f64, ...). Maps what the
// kernels use of OpenCL C onto CUDA: __kernel, __global, get_global_id(0)
// for 1-D launches (ops/device_kernel.h's Launch1D), ulong, and the
// helpers' qualifiers. nvcc only; no Rill includes.
#ifndef RILL_OPS_DEVICE_CODE_CUDA_H_
#define RILL_OPS_DEVICE_CODE_CUDA_H_

#include <sys/types.h>  // ulong (unsigned long: 64 bits, as OpenCL's).

#include <cstdint>

static_assert(sizeof(long) == 8 && sizeof(ulong) == 8, "OpenCL's long and ulong are 64 bits");

#define __kernel extern "C" __global__
#define __global
#define RILL_FN __device__ inline
#define RILL_KERNEL_CAT2(a, b) a##_##b
#define RILL_KERNEL_CAT(a, b) RILL_KERNEL_CAT2(a, b)
#define KERNEL(name) RILL_KERNEL_CAT(name, RILL_KERNEL_SUFFIX)

__device__ inline ulong get_global_id(int) {
  return static_cast<ulong>(blockIdx.x) * blockDim.x + threadIdx.x;
}

#endif  // RILL_OPS_DEVICE_CODE_CUDA_H_
