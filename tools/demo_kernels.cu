// The CUDA variants of rill-demo's pipeline kernels (demo_pipeline.cc),
// embedded as a fatbin when the CUDA backend is built.
#include <cstdint>

extern "C" __global__ void saxpy(float a, const float* x, float* y, uint64_t n) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void square(const float* in, float* out, uint64_t n) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) out[i] = in[i] * in[i];
}
