// Philox uniform float generation through Rill (ThenPopulateRandUniform's
// plugin call on a host stream, PhiloxRng capped at 1 and 2 threads) against
// std::mt19937 + std::uniform_real_distribution<float> and, when the CUDA
// toolkit's cuRAND was found, cuRAND's host generator
// (curandCreateGeneratorHost, PHILOX4_32_10), in the same run.
//
//   build/bench/rng_bench [--benchmark_min_time=0.2]
//
// FIGURE rng.*.gbps: GB/s of floats written. RATIO rng.philox.<t>t.vs_<peer>:
// Rill over the peer, higher is better.

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "benchmark/benchmark.h"
#include "rill/plugins/rng/philox/philox_rng.h"
#include "rill/rill.h"

#ifdef RILL_BENCH_HAVE_CURAND
#include <curand.h>
#endif

namespace rill {
namespace {

constexpr uint64_t kCount = 4 << 20;  // 16 MiB of floats per call.

StreamExecutor* HostExecutor() {
  static StreamExecutor* executor = [] {
    Platform* host = *PlatformManager::Default().PlatformWithName("host");
    return *host->ExecutorForDevice(0);
  }();
  return executor;
}

void BM_RillPhilox(benchmark::State& state) {
  PhiloxRng* rng = dynamic_cast<PhiloxRng*>(HostExecutor()->AsRng());
  if (rng == nullptr) {
    state.SkipWithError("the host RNG plugin is not philox");
    return;
  }
  rng->set_max_threads(static_cast<int>(state.range(0)));
  ScopedDeviceMemory<float> out = *HostExecutor()->AllocateOwnedArray<float>(kCount);
  std::unique_ptr<Stream> stream = *HostExecutor()->CreateStream();
  (void)rng->SetSeed(1);
  stream->ThenMemZero(out.ptr(), kCount * sizeof(float));  // First touch.
  for (auto _ : state) {
    if (!rng->DoPopulateRandUniform(stream.get(), out.ptr()).ok() ||
        !stream->BlockHostUntilDone().ok()) {
      state.SkipWithError("generation failed");
      break;
    }
  }
  rng->set_max_threads(0);
  state.SetBytesProcessed(state.iterations() * kCount * sizeof(float));
}
BENCHMARK(BM_RillPhilox)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Mt19937(benchmark::State& state) {
  std::vector<float> out(kCount);
  std::mt19937 engine(1);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (auto _ : state) {
    for (float& x : out) x = uniform(engine);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kCount * sizeof(float));
}
BENCHMARK(BM_Mt19937)->UseRealTime()->Unit(benchmark::kMillisecond);

#ifdef RILL_BENCH_HAVE_CURAND
void BM_CurandHost(benchmark::State& state) {
  curandGenerator_t generator;
  if (curandCreateGeneratorHost(&generator, CURAND_RNG_PSEUDO_PHILOX4_32_10) !=
      CURAND_STATUS_SUCCESS) {
    state.SkipWithError("curandCreateGeneratorHost failed");
    return;
  }
  curandSetPseudoRandomGeneratorSeed(generator, 1);
  std::vector<float> out(kCount);
  for (auto _ : state) {
    if (curandGenerateUniform(generator, out.data(), kCount) != CURAND_STATUS_SUCCESS) {
      state.SkipWithError("curandGenerateUniform failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  curandDestroyGenerator(generator);
  state.SetBytesProcessed(state.iterations() * kCount * sizeof(float));
}
BENCHMARK(BM_CurandHost)->UseRealTime()->Unit(benchmark::kMillisecond);
#endif

void Summarize(const bench::Results& r, bench::Report& report) {
  auto gbps = [&](const std::string& name) {
    auto it = r.find(name);
    if (it == r.end() || it->second.real_ns_per_iter <= 0) return 0.0;
    return kCount * sizeof(float) / it->second.real_ns_per_iter;  // bytes per ns = GB/s
  };
  const double mt = gbps("BM_Mt19937/real_time");
  const double curand = gbps("BM_CurandHost/real_time");
  if (mt > 0) report.Figure("rng.mt19937.uniform_float.gbps", mt);
  if (curand > 0) report.Figure("rng.curand_host.uniform_float.gbps", curand);
  for (int threads : {1, 2}) {
    const std::string t = std::to_string(threads) + "t";
    const double rill = gbps("BM_RillPhilox/" + std::to_string(threads) + "/real_time");
    if (rill <= 0) continue;
    report.Figure("rng.philox.uniform_float.gbps." + t, rill);
    if (mt > 0) report.Ratio("rng.philox.uniform_float." + t + ".vs_mt19937", rill / mt);
    if (curand > 0)
      report.Ratio("rng.philox.uniform_float." + t + ".vs_curand_host", rill / curand);
  }
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) { return rill::bench::RunAndReport(argc, argv, rill::Summarize); }
