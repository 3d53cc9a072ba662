// What the run-time plugin ABI (abi/rill_plugin.h) costs: the same work in
// tree and through the C ABI, as ratios in-tree time / through-ABI time
// (1 = no overhead, higher is better; the goal is >= 0.95).
//
//  - callback_enqueue: kCallbacks no-op ThenDoHostCallback enqueued on a
//    host:0 stream (in tree) vs on a cbackend:0 stream (examples/c_backend:
//    a C11 backend with a worker thread per stream, through the ABI). The
//    time is the enqueue loop alone (manual time); the BlockHostUntilDone
//    that drains the batch follows outside it.
//  - round_trip: one no-op callback + BlockHostUntilDone, the same two
//    streams: the hand-off to the stream's thread and back. Both backends
//    spin up to 50 us before sleeping (cbackend's queue is lock-free, the
//    host stream's takes a mutex), so this compares the two designs as
//    much as the ABI.
//  - sgemm_pipelined_32: kPipelined 32x32x32 sgemms enqueued on one host:0
//    stream, then one BlockHostUntilDone, with the executor's BLAS
//    "openblas" (in tree) vs "c_blas" (examples/c_library: C calling the
//    same OpenBLAS through the ABI), switched with SetPlugin on the same
//    executor.
//
// The two sides alternate (kReps pairs, the order swapped every other pair,
// so drift in the machine's speed hits both), each pair giving one ratio.
// Ends with RATIO abi.<name> = the median ratio, FIGURE abi.<name>.ratio_min
// and .ratio_max (the range), and FIGURE abi.<name>.intree_<unit> and
// .abi_<unit> (median times). Loads the plugins from where the build put
// them (the targets rill_c_backend and rill_c_library, built with this
// one), or from the folder RILL_BENCH_PLUGIN_DIR names; a plugin that does
// not load ends the run with a message (exit 2). Run it when the machine is
// quiet, e.g.
//   build/bench/c_abi_bench --benchmark_min_time=0.2

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "benchmark/benchmark.h"
#include "rill/rill.h"

namespace rill {
namespace {

constexpr int kReps = 7;          // Alternating pairs (ratios) per measurement.
constexpr int kCallbacks = 1000;  // Callbacks per enqueue batch.
constexpr int kPipelined = 2000;  // Gemms per pipelined batch (as blas_bench).
constexpr int kSmall = 32;        // Their size.
constexpr char kInTree[] = "intree";
constexpr char kAbi[] = "abi";

StreamExecutor* Executor(const std::string& platform) {
  return PlatformManager::Default()
      .PlatformWithName(platform)
      .value()
      ->ExecutorForDevice(0)
      .value();
}

// --- Host callbacks: host:0 (in tree) vs cbackend:0 (through the ABI).

const char* CallbackPlatform(const std::string& side) { return side == kAbi ? "cbackend" : "host"; }

void CallbackEnqueue(benchmark::State& state, std::string side) {
  std::unique_ptr<Stream> stream = Executor(CallbackPlatform(side))->CreateStream().value();
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCallbacks; ++i) stream->ThenDoHostCallback([] {});
    const auto end = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(end - start).count());
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
  state.SetItemsProcessed(state.iterations() * kCallbacks);
}

