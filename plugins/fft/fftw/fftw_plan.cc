#include "rill/plugins/fft/fftw/fftw_plan.h"

#include <fftw3.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/mutex.h"

namespace rill {
namespace {

// FFTW's planner (plan creation and destruction) is not thread-safe; only
// the execute functions are. Every planner call of this plugin holds this
// lock. (The plugin also calls fftw(f)_make_planner_thread_safe when the
// threads libraries are linked, which covers planner calls outside Rill.)
Mutex& PlannerMutex() {
  static Mutex* mu = new Mutex();  // Never destroyed.
  return *mu;
}

// The FFTW API of one precision.
template <typename T>
struct Api;

template <>
struct Api<float> {
  using Plan = fftwf_plan;
  using Complex = fftwf_complex;
  static Plan C2C(int r, const fftw_iodim64* d, const fftw_iodim64* h, void* in, void* out,
                  int sign, unsigned flags) {
    return fftwf_plan_guru64_dft(r, d, 1, h, static_cast<Complex*>(in), static_cast<Complex*>(out),
                                 sign, flags);
  }
  static Plan R2C(int r, const fftw_iodim64* d, const fftw_iodim64* h, void* in, void* out,
                  unsigned flags) {
    return fftwf_plan_guru64_dft_r2c(r, d, 1, h, static_cast<float*>(in),
                                     static_cast<Complex*>(out), flags);
  }
  static Plan C2R(int r, const fftw_iodim64* d, const fftw_iodim64* h, void* in, void* out,
                  unsigned flags) {
    return fftwf_plan_guru64_dft_c2r(r, d, 1, h, static_cast<Complex*>(in),
                                     static_cast<float*>(out), flags);
  }
  static void ExecC2C(Plan p, void* in, void* out) {
    fftwf_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
  }
  static void ExecR2C(Plan p, void* in, void* out) {
    fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<Complex*>(out));
  }
  static void ExecC2R(Plan p, void* in, void* out) {
    fftwf_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<float*>(out));
  }
  static void Destroy(Plan p) { fftwf_destroy_plan(p); }
  static int AlignmentOf(void* p) { return fftwf_alignment_of(static_cast<float*>(p)); }
};

template <>
struct Api<double> {
  using Plan = fftw_plan;
  using Complex = fftw_complex;
  static Plan C2C(int r, const fftw_iodim64* d, const fftw_iodim64* h, void* in, void* out,
                  int sign, unsigned flags) {
    return fftw_plan_guru64_dft(r, d, 1, h, static_cast<Complex*>(in), static_cast<Complex*>(out),
                                sign, flags);
  }
  static Plan R2C(int r, const fftw_iodim64* d, const fftw_iodim64* h, void* in, void* out,
                  unsigned flags) {
    return fftw_plan_guru64_dft_r2c(r, d, 1, h, static_cast<double*>(in),
                                    static_cast<Complex*>(out), flags);
  }
  static Plan C2R(int r, const fftw_iodim64* d, const fftw_iodim64* h, void* in, void* out,
                  unsigned flags) {
    return fftw_plan_guru64_dft_c2r(r, d, 1, h, static_cast<Complex*>(in),
                                    static_cast<double*>(out), flags);
  }
  static void ExecC2C(Plan p, void* in, void* out) {
    fftw_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
  }
  static void ExecR2C(Plan p, void* in, void* out) {
    fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<Complex*>(out));
  }
  static void ExecC2R(Plan p, void* in, void* out) {
    fftw_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<double*>(out));
  }
  static void Destroy(Plan p) { fftw_destroy_plan(p); }
  static int AlignmentOf(void* p) { return fftw_alignment_of(static_cast<double*>(p)); }
};

// An fftw_malloc'd buffer (SIMD-aligned; fftw_alignment_of gives 0).
struct FftwBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  FftwBuffer() = default;
  FftwBuffer(const FftwBuffer&) = delete;
  FftwBuffer& operator=(const FftwBuffer&) = delete;
  ~FftwBuffer() { fftw_free(data); }
  bool Reserve(size_t n) {
    if (n <= bytes) return true;
    fftw_free(data);
    data = fftw_malloc(n);
    bytes = data == nullptr ? 0 : n;
    return data != nullptr;
  }
};

