#ifndef RILL_PLUGINS_RNG_CURAND_CURAND_STATUS_H_
#define RILL_PLUGINS_RNG_CURAND_CURAND_STATUS_H_

// The one place where a curandStatus_t becomes an absl::Status, so every
// cuRAND failure of the plugin names the call and cuRAND's status
// ("curandCreateGenerator: CURAND_STATUS_INITIALIZATION_FAILED (203):
// initialization of CUDA failed").

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rill {

// "CURAND_STATUS_OUT_OF_RANGE" for 104, ..., "curandStatus 1234" when unknown.
std::string CuRandStatusName(int status);

// OK for CURAND_STATUS_SUCCESS (0). Otherwise "<what>: <name> (<code>):
// <text>" (the text from curand.h's comments) with the canonical code that
// fits: ResourceExhausted for _ALLOCATION_FAILED; InvalidArgument for
// _TYPE_ERROR, _OUT_OF_RANGE and _LENGTH_NOT_MULTIPLE; Unavailable for
// _INITIALIZATION_FAILED (what curandCreateGenerator returns without a
// driver or device); Unimplemented for _ARCH_MISMATCH and
// _DOUBLE_PRECISION_REQUIRED; FailedPrecondition for _VERSION_MISMATCH and
// _NOT_INITIALIZED; Internal otherwise (_LAUNCH_FAILURE,
// _PREEXISTING_FAILURE, _INTERNAL_ERROR, unknown codes). `status` is a
// curandStatus_t.
absl::Status CuRandStatus(int status, absl::string_view what);

}  // namespace rill

#endif  // RILL_PLUGINS_RNG_CURAND_CURAND_STATUS_H_
