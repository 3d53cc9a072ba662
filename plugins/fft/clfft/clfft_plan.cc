#include "rill/plugins/fft/clfft/clfft_plan.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/platform/opencl/opencl_status.h"
#include "rill/platform/opencl/opencl_stream.h"
#include "rill/plugins/fft/clfft/clfft_status.h"

namespace rill {
namespace {

// clFFT's planner (its kernel repository, program builds) is serialized
// process-wide; enqueues take only their plan's lock.
Mutex& PlanningMutex() {
  static Mutex* mu = new Mutex();
  return *mu;
}

// The prime factor of `n` clFFT has no kernels for, or 0 when it has them
// all (clFFT 2.12: radices 2, 3, 5, 7, 11, 13).
int64_t UnsupportedFactor(int64_t n) {
  for (int64_t p : {2, 3, 5, 7, 11, 13}) {
    while (n % p == 0) n /= p;
  }
  if (n == 1) return 0;
  for (int64_t p = 17; p * p <= n; p += 2) {
    if (n % p == 0) return p;
  }
  return n;
}

// clFFT's per-dimension strides (dimension 0 fastest) of one side, in
// elements of the side's type.
std::vector<size_t> Strides(const FftLayout& layout, int rank) {
  std::vector<size_t> strides(rank);
  int64_t pitch = layout.stride;
  for (int d = 0; d < rank; ++d) {
    strides[d] = static_cast<size_t>(pitch);
    pitch *= layout.embed[rank - 1 - d];
  }
  return strides;
}

// A cl_mem clFFT can take for one view: clFFT has no buffer offsets.
struct Operand {
  cl_mem mem = nullptr;
  bool bounce = false;  // A copy of the view at offset 0, written back after the run.
};

}  // namespace

absl::StatusOr<std::shared_ptr<ClFftExecutable>> ClFftExecutable::Create(
    cl_context context, cl_command_queue bake_queue, const FftPlanSpec& r, uint64_t base_align) {
  const std::string what = absl::StrCat("clfft plan ", r.ToString());
  for (int i = 0; i < r.rank(); ++i) {
    if (int64_t p = UnsupportedFactor(r.dims[i]); p != 0) {
      return absl::UnimplementedError(
          absl::StrCat("clfft: size ", r.dims[i], " (dims[", i, "] of [",
                       absl::StrJoin(r.dims, ","), "]) has the prime factor ", p,
                       "; clFFT supports sizes whose prime factors are 2, 3, 5, 7, 11 "
                       "and 13 (use the host fftw plugin for other sizes)"));
    }
  }
  if (r.type == FftType::kC2C && r.placement == FftPlacement::kInPlace && !(r.input == r.output)) {
    return absl::UnimplementedError(absl::StrCat(
        "clfft: an in-place c2c plan needs the same layout on both sides (", r.ToString(), ")"));
  }
  const int rank = r.rank();
  std::vector<size_t> lengths(rank);
  for (int d = 0; d < rank; ++d) lengths[d] = static_cast<size_t>(r.dims[rank - 1 - d]);
  std::vector<size_t> in_strides = Strides(r.input, rank), out_strides = Strides(r.output, rank);
  clfftLayout in_layout = CLFFT_COMPLEX_INTERLEAVED, out_layout = CLFFT_COMPLEX_INTERLEAVED;
  if (r.type == FftType::kR2C) in_layout = CLFFT_REAL, out_layout = CLFFT_HERMITIAN_INTERLEAVED;
  if (r.type == FftType::kC2R) in_layout = CLFFT_HERMITIAN_INTERLEAVED, out_layout = CLFFT_REAL;

  std::shared_ptr<ClFftExecutable> e(new ClFftExecutable(context, r, base_align));
  MutexLock lock(&PlanningMutex());
  auto check = [&](clfftStatus status, const char* call) {
    return ClFftStatus(status, absl::StrCat(what, ": ", call));
  };
  RILL_RETURN_IF_ERROR(
      check(clfftCreateDefaultPlan(&e->plan_, context, static_cast<clfftDim>(rank), lengths.data()),
            "clfftCreateDefaultPlan"));
  e->planned_ = true;  // From here on the destructor destroys it.
  RILL_RETURN_IF_ERROR(
      check(clfftSetPlanPrecision(e->plan_,
                                  r.precision == DataType::kFloat ? CLFFT_SINGLE : CLFFT_DOUBLE),
            "clfftSetPlanPrecision"));
  RILL_RETURN_IF_ERROR(check(clfftSetLayout(e->plan_, in_layout, out_layout), "clfftSetLayout"));
  RILL_RETURN_IF_ERROR(
      check(clfftSetResultLocation(
                e->plan_, r.placement == FftPlacement::kInPlace ? CLFFT_INPLACE : CLFFT_OUTOFPLACE),
            "clfftSetResultLocation"));
  RILL_RETURN_IF_ERROR(
      check(clfftSetPlanInStride(e->plan_, static_cast<clfftDim>(rank), in_strides.data()),
            "clfftSetPlanInStride"));
  RILL_RETURN_IF_ERROR(
      check(clfftSetPlanOutStride(e->plan_, static_cast<clfftDim>(rank), out_strides.data()),
            "clfftSetPlanOutStride"));
  RILL_RETURN_IF_ERROR(check(clfftSetPlanDistance(e->plan_, static_cast<size_t>(r.input.distance),
                                                  static_cast<size_t>(r.output.distance)),
                             "clfftSetPlanDistance"));
  RILL_RETURN_IF_ERROR(check(clfftSetPlanBatchSize(e->plan_, static_cast<size_t>(r.batch)),
                             "clfftSetPlanBatchSize"));
  // clFFT scales the backward transform by 1/N by default; Rill's are unnormalized.
  RILL_RETURN_IF_ERROR(
      check(clfftSetPlanScale(e->plan_, CLFFT_FORWARD, 1.0f), "clfftSetPlanScale(CLFFT_FORWARD)"));
  RILL_RETURN_IF_ERROR(check(clfftSetPlanScale(e->plan_, CLFFT_BACKWARD, 1.0f),
                             "clfftSetPlanScale(CLFFT_BACKWARD)"));
  RILL_RETURN_IF_ERROR(
      check(clfftBakePlan(e->plan_, 1, &bake_queue, nullptr, nullptr), "clfftBakePlan"));
  RILL_RETURN_IF_ERROR(check(clfftGetTmpBufSize(e->plan_, &e->tmp_bytes_), "clfftGetTmpBufSize"));
  if (e->tmp_bytes_ > 0) {
    cl_int error = CL_SUCCESS;
    e->tmp_ = clCreateBuffer(context, CL_MEM_READ_WRITE, e->tmp_bytes_, nullptr, &error);
    RILL_RETURN_IF_ERROR(ClStatus(error, absl::StrCat(what, ": clCreateBuffer(temporary buffer, ",
                                                      e->tmp_bytes_, " bytes)")));
  }
  return e;
}

ClFftExecutable::~ClFftExecutable() {
  {
    MutexLock lock(&mu_);
    if (last_ != nullptr) {
      clWaitForEvents(1, &last_);  // Its queue was flushed at enqueue.
      clReleaseEvent(last_);
      last_ = nullptr;
    }
  }
  if (tmp_ != nullptr) clReleaseMemObject(tmp_);
  if (planned_) {
    MutexLock lock(&PlanningMutex());
    clfftDestroyPlan(&plan_);
  }
}

absl::StatusOr<cl_event> ClFftExecutable::Enqueue(cl_command_queue queue,
                                                  const DeviceMemoryBase& in,
                                                  const DeviceMemoryBase& out) {
  const bool in_place = spec_.placement == FftPlacement::kInPlace;
  std::vector<cl_mem>
      made;  // Sub-buffers and copies: released once enqueued (OpenCL frees them after use).
  absl::Cleanup release = [&made] {
    for (cl_mem m : made) clReleaseMemObject(m);
  };

  // `memory` as a buffer clFFT can take, `bytes` long: the allocation
  // itself, a sub-buffer, or a bounce copy.
  auto operand = [&](const DeviceMemoryBase& memory, uint64_t bytes,
                     const char* name) -> absl::StatusOr<Operand> {
    cl_mem base = ClMem(memory);
    if (memory.offset() == 0) return Operand{base, false};
    cl_int error = CL_SUCCESS;
    if (base_align_ != 0 && memory.offset() % base_align_ == 0) {
      cl_buffer_region region{static_cast<size_t>(memory.offset()), static_cast<size_t>(bytes)};
      cl_mem sub =
          clCreateSubBuffer(base, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &error);
      RILL_RETURN_IF_ERROR(
          ClStatus(error, absl::StrCat("clfft: clCreateSubBuffer(", name, ", offset ",
                                       region.origin, ", size ", region.size, ")")));
      made.push_back(sub);
      return Operand{sub, false};
    }
    cl_mem copy = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &error);
    RILL_RETURN_IF_ERROR(ClStatus(
        error, absl::StrCat("clfft: clCreateBuffer(copy of the ", name, ", ", bytes, " bytes)")));
    made.push_back(copy);
    RILL_CL_RETURN_IF_ERROR(
        clEnqueueCopyBuffer(queue, base, copy, memory.offset(), 0, bytes, 0, nullptr, nullptr));
    return Operand{copy, true};
  };