// The input copy of c2r runs that cannot preserve their input; one per
// worker thread, so concurrent runs of one plan never share it.
FftwBuffer& ThreadInputScratch() {
  thread_local FftwBuffer buffer;
  return buffer;
}

// The guru dimensions of a resolved spec: dims[i] has the spec's size and
// stride * (product of the later embeds) on each side; howmany is the batch.
struct GuruDims {
  std::vector<fftw_iodim64> dims;
  fftw_iodim64 howmany;
};

GuruDims MakeGuruDims(const FftPlanSpec& s) {
  GuruDims g;
  g.dims.resize(s.rank());
  ptrdiff_t is = s.input.stride, os = s.output.stride;
  for (int i = s.rank() - 1; i >= 0; --i) {
    g.dims[i] = {static_cast<ptrdiff_t>(s.dims[i]), is, os};
    is *= s.input.embed[i];
    os *= s.output.embed[i];
  }
  g.howmany = {static_cast<ptrdiff_t>(s.batch), static_cast<ptrdiff_t>(s.input.distance),
               static_cast<ptrdiff_t>(s.output.distance)};
  return g;
}

template <typename T>
class Executable : public FftwExecutable {
 public:
  using Plan = typename Api<T>::Plan;

  Executable(const FftPlanSpec& s, unsigned effort)
      : spec_(s),
        guru_(MakeGuruDims(s)),
        effort_(effort),
        in_bytes_(FftInputBytes(s)),
        out_bytes_(FftOutputBytes(s)) {}

  ~Executable() override {
    MutexLock lock(&PlannerMutex());
    if (aligned_ != nullptr) Api<T>::Destroy(aligned_);
    if (unaligned_ != nullptr) Api<T>::Destroy(unaligned_);
  }

  // Makes the plan for aligned arrays.
  absl::Status Init() {
    absl::StatusOr<Plan> plan = MakePlan(/*unaligned=*/false);
    if (!plan.ok()) return plan.status();
    aligned_ = *plan;
    return absl::OkStatus();
  }

  absl::Status Run(void* in, void* out) override {
    if (copy_input_) {
      FftwBuffer& scratch = ThreadInputScratch();
      if (!scratch.Reserve(in_bytes_)) {
        return absl::ResourceExhaustedError(
            absl::StrCat("fftw: cannot allocate ", in_bytes_, " bytes to preserve the c2r input"));
      }
      std::memcpy(scratch.data, in, in_bytes_);
      in = scratch.data;
    }
    Plan plan = aligned_;
    if (Api<T>::AlignmentOf(in) != 0 || Api<T>::AlignmentOf(out) != 0) {
      absl::StatusOr<Plan> p = UnalignedPlan();
      if (!p.ok()) return p.status();
      plan = *p;
    }
    switch (spec_.type) {
      case FftType::kC2C:
        Api<T>::ExecC2C(plan, in, out);
        break;
      case FftType::kR2C:
        Api<T>::ExecR2C(plan, in, out);
        break;
      case FftType::kC2R:
        Api<T>::ExecC2R(plan, in, out);
        break;
    }
    return absl::OkStatus();
  }

  void* native() const override { return aligned_; }

 private:
  absl::StatusOr<Plan> UnalignedPlan() {
    MutexLock lock(&mu_);
    if (unaligned_ == nullptr) {
      absl::StatusOr<Plan> plan = MakePlan(/*unaligned=*/true);
      if (!plan.ok()) return plan.status();
      unaligned_ = *plan;
    }
    return unaligned_;
  }

