#ifndef RILL_PLATFORM_CUDA_CUDA_STATUS_H_
#define RILL_PLATFORM_CUDA_CUDA_STATUS_H_

// The one place where a CUDA runtime error becomes an absl::Status. Every
// CUDA runtime call of the backend and of its plugins goes through
// CudaStatus, so a failure names the call, the error and its text
// ("cudaMalloc: cudaErrorMemoryAllocation (2): out of memory").

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rill {

// OK for cudaSuccess. Otherwise "<what>: <cudaGetErrorName> (<code>):
// <cudaGetErrorString>" with the canonical code that fits:
// ResourceExhausted for cudaErrorMemoryAllocation; Unavailable for the
// no-device and no-driver errors (cudaErrorNoDevice,
// cudaErrorInsufficientDriver, cudaErrorStubLibrary, cudaErrorDevicesUnavailable,
// ...); InvalidArgument for cudaErrorInvalidValue, ...InvalidConfiguration,
// ...InvalidDevice and the other invalid-argument errors; NotFound for
// cudaErrorSymbolNotFound; Internal otherwise.
absl::Status CudaStatus(cudaError_t error, absl::string_view what);

}  // namespace rill

// Returns CudaStatus(expr, "<call>") from the enclosing function when the
// CUDA runtime call `expr` fails:  RILL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
#define RILL_CUDA_RETURN_IF_ERROR(expr)                                                      \
  do {                                                                                       \
    const cudaError_t rill_cuda_error_ = (expr);                                             \
    if (rill_cuda_error_ != cudaSuccess) return ::rill::CudaStatus(rill_cuda_error_, #expr); \
  } while (0)

#endif  // RILL_PLATFORM_CUDA_CUDA_STATUS_H_
