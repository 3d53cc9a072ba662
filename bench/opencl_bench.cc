// The OpenCL platform through Rill against the same OpenCL work done
// directly, on the first OpenCL device (PoCL's CPU device on CI machines).
//
//  - sgemm/<n>, n = 64, 256, 512, 1024: one n x n x n column-major sgemm
//    through Stream::ThenBlasGemm + BlockHostUntilDone (the clblast plugin)
//    against clblast::Gemm<float> + clFinish on the same cl_command_queue
//    (the stream's native handle) and the same buffers.
//  - launch: kLaunches launches of a trivial kernel through
//    Stream::ThenLaunch, then one BlockHostUntilDone, against
//    clEnqueueNDRangeKernel kLaunches times (arguments set once) + clFinish
//    on a queue of the same context, created with the same properties as
//    Rill's (in order, profiling).
//  - fft/<n>, n = 2^10, 2^16, 2^20: a single-precision complex 1-D forward
//    out-of-place transform through Stream::ThenFft + BlockHostUntilDone (the
//    clfft plugin) against clfftEnqueueTransform + clFinish on the same baked
//    plan (its native handle), queue and buffers.
// Each iteration runs both sides once, in alternating order, so that they
// share cache and clock state; both are warmed up first (CLBlast and clFFT
// compile their kernels on first use). The counters are the medians.
//
// Ends with FIGURE/RATIO lines: blas.sgemm.<n>.clblast(.gflops,
// .direct_gflops) and RATIO blas.sgemm.<n>.clblast; opencl.launch_us.rill,
// opencl.launch_us.direct and RATIO opencl.launch; fft.c2c.1d.<n>.clfft
// (.gflops, .direct_gflops) and RATIO fft.c2c.1d.<n>.clfft. Ratios are
// direct time / Rill time: higher is better, 1 means no overhead.
//
// PoCL compiles kernels at run time and caches the binaries in
// POCL_CACHE_DIR (default ~/.cache/pocl/kcache). With a cold cache the
// first CLBlast gemm of each kernel family costs ~6.5 s and each clFFT plan
// ~1.4 s; reuse the tests' cache to skip that:
//   POCL_CACHE_DIR=<build>/pocl-cache <build>/bench/opencl_bench
// The iteration counts are fixed: on two cores a run takes about 5 s with
// a warm cache and 35 s with a cold one. --benchmark_filter=launch and the
// like pick one part.

#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "benchmark/benchmark.h"
#include "rill/platform/opencl/opencl_plugin.h"
#include "rill/rill.h"

#ifdef RILL_HAVE_CLBLAST
#include <clblast.h>
#endif
#ifdef RILL_HAVE_CLFFT
#include <clFFT.h>

#include "rill/plugins/fft/fft.h"
#endif

namespace rill {
namespace {

constexpr int kGemmSizes[] = {64, 256, 512, 1024};
constexpr int kFftLog2Sizes[] = {10, 16, 20};
constexpr int kLaunches = 1000;

// Device 0 of the opencl platform, or nullptr after skipping `state` with
// the platform's reason when it has no device here.
StreamExecutor* Executor(benchmark::State& state) {
  Platform* platform = PlatformManager::Default().PlatformWithName("opencl").value();
  if (platform->VisibleDeviceCount() == 0) {
    state.SkipWithError(platform->Availability().ToString().c_str());
    return nullptr;
  }
  return platform->ExecutorForDevice(0).value();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Runs `rill` and `direct` once per iteration, in alternating order, after
// `warmup` rounds of each; sets rill_us and direct_us to the median time of
// one call of each.
void Interleave(benchmark::State& state, const std::function<void()>& rill,
                const std::function<void()>& direct, int warmup = 2) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) rill(), direct();
  std::vector<double> rill_s, direct_s;
  bool rill_first = true;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    rill_first ? rill() : direct();
    const auto t1 = Clock::now();
    rill_first ? direct() : rill();
    const auto t2 = Clock::now();
    const double first = std::chrono::duration<double>(t1 - t0).count();
    const double second = std::chrono::duration<double>(t2 - t1).count();
    (rill_first ? rill_s : direct_s).push_back(first);
    (rill_first ? direct_s : rill_s).push_back(second);
    state.SetIterationTime(first + second);
    rill_first = !rill_first;
  }
  state.counters["rill_us"] = Median(rill_s) * 1e6;
  state.counters["direct_us"] = Median(direct_s) * 1e6;
}

void Check(benchmark::State& state, cl_int error, const char* what) {
  if (error != CL_SUCCESS)
    state.SkipWithError((std::string(what) + " failed: " + std::to_string(error)).c_str());
}

