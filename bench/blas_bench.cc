// BLAS through Rill against the same library called directly.
//
//  - gemm/<lib>/<s|d>/<n>: one n x n x n gemm per iteration, through
//    Stream::ThenBlasGemm + BlockHostUntilDone ("rill") or by a direct call
//    on the calling thread ("direct": cblas_?gemm for OpenBLAS, bli_?gemm_ex
//    from the blis plugin's private handle, with the thread count the plugin
//    gives a lone call).
//  - pipelined/<lib>: kPipelined sgemms of n = 32 enqueued, then one sync,
//    against a loop of the same direct calls.
//
// Ends with FIGURE blas.<op>.<n>.<lib>.gflops lines and RATIO
// blas.<op>.<n>.<lib> = direct time / Rill time (higher is better; 1 means
// no overhead). Run it when the machine is quiet, e.g.
//   blas_bench --benchmark_min_time=0.3

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "benchmark/benchmark.h"
#include "rill/rill.h"

#ifdef RILL_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef RILL_HAVE_BLIS
#include <blis.h>

#include "rill/plugins/blas/blis/blis_blas.h"
#endif

namespace rill {
namespace {

constexpr int kSizes[] = {64, 128, 256, 512, 1024, 2048};
constexpr int kPipelined = 2000;
constexpr int kSmall = 32;

template <typename T>
using DirectGemm = std::function<void(int n, const T* a, const T* b, T* c)>;

#ifdef RILL_HAVE_OPENBLAS
template <typename T>
DirectGemm<T> OpenBlasGemm() {
  return [](int n, const T* a, const T* b, T* c) {
    if constexpr (std::is_same_v<T, float>) {
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
    } else {
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
    }
  };
}
#endif

#ifdef RILL_HAVE_BLIS
template <typename T>
DirectGemm<T> BlisGemm() {
  using Fn = std::conditional_t<std::is_same_v<T, float>, decltype(&bli_sgemm_ex),
                                decltype(&bli_dgemm_ex)>;
  auto fn = reinterpret_cast<Fn>(
      Blis::Symbol(std::is_same_v<T, float> ? "bli_sgemm_ex" : "bli_dgemm_ex").value_or(nullptr));
  return [fn](int n, const T* a, const T* b, T* c) {
    T one = 1, zero = 0;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads_only(Blis::ThreadsPerCall(static_cast<double>(n) * n * n), &rntm);
    fn(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, n, n, n, &one, const_cast<T*>(a), 1, n,
       const_cast<T*>(b), 1, n, &zero, c, 1, n, nullptr, &rntm);
  };
}
#endif

// Device 0 of the host platform with BLAS plugin `plugin` selected.
StreamExecutor* Executor(const std::string& plugin) {
  StreamExecutor* exec =
      PlatformManager::Default().PlatformWithName("host").value()->ExecutorForDevice(0).value();
  if (!exec->SetPlugin(PluginKind::kBlas, plugin).ok()) std::abort();
  return exec;
}

template <typename T>
void RillGemm(benchmark::State& state, std::string plugin, int n, int count) {
  StreamExecutor* exec = Executor(plugin);
  auto a = exec->AllocateOwnedArray<T>(n * n).value(),
       b = exec->AllocateOwnedArray<T>(n * n).value(),
       c = exec->AllocateOwnedArray<T>(n * n).value();
  std::unique_ptr<Stream> stream = exec->CreateStream().value();
  std::vector<T> init(n * n, T(0.5));
  stream->ThenMemcpy(a.ptr(), init.data(), n * n * sizeof(T))
      .ThenMemcpy(b.ptr(), init.data(), n * n * sizeof(T));
  // Warm up as Direct does: touch c and let the library set up for this
  // thread, so a one-iteration run of a large size measures the gemm alone.
  stream->ThenBlasGemm<T>(Transpose::kNoTranspose, Transpose::kNoTranspose, n, n, n, T(1), *a, n,
                          *b, n, T(0), c.ptr(), n);
  if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  for (auto _ : state) {
    for (int i = 0; i < count; ++i) {
      stream->ThenBlasGemm<T>(Transpose::kNoTranspose, Transpose::kNoTranspose, n, n, n, T(1), *a,
                              n, *b, n, T(0), c.ptr(), n);
    }
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * n * n * n * count, benchmark::Counter::kIsIterationInvariantRate);
}

template <typename T>
void Direct(benchmark::State& state, DirectGemm<T> gemm, int n, int count) {
  std::vector<T> a(n * n, T(0.5)), b(n * n, T(0.5)), c(n * n);
  gemm(n, a.data(), b.data(), c.data());  // Warm-up, as RillGemm.
  for (auto _ : state) {
    for (int i = 0; i < count; ++i) gemm(n, a.data(), b.data(), c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * n * n * n * count, benchmark::Counter::kIsIterationInvariantRate);
}

struct Library {
  std::string name;
  DirectGemm<float> sgemm;
  DirectGemm<double> dgemm;
};

std::vector<Library> Libraries() {
  std::vector<Library> libs;
#ifdef RILL_HAVE_OPENBLAS
  libs.push_back({"openblas", OpenBlasGemm<float>(), OpenBlasGemm<double>()});
#endif
#ifdef RILL_HAVE_BLIS
  libs.push_back({"blis", BlisGemm<float>(), BlisGemm<double>()});
#endif
  return libs;
}

void Register() {
  for (const Library& lib : Libraries()) {
    for (int n : kSizes) {
      const std::string suffix = "/" + lib.name + "/" + std::to_string(n);
      benchmark::RegisterBenchmark(("rill/sgemm" + suffix).c_str(), RillGemm<float>, lib.name, n, 1)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("direct/sgemm" + suffix).c_str(), Direct<float>, lib.sgemm, n,
                                   1)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("rill/dgemm" + suffix).c_str(), RillGemm<double>, lib.name, n,
                                   1)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("direct/dgemm" + suffix).c_str(), Direct<double>, lib.dgemm, n,
                                   1)
          ->UseRealTime();
    }
    const std::string suffix = "/" + lib.name + "/" + std::to_string(kSmall);
    benchmark::RegisterBenchmark(("rill/pipelined" + suffix).c_str(), RillGemm<float>, lib.name,
                                 kSmall, kPipelined)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("direct/pipelined" + suffix).c_str(), Direct<float>, lib.sgemm,
                                 kSmall, kPipelined)
        ->UseRealTime();
  }
}

