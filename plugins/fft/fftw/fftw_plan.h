#ifndef RILL_PLUGINS_FFT_FFTW_FFTW_PLAN_H_
#define RILL_PLUGINS_FFT_FFTW_FFTW_PLAN_H_

// rill:internal -- not installed: the FFTW plugin's implementation.

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/plugins/fft/fft.h"

namespace rill {

// The FFTW plans behind one FftwPlan, shared with the runs enqueued on
// streams so that they outlive the FftwPlan object. Thread-safe.
class FftwExecutable {
 public:
  virtual ~FftwExecutable() = default;
  // Runs the transform from host pointer `in` to `out` (equal for in-place
  // plans) with FFTW's new-array execute functions. Called on a stream's
  // worker thread; may plan once more (see FftwPlan).
  virtual absl::Status Run(void* in, void* out) = 0;
  // The fftwf_plan / fftw_plan made for SIMD-aligned arrays.
  virtual void* native() const = 0;
};

// An FftPlan of the "fftw" plugin: a guru64 FFTW plan of the spec's
// precision (fftwf_* for float, fftw_* for double) with the spec's dims,
// strides (stride * embed products) and batch (one howmany dimension of
// `batch` entries, `distance` apart).
//
// Planning never touches user memory: the plan is made on scratch arrays
// allocated with fftw_malloc (freed right after) with the same layout as the
// user's, so FFTW_MEASURE's trial runs overwrite only scratch. Runs use
// fftw_execute_dft / _dft_r2c / _dft_c2r on the buffers given. Arrays whose
// fftw_alignment_of differs from the scratch arrays' (0) -- sub-views at odd
// element offsets -- are run with a second plan made with FFTW_UNALIGNED,
// planned on first need (under the planner lock, on the stream's thread).
//
// c2r: FFTW destroys a c2r input and supports FFTW_PRESERVE_INPUT only for
// rank-1 c2r. Out-of-place c2r plans are made with FFTW_PRESERVE_INPUT when
// FFTW can; otherwise (rank 2 and 3) each run copies the input span into a
// per-thread scratch buffer (kept by the worker thread, grown to the largest
// input seen) and transforms from there, so the user's input is preserved.
//
// Plans are single-threaded: host streams are the parallelism.
// Thread-safe.
class FftwPlan : public FftPlan {
 public:
  // `resolved` from ResolveFftPlanSpec; `planner_flags` is the planner
  // effort (FFTW_ESTIMATE, FFTW_MEASURE, ...). Unimplemented when FFTW
  // cannot plan the layout, ResourceExhausted when the scratch arrays cannot
  // be allocated.
  static absl::StatusOr<std::unique_ptr<FftwPlan>> Create(StreamExecutor* executor,
                                                          const FftPlanSpec& resolved,
                                                          unsigned planner_flags);

  void* native_handle() const override { return executable_->native(); }
  const std::shared_ptr<FftwExecutable>& executable() const { return executable_; }

 private:
  FftwPlan(StreamExecutor* executor, const FftPlanSpec& resolved,
           std::shared_ptr<FftwExecutable> e);

  const std::shared_ptr<FftwExecutable> executable_;
};

}  // namespace rill

#endif  // RILL_PLUGINS_FFT_FFTW_FFTW_PLAN_H_
