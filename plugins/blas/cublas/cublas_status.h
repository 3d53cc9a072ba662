#ifndef RILL_PLUGINS_BLAS_CUBLAS_CUBLAS_STATUS_H_
#define RILL_PLUGINS_BLAS_CUBLAS_CUBLAS_STATUS_H_

// The one place where a cublasStatus_t becomes an absl::Status, so every
// cuBLAS failure of the plugin names the call, cuBLAS's status name and
// its text ("cublasSgemm_64(m=4, n=4, k=4): CUBLAS_STATUS_NOT_INITIALIZED (1):
// the library was not initialized").

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rill {

// OK for CUBLAS_STATUS_SUCCESS (0). Otherwise "<what>: <cublasGetStatusName>
// (<code>): <cublasGetStatusString>" with the canonical code that fits:
// ResourceExhausted for CUBLAS_STATUS_ALLOC_FAILED; InvalidArgument for
// _INVALID_VALUE; Unimplemented for _NOT_SUPPORTED and _ARCH_MISMATCH (the
// device lacks the feature); Unavailable for _NOT_INITIALIZED (what
// cublasCreate returns without a driver or device); FailedPrecondition for
// _LICENSE_ERROR; Internal otherwise (_MAPPING_ERROR, _EXECUTION_FAILED,
// _INTERNAL_ERROR, unknown codes). `status` is a cublasStatus_t.
absl::Status CuBlasStatus(int status, absl::string_view what);

}  // namespace rill

#endif  // RILL_PLUGINS_BLAS_CUBLAS_CUBLAS_STATUS_H_