void Summarize(const bench::Results& r, bench::Report& report) {
  auto find = [&](const std::string& name) -> const bench::Measured* {
    for (const std::string& key : {name + "/real_time", name}) {
      if (auto it = r.find(key); it != r.end()) return &it->second;
    }
    return nullptr;
  };
  auto one = [&](const std::string& op, const std::string& lib, int n) {
    const std::string suffix = "/" + lib + "/" + std::to_string(n);
    const bench::Measured* rill = find("rill/" + op + suffix);
    const bench::Measured* direct = find("direct/" + op + suffix);
    if (rill == nullptr || direct == nullptr || rill->real_ns_per_iter <= 0) return;
    const std::string name = "blas." + op + "." + std::to_string(n) + "." + lib;
    report.Figure(name + ".gflops",
                  rill->counters.count("GFLOPs") ? rill->counters.at("GFLOPs") / 1e9 : 0);
    report.Figure(name + ".direct_gflops",
                  direct->counters.count("GFLOPs") ? direct->counters.at("GFLOPs") / 1e9 : 0);
    report.Ratio(name, direct->real_ns_per_iter / rill->real_ns_per_iter);
  };
  for (const Library& lib : Libraries()) {
    for (int n : kSizes) {
      one("sgemm", lib.name, n);
      one("dgemm", lib.name, n);
    }
    one("pipelined", lib.name, kSmall);
  }
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  rill::Register();
  return rill::bench::RunAndReport(argc, argv, rill::Summarize);
}
