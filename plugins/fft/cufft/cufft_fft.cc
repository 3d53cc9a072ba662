#include "rill/plugins/fft/cufft/cufft_fft.h"

#include <cuda_runtime_api.h>
#include <cufft.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/plugins/fft/cufft/cufft_plan.h"
#include "rill/plugins/plugin_registry.h"
#include "rill/stream/stream.h"

namespace rill {

absl::StatusOr<std::unique_ptr<CuFft>> CuFft::Create(StreamExecutor* executor) {
  if (executor == nullptr) return absl::InvalidArgumentError("cufft: executor is null");
  RILL_RETURN_IF_ERROR(
      CudaDeviceOrdinal(executor).status());  // InvalidArgument off the cuda platform.
  return std::unique_ptr<CuFft>(new CuFft(executor));
}

std::string CuFft::Version() const {
  const int v = LibraryVersion();  // major * 1000 + minor * 100 + patch
  return absl::StrCat("cuFFT ", v / 1000, ".", v % 1000 / 100, ".", v % 100);
}

int CuFft::LibraryVersion() {
  int version = 0;
  cufftGetVersion(&version);
  return version;
}

absl::StatusOr<std::unique_ptr<FftPlan>> CuFft::CreatePlanFromResolvedSpec(
    Stream* stream, const FftPlanSpec& resolved) {
  RILL_ASSIGN_OR_RETURN(std::shared_ptr<CuFftExecutable> e,
                        CuFftExecutable::Create(executor(), resolved));
  return std::unique_ptr<FftPlan>(new CuFftPlan(executor(), resolved, std::move(e)));
}

absl::Status CuFft::ExecutePlan(Stream* stream, FftPlan* plan, const DeviceMemoryBase& in,
                                const DeviceMemoryBase& out) {
  RILL_ASSIGN_OR_RETURN(cudaStream_t cuda_stream,
                        CudaPluginStream(executor(), stream, kName, "AsFft()"));
  if (!stream->ok()) return stream->status();
  return static_cast<CuFftPlan*>(plan)->executable()->Enqueue(cuda_stream, CudaAddress(in),
                                                              CudaAddress(out));
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateCuFft(StreamExecutor* executor) {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<CuFft> fft, CuFft::Create(executor));
  return std::unique_ptr<PluginInterface>(std::move(fft));
}

}  // namespace

RILL_REGISTER_PLUGIN(cufft, kCudaPlatformId, PluginKind::kFft, CuFft::kName, CreateCuFft,
                     /*make_default=*/true);

}  // namespace rill
