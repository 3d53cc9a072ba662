#ifndef RILL_PLUGINS_FFT_CLFFT_CLFFT_PLAN_H_
#define RILL_PLUGINS_FFT_CLFFT_CLFFT_PLAN_H_

// rill:internal -- not installed: the clFFT plugin's implementation.

#include <CL/cl.h>
#include <clFFT.h>

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/plugins/fft/fft.h"

namespace rill {

// The baked clFFT plan behind one ClFftPlan, shared with the runs enqueued
// on streams so that it outlives the ClFftPlan object: the last owner waits
// for the last run's event, then destroys the clFFT plan and its temporary
// buffer.
//
// Runs of one plan are serialized on the device (each waits for the
// previous run's event, whatever queue it was on): clFFT keeps intermediate
// buffers and kernel arguments per plan, so two runs of one plan must not
// overlap. Runs of different plans overlap freely. Thread-safe.
class ClFftExecutable {
 public:
  // Plans and bakes `resolved` in `context` with `bake_queue` (any queue of
  // the context). Unimplemented for sizes clFFT cannot do (a prime factor
  // other than 2, 3, 5, 7, 11, 13), for an in-place c2c plan whose two
  // layouts differ, and what clFFT reports as not implemented.
  // `base_align` is CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes.
  static absl::StatusOr<std::shared_ptr<ClFftExecutable>> Create(cl_context context,
                                                                 cl_command_queue bake_queue,
                                                                 const FftPlanSpec& resolved,
                                                                 uint64_t base_align);
  ~ClFftExecutable();
  ClFftExecutable(const ClFftExecutable&) = delete;
  ClFftExecutable& operator=(const ClFftExecutable&) = delete;

  // Enqueues one run from `in` to `out` (equal for in-place plans) on
  // `queue`, an in-order queue of the plan's context, and flushes it.
  // Returns the last command's event (a reference for the caller). Views at
  // a byte offset become sub-buffers (offset a multiple of base_align) or
  // bounce copies (see clfft_fft.h).
  absl::StatusOr<cl_event> Enqueue(cl_command_queue queue, const DeviceMemoryBase& in,
                                   const DeviceMemoryBase& out);

  // The clfftPlanHandle, for interop (valid for this object's life).
  clfftPlanHandle* handle() { return &plan_; }
  // Bytes of the temporary buffer clFFT asked for (clfftGetTmpBufSize).
  size_t tmp_bytes() const { return tmp_bytes_; }

 private:
  ClFftExecutable(cl_context context, const FftPlanSpec& spec, uint64_t base_align)
      : context_(context), spec_(spec), base_align_(base_align) {}

  const cl_context context_;
  const FftPlanSpec spec_;
  const uint64_t base_align_;
  clfftPlanHandle plan_ = 0;
  bool planned_ = false;
  cl_mem tmp_ = nullptr;  // Owned; used by one run at a time.
  size_t tmp_bytes_ = 0;

  Mutex mu_;                                      // Orders runs (kernel arguments, last_).
  cl_event last_ ABSL_GUARDED_BY(mu_) = nullptr;  // Retained: the previous run's transform.
};

// An FftPlan of the "clfft" plugin. Thread-safe.
class ClFftPlan : public FftPlan {
 public:
  ClFftPlan(StreamExecutor* executor, const FftPlanSpec& resolved,
            std::shared_ptr<ClFftExecutable> e);

  // clfftPlanHandle*.
  void* native_handle() const override { return executable_->handle(); }
  const std::shared_ptr<ClFftExecutable>& executable() const { return executable_; }

 private:
  const std::shared_ptr<ClFftExecutable> executable_;
};

}  // namespace rill

#endif  // RILL_PLUGINS_FFT_CLFFT_CLFFT_PLAN_H_
