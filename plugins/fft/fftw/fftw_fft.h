#ifndef RILL_PLUGINS_FFT_FFTW_FFTW_FFT_H_
#define RILL_PLUGINS_FFT_FFTW_FFTW_FFT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rill/plugins/fft/fft.h"

namespace rill {

class StreamExecutor;

// FftSupport for host-memory devices (the host platform;
// plugins/host_library.h) through FFTW 3 (libfftw3f for float, libfftw3 for
// double). Registered as "fftw", the host default.
//
// Plans are FftwPlan (fftw_plan.h): guru64 plans made on scratch arrays, so
// planning never touches user data, and run with FFTW's new-array execute
// functions on the stream's worker thread, in stream order. Out-of-place
// inputs are preserved, c2r included. Planning is serialized process-wide
// (FFTW's planner is not thread-safe); execution is not. Plans are
// single-threaded: concurrency comes from running several host streams.
//
// Planner effort: RILL_FFTW_PLANNER=estimate|measure|patient|exhaustive
// (default measure), read once. Measuring costs time at planning (tens of
// milliseconds for small sizes, seconds for 2^20 points); cache plans with
// GetOrCreateCachedPlan.
//
//   FftSupport* fft = executor->AsFft();  // "fftw" on the host platform.
//   RILL_ASSIGN_OR_RETURN(FftPlan* plan, fft->GetOrCreateCachedPlan(
//       stream, {.type = FftType::kR2C, .dims = {256, 256}}));
//   stream->ThenFft(plan, real_in, &complex_out);
//
// Thread-safe.
class FftwFft : public FftSupport {
 public:
  static constexpr char kName[] = "fftw";

  static absl::StatusOr<std::unique_ptr<FftwFft>> Create(StreamExecutor* executor);

  std::string Name() const override { return kName; }
  std::string Version() const override { return LibraryVersion(); }

  // fftwf_version: "fftw-3.3.10-sse2-avx".
  static std::string LibraryVersion();
  // The planner effort flag in use (FFTW_MEASURE unless RILL_FFTW_PLANNER).
  static unsigned PlannerFlags();
  // Whether fftw(f)_make_planner_thread_safe was called (threads libraries
  // linked), so planner calls made outside Rill are safe too.
  static bool PlannerThreadSafe();

 protected:
  absl::StatusOr<std::unique_ptr<FftPlan>> CreatePlanFromResolvedSpec(
      Stream* stream, const FftPlanSpec& resolved) override;
  absl::Status ExecutePlan(Stream* stream, FftPlan* plan, const DeviceMemoryBase& in,
                           const DeviceMemoryBase& out) override;

 private:
  explicit FftwFft(StreamExecutor* executor) : FftSupport(executor) {}
};

}  // namespace rill

#endif  // RILL_PLUGINS_FFT_FFTW_FFTW_FFT_H_
