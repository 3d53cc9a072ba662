#ifndef RILL_CONFORMANCE_SUITE_KERNELS_H_
#define RILL_CONFORMANCE_SUITE_KERNELS_H_

// The conformance suite's own kernels, and the hook through which a backend
// provides its versions of them. Each kernel comes with a host-function
// variant (KernelSpec::AddHostFunction), which a backend that runs host
// functions loads as is. A backend with another format registers a
// provider that adds its variant to each spec:
//
//   absl::Status AddMineKernel(std::string_view name, rill::KernelSpec& spec) {
//     if (name == "saxpy") {
//       spec.AddVariant(kMinePlatformId, {"mine-bytecode", kSaxpyBytecode});
//       return absl::OkStatus();
//     }
//     ...
//     return absl::NotFoundError(absl::StrCat("no mine version of ", name));
//   }
//   RILL_CONFORMANCE_KERNELS(mine, kMinePlatformId, AddMineKernel);
//
// in a source file given to rill_add_conformance_test(... SOURCES ...).
//
// The kernels (parameters in order; see kernel_conformance_test.cc for the
// host reference of each):
//   saxpy   (float a, float* x, float* y, uint64_t n): y[i] = a * x[i] + y[i], i < n
//   volume  (int64_t* out, int64_t* dims, Dim3 extent, int64_t bias):
//           out[(z * ey + y) * ex + x] = x + 100 y + 10000 z + bias inside
//           `extent`; the thread at the origin writes its block and grid
//           dims into dims[0..5]
//   scalars (int8_t small, uint64_t wide, Mixed{int16_t a; double b} mixed,
//           double* out): out[0] = small + wide + mixed.a * mixed.b

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/platform/platform_id.h"
#include "rill/stream/kernel_spec.h"

namespace rill::conformance {

// Adds a platform's variant of suite kernel `name` to `spec`; an error
// fails the cases that use the kernel, with its message.
using SuiteKernelProvider = absl::Status (*)(std::string_view name, KernelSpec& spec);

// Registers `provider` for `platform`. Returns true (for the macro).
bool RegisterSuiteKernels(PlatformId platform, SuiteKernelProvider provider);

// `spec` with every registered provider's variant added: the suite calls
// it on each of its kernels.
absl::StatusOr<KernelSpec> WithBackendVariants(KernelSpec spec);

}  // namespace rill::conformance

#define RILL_CONFORMANCE_KERNELS(tag, platform, provider)                \
  namespace {                                                            \
  const bool rill_conformance_kernels_##tag =                            \
      ::rill::conformance::RegisterSuiteKernels((platform), (provider)); \
  }

#endif  // RILL_CONFORMANCE_SUITE_KERNELS_H_
