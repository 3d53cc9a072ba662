// The CUDA versions of the conformance suite's kernels (rill/conformance/suite_kernels.h),
// embedded as a fatbin when the CUDA backend is built. Same names and
// parameter layouts as the host and OpenCL variants.
#include <cstdint>

struct Dim3 {
  long long x, y, z;
};  // rill::Dim3's layout.
struct Mixed {
  short a;
  double b;
};  // The test's Mixed.

extern "C" __global__ void saxpy(float a, const float* x, float* y, uint64_t n) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) y[i] = __fadd_rn(__fmul_rn(a, x[i]), y[i]);  // No FMA: match the host's rounding.
}

extern "C" __global__ void volume(long long* out, long long* dims, Dim3 extent, long long bias) {
  const long long x = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long y = blockIdx.y * (long long)blockDim.y + threadIdx.y;
  const long long z = blockIdx.z * (long long)blockDim.z + threadIdx.z;
  if (x == 0 && y == 0 && z == 0) {
    dims[0] = blockDim.x;
    dims[1] = blockDim.y;
    dims[2] = blockDim.z;
    dims[3] = gridDim.x;
    dims[4] = gridDim.y;
    dims[5] = gridDim.z;
  }
  if (x < extent.x && y < extent.y && z < extent.z) {
    out[(z * extent.y + y) * extent.x + x] = x + 100 * y + 10000 * z + bias;
  }
}

extern "C" __global__ void scalars(signed char small, uint64_t wide, Mixed mixed, double* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    out[0] = __dadd_rn(__dadd_rn((double)small, (double)wide), __dmul_rn((double)mixed.a, mixed.b));
  }
}
