#include "rill/plugins/fft/clfft/clfft_status.h"

#include <clFFT.h>

#include "absl/strings/str_cat.h"
#include "rill/platform/opencl/opencl_status.h"

namespace rill {

std::string ClFftStatusName(int status) {
  switch (status) {
    case CLFFT_BUGCHECK:
      return "CLFFT_BUGCHECK";
    case CLFFT_NOTIMPLEMENTED:
      return "CLFFT_NOTIMPLEMENTED";
    case CLFFT_TRANSPOSED_NOTIMPLEMENTED:
      return "CLFFT_TRANSPOSED_NOTIMPLEMENTED";
    case CLFFT_FILE_NOT_FOUND:
      return "CLFFT_FILE_NOT_FOUND";
    case CLFFT_FILE_CREATE_FAILURE:
      return "CLFFT_FILE_CREATE_FAILURE";
    case CLFFT_VERSION_MISMATCH:
      return "CLFFT_VERSION_MISMATCH";
    case CLFFT_INVALID_PLAN:
      return "CLFFT_INVALID_PLAN";
    case CLFFT_DEVICE_NO_DOUBLE:
      return "CLFFT_DEVICE_NO_DOUBLE";
    case CLFFT_DEVICE_MISMATCH:
      return "CLFFT_DEVICE_MISMATCH";
    default: {
      const absl::string_view name = ClErrorName(status);  // Shared with OpenCL.
      return std::string(name.data(), name.size());
    }
  }
}

absl::Status ClFftStatus(int status, const std::string& what) {
  if (status == CLFFT_SUCCESS) return absl::OkStatus();
  if (status < CLFFT_BUGCHECK) return ClStatus(status, absl::StrCat(what, ": clFFT"));
  const std::string message =
      absl::StrCat(what, ": clFFT ", ClFftStatusName(status), " (", status, ")");
  switch (status) {
    case CLFFT_NOTIMPLEMENTED:
    case CLFFT_TRANSPOSED_NOTIMPLEMENTED:
    case CLFFT_DEVICE_NO_DOUBLE:
      return absl::UnimplementedError(message);
    case CLFFT_INVALID_PLAN:
    case CLFFT_DEVICE_MISMATCH:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace rill
