#ifndef RILL_PLUGINS_FFT_CLFFT_CLFFT_STATUS_H_
#define RILL_PLUGINS_FFT_CLFFT_CLFFT_STATUS_H_

// The one place where a clfftStatus becomes an absl::Status.

#include <string>

#include "absl/status/status.h"

namespace rill {

// "CLFFT_NOTIMPLEMENTED" for 4097, ..., the OpenCL name (ClErrorName) for
// the codes clFFT shares with OpenCL ("CL_INVALID_MEM_OBJECT").
std::string ClFftStatusName(int status);

// OK for CLFFT_SUCCESS. Otherwise "<what>: clFFT <NAME> (<code>)" with the
// canonical code that fits: Unimplemented for CLFFT_NOTIMPLEMENTED,
// CLFFT_TRANSPOSED_NOTIMPLEMENTED and CLFFT_DEVICE_NO_DOUBLE;
// InvalidArgument for CLFFT_INVALID_PLAN and CLFFT_DEVICE_MISMATCH;
// Internal for the other clFFT codes; the OpenCL mapping (ClStatus) for
// OpenCL codes (ResourceExhausted for out-of-memory, ...).
absl::Status ClFftStatus(int status, const std::string& what);

}  // namespace rill

#endif  // RILL_PLUGINS_FFT_CLFFT_CLFFT_STATUS_H_
