// FFT through Rill against FFTW called directly, on the same plan and the
// same arrays.
//
//  - fft/c2c/1d/<n> for n = 2^10, 2^12, ..., 2^20, and fft/c2c/2d/1024x1024:
//    single-precision complex, out-of-place, forward. Each iteration runs
//    the transform twice, in alternating order: once through Rill
//    (Stream::ThenFft + BlockHostUntilDone, on the stream's worker thread)
//    and once directly (fftwf_execute_dft with the plan's native handle on
//    the calling thread), both from the same input into the same output.
//    Interleaving per call gives both the same cache and clock state; both
//    are warmed up first. The counters are the median times of each.
//
// Ends with FIGURE fft.c2c.<shape>.gflops (Rill; 5 N log2 N flops),
// FIGURE fft.c2c.<shape>.direct_gflops and RATIO fft.c2c.<shape>.fftw =
// direct median / Rill median (higher is better; 1 means no overhead).
// Small sizes run for a few microseconds, so the stream's hand-off to its
// worker thread and back shows there. Run it when the machine is quiet:
//   fft_bench --benchmark_min_time=0.5

#include <fftw3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "benchmark/benchmark.h"
#include "rill/platform/host/host_executor.h"
#include "rill/rill.h"

namespace rill {
namespace {

using C = std::complex<float>;

struct Shape {
  std::string name;  // "1d.1024", "2d.1024x1024".
  std::vector<int64_t> dims;
};

std::vector<Shape> Shapes() {
  std::vector<Shape> shapes;
  for (int log2 = 10; log2 <= 20; log2 += 2) {
    shapes.push_back({"1d." + std::to_string(1 << log2), {int64_t{1} << log2}});
  }
  shapes.push_back({"2d.1024x1024", {1024, 1024}});
  return shapes;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

void Pair(benchmark::State& state, std::vector<int64_t> dims) {
  using Clock = std::chrono::steady_clock;
  StreamExecutor* exec =
      PlatformManager::Default().PlatformWithName("host").value()->ExecutorForDevice(0).value();
  if (!exec->SetPlugin(PluginKind::kFft, "fftw").ok()) std::abort();
  std::unique_ptr<Stream> stream = exec->CreateStream().value();
  FftPlanSpec spec;
  spec.dims = dims;
  FftPlan* plan = exec->AsFft()->GetOrCreateCachedPlan(stream.get(), spec).value();
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  auto in = exec->AllocateOwnedArray<C>(n).value(), out = exec->AllocateOwnedArray<C>(n).value();
  std::vector<C> init(n);
  for (int64_t i = 0; i < n; ++i) init[i] = C(std::sin(0.001f * i), std::cos(0.003f * i));
  stream->ThenMemcpy(in.ptr(), init.data(), n * sizeof(C));
  auto* fp = static_cast<fftwf_plan>(plan->native_handle());
  auto* fin = static_cast<fftwf_complex*>(HostPointer(*in));
  auto* fout = static_cast<fftwf_complex*>(HostPointer(*out));
  auto rill = [&] {
    if (!stream->ThenFft(plan, *in, out.ptr()).BlockHostUntilDone().ok())
      state.SkipWithError("stream failed");
  };
  auto direct = [&] {
    fftwf_execute_dft(fp, fin, fout);
    benchmark::ClobberMemory();
  };
  for (int i = 0; i < 3; ++i) rill(), direct();  // Warm-up: caches, pages, the worker thread.

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
  const double flops = 5.0 * n * std::log2(static_cast<double>(n));
  state.counters["rill_us"] = Median(rill_s) * 1e6;
  state.counters["direct_us"] = Median(direct_s) * 1e6;
  state.counters["rill_gflops"] = flops / Median(rill_s) / 1e9;
  state.counters["direct_gflops"] = flops / Median(direct_s) / 1e9;
}

void Register() {
  for (const Shape& s : Shapes()) {
    benchmark::RegisterBenchmark(("fft/c2c/" + s.name).c_str(), Pair, s.dims)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

void Summarize(const bench::Results& r, bench::Report& report) {
  for (const Shape& s : Shapes()) {
    auto it = r.find("fft/c2c/" + s.name + "/manual_time");
    if (it == r.end()) it = r.find("fft/c2c/" + s.name);
    if (it == r.end()) continue;
    const auto& c = it->second.counters;
    if (!c.count("rill_us") || !c.count("direct_us") || c.at("rill_us") <= 0) continue;
    const std::string name = "fft.c2c." + s.name;
    report.Figure(name + ".gflops", c.at("rill_gflops"));
    report.Figure(name + ".direct_gflops", c.at("direct_gflops"));
    report.Ratio(name + ".fftw", c.at("direct_us") / c.at("rill_us"));
  }
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  rill::Register();
  return rill::bench::RunAndReport(argc, argv, rill::Summarize);
}
