#ifndef RILL_PLUGINS_FFT_CUFFT_CUFFT_FFT_H_
#define RILL_PLUGINS_FFT_CUFFT_CUFFT_FFT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rill/plugins/fft/fft.h"

namespace rill {

class StreamExecutor;

// FftSupport for the CUDA platform through cuFFT (CUDA 13: cuFFT 12),
// registered as "cufft", the CUDA default.
//
// Plans (CuFftPlan, cufft_plan.h): cufftCreate + cufftMakePlanMany64 with
// the spec's dims, embeds, strides, distances and batch (Rill's FftLayout
// is cuFFT's advanced layout), made on the executor's device. Auto
// allocation is off: the work area comes from the executor
// (StreamExecutor::Allocate, counted in its memory stats) and is set with
// cufftSetWorkArea. Runs call cufftSetStream with the stream's
// cudaStream_t (CudaPluginStream) and cufftExec{C2C,Z2Z,R2C,D2Z,
// C2R,Z2D} with the spec's direction, from the calling thread; cuFFT
// enqueues asynchronously on that stream. Both directions are
// unnormalized. Runs of one plan are serialized on the device across
// streams (the work area is the plan's).
//
// cuFFT overwrites the input of a c2r transform; an out-of-place c2r plan
// therefore copies its input to a plan-owned scratch buffer
// (cudaMemcpyAsync on the stream) and transforms the copy, so the input is
// preserved as FftSupport promises. In-place c2r needs no copy.
//
// Errors carry cuFFT's names ("cufft plan c2c forward float [0] ...:
// cufftMakePlanMany64: CUFFT_INVALID_SIZE (8)").
//
//   FftSupport* fft = executor->AsFft();  // "cufft" on the cuda platform.
//   RILL_ASSIGN_OR_RETURN(FftPlan* plan, fft->GetOrCreateCachedPlan(
//       stream, {.dims = {1024}, .batch = 8}));
//   stream->ThenFft(plan, in, &out);
//
// Thread-safe.
class CuFft : public FftSupport {
 public:
  static constexpr char kName[] = "cufft";

  // InvalidArgument for an executor of another platform.
  static absl::StatusOr<std::unique_ptr<CuFft>> Create(StreamExecutor* executor);

  std::string Name() const override { return kName; }
  std::string Version() const override;  // "cuFFT 12.0.0"

  // cufftGetVersion: 12000 for cuFFT 12.0.
  static int LibraryVersion();

 protected:
  absl::StatusOr<std::unique_ptr<FftPlan>> CreatePlanFromResolvedSpec(
      Stream* stream, const FftPlanSpec& resolved) override;
  absl::Status ExecutePlan(Stream* stream, FftPlan* plan, const DeviceMemoryBase& in,
                           const DeviceMemoryBase& out) override;

 private:
  explicit CuFft(StreamExecutor* executor) : FftSupport(executor) {}
};

}  // namespace rill

#endif  // RILL_PLUGINS_FFT_CUFFT_CUFFT_FFT_H_
