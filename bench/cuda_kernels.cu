// Kernels for cuda_bench: an empty one for launch cost.
extern "C" __global__ void noop(int) {}
