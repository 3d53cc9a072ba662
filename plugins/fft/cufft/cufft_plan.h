#ifndef RILL_PLUGINS_FFT_CUFFT_CUFFT_PLAN_H_
#define RILL_PLUGINS_FFT_CUFFT_CUFFT_PLAN_H_

// rill:internal -- not installed: the cuFFT plugin's implementation.

#include <cuda_runtime_api.h>
#include <cufft.h>

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/executor/device_memory.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/plugins/fft/fft.h"

namespace rill {

class StreamExecutor;

// The cuFFT plan behind one CuFftPlan, shared with its users so that it
// outlives the CuFftPlan object while runs may be pending: the last owner
// waits for the last run (a CUDA event), then destroys the plan and frees
// its memory.
//
// Memory: cuFFT's work area and, for out-of-place c2r plans, a scratch
// copy of the input (cuFFT overwrites a c2r input) are allocated through
// the executor (StreamExecutor::Allocate), once per plan.
//
// Runs of one plan are serialized on the device, even from different
// streams: each waits for the previous run's event (cudaStreamWaitEvent),
// because the work area and scratch are the plan's. cufftSetStream mutates
// the plan, so set-stream + exec + record run under the plan's mutex.
// Thread-safe.
class CuFftExecutable {
 public:
  // Makes the plan on `executor`'s device (cufftCreate, no auto
  // allocation, cufftMakePlanMany64 with the spec's dims, embeds, strides,
  // distances and batch). cuFFT's errors are returned with their names.
  static absl::StatusOr<std::shared_ptr<CuFftExecutable>> Create(StreamExecutor* executor,
                                                                 const FftPlanSpec& resolved);
  ~CuFftExecutable();
  CuFftExecutable(const CuFftExecutable&) = delete;
  CuFftExecutable& operator=(const CuFftExecutable&) = delete;

  // Enqueues one run on `stream` (a cudaStream_t of the plan's device) from
  // device address `in` to `out` (equal for in-place plans).
  absl::Status Enqueue(cudaStream_t stream, void* in, void* out);

  cufftHandle* handle() { return &plan_; }
  // Bytes of cuFFT's work area.
  size_t work_bytes() const { return work_bytes_; }

 private:
  CuFftExecutable(StreamExecutor* executor, int ordinal, const FftPlanSpec& spec)
      : executor_(executor), ordinal_(ordinal), spec_(spec) {}

  StreamExecutor* const executor_;  // Borrowed; outlives every plan.
  const int ordinal_;               // The executor's CUDA device.
  const FftPlanSpec spec_;
  cufftHandle plan_ = 0;
  bool planned_ = false;
  cudaEvent_t last_ = nullptr;  // Recorded after each run.
  DeviceMemoryBase work_;       // cuFFT's work area (null when 0 bytes).
  DeviceMemoryBase scratch_;    // Out-of-place c2r: the input's copy.
  size_t work_bytes_ = 0;

  Mutex mu_;  // Serializes set-stream, exec, record.
  bool recorded_ ABSL_GUARDED_BY(mu_) = false;
};

// An FftPlan of the "cufft" plugin. Thread-safe.
class CuFftPlan : public FftPlan {
 public:
  CuFftPlan(StreamExecutor* executor, const FftPlanSpec& resolved,
            std::shared_ptr<CuFftExecutable> e);

  // cufftHandle*.
  void* native_handle() const override { return executable_->handle(); }
  const std::shared_ptr<CuFftExecutable>& executable() const { return executable_; }

 private:
  const std::shared_ptr<CuFftExecutable> executable_;
};

}  // namespace rill

#endif  // RILL_PLUGINS_FFT_CUFFT_CUFFT_PLAN_H_
