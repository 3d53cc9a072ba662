#include "rill/plugins/fft/clfft/clfft_fft.h"

#include <clFFT.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/opencl/opencl_platform.h"
#include "rill/platform/opencl/opencl_plugin.h"
#include "rill/plugins/fft/clfft/clfft_plan.h"
#include "rill/plugins/fft/clfft/clfft_status.h"
#include "rill/plugins/plugin_registry.h"

namespace rill {
namespace {

// clfftSetup, once per process; clfftTeardown at exit (clFFT warns on
// stderr otherwise). The handler is registered after clFFT's own statics
// exist, so it runs before they are destroyed.
const absl::Status& SetupStatus() {
  static const absl::Status* status = [] {
    clfftSetupData setup;
    clfftStatus s = clfftInitSetupData(&setup);
    if (s == CLFFT_SUCCESS) s = clfftSetup(&setup);
    if (s == CLFFT_SUCCESS) std::atexit([] { clfftTeardown(); });
    return new absl::Status(ClFftStatus(s, "clfftSetup"));
  }();
  return *status;
}

bool HasFp64(cl_device_id device) {
  size_t size = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, nullptr, &size) != CL_SUCCESS) return false;
  std::string extensions(size, '\0');
  if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, size, extensions.data(), nullptr) !=
      CL_SUCCESS) {
    return false;
  }
  return extensions.find("cl_khr_fp64") != std::string::npos;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClFft>> ClFft::Create(StreamExecutor* executor) {
  RILL_ASSIGN_OR_RETURN(OpenClExecutor * cl, AsOpenClExecutor(executor));
  RILL_RETURN_IF_ERROR(SetupStatus());
  return std::unique_ptr<ClFft>(new ClFft(executor, HasFp64(cl->device())));
}

std::string ClFft::LibraryVersion() {
  cl_uint major = 0, minor = 0, patch = 0;
  clfftGetVersion(&major, &minor, &patch);
  return absl::StrCat(major, ".", minor, ".", patch);
}

absl::StatusOr<std::unique_ptr<FftPlan>> ClFft::CreatePlanFromResolvedSpec(
    Stream* stream, const FftPlanSpec& resolved) {
  RILL_ASSIGN_OR_RETURN(OpenClStream * cl_stream,
                        OpenClPluginStream(executor(), stream, kName, "AsFft()"));
  RILL_ASSIGN_OR_RETURN(OpenClExecutor * cl, AsOpenClExecutor(executor()));
  if (resolved.precision == DataType::kDouble && !fp64_) {
    return absl::UnimplementedError(absl::StrCat(
        "clfft: ", executor()->DebugName(), " has no cl_khr_fp64, so no double-precision plan (",
        resolved.ToString(), ")"));
  }
  RILL_ASSIGN_OR_RETURN(
      std::shared_ptr<ClFftExecutable> e,
      ClFftExecutable::Create(cl->context(), cl_stream->queue(), resolved, cl->info().base_align));
  return std::unique_ptr<FftPlan>(new ClFftPlan(executor(), resolved, std::move(e)));
}

absl::Status ClFft::ExecutePlan(Stream* stream, FftPlan* plan, const DeviceMemoryBase& in,
                                const DeviceMemoryBase& out) {
  // The shared executable keeps the clFFT plan alive until this run is done.
  return EnqueueOpenClWork(executor(), stream, kName, "AsFft()",
                           [e = static_cast<ClFftPlan*>(plan)->executable(), in,
                            out](cl_command_queue queue) -> absl::StatusOr<cl_event> {
                             return e->Enqueue(queue, in, out);
                           });
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateClFft(StreamExecutor* executor) {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<ClFft> fft, ClFft::Create(executor));
  return std::unique_ptr<PluginInterface>(std::move(fft));
}

}  // namespace

RILL_REGISTER_PLUGIN(clfft, kOpenClPlatformId, PluginKind::kFft, ClFft::kName, CreateClFft,
                     /*make_default=*/true);

}  // namespace rill
