#ifndef RILL_PLUGINS_FFT_CLFFT_CLFFT_FFT_H_
#define RILL_PLUGINS_FFT_CLFFT_CLFFT_FFT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rill/plugins/fft/fft.h"

namespace rill {

class StreamExecutor;

// FftSupport for the OpenCL platform through clFFT 2.12, registered as
// "clfft", the OpenCL default.
//
// Plans (ClFftPlan, clfft_plan.h) are clFFT plans in the executor's
// cl_context, baked with the planning stream's queue: dims reversed (clFFT's
// dimension 0 is the fastest), per-dimension strides from each side's embed
// and stride, distances, batch, precision, placement, layouts
// COMPLEX_INTERLEAVED (c2c), REAL -> HERMITIAN_INTERLEAVED (r2c) and back
// (c2r). Both directions are unscaled (clFFT scales the backward one by
// 1/N unless told otherwise), as FFTW and cuFFT. A baked plan costs about
// 1.4 s on PoCL with a cold kernel cache, ~50 ms warm: cache plans with
// GetOrCreateCachedPlan.
//
// Limits, reported at planning: sizes whose prime factors are not all in
// {2, 3, 5, 7, 11, 13} are Unimplemented (naming the size); double
// precision on a device without cl_khr_fp64 is Unimplemented; an in-place
// c2c plan needs equal layouts on both sides.
//
// Runs go through OpenClStream::EnqueueDeviceWork in stream order.
// clfftEnqueueTransform takes whole cl_mem buffers, without offsets, so a
// view at a byte offset is passed as a sub-buffer when the offset is a
// multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN (no copy), and otherwise as a
// bounce copy (clEnqueueCopyBuffer in, transform, copy back). Out-of-place
// inputs are preserved, c2r included: clFFT 2.12 keeps a c2r's intermediate
// results in a plan-owned buffer (checked by the tests up to 2^20 points,
// 2-D and 3-D), so no copy is made. Runs of one plan are serialized on the
// device, even from different streams (clFFT keeps per-plan intermediates).
//
// clfftSetup runs once, when the first executor's plugin is made;
// clfftTeardown runs at exit (std::atexit). Plans still alive then (cached
// in executors, which are never destroyed) are released by the teardown.
//
//   FftSupport* fft = executor->AsFft();  // "clfft" on the opencl platform.
//   RILL_ASSIGN_OR_RETURN(FftPlan* plan, fft->GetOrCreateCachedPlan(
//       stream, {.type = FftType::kR2C, .dims = {256, 256}}));
//   stream->ThenFft(plan, real_in, &complex_out);
//
// Thread-safe.
class ClFft : public FftSupport {
 public:
  static constexpr char kName[] = "clfft";

  // InvalidArgument for an executor of another platform; the clfftSetup
  // error if clFFT cannot start.
  static absl::StatusOr<std::unique_ptr<ClFft>> Create(StreamExecutor* executor);

  std::string Name() const override { return kName; }
  std::string Version() const override { return "clFFT " + LibraryVersion(); }

  // "2.12.2".
  static std::string LibraryVersion();
  // Whether the executor's device has cl_khr_fp64 (double-precision plans).
  bool SupportsDouble() const { return fp64_; }

 protected:
  absl::StatusOr<std::unique_ptr<FftPlan>> CreatePlanFromResolvedSpec(
      Stream* stream, const FftPlanSpec& resolved) override;
  absl::Status ExecutePlan(Stream* stream, FftPlan* plan, const DeviceMemoryBase& in,
                           const DeviceMemoryBase& out) override;

 private:
  ClFft(StreamExecutor* executor, bool fp64) : FftSupport(executor), fp64_(fp64) {}

  const bool fp64_;
};

}  // namespace rill

#endif  // RILL_PLUGINS_FFT_CLFFT_CLFFT_FFT_H_