void RoundTrip(benchmark::State& state, std::string side) {
  std::unique_ptr<Stream> stream = Executor(CallbackPlatform(side))->CreateStream().value();
  for (auto _ : state) {
    stream->ThenDoHostCallback([] {});
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
}

// --- Pipelined small sgemms: "openblas" (in tree) vs "c_blas" (the ABI).

void SgemmPipelined(benchmark::State& state, std::string side) {
  StreamExecutor* exec = Executor("host");
  if (!exec->SetPlugin(PluginKind::kBlas, side == kAbi ? "c_blas" : "openblas").ok()) {
    state.SkipWithError("SetPlugin failed");
    return;
  }
  const int n = kSmall;
  auto a = exec->AllocateOwnedArray<float>(n * n).value(),
       b = exec->AllocateOwnedArray<float>(n * n).value(),
       c = exec->AllocateOwnedArray<float>(n * n).value();
  std::unique_ptr<Stream> stream = exec->CreateStream().value();
  std::vector<float> init(n * n, 0.5f);
  stream->ThenMemcpy(a.ptr(), init.data(), n * n * sizeof(float))
      .ThenMemcpy(b.ptr(), init.data(), n * n * sizeof(float));
  // Warm-up, as blas_bench: touch c, let the library set up for the thread.
  stream->ThenBlasGemm<float>(Transpose::kNoTranspose, Transpose::kNoTranspose, n, n, n, 1.f, *a, n,
                              *b, n, 0.f, c.ptr(), n);
  if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  for (auto _ : state) {
    for (int i = 0; i < kPipelined; ++i) {
      stream->ThenBlasGemm<float>(Transpose::kNoTranspose, Transpose::kNoTranspose, n, n, n, 1.f,
                                  *a, n, *b, n, 0.f, c.ptr(), n);
    }
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * n * n * n * kPipelined,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

// --- Registration and the summary.

struct Measurement {
  std::string name;  // "callback_enqueue": benchmarks "<name>/<side>/<rep>".
  void (*fn)(benchmark::State&, std::string);
  bool manual_time;
  double unit_ns;    // The figures' unit: ns per callback, us per round trip, ...
  const char* unit;  // "ns", "us", ...
};

std::vector<Measurement> Measurements(bool with_blas) {
  std::vector<Measurement> m = {
      {"callback_enqueue", CallbackEnqueue, true, kCallbacks, "ns"},  // Per callback.
      {"round_trip", RoundTrip, false, 1e3, "us"},
  };
  if (with_blas) m.push_back({"sgemm_pipelined_32", SgemmPipelined, false, 1e6, "ms"});
  return m;
}

std::string RunName(const std::string& name, const char* side, int rep) {
  return name + "/" + side + "/" + std::to_string(rep);
}

void Register(const std::vector<Measurement>& measurements) {
  for (const Measurement& m : measurements) {
    for (int rep = 0; rep < kReps; ++rep) {
      // In tree first on even pairs, the ABI first on odd ones.
      const char* order[2] = {rep % 2 == 0 ? kInTree : kAbi, rep % 2 == 0 ? kAbi : kInTree};
      for (const char* side : order) {
        auto* b = benchmark::RegisterBenchmark(RunName(m.name, side, rep).c_str(), m.fn,
                                               std::string(side));
        if (m.manual_time) {
          b->UseManualTime();
        } else {
          b->UseRealTime();
        }
      }
    }
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void Summarize(const std::vector<Measurement>& measurements, const bench::Results& r,
               bench::Report& report) {
  auto ns = [&](const std::string& name) -> double {
    for (const std::string& key : {name + "/manual_time", name + "/real_time", name}) {
      if (auto it = r.find(key); it != r.end()) return it->second.real_ns_per_iter;
    }
    return 0;
  };
  for (const Measurement& m : measurements) {
    std::vector<double> ratios, in_tree, abi;
    for (int rep = 0; rep < kReps; ++rep) {
      const double t_in = ns(RunName(m.name, kInTree, rep)), t_abi = ns(RunName(m.name, kAbi, rep));
      if (t_in <= 0 || t_abi <= 0) continue;  // Filtered out, or failed.
      ratios.push_back(t_in / t_abi);
      in_tree.push_back(t_in);
      abi.push_back(t_abi);
    }
    if (ratios.empty()) continue;
    const std::string name = "abi." + m.name;
    report.Figure(name + ".intree_" + m.unit, Median(in_tree) / m.unit_ns);
    report.Figure(name + ".abi_" + m.unit, Median(abi) / m.unit_ns);
    report.Figure(name + ".ratio_min", *std::min_element(ratios.begin(), ratios.end()));
    report.Figure(name + ".ratio_max", *std::max_element(ratios.begin(), ratios.end()));
    report.Figure(name + ".pairs", static_cast<double>(ratios.size()));
    report.Ratio(name, Median(ratios));
  }
}

// Loads the plugin `file` (built by `target`): from RILL_BENCH_PLUGIN_DIR
// when set, else `built` (where the build put it; empty when this build has
// no such target). False, with a message saying what to do, when it does
// not load. AlreadyExists -- RILL_PLUGIN_PATH named its folder, so
// Default() loaded it on its first query -- is fine.
bool Load(const char* file, const char* target, const std::string& built) {
  const char* dir = std::getenv("RILL_BENCH_PLUGIN_DIR");
  const std::string path = dir != nullptr && *dir != '\0' ? std::string(dir) + "/" + file : built;
  if (path.empty()) {
    std::fprintf(stderr,
                 "c_abi_bench: this build has no %s target (examples/); set "
                 "RILL_BENCH_PLUGIN_DIR to a folder that holds %s\n",
                 target, file);
    return false;
  }
  const absl::Status status = PlatformManager::Default().LoadPlugin(path);
  if (status.ok() || status.code() == absl::StatusCode::kAlreadyExists) return true;
  std::fprintf(stderr,
               "c_abi_bench: cannot load the plugin %s: %s\n"
               "  Build it first (ninja -C <build> %s), or set RILL_BENCH_PLUGIN_DIR to the "
               "folder that holds %s.\n",
               path.c_str(), status.ToString().c_str(), target, file);
  return false;
}

}  // namespace
}  // namespace rill

#ifndef RILL_BENCH_C_BACKEND
#define RILL_BENCH_C_BACKEND ""
#endif
#ifndef RILL_BENCH_C_LIBRARY
#define RILL_BENCH_C_LIBRARY ""
#endif

int main(int argc, char** argv) {
  if (!rill::Load("librill_c_backend.so", "rill_c_backend", RILL_BENCH_C_BACKEND)) return 2;
  bool with_blas = false;
#ifdef RILL_HAVE_OPENBLAS
  if (!rill::Load("librill_c_library.so", "rill_c_library", RILL_BENCH_C_LIBRARY)) return 2;
  with_blas = true;
#else
  std::fprintf(stderr, "c_abi_bench: built without the openblas plugin: no sgemm comparison\n");
#endif
  const std::vector<rill::Measurement> measurements = rill::Measurements(with_blas);
  rill::Register(measurements);
  return rill::bench::RunAndReport(argc, argv,
                                   [&](const rill::bench::Results& r, rill::bench::Report& report) {
                                     rill::Summarize(measurements, r, report);
                                   });
}
