#include "rill/plugins/fft/cufft/cufft_plan.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/plugins/fft/cufft/cufft_status.h"

namespace rill {
namespace {

cufftType CuFftType(const FftPlanSpec& s) {
  const bool f = s.precision == DataType::kFloat;
  switch (s.type) {
    case FftType::kC2C:
      return f ? CUFFT_C2C : CUFFT_Z2Z;
    case FftType::kR2C:
      return f ? CUFFT_R2C : CUFFT_D2Z;
    case FftType::kC2R:
      return f ? CUFFT_C2R : CUFFT_Z2D;
  }
  return CUFFT_C2C;
}

}  // namespace

absl::StatusOr<std::shared_ptr<CuFftExecutable>> CuFftExecutable::Create(StreamExecutor* executor,
                                                                         const FftPlanSpec& r) {
  const std::string what = absl::StrCat("cufft plan ", r.ToString());
  RILL_ASSIGN_OR_RETURN(const int ordinal, CudaDeviceOrdinal(executor));
  CudaDeviceScope device(ordinal);
  RILL_RETURN_IF_ERROR(device.status());
  std::shared_ptr<CuFftExecutable> e(new CuFftExecutable(executor, ordinal, r));
  RILL_RETURN_IF_ERROR(CuFftStatus(cufftCreate(&e->plan_), what + ": cufftCreate"));
  e->planned_ = true;  // From here on the destructor destroys it.
  RILL_RETURN_IF_ERROR(
      CuFftStatus(cufftSetAutoAllocation(e->plan_, 0), what + ": cufftSetAutoAllocation"));
  std::vector<long long> n(r.dims.begin(), r.dims.end());  // NOLINT(runtime/int)
  std::vector<long long> in_embed(r.input.embed.begin(), r.input.embed.end());     // NOLINT
  std::vector<long long> out_embed(r.output.embed.begin(), r.output.embed.end());  // NOLINT
  RILL_RETURN_IF_ERROR(
      CuFftStatus(cufftMakePlanMany64(e->plan_, r.rank(), n.data(), in_embed.data(), r.input.stride,
                                      r.input.distance, out_embed.data(), r.output.stride,
                                      r.output.distance, CuFftType(r), r.batch, &e->work_bytes_),
                  what + ": cufftMakePlanMany64"));
  if (e->work_bytes_ > 0) {
    RILL_ASSIGN_OR_RETURN(e->work_, executor->Allocate(e->work_bytes_));
    RILL_RETURN_IF_ERROR(CuFftStatus(cufftSetWorkArea(e->plan_, CudaAddress(e->work_)),
                                     what + ": cufftSetWorkArea"));
  }
  if (r.type == FftType::kC2R && r.placement == FftPlacement::kOutOfPlace) {
    RILL_ASSIGN_OR_RETURN(e->scratch_, executor->Allocate(FftInputBytes(r)));
  }
  RILL_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&e->last_, cudaEventDisableTiming),
                                  what + ": cudaEventCreateWithFlags"));
  return e;
}

CuFftExecutable::~CuFftExecutable() {
  CudaDeviceScope device(ordinal_);
  if (last_ != nullptr) {
    cudaEventSynchronize(last_);  // The last run is done with the work area and scratch.
    cudaEventDestroy(last_);
  }
  if (planned_) cufftDestroy(plan_);
  if (!work_.is_null()) executor_->Deallocate(&work_).IgnoreError();
  if (!scratch_.is_null()) executor_->Deallocate(&scratch_).IgnoreError();
}

absl::Status CuFftExecutable::Enqueue(cudaStream_t stream, void* in, void* out) {
  const std::string what = absl::StrCat("cufft run of ", spec_.ToString());
  CudaDeviceScope device(ordinal_);
  RILL_RETURN_IF_ERROR(device.status());
  MutexLock lock(&mu_);
  if (recorded_) {  // After the previous run of this plan, whatever its stream.
    RILL_RETURN_IF_ERROR(
        CudaStatus(cudaStreamWaitEvent(stream, last_, 0), what + ": cudaStreamWaitEvent"));
  }
  if (!scratch_.is_null()) {  // cuFFT overwrites a c2r input: transform a copy.
    void* copy = CudaAddress(scratch_);
    RILL_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(copy, in, FftInputBytes(spec_), cudaMemcpyDeviceToDevice, stream),
        what + ": cudaMemcpyAsync(c2r input to scratch)"));
    in = copy;
  }
  RILL_RETURN_IF_ERROR(CuFftStatus(cufftSetStream(plan_, stream), what + ": cufftSetStream"));
  const int direction = spec_.direction == FftDirection::kForward ? CUFFT_FORWARD : CUFFT_INVERSE;
  const bool f = spec_.precision == DataType::kFloat;
  cufftResult result = CUFFT_SUCCESS;
  const char* exec = "";
  switch (spec_.type) {
    case FftType::kC2C:
      exec = f ? "cufftExecC2C" : "cufftExecZ2Z";
      result = f ? cufftExecC2C(plan_, static_cast<cufftComplex*>(in),
                                static_cast<cufftComplex*>(out), direction)
                 : cufftExecZ2Z(plan_, static_cast<cufftDoubleComplex*>(in),
                                static_cast<cufftDoubleComplex*>(out), direction);
      break;
    case FftType::kR2C:
      exec = f ? "cufftExecR2C" : "cufftExecD2Z";
      result = f ? cufftExecR2C(plan_, static_cast<cufftReal*>(in), static_cast<cufftComplex*>(out))
                 : cufftExecD2Z(plan_, static_cast<cufftDoubleReal*>(in),
                                static_cast<cufftDoubleComplex*>(out));
      break;
    case FftType::kC2R:
      exec = f ? "cufftExecC2R" : "cufftExecZ2D";
      result = f ? cufftExecC2R(plan_, static_cast<cufftComplex*>(in), static_cast<cufftReal*>(out))
                 : cufftExecZ2D(plan_, static_cast<cufftDoubleComplex*>(in),
                                static_cast<cufftDoubleReal*>(out));
      break;
  }
  RILL_RETURN_IF_ERROR(CuFftStatus(result, absl::StrCat(what, ": ", exec)));
  RILL_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(last_, stream), what + ": cudaEventRecord"));
  recorded_ = true;
  return absl::OkStatus();
}

CuFftPlan::CuFftPlan(StreamExecutor* executor, const FftPlanSpec& resolved,
                     std::shared_ptr<CuFftExecutable> e)
    : FftPlan(executor, "cufft", resolved), executable_(std::move(e)) {}

}  // namespace rill
