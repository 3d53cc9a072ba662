#include "rill/platform/cuda/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace rill {

absl::Status CudaStatus(cudaError_t error, absl::string_view what) {
  if (error == cudaSuccess) return absl::OkStatus();
  const char* name = cudaGetErrorName(error);
  const char* text = cudaGetErrorString(error);
  std::string message = absl::StrCat(what, ": ", name ? name : "cudaError", " (",
                                     static_cast<int>(error), "): ", text ? text : "unknown error");
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorInitializationError:
      return absl::UnavailableError(message);
    case cudaErrorInvalidValue:
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
    case cudaErrorInvalidPitchValue:
    case cudaErrorInvalidResourceHandle:
    case cudaErrorInvalidKernelImage:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidPtx:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidSource:
    case cudaErrorLaunchOutOfResources:
      return absl::InvalidArgumentError(message);
    case cudaErrorSymbolNotFound:
      return absl::NotFoundError(message);
    case cudaErrorNotReady:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace rill
