// The CUDA versions of the conformance suite's kernels
// (rill/conformance/suite_kernels.h): cuda_conformance_kernels.cu, embedded
// as a fatbin in cuda_conformance_test.

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rill/conformance/suite_kernels.h"
#include "rill/platform/cuda/cuda_platform.h"

extern const unsigned char rill_conformance_fatbin[];
extern const std::size_t rill_conformance_fatbin_size;

namespace rill {
namespace {

absl::Status AddCudaKernel(std::string_view name, KernelSpec& spec) {
  if (name != "saxpy" && name != "volume" && name != "scalars") {
    return absl::NotFoundError(
        absl::StrCat("no CUDA version of suite kernel '", std::string(name), "'"));
  }
  // One fatbin holds every entry point; the spec's name picks one.
  spec.AddCudaFatbin(rill_conformance_fatbin, rill_conformance_fatbin_size);
  return absl::OkStatus();
}

}  // namespace
}  // namespace rill

RILL_CONFORMANCE_KERNELS(cuda, ::rill::kCudaPlatformId, ::rill::AddCudaKernel);