  const uint64_t in_bytes = FftInputBytes(spec_), out_bytes = FftOutputBytes(spec_);
  Operand src, dst;
  if (in_place) {
    RILL_ASSIGN_OR_RETURN(src, operand(in, std::max(in_bytes, out_bytes), "in-place buffer"));
    dst = src;
  } else {
    // clFFT 2.12 leaves an out-of-place c2r input alone (its intermediate
    // results go to a plan-owned buffer, intBufferC2R), so the input is
    // read in place; clfft_fft_test checks this up to 2^20 points.
    RILL_ASSIGN_OR_RETURN(src, operand(in, in_bytes, "input"));
    src.bounce = false;  // The input is never written back.
    RILL_ASSIGN_OR_RETURN(dst, operand(out, out_bytes, "output"));
  }

  const clfftDirection direction =
      spec_.direction == FftDirection::kForward ? CLFFT_FORWARD : CLFFT_BACKWARD;
  cl_event transform = nullptr;
  {
    MutexLock lock(&mu_);
    const clfftStatus status = clfftEnqueueTransform(
        plan_, direction, 1, &queue, last_ != nullptr ? 1 : 0, last_ != nullptr ? &last_ : nullptr,
        &transform, &src.mem, in_place ? nullptr : &dst.mem, tmp_);
    RILL_RETURN_IF_ERROR(ClFftStatus(
        status, absl::StrCat("clfft run of ", spec_.ToString(), ": clfftEnqueueTransform")));
    if (last_ != nullptr) clReleaseEvent(last_);
    last_ = transform;
    clRetainEvent(transform);  // One reference for last_, one for the caller.
  }
  cl_event result = transform;
  if (dst.bounce) {
    cl_event copy_back = nullptr;
    const cl_int error = clEnqueueCopyBuffer(queue, dst.mem, ClMem(out), 0, out.offset(),
                                             in_place ? std::max(in_bytes, out_bytes) : out_bytes,
                                             0, nullptr, &copy_back);
    clReleaseEvent(transform);
    RILL_RETURN_IF_ERROR(ClStatus(error, "clfft: clEnqueueCopyBuffer(result to the output view)"));
    result = copy_back;
  }
  clFlush(queue);  // Runs on other queues may wait for this one.
  return result;
}

ClFftPlan::ClFftPlan(StreamExecutor* executor, const FftPlanSpec& resolved,
                     std::shared_ptr<ClFftExecutable> e)
    : FftPlan(executor, "clfft", resolved), executable_(std::move(e)) {}

}  // namespace rill
