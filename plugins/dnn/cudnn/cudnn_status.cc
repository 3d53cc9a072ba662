#include "rill/plugins/dnn/cudnn/cudnn_status.h"

#include "absl/strings/str_cat.h"

namespace rill {

namespace {

// The category of a status: cuDNN 9 numbers them by thousands (1xxx
// uncategorized, 2xxx bad parameter, 3xxx not supported, 4xxx internal,
// 5xxx execution failed).
absl::StatusCode CanonicalCode(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_NOT_INITIALIZED:
      return absl::StatusCode::kUnavailable;
    case CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED:  // CUDNN_STATUS_ALLOC_FAILED.
    case CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED:
      return absl::StatusCode::kResourceExhausted;
    default:
      break;
  }
  const int number = static_cast<int>(status);
  if (number >= 2000 && number < 3000) return absl::StatusCode::kInvalidArgument;
  if (number >= 3000 && number < 4000) return absl::StatusCode::kUnimplemented;
  return absl::StatusCode::kInternal;
}

}  // namespace

std::string CudnnStatusName(cudnnStatus_t status) {
  const char* name = cudnnGetErrorString(status);
  return name != nullptr ? std::string(name) : std::string("CUDNN_UNKNOWN_STATUS");
}

std::string CudnnLastErrorText() {
  char text[512] = {0};
  cudnnGetLastErrorString(text, sizeof(text));
  text[sizeof(text) - 1] = 0;
  return text;
}

absl::Status CudnnStatus(cudnnStatus_t status, absl::string_view what, absl::string_view detail) {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  std::string message =
      absl::StrCat(what, ": ", CudnnStatusName(status), " (", static_cast<int>(status), ")");
  if (!detail.empty()) absl::StrAppend(&message, ": ", detail);
  return absl::Status(CanonicalCode(status), message);
}

}  // namespace rill
