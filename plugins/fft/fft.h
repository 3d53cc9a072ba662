#ifndef RILL_PLUGINS_FFT_FFT_H_
#define RILL_PLUGINS_FFT_FFT_H_

#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/executor/device_memory.h"
#include "rill/plugins/plugin.h"

namespace rill {

class Stream;
class StreamExecutor;

// FFT conventions (as FFTW and cuFFT):
//  - dims are row-major, the last one varies fastest (FFTW's n[], cuFFT's
//    n[]); rank = dims.size() is 1, 2 or 3.
//  - Unnormalized: forward then inverse multiplies by the product of dims.
//    Forward uses exp(-2 pi i jk/n), inverse exp(+2 pi i jk/n).
//  - Real transforms keep the n/2 + 1 non-redundant complex outputs of the
//    last dimension (r2c output, c2r input).
//  - Element counts (strides, distances, embeds) are in elements of each
//    side's own type: reals for the real side, complex values for the other.

// cuFFT: CUFFT_C2C/Z2Z, R2C/D2Z, C2R/Z2D; clFFT: the layouts
// COMPLEX_INTERLEAVED / REAL / HERMITIAN_INTERLEAVED.
enum class FftType { kC2C, kR2C, kC2R };
const char* FftTypeName(FftType type);  // "c2c", "r2c", "c2r".

// kForward: exp(-i...) (FFTW_FORWARD, CUFFT_FORWARD); kInverse: exp(+i...).
// r2c is always forward and c2r always inverse.
enum class FftDirection { kForward, kInverse };
const char* FftDirectionName(FftDirection direction);  // "forward", "inverse".

// In-place plans are run with the same memory as input and output (an r2c
// or c2r pair of views over one allocation); out-of-place ones with disjoint
// memory. Fixed at planning, as FFTW and clFFT need (cuFFT ignores it).
enum class FftPlacement { kOutOfPlace, kInPlace };

// One side's memory layout, cuFFT's advanced layout (cufftPlanMany's
// inembed/istride/idist): element (x, y, z) of batch entry b lives at
//   b * distance + ((x * embed[1] + y) * embed[2] + z) * stride.
// Zeros and an empty embed mean the packed default: embed = the side's
// logical dims (for the real side of an in-place r2c/c2r, the last one
// padded to 2 (n/2 + 1), as FFTW and cuFFT expect), stride 1, distance =
// stride * product(embed). embed[0] only has to be >= the logical dims[0].
struct FftLayout {
  std::vector<int64_t> embed;
  int64_t stride = 0;
  int64_t distance = 0;
  friend bool operator==(const FftLayout&, const FftLayout&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const FftLayout& l) {
    return H::combine(std::move(h), l.embed, l.stride, l.distance);
  }
};

// What to plan: `batch` transforms of shape `dims`, of `type` in
// `precision`, with each side's layout. `dims` are the logical (real-side)
// sizes for r2c/c2r, as cufftPlanMany's n.
//   FftPlanSpec spec{.precision = DataType::kFloat, .type = FftType::kC2C,
//                    .direction = FftDirection::kForward, .dims = {1024},
//                    .batch = 8};
struct FftPlanSpec {
  DataType precision = DataType::kFloat;
  FftType type = FftType::kC2C;
  FftDirection direction = FftDirection::kForward;
  std::vector<int64_t> dims;
  int64_t batch = 1;
  FftPlacement placement = FftPlacement::kOutOfPlace;
  FftLayout input, output;

  int rank() const { return static_cast<int>(dims.size()); }
  // "c2c forward float [1024] x8 out-of-place in{embed=[1024] stride=1 dist=1024} out{...}".
  std::string ToString() const;

  friend bool operator==(const FftPlanSpec&, const FftPlanSpec&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const FftPlanSpec& s) {
    return H::combine(std::move(h), s.precision, s.type, s.direction, s.dims, s.batch, s.placement,
                      s.input, s.output);
  }
};

// `spec` checked, with every default of its layouts filled in; InvalidArgument
// naming the bad values otherwise (rank not 1..3, a size, batch, stride or
// distance < 1, an embed smaller than the dims, r2c not forward or c2r not
// inverse, sizes overflowing 64 bits).
absl::StatusOr<FftPlanSpec> ResolveFftPlanSpec(const FftPlanSpec& spec);

// Bytes the input (output) of a resolved spec spans, from its first element
// to its last one, batch included.
uint64_t FftInputBytes(const FftPlanSpec& resolved);
uint64_t FftOutputBytes(const FftPlanSpec& resolved);

// A planned transform of one executor, made by its FftSupport (CreatePlan,
// GetOrCreateCachedPlan) and run with Stream::ThenFft on any stream of that
// executor, any number of times. Holds no data buffers: the memory is given
// at each run. The implementation keeps whatever the library needs (FFTW
// plans, a cufftHandle, a baked clfftPlanHandle) alive until the last
// enqueued run that uses it has finished, so a plan may be destroyed right
// after its last ThenFft. Thread-safe: runs may be enqueued from several
// streams at once.
class FftPlan {
 public:
  virtual ~FftPlan() = default;
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  // The resolved spec (all defaults filled in).
  const FftPlanSpec& spec() const { return spec_; }
  // The executor it runs on; borrowed, the executor outlives the plan's use.
  StreamExecutor* executor() const { return executor_; }
  // The plugin that made it ("fftw", "cufft", ...).
  const std::string& plugin_name() const { return plugin_name_; }
  // The library's handle for interop: fftwf_plan/fftw_plan (the plan for
  // aligned arrays), cufftHandle*, clfftPlanHandle*; nullptr if none.
  virtual void* native_handle() const = 0;