  // Plans on fresh scratch arrays laid out as the user's. For out-of-place
  // c2r, asks FFTW to preserve the input and falls back to copying it.
  absl::StatusOr<Plan> MakePlan(bool unaligned) {
    const bool in_place = spec_.placement == FftPlacement::kInPlace;
    FftwBuffer in, out;
    if (!in.Reserve(in_place ? std::max(in_bytes_, out_bytes_) : in_bytes_) ||
        (!in_place && !out.Reserve(out_bytes_))) {
      return absl::ResourceExhaustedError(
          absl::StrCat("fftw: cannot allocate the planning arrays (", in_bytes_, " + ", out_bytes_,
                       " bytes) for ", spec_.ToString()));
    }
    void* out_data = in_place ? in.data : out.data;
    const unsigned flags = effort_ | (unaligned ? FFTW_UNALIGNED : 0u);
    MutexLock lock(&PlannerMutex());
    Plan plan = nullptr;
    if (spec_.type == FftType::kC2R && !in_place) {
      // Init decides whether runs copy the input; the unaligned plan follows.
      if (!unaligned && !copy_input_) {
        plan = Make(in.data, out_data, flags | FFTW_PRESERVE_INPUT);
        copy_input_ = plan == nullptr;
      } else if (!copy_input_) {
        plan = Make(in.data, out_data, flags | FFTW_PRESERVE_INPUT);
      }
      if (copy_input_) plan = Make(in.data, out_data, flags | FFTW_DESTROY_INPUT);
    } else {
      plan = Make(in.data, out_data, flags | (in_place ? 0u : FFTW_PRESERVE_INPUT));
    }
    if (plan == nullptr) {
      return absl::UnimplementedError(absl::StrCat("fftw cannot plan ", spec_.ToString(),
                                                   " (FFTW returned no plan for this layout)"));
    }
    return plan;
  }

  Plan Make(void* in, void* out, unsigned flags) {
    const int sign = spec_.direction == FftDirection::kForward ? FFTW_FORWARD : FFTW_BACKWARD;
    if (spec_.type == FftType::kC2C) {
      return Api<T>::C2C(spec_.rank(), guru_.dims.data(), &guru_.howmany, in, out, sign, flags);
    }
    if (spec_.type == FftType::kR2C) {
      return Api<T>::R2C(spec_.rank(), guru_.dims.data(), &guru_.howmany, in, out, flags);
    }
    return Api<T>::C2R(spec_.rank(), guru_.dims.data(), &guru_.howmany, in, out, flags);
  }

  const FftPlanSpec spec_;
  const GuruDims guru_;
  const unsigned effort_;
  const uint64_t in_bytes_, out_bytes_;
  Plan aligned_ = nullptr;   // Set by Init, then constant.
  bool copy_input_ = false;  // Set by Init (the unaligned plan agrees), then constant.
  Mutex mu_;
  Plan unaligned_ ABSL_GUARDED_BY(mu_) = nullptr;
};

template <typename T>
absl::StatusOr<std::shared_ptr<FftwExecutable>> MakeExecutable(const FftPlanSpec& s,
                                                               unsigned effort) {
  auto e = std::make_shared<Executable<T>>(s, effort);
  absl::Status status = e->Init();
  if (!status.ok()) return status;
  return std::shared_ptr<FftwExecutable>(std::move(e));
}

}  // namespace

FftwPlan::FftwPlan(StreamExecutor* executor, const FftPlanSpec& resolved,
                   std::shared_ptr<FftwExecutable> e)
    : FftPlan(executor, "fftw", resolved), executable_(std::move(e)) {}

absl::StatusOr<std::unique_ptr<FftwPlan>> FftwPlan::Create(StreamExecutor* executor,
                                                           const FftPlanSpec& resolved,
                                                           unsigned planner_flags) {
  absl::StatusOr<std::shared_ptr<FftwExecutable>> e =
      resolved.precision == DataType::kFloat ? MakeExecutable<float>(resolved, planner_flags)
                                             : MakeExecutable<double>(resolved, planner_flags);
  if (!e.ok()) return e.status();
  return std::unique_ptr<FftwPlan>(new FftwPlan(executor, resolved, std::move(*e)));
}

}  // namespace rill
