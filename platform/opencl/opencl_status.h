#ifndef RILL_PLATFORM_OPENCL_OPENCL_STATUS_H_
#define RILL_PLATFORM_OPENCL_OPENCL_STATUS_H_

// The one place where an OpenCL error code becomes an absl::Status. Every
// OpenCL call of the backend and of its plugins goes through ClStatus, so a
// failure always names the call and the error ("clEnqueueWriteBuffer:
// CL_OUT_OF_RESOURCES (-5)").

#include <CL/cl.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rill {

// "CL_OUT_OF_RESOURCES" for -5, ..., or "CL error -1234" when unknown.
// Knows the core codes of OpenCL 1.0-3.0 and the ICD loader's
// CL_PLATFORM_NOT_FOUND_KHR (-1001).
absl::string_view ClErrorName(cl_int error);

// OK for CL_SUCCESS. Otherwise "<what>: <NAME> (<code>)" with the canonical
// code that fits: ResourceExhausted for CL_OUT_OF_RESOURCES,
// CL_OUT_OF_HOST_MEMORY and CL_MEM_OBJECT_ALLOCATION_FAILURE;
// Unavailable for CL_DEVICE_NOT_FOUND, CL_DEVICE_NOT_AVAILABLE and
// CL_PLATFORM_NOT_FOUND_KHR; InvalidArgument for the CL_INVALID_* codes and
// build failures (bad kernel source, bad launch sizes); Internal otherwise.
absl::Status ClStatus(cl_int error, absl::string_view what);

}  // namespace rill

// Returns ClStatus(expr, #expr's call name) from the enclosing function when
// the OpenCL call `expr` fails:  RILL_CL_RETURN_IF_ERROR(clFinish(queue));
#define RILL_CL_RETURN_IF_ERROR(expr)                                                 \
  do {                                                                                \
    const cl_int rill_cl_error_ = (expr);                                             \
    if (rill_cl_error_ != CL_SUCCESS) return ::rill::ClStatus(rill_cl_error_, #expr); \
  } while (0)

#endif  // RILL_PLATFORM_OPENCL_OPENCL_STATUS_H_
