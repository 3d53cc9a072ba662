#include "rill/plugins/fft/cufft/cufft_status.h"

#include <cufft.h>

#include "absl/strings/str_cat.h"

namespace rill {

std::string CuFftResultName(int result) {
  switch (result) {
    case CUFFT_SUCCESS:
      return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN:
      return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED:
      return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE:
      return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE:
      return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR:
      return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED:
      return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED:
      return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE:
      return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA:
      return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE:
      return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE:
      return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED:
      return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED:
      return "CUFFT_NOT_SUPPORTED";
    case CUFFT_MISSING_DEPENDENCY:
      return "CUFFT_MISSING_DEPENDENCY";
    case CUFFT_NVRTC_FAILURE:
      return "CUFFT_NVRTC_FAILURE";
    case CUFFT_NVJITLINK_FAILURE:
      return "CUFFT_NVJITLINK_FAILURE";
    case CUFFT_NVSHMEM_FAILURE:
      return "CUFFT_NVSHMEM_FAILURE";
    default:
      return absl::StrCat("cufftResult ", result);
  }
}

absl::Status CuFftStatus(int result, const std::string& what) {
  if (result == CUFFT_SUCCESS) return absl::OkStatus();
  const std::string message = absl::StrCat(what, ": ", CuFftResultName(result), " (", result, ")");
  switch (result) {
    case CUFFT_INVALID_SIZE:
    case CUFFT_INVALID_VALUE:
    case CUFFT_INVALID_TYPE:
    case CUFFT_INVALID_PLAN:
    case CUFFT_UNALIGNED_DATA:
      return absl::InvalidArgumentError(message);
    case CUFFT_NOT_IMPLEMENTED:
    case CUFFT_NOT_SUPPORTED:
      return absl::UnimplementedError(message);
    case CUFFT_ALLOC_FAILED:
      return absl::ResourceExhaustedError(message);
    case CUFFT_INVALID_DEVICE:
    case CUFFT_SETUP_FAILED:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace rill