 protected:
  FftPlan(StreamExecutor* executor, std::string plugin_name, FftPlanSpec resolved)
      : executor_(executor), plugin_name_(std::move(plugin_name)), spec_(std::move(resolved)) {}

 private:
  StreamExecutor* const executor_;
  const std::string plugin_name_;
  const FftPlanSpec spec_;
};

// The FFT interface of one executor. Plans are made here and run through
// DoFft (Stream::ThenFft forwards here). Each public call checks its
// arguments -- InvalidArgument naming the values for a bad spec, null or
// too-small buffers, memory or a stream of another executor, buffers whose
// element type or precision is not the plan's, an in-place plan given two
// buffers (or the reverse); FailedPrecondition for a plan of another
// executor or plugin -- and then calls the protected virtuals, which see
// only checked arguments. Errors found while the work runs land in the
// stream's status.
//
// Inputs are never modified by out-of-place runs, c2r included (an
// implementation whose library destroys a c2r input copies it first).
//
// Mapping for implementers: cuFFT -- CreatePlanFromResolvedSpec calls
// cufftPlanMany / cufftXtMakePlanMany with dims, embed, stride, distance and
// batch; ExecutePlan calls cufftSetStream and cufftExec{C2C,R2C,C2R,Z2Z,D2Z,
// Z2D} (passing the spec's direction). clFFT -- clfftCreateDefaultPlan with
// the lengths reversed (clFFT's dimension 0 is the fastest), SetLayout,
// SetResultLocation from the placement, strides/distances per side, bake;
// ExecutePlan calls clfftEnqueueTransform on the stream's queue.
//
//   FftSupport* fft = executor->AsFft();
//   RILL_ASSIGN_OR_RETURN(std::unique_ptr<FftPlan> plan,
//                         fft->CreatePlan(stream, {.dims = {64, 64}, .batch = 4}));
//   stream->ThenFft(plan.get(), in, &out).BlockHostUntilDone();
//
// Thread-safe.
class FftSupport : public PluginInterface {
 public:
  static constexpr PluginKind kKind = PluginKind::kFft;

  // The executor this instance serves (borrowed; it owns the plugin).
  StreamExecutor* executor() const { return executor_; }

  // A new plan for `spec`, owned by the caller. `stream` must belong to this
  // plugin's executor (an implementation may order set-up work on it).
  // Planning never touches any user buffer.
  absl::StatusOr<std::unique_ptr<FftPlan>> CreatePlan(Stream* stream, const FftPlanSpec& spec);
  // The plugin's cached plan for `spec` (after resolving defaults, so equal
  // shapes share one), made on first request. Owned by the plugin: valid
  // until the plugin is destroyed with its executor or replaced (SetPlugin).
  absl::StatusOr<FftPlan*> GetOrCreateCachedPlan(Stream* stream, const FftPlanSpec& spec);
  // Plans in the cache.
  size_t CachedPlanCount() const;

  // Enqueues `plan` on `stream`, reading `in` and writing `*out`. The element
  // types must be the plan's (complex for c2c, real in / complex out for
  // r2c, complex in / real out for c2r) in its precision; for an in-place
  // plan `in` and `*out` are views of the same memory.
  absl::Status DoFft(Stream* stream, FftPlan* plan, const DeviceMemory<std::complex<float>>& in,
                     DeviceMemory<std::complex<float>>* out);
  absl::Status DoFft(Stream* stream, FftPlan* plan, const DeviceMemory<std::complex<double>>& in,
                     DeviceMemory<std::complex<double>>* out);
  absl::Status DoFft(Stream* stream, FftPlan* plan, const DeviceMemory<float>& in,
                     DeviceMemory<std::complex<float>>* out);
  absl::Status DoFft(Stream* stream, FftPlan* plan, const DeviceMemory<double>& in,
                     DeviceMemory<std::complex<double>>* out);
  absl::Status DoFft(Stream* stream, FftPlan* plan, const DeviceMemory<std::complex<float>>& in,
                     DeviceMemory<float>* out);
  absl::Status DoFft(Stream* stream, FftPlan* plan, const DeviceMemory<std::complex<double>>& in,
                     DeviceMemory<double>* out);

 protected:
  explicit FftSupport(StreamExecutor* executor) : executor_(executor) {}

  // `resolved` came from ResolveFftPlanSpec; `stream` is this executor's.
  // Unimplemented or InvalidArgument for what the library cannot plan.
  virtual absl::StatusOr<std::unique_ptr<FftPlan>> CreatePlanFromResolvedSpec(
      Stream* stream, const FftPlanSpec& resolved) = 0;
  // `plan` was made by this plugin's name for this executor; `in` and `out`
  // are this executor's, large enough for the plan's layouts, of the plan's
  // types, and equal exactly when the plan is in-place.
  virtual absl::Status ExecutePlan(Stream* stream, FftPlan* plan, const DeviceMemoryBase& in,
                                   const DeviceMemoryBase& out) = 0;

 private:
  // Checks and runs a plan given buffers of `type` (the call's element types)
  // in `precision`.
  absl::Status DoFftChecked(Stream* stream, FftPlan* plan, FftType type, DataType precision,
                            const DeviceMemoryBase& in, DeviceMemoryBase* out);
  absl::Status CheckStream(Stream* stream) const;

  StreamExecutor* const executor_;
  mutable Mutex cache_mu_;
  absl::flat_hash_map<FftPlanSpec, std::unique_ptr<FftPlan>> cache_ ABSL_GUARDED_BY(cache_mu_);
};

}  // namespace rill

#endif  // RILL_PLUGINS_FFT_FFT_H_
