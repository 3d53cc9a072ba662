#ifndef RILL_PLUGINS_DNN_CUDNN_CUDNN_STATUS_H_
#define RILL_PLUGINS_DNN_CUDNN_CUDNN_STATUS_H_

// The one place where a cudnnStatus_t becomes an absl::Status. Every cuDNN
// call of the cudnn plugin goes through CudnnStatus (usually by
// RILL_CUDNN_RETURN_IF_ERROR), so a failure names the call, cuDNN's status
// and its number, and cuDNN's own explanation when it gave one:
//   "cudnnSetTensor4dDescriptor(...): CUDNN_STATUS_BAD_PARAM (2000): (n <= 0) || ..."

#include <cudnn.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rill {

// "CUDNN_STATUS_BAD_PARAM" (cudnnGetErrorString); "CUDNN_UNKNOWN_STATUS"
// for a number cuDNN does not know.
std::string CudnnStatusName(cudnnStatus_t status);

// The calling thread's last cuDNN error text (cudnnGetLastErrorString), ""
// when there is none. Read it right after the failing call.
std::string CudnnLastErrorText();

// OK for CUDNN_STATUS_SUCCESS. Otherwise "<what>: <name> (<number>)", then
// ": <detail>" when `detail` is not empty, with the canonical code that
// fits: InvalidArgument for CUDNN_STATUS_BAD_PARAM*; Unimplemented for
// CUDNN_STATUS_NOT_SUPPORTED*; ResourceExhausted for the allocation
// failures (CUDNN_STATUS_ALLOC_FAILED, i.e. ..._HOST_ALLOCATION_FAILED, and
// ..._DEVICE_ALLOCATION_FAILED); Unavailable for
// CUDNN_STATUS_NOT_INITIALIZED (what cudnnCreate returns without a driver
// or device); Internal otherwise.
absl::Status CudnnStatus(cudnnStatus_t status, absl::string_view what,
                         absl::string_view detail = "");

}  // namespace rill

// Returns CudnnStatus(expr, "<call>", <cuDNN's last error text>) from the
// enclosing function when the cuDNN call `expr` fails:
//   RILL_CUDNN_RETURN_IF_ERROR(cudnnSetStream(handle, stream));
#define RILL_CUDNN_RETURN_IF_ERROR(expr)                                                   \
  do {                                                                                     \
    const cudnnStatus_t rill_cudnn_status_ = (expr);                                       \
    if (rill_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                                      \
      return ::rill::CudnnStatus(rill_cudnn_status_, #expr, ::rill::CudnnLastErrorText()); \
    }                                                                                      \
  } while (0)

#endif  // RILL_PLUGINS_DNN_CUDNN_CUDNN_STATUS_H_
