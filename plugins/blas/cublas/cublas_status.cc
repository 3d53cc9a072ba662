#include "rill/plugins/blas/cublas/cublas_status.h"

#include <cublas_api.h>

#include "absl/strings/str_cat.h"

namespace rill {

absl::Status CuBlasStatus(int status, absl::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const auto s = static_cast<cublasStatus_t>(status);
  const std::string message = absl::StrCat(what, ": ", cublasGetStatusName(s), " (", status,
                                           "): ", cublasGetStatusString(s));
  switch (s) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      return absl::ResourceExhaustedError(message);
    case CUBLAS_STATUS_INVALID_VALUE:
      return absl::InvalidArgumentError(message);
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return absl::UnimplementedError(message);
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return absl::UnavailableError(message);
    case CUBLAS_STATUS_LICENSE_ERROR:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace rill