#ifdef RILL_HAVE_CLBLAST
void Sgemm(benchmark::State& state, int n) {
  StreamExecutor* exec = Executor(state);
  if (exec == nullptr) return;
  std::unique_ptr<Stream> stream = exec->CreateStream().value();
  const uint64_t count = static_cast<uint64_t>(n) * n;
  auto a = exec->AllocateOwnedArray<float>(count).value(),
       b = exec->AllocateOwnedArray<float>(count).value(),
       c = exec->AllocateOwnedArray<float>(count).value();
  std::vector<float> init(count, 0.5f);
  stream->ThenMemcpyH2D<float>(init, a.ptr()).ThenMemcpyH2D<float>(init, b.ptr());
  if (!stream->BlockHostUntilDone().ok()) return state.SkipWithError("upload failed");
  auto queue = static_cast<cl_command_queue>(stream->native_handle());
  auto rill = [&] {
    stream->ThenBlasGemm<float>(Transpose::kNoTranspose, Transpose::kNoTranspose, n, n, n, 1.0f, *a,
                                n, *b, n, 0.0f, c.ptr(), n);
    if (absl::Status s = stream->BlockHostUntilDone(); !s.ok())
      state.SkipWithError(s.ToString().c_str());
  };
  auto direct = [&] {
    const clblast::StatusCode code = clblast::Gemm<float>(
        clblast::Layout::kColMajor, clblast::Transpose::kNo, clblast::Transpose::kNo, n, n, n, 1.0f,
        ClMem(*a), 0, n, ClMem(*b), 0, n, 0.0f, ClMem(*c), 0, n, &queue, nullptr);
    if (code != clblast::StatusCode::kSuccess)
      return Check(state, static_cast<cl_int>(code), "clblast::Gemm");
    Check(state, clFinish(queue), "clFinish");
  };
  Interleave(state, rill, direct);
  const double flops = 2.0 * n * n * n;
  state.counters["rill_gflops"] = flops / (state.counters["rill_us"] * 1e3);
  state.counters["direct_gflops"] = flops / (state.counters["direct_us"] * 1e3);
}
#endif

constexpr char kTouchSource[] = R"CL(
__kernel void touch(__global int* x, int v) {
  if (get_global_id(0) == 0) x[0] = v;
})CL";

// A cl_kernel of kTouchSource built directly in `context`; released with it.
struct DirectKernel {
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  ~DirectKernel() {
    if (kernel != nullptr) clReleaseKernel(kernel);
    if (program != nullptr) clReleaseProgram(program);
  }
};

void Launch(benchmark::State& state) {
  StreamExecutor* exec = Executor(state);
  if (exec == nullptr) return;
  OpenClExecutor* cl = AsOpenClExecutor(exec).value();
  std::unique_ptr<Stream> stream = exec->CreateStream().value();
  auto x = exec->AllocateOwnedArray<int32_t>(1).value();
  KernelSpec spec("touch");
  spec.AddOpenClSource(kTouchSource);
  auto touch = exec->LoadKernel<DeviceMemory<int32_t>, int32_t>(spec).value();

  cl_int error = CL_SUCCESS;
  cl_device_id device = cl->device();
  cl_command_queue queue =
      clCreateCommandQueue(cl->context(), device, CL_QUEUE_PROFILING_ENABLE, &error);
  if (error != CL_SUCCESS) return Check(state, error, "clCreateCommandQueue");
  DirectKernel direct_kernel;
  const char* text = kTouchSource;
  direct_kernel.program = clCreateProgramWithSource(cl->context(), 1, &text, nullptr, &error);
  if (error == CL_SUCCESS)
    error = clBuildProgram(direct_kernel.program, 1, &device, "-cl-std=CL1.2", nullptr, nullptr);
  if (error == CL_SUCCESS)
    direct_kernel.kernel = clCreateKernel(direct_kernel.program, "touch", &error);
  cl_mem mem = ClMem(*x);
  const cl_int value = 7;
  if (error == CL_SUCCESS) error = clSetKernelArg(direct_kernel.kernel, 0, sizeof(cl_mem), &mem);
  if (error == CL_SUCCESS) error = clSetKernelArg(direct_kernel.kernel, 1, sizeof(value), &value);
  if (error != CL_SUCCESS) {
    clReleaseCommandQueue(queue);
    return Check(state, error, "building the direct kernel");
  }

  auto rill = [&] {
    for (int i = 0; i < kLaunches; ++i)
      stream->ThenLaunch(ThreadDim(1), BlockDim(1), touch, *x, int32_t{7});
    if (absl::Status s = stream->BlockHostUntilDone(); !s.ok())
      state.SkipWithError(s.ToString().c_str());
  };
  auto direct = [&] {
    const size_t one = 1;
    for (int i = 0; i < kLaunches; ++i) {
      cl_int e = clEnqueueNDRangeKernel(queue, direct_kernel.kernel, 1, nullptr, &one, &one, 0,
                                        nullptr, nullptr);
      if (e != CL_SUCCESS) return Check(state, e, "clEnqueueNDRangeKernel");
    }
    Check(state, clFinish(queue), "clFinish");
  };
  Interleave(state, rill, direct);
  clReleaseCommandQueue(queue);
}

#ifdef RILL_HAVE_CLFFT
using C = std::complex<float>;

