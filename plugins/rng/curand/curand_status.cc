#include "rill/plugins/rng/curand/curand_status.h"

#include <curand.h>

#include "absl/strings/str_cat.h"

namespace rill {
namespace {

struct Known {
  curandStatus_t status;
  const char* name;
  const char* text;
};

// curand.h gives no name or text function; these are its enum and comments.
constexpr Known kKnown[] = {
    {CURAND_STATUS_SUCCESS, "CURAND_STATUS_SUCCESS", "no errors"},
    {CURAND_STATUS_VERSION_MISMATCH, "CURAND_STATUS_VERSION_MISMATCH",
     "header file and linked library version do not match"},
    {CURAND_STATUS_NOT_INITIALIZED, "CURAND_STATUS_NOT_INITIALIZED", "generator not initialized"},
    {CURAND_STATUS_ALLOCATION_FAILED, "CURAND_STATUS_ALLOCATION_FAILED",
     "memory allocation failed"},
    {CURAND_STATUS_TYPE_ERROR, "CURAND_STATUS_TYPE_ERROR", "generator is wrong type"},
    {CURAND_STATUS_OUT_OF_RANGE, "CURAND_STATUS_OUT_OF_RANGE", "argument out of range"},
    {CURAND_STATUS_LENGTH_NOT_MULTIPLE, "CURAND_STATUS_LENGTH_NOT_MULTIPLE",
     "length requested is not a multiple of dimension"},
    {CURAND_STATUS_DOUBLE_PRECISION_REQUIRED, "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED",
     "GPU does not have double precision"},
    {CURAND_STATUS_LAUNCH_FAILURE, "CURAND_STATUS_LAUNCH_FAILURE", "kernel launch failure"},
    {CURAND_STATUS_PREEXISTING_FAILURE, "CURAND_STATUS_PREEXISTING_FAILURE",
     "preexisting failure on library entry"},
    {CURAND_STATUS_INITIALIZATION_FAILED, "CURAND_STATUS_INITIALIZATION_FAILED",
     "initialization of CUDA failed"},
    {CURAND_STATUS_ARCH_MISMATCH, "CURAND_STATUS_ARCH_MISMATCH",
     "architecture mismatch, GPU does not support requested feature"},
    {CURAND_STATUS_INTERNAL_ERROR, "CURAND_STATUS_INTERNAL_ERROR", "internal library error"},
};

const Known* Find(int status) {
  for (const Known& k : kKnown) {
    if (k.status == status) return &k;
  }
  return nullptr;
}

}  // namespace

std::string CuRandStatusName(int status) {
  const Known* k = Find(status);
  return k != nullptr ? k->name : absl::StrCat("curandStatus ", status);
}

absl::Status CuRandStatus(int status, absl::string_view what) {
  if (status == CURAND_STATUS_SUCCESS) return absl::OkStatus();
  const Known* k = Find(status);
  const std::string message = absl::StrCat(what, ": ", CuRandStatusName(status), " (", status, ")",
                                           k != nullptr ? ": " : "", k != nullptr ? k->text : "");
  switch (status) {
    case CURAND_STATUS_ALLOCATION_FAILED:
      return absl::ResourceExhaustedError(message);
    case CURAND_STATUS_TYPE_ERROR:
    case CURAND_STATUS_OUT_OF_RANGE:
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE:
      return absl::InvalidArgumentError(message);
    case CURAND_STATUS_INITIALIZATION_FAILED:
      return absl::UnavailableError(message);
    case CURAND_STATUS_ARCH_MISMATCH:
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED:
      return absl::UnimplementedError(message);
    case CURAND_STATUS_VERSION_MISMATCH:
    case CURAND_STATUS_NOT_INITIALIZED:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace rill
