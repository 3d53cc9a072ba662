// Kernels the CUDA backend itself needs, embedded as a fatbin
// (rill_cuda_embed_kernels in CMakeLists.txt) and loaded per executor.
#include <cstdint>

// Fills n 32-bit words at p with `pattern` (StreamInterface::Memset32 when
// the pattern's four bytes differ; cudaMemsetAsync handles the rest).
extern "C" __global__ void rill_memset32(uint32_t* p, uint32_t pattern, uint64_t n) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    p[i] = pattern;
  }
}
