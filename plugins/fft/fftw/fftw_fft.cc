#include "rill/plugins/fft/fftw/fftw_fft.h"

#include <fftw3.h>

#include <optional>
#include <string>
#include <utility>

#include "rill/base/env_settings.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/plugins/fft/fftw/fftw_plan.h"
#include "rill/plugins/host_library.h"

namespace rill {
namespace {

// RILL_FFTW_PLANNER's effort, FFTW_MEASURE when unset; a value the table of
// settings refuses (base/env_settings.cc) is logged and counts as unset.
unsigned FlagsFromEnv() {
  const absl::StatusOr<std::optional<std::string>> value = EnvString("RILL_FFTW_PLANNER");
  if (!value.ok()) {
    RILL_LOG(WARNING) << "fftw: " << value.status().message() << "; using measure";
    return FFTW_MEASURE;
  }
  if (*value == "estimate") return FFTW_ESTIMATE;
  if (*value == "patient") return FFTW_PATIENT;
  if (*value == "exhaustive") return FFTW_EXHAUSTIVE;
  return FFTW_MEASURE;
}

struct Setup {
  unsigned flags = FlagsFromEnv();
  bool thread_safe = false;
  Setup() {
#ifdef RILL_FFTW_HAVE_THREADS
    fftwf_make_planner_thread_safe();
    fftw_make_planner_thread_safe();
    thread_safe = true;
#endif
  }
};

const Setup& GetSetup() {
  static Setup* setup = new Setup();  // Never destroyed; thread-safe initialization.
  return *setup;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FftwFft>> FftwFft::Create(StreamExecutor* executor) {
  RILL_RETURN_IF_ERROR(CheckHostLibraryPlatform(executor, kName));
  GetSetup();
  return std::unique_ptr<FftwFft>(new FftwFft(executor));
}

std::string FftwFft::LibraryVersion() { return fftwf_version; }
unsigned FftwFft::PlannerFlags() { return GetSetup().flags; }
bool FftwFft::PlannerThreadSafe() { return GetSetup().thread_safe; }

absl::StatusOr<std::unique_ptr<FftPlan>> FftwFft::CreatePlanFromResolvedSpec(
    Stream* stream, const FftPlanSpec& resolved) {
  absl::StatusOr<std::unique_ptr<FftwPlan>> plan =
      FftwPlan::Create(executor(), resolved, PlannerFlags());
  if (!plan.ok()) return plan.status();
  return std::unique_ptr<FftPlan>(std::move(*plan));
}

absl::Status FftwFft::ExecutePlan(Stream* stream, FftPlan* plan, const DeviceMemoryBase& in,
                                  const DeviceMemoryBase& out) {
  // The shared executable keeps the FFTW plans alive until this run is done.
  return EnqueueHostWork(executor(), stream, kName, "AsFft()",
                         [e = static_cast<FftwPlan*>(plan)->executable(), in = HostPointer(in),
                          out = HostPointer(out)] { return e->Run(in, out); });
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateFftw(StreamExecutor* executor) {
  absl::StatusOr<std::unique_ptr<FftwFft>> fft = FftwFft::Create(executor);
  if (!fft.ok()) return fft.status();
  return std::unique_ptr<PluginInterface>(std::move(*fft));
}

}  // namespace

RILL_REGISTER_HOST_LIBRARY_PLUGIN(fftw, PluginKind::kFft, FftwFft::kName, CreateFftw,
                                  /*make_default=*/true);

}  // namespace rill
