// Kernels for cuda_platform_test.cc.
#include <cstdint>

// y[i] += a * x[i].
extern "C" __global__ void axpy(float a, const float* x, float* y, uint64_t n) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

// Spins for about `cycles` clock cycles, then writes 1 to *flag.
extern "C" __global__ void spin(long long cycles, int* flag) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  *flag = 1;
}
