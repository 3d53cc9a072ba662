#include "tools/demo_pipeline.h"

#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/rill.h"

#ifdef RILL_DEMO_CUDA
extern const unsigned char rill_demo_fatbin[];
extern const std::size_t rill_demo_fatbin_size;
#endif

namespace rill::demo {
namespace {

constexpr float kAlpha = 2.5f;

// y[i] = a * x[i] + y[i]
void SaxpyHost(const HostThread& t, float a, const float* x, float* y, uint64_t n) {
  if (uint64_t i = t.global_x(); i < n) y[i] = a * x[i] + y[i];
}

// out[i] = in[i] * in[i]
void SquareHost(const HostThread& t, const float* in, float* out, uint64_t n) {
  if (uint64_t i = t.global_x(); i < n) out[i] = in[i] * in[i];
}

// Adds the CUDA variant (demo_kernels.cu), when the CUDA backend is built.
void AddCuda(KernelSpec& spec) {
#ifdef RILL_DEMO_CUDA
  spec.AddCudaFatbin(rill_demo_fatbin, rill_demo_fatbin_size);
#else
  (void)spec;
#endif
}

KernelSpec SaxpySpec() {
  KernelSpec spec("saxpy");
  spec.AddHostFunction<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(SaxpyHost);
  spec.AddOpenClSource(R"CL(
__kernel void saxpy(float a, __global const float* x, __global float* y, ulong n) {
  const size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
})CL");
  AddCuda(spec);
  return spec;
}

KernelSpec SquareSpec() {
  KernelSpec spec("square");
  spec.AddHostFunction<DeviceMemory<float>, DeviceMemory<float>, uint64_t>(SquareHost);
  spec.AddOpenClSource(R"CL(
__kernel void square(__global const float* in, __global float* out, ulong n) {
  const size_t i = get_global_id(0);
  if (i < n) out[i] = in[i] * in[i];
})CL");
  AddCuda(spec);
  return spec;
}

}  // namespace

absl::StatusOr<PipelineResult> RunCopyKernelPipeline(StreamExecutor* executor, int64_t n) {
  const absl::Time start = absl::Now();
  std::vector<float> x(n), y(n), z(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.001f;
    y[i] = 1.0f - static_cast<float>(i % 7) * 0.125f;
  }

  RILL_ASSIGN_OR_RETURN(
      auto saxpy, (executor->LoadKernel<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(
                      SaxpySpec())));
  RILL_ASSIGN_OR_RETURN(
      auto square,
      (executor->LoadKernel<DeviceMemory<float>, DeviceMemory<float>, uint64_t>(SquareSpec())));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> dx, executor->AllocateOwnedArray<float>(n));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> dy, executor->AllocateOwnedArray<float>(n));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> dz, executor->AllocateOwnedArray<float>(n));
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<Stream> compute, executor->CreateStream());
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<Stream> consumer, executor->CreateStream());
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<Event> ready, executor->CreateEvent());
  std::vector<std::unique_ptr<Timer>> timers;
  for (int i = 0; i < 4; ++i) {
    RILL_ASSIGN_OR_RETURN(std::unique_ptr<Timer> timer, Timer::Create(executor));
    timers.push_back(std::move(timer));
  }

  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(float);
  const ThreadDim threads(256);
  const BlockDim blocks((n + 255) / 256);
  compute->ThenStartTimer(timers[0].get())
      .ThenMemcpy(dx.ptr(), x.data(), bytes)
      .ThenMemcpy(dy.ptr(), y.data(), bytes)
      .ThenStopTimer(timers[0].get())
      .ThenStartTimer(timers[1].get())
      .ThenLaunch(threads, blocks, saxpy, kAlpha, *dx, *dy, static_cast<uint64_t>(n))
      .ThenStopTimer(timers[1].get())
      .ThenRecordEvent(ready.get());
  consumer->ThenWaitFor(ready.get())
      .ThenStartTimer(timers[2].get())
      .ThenLaunch(threads, blocks, square, *dy, *dz, static_cast<uint64_t>(n))
      .ThenStopTimer(timers[2].get())
      .ThenStartTimer(timers[3].get())
      .ThenMemcpy(z.data(), *dz, bytes)
      .ThenStopTimer(timers[3].get());
  RILL_RETURN_IF_ERROR(Annotate(compute->BlockHostUntilDone(), "compute stream"));
  RILL_RETURN_IF_ERROR(Annotate(consumer->BlockHostUntilDone(), "consumer stream"));

  PipelineResult result;
  const char* names[] = {"h2d x,y", "saxpy", "square", "d2h z"};
  const char* where[] = {"stream 1", "stream 1", "stream 2 (after event)", "stream 2"};
  for (int i = 0; i < 4; ++i) {
    RILL_ASSIGN_OR_RETURN(absl::Duration t, timers[i]->Elapsed());
    result.steps.push_back(Step{names[i], where[i], t});
  }
  for (int64_t i = 0; i < n; ++i) {
    const float s = kAlpha * x[i] + y[i];
    result.max_abs_error = std::max(result.max_abs_error, std::fabs(double{z[i]} - double{s} * s));
  }
  result.wall_time = absl::Now() - start;
  if (result.max_abs_error > 1e-4) {
    return absl::InternalError(
        absl::StrCat("result differs from the host reference by ", result.max_abs_error));
  }
  return result;
}

}  // namespace rill::demo