void Fft(benchmark::State& state, int64_t n) {
  StreamExecutor* exec = Executor(state);
  if (exec == nullptr) return;
  std::unique_ptr<Stream> stream = exec->CreateStream().value();
  FftPlanSpec spec;
  spec.dims = {n};
  absl::StatusOr<FftPlan*> plan = exec->AsFft()->GetOrCreateCachedPlan(stream.get(), spec);
  if (!plan.ok()) return state.SkipWithError(plan.status().ToString().c_str());
  auto in = exec->AllocateOwnedArray<C>(n).value(), out = exec->AllocateOwnedArray<C>(n).value();
  std::vector<C> init(n);
  for (int64_t i = 0; i < n; ++i) init[i] = C(std::sin(0.001f * i), std::cos(0.003f * i));
  stream->ThenMemcpyH2D<C>(init, in.ptr());
  if (!stream->BlockHostUntilDone().ok()) return state.SkipWithError("upload failed");
  auto queue = static_cast<cl_command_queue>(stream->native_handle());
  const clfftPlanHandle handle = *static_cast<clfftPlanHandle*>((*plan)->native_handle());
  cl_mem in_mem = ClMem(*in), out_mem = ClMem(*out);
  auto rill = [&] {
    if (absl::Status s = stream->ThenFft(*plan, *in, out.ptr()).BlockHostUntilDone(); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
    }
  };
  auto direct = [&] {
    // No temporary buffer: clFFT allocates its own once per plan.
    const clfftStatus status = clfftEnqueueTransform(handle, CLFFT_FORWARD, 1, &queue, 0, nullptr,
                                                     nullptr, &in_mem, &out_mem, nullptr);
    if (status != CLFFT_SUCCESS)
      return Check(state, static_cast<cl_int>(status), "clfftEnqueueTransform");
    Check(state, clFinish(queue), "clFinish");
  };
  Interleave(state, rill, direct);
  const double flops = 5.0 * n * std::log2(static_cast<double>(n));
  state.counters["rill_gflops"] = flops / (state.counters["rill_us"] * 1e3);
  state.counters["direct_gflops"] = flops / (state.counters["direct_us"] * 1e3);
}
#endif

// Iterations per case: enough for a stable median, few enough that a warm
// run stays well under a minute on two cores.
int GemmIterations(int n) { return n <= 64 ? 200 : n <= 256 ? 40 : n <= 512 ? 10 : 4; }
int FftIterations(int log2) { return log2 <= 10 ? 200 : log2 <= 16 ? 40 : 6; }

void Register() {
#ifdef RILL_HAVE_CLBLAST
  for (int n : kGemmSizes) {
    benchmark::RegisterBenchmark(("sgemm/" + std::to_string(n)).c_str(), Sgemm, n)
        ->UseManualTime()
        ->Iterations(GemmIterations(n))
        ->Unit(benchmark::kMicrosecond);
  }
#endif
  benchmark::RegisterBenchmark("launch", Launch)
      ->UseManualTime()
      ->Iterations(100)
      ->Unit(benchmark::kMillisecond);
#ifdef RILL_HAVE_CLFFT
  for (int log2 : kFftLog2Sizes) {
    benchmark::RegisterBenchmark(("fft/" + std::to_string(int64_t{1} << log2)).c_str(), Fft,
                                 int64_t{1} << log2)
        ->UseManualTime()
        ->Iterations(FftIterations(log2))
        ->Unit(benchmark::kMicrosecond);
  }
#endif
}

void Summarize(const bench::Results& r, bench::Report& report) {
  // The run whose name starts with `prefix` ("sgemm/64/iterations:200/manual_time").
  auto counters = [&](const std::string& prefix) -> const std::map<std::string, double>* {
    for (const auto& [run, measured] : r) {
      const auto& c = measured.counters;
      if (run.rfind(prefix, 0) == 0 && c.count("rill_us") && c.count("direct_us") &&
          c.at("rill_us") > 0) {
        return &c;
      }
    }
    return nullptr;
  };
  for (int n : kGemmSizes) {
    const auto* c = counters("sgemm/" + std::to_string(n) + "/");
    if (c == nullptr) continue;
    const std::string name = "blas.sgemm." + std::to_string(n) + ".clblast";
    report.Figure(name + ".gflops", c->at("rill_gflops"));
    report.Figure(name + ".direct_gflops", c->at("direct_gflops"));
    report.Ratio(name, c->at("direct_us") / c->at("rill_us"));
  }
  if (const auto* c = counters("launch/")) {
    report.Figure("opencl.launch_us.rill", c->at("rill_us") / kLaunches);
    report.Figure("opencl.launch_us.direct", c->at("direct_us") / kLaunches);
    report.Ratio("opencl.launch", c->at("direct_us") / c->at("rill_us"));
  }
  for (int log2 : kFftLog2Sizes) {
    const std::string n = std::to_string(int64_t{1} << log2);
    const auto* c = counters("fft/" + n + "/");
    if (c == nullptr) continue;
    const std::string name = "fft.c2c.1d." + n + ".clfft";
    report.Figure(name + ".gflops", c->at("rill_gflops"));
    report.Figure(name + ".direct_gflops", c->at("direct_gflops"));
    report.Ratio(name, c->at("direct_us") / c->at("rill_us"));
  }
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  rill::Register();
  return rill::bench::RunAndReport(argc, argv, rill::Summarize);
}
