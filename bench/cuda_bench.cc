// CUDA: what Rill adds on top of the CUDA runtime and cuBLAS, each measured
// against the same work done directly on a cudaStream_t in the same process.
//   launch:  N empty-kernel launches + one sync, ThenLaunch vs cudaLaunchKernel
//   memcpy:  pinned host -> device and back, ThenMemcpy vs cudaMemcpyAsync
//   sgemm:   n x n through ThenBlasGemm (the cublas plugin) vs cublasSgemm
// FIGURE/RATIO lines at the end (RATIO = direct time / Rill time, higher is
// better). Without a CUDA device it prints the reason and exits 0.
// (hgemm is not measured: the BLAS interface has no half-precision type yet.)

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/bench_report.h"
#include "benchmark/benchmark.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/rill.h"

extern const unsigned char rill_cuda_bench_fatbin[];
extern const std::size_t rill_cuda_bench_fatbin_size;

namespace rill {
namespace {

constexpr int kLaunches = 1000;

StreamExecutor* Executor() {
  static StreamExecutor* executor =
      PlatformManager::Default().PlatformWithName("cuda").value()->ExecutorForDevice(0).value();
  return executor;
}

void Check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(error));
    std::abort();
  }
}

void BM_LaunchRill(benchmark::State& state) {
  KernelSpec spec("noop");
  spec.AddCudaFatbin(rill_cuda_bench_fatbin, rill_cuda_bench_fatbin_size);
  auto kernel = Executor()->LoadKernel<int>(spec).value();
  std::unique_ptr<Stream> stream = Executor()->CreateStream().value();
  for (auto _ : state) {
    for (int i = 0; i < kLaunches; ++i) stream->ThenLaunch(ThreadDim(32), BlockDim(1), kernel, i);
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
  state.counters["us_per_launch"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kLaunches,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_LaunchDirect(benchmark::State& state) {
  CudaDeviceScope scope(0);
  cudaLibrary_t library;
  cudaKernel_t kernel;
  Check(cudaLibraryLoadData(&library, rill_cuda_bench_fatbin, nullptr, nullptr, 0, nullptr, nullptr,
                            0),
        "cudaLibraryLoadData");
  Check(cudaLibraryGetKernel(&kernel, library, "noop"), "cudaLibraryGetKernel");
  cudaStream_t stream;
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  for (auto _ : state) {
    for (int i = 0; i < kLaunches; ++i) {
      void* args[] = {&i};
      cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(32), args, 0, stream);
    }
    Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  cudaStreamDestroy(stream);
  cudaLibraryUnload(library);
  state.counters["us_per_launch"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kLaunches,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_MemcpyRill(benchmark::State& state) {
  const uint64_t bytes = state.range(0);
  void* host = Executor()->HostMemoryAllocate(bytes).value();
  DeviceMemoryBase device = Executor()->Allocate(bytes).value();
  std::unique_ptr<Stream> stream = Executor()->CreateStream().value();
  for (auto _ : state) {
    stream->ThenMemcpy(&device, host, bytes).ThenMemcpy(host, device, bytes);
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * bytes);
  (void)Executor()->Deallocate(&device);
  (void)Executor()->HostMemoryDeallocate(host);
}

void BM_MemcpyDirect(benchmark::State& state) {
  const uint64_t bytes = state.range(0);
  CudaDeviceScope scope(0);
  void* host;
  void* device;
  cudaStream_t stream;
  Check(cudaHostAlloc(&host, bytes, cudaHostAllocPortable), "cudaHostAlloc");
  Check(cudaMalloc(&device, bytes), "cudaMalloc");
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  for (auto _ : state) {
    cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream);
    Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * bytes);
  cudaStreamDestroy(stream);
  cudaFree(device);
  cudaFreeHost(host);
}

void BM_SgemmRill(benchmark::State& state) {
  const int64_t n = state.range(0);
  DeviceMemory<float> a = Executor()->AllocateArray<float>(n * n).value();
  DeviceMemory<float> b = Executor()->AllocateArray<float>(n * n).value();
  DeviceMemory<float> c = Executor()->AllocateArray<float>(n * n).value();
  std::unique_ptr<Stream> stream = Executor()->CreateStream().value();
  stream->ThenMemset32(&a, 0, n * n * 4).ThenMemset32(&b, 0, n * n * 4);
  for (auto _ : state) {
    stream->ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, n, n, n, 1.0f, a, n, b,
                         n, 0.0f, &c, n);
    if (!stream->BlockHostUntilDone().ok())
      state.SkipWithError(stream->status().ToString().c_str());
  }
  state.counters["gflops"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  (void)Executor()->Deallocate(&a);
  (void)Executor()->Deallocate(&b);
  (void)Executor()->Deallocate(&c);
}

void BM_SgemmDirect(benchmark::State& state) {
  const int64_t n = state.range(0);
  CudaDeviceScope scope(0);
  float *a, *b, *c;
  Check(cudaMalloc(reinterpret_cast<void**>(&a), n * n * 4), "cudaMalloc");
  Check(cudaMalloc(reinterpret_cast<void**>(&b), n * n * 4), "cudaMalloc");
  Check(cudaMalloc(reinterpret_cast<void**>(&c), n * n * 4), "cudaMalloc");
  cudaMemset(a, 0, n * n * 4);
  cudaMemset(b, 0, n * n * 4);
  cudaStream_t stream;
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) std::abort();
  cublasSetStream(handle, stream);
  const float one = 1, zero = 0;
  for (auto _ : state) {
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
    Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  state.counters["gflops"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

void Register() {
  benchmark::RegisterBenchmark("BM_LaunchRill", BM_LaunchRill)->UseRealTime();
  benchmark::RegisterBenchmark("BM_LaunchDirect", BM_LaunchDirect)->UseRealTime();
  for (int64_t bytes : {1 << 20, 64 << 20}) {
    benchmark::RegisterBenchmark("BM_MemcpyRill", BM_MemcpyRill)->Arg(bytes)->UseRealTime();
    benchmark::RegisterBenchmark("BM_MemcpyDirect", BM_MemcpyDirect)->Arg(bytes)->UseRealTime();
  }
  for (int64_t n : {256, 1024, 4096}) {
    benchmark::RegisterBenchmark("BM_SgemmRill", BM_SgemmRill)->Arg(n)->UseRealTime();
    benchmark::RegisterBenchmark("BM_SgemmDirect", BM_SgemmDirect)->Arg(n)->UseRealTime();
  }
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  rill::Platform* cuda = rill::PlatformManager::Default().PlatformWithName("cuda").value();
  if (cuda->VisibleDeviceCount() == 0) {
    std::printf("cuda_bench: skipped: %s\n", cuda->Availability().ToString().c_str());
    return 0;
  }
  rill::Register();
  return rill::bench::RunAndReport(
      argc, argv, [](const rill::bench::Results& results, rill::bench::Report& report) {
        auto ns = [&](const std::string& name) {
          auto it = results.find(name);
          return it == results.end() ? 0.0 : it->second.real_ns_per_iter;
        };
        auto ratio = [&](const std::string& key, const std::string& rill,
                         const std::string& direct) {
          const double r = ns(rill), d = ns(direct);
          if (r > 0 && d > 0) report.Ratio(key, d / r);
        };
        report.Figure("cuda.launch_us.rill", ns("BM_LaunchRill/real_time") / rill::kLaunches / 1e3);
        report.Figure("cuda.launch_us.direct",
                      ns("BM_LaunchDirect/real_time") / rill::kLaunches / 1e3);
        ratio("cuda.launch", "BM_LaunchRill/real_time", "BM_LaunchDirect/real_time");
        for (const char* bytes : {"1048576", "67108864"}) {
          ratio(absl::StrCat("cuda.memcpy.", bytes),
                absl::StrCat("BM_MemcpyRill/", bytes, "/real_time"),
                absl::StrCat("BM_MemcpyDirect/", bytes, "/real_time"));
        }
        for (const char* n : {"256", "1024", "4096"}) {
          ratio(absl::StrCat("blas.sgemm.", n, ".cublas"),
                absl::StrCat("BM_SgemmRill/", n, "/real_time"),
                absl::StrCat("BM_SgemmDirect/", n, "/real_time"));
        }
      });
}
