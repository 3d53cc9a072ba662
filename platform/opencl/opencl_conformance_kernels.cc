// The OpenCL C versions of the conformance suite's kernels
// (rill/conformance/suite_kernels.h), compiled into opencl_conformance_test.

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rill/conformance/suite_kernels.h"
#include "rill/platform/opencl/opencl_platform.h"

namespace rill {
namespace {

constexpr const char* kSaxpy = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void saxpy(float a, __global const float* x, __global float* y, ulong n) {
  const size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
})CL";

constexpr const char* kVolume = R"CL(
typedef struct { long x, y, z; } Dim3;  // rill::Dim3's layout.
__kernel void volume(__global long* out, __global long* dims, Dim3 extent, long bias) {
  const long x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  if (x == 0 && y == 0 && z == 0) {
    dims[0] = get_local_size(0); dims[1] = get_local_size(1); dims[2] = get_local_size(2);
    dims[3] = get_num_groups(0); dims[4] = get_num_groups(1); dims[5] = get_num_groups(2);
  }
  if (x < extent.x && y < extent.y && z < extent.z) {
    out[(z * extent.y + y) * extent.x + x] = x + 100 * y + 10000 * z + bias;
  }
})CL";

constexpr const char* kScalars = R"CL(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF
typedef struct { short a; double b; } Mixed;  // The suite's Mixed.
__kernel void scalars(char small, ulong wide, Mixed mixed, __global double* out) {
  if (get_global_id(0) == 0) out[0] = small + (double)wide + mixed.a * mixed.b;
})CL";

absl::Status AddOpenClKernel(std::string_view name, KernelSpec& spec) {
  if (name == "saxpy") {
    spec.AddOpenClSource(kSaxpy);
  } else if (name == "volume") {
    spec.AddOpenClSource(kVolume);
  } else if (name == "scalars") {
    spec.AddOpenClSource(kScalars);
  } else {
    return absl::NotFoundError(
        absl::StrCat("no OpenCL version of suite kernel '", std::string(name), "'"));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace rill

RILL_CONFORMANCE_KERNELS(opencl, ::rill::kOpenClPlatformId, ::rill::AddOpenClKernel);
