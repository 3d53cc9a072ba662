#ifndef RILL_PLUGINS_FFT_CUFFT_CUFFT_STATUS_H_
#define RILL_PLUGINS_FFT_CUFFT_CUFFT_STATUS_H_

// The one place where a cufftResult becomes an absl::Status. CUDA runtime
// errors met by the plugin go through CudaStatus (platform/cuda/cuda_status.h).

#include <string>

#include "absl/status/status.h"

namespace rill {

// "CUFFT_INVALID_SIZE" for 8, ..., "cufftResult 1234" when unknown.
std::string CuFftResultName(int result);

// OK for CUFFT_SUCCESS. Otherwise "<what>: CUFFT_<NAME> (<code>)" with the
// canonical code that fits: InvalidArgument for CUFFT_INVALID_SIZE,
// _INVALID_VALUE, _INVALID_TYPE, _INVALID_PLAN and _UNALIGNED_DATA;
// Unimplemented for _NOT_IMPLEMENTED and _NOT_SUPPORTED; ResourceExhausted
// for _ALLOC_FAILED; Unavailable for _INVALID_DEVICE and _SETUP_FAILED;
// Internal otherwise.
absl::Status CuFftStatus(int result, const std::string& what);

}  // namespace rill

#endif  // RILL_PLUGINS_FFT_CUFFT_CUFFT_STATUS_H_
