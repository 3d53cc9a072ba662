// The dependency engine against its peers, side by side: the Rill threaded
// engine (Context::Host(), 2 CPU workers), OpenMP tasks with depend(in/out)
// clauses (libgomp, 2 threads) and a oneTBB flow graph (2 threads) built per
// run with one continue_node per function and an edge from each function to
// the functions it must follow (last writer of each var it reads; for a var
// it writes, the readers since the last write, else that writer). The
// graph's build and teardown count, as Rill's push cost does.
//
// Workloads (2 worker threads; empty functions unless stated):
//   W1  1,000,000 independent functions, each writing its own var
//   W2  1,000,000 functions writing one var
//   W3  1,000 vars, 1,000,000 functions each reading 2 random vars and
//       writing a third (fixed seed)
//   W4  10,000 rounds of 64 readers of one var, then 1 writer
//   W5  as W3 with 64 vars and 200,000 functions of ~2 us of arithmetic;
//       efficiency = serial work time / (wall time x 2 cores)
//
//   build/bench/engine_bench                       # full size
//   RILL_BENCH_SCALE=0.1 build/bench/engine_bench  # a tenth, for quick runs
//   RILL_BENCH_ITERS=1 ...                         # iterations per benchmark (default 3)
//
// Ends with FIGURE engine.W<n>.<peer>_mops lines (millions of functions per
// second), FIGURE engine.W5.<peer>_efficiency, and RATIO
// engine.W<n>.rill_vs_<peer> (Rill's rate over the peer's).
//
// The run starts and ends with BM_Handoff, two threads passing one cache
// line back and forth: FIGURE machine.handoff_ns.{first,last} is the
// one-way time. Nearly all of an engine's cost per empty function is such
// hand-offs, so this says what state a (virtual) machine was in when the
// figures were taken; compare figures only between runs where it agrees.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "bench/bench_report.h"
#include "benchmark/benchmark.h"
#include "engine/engine.h"

#ifdef RILL_BENCH_OPENMP
#include <omp.h>
#endif
#ifdef RILL_BENCH_TBB
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#endif

namespace rill {
namespace {

constexpr int kThreads = 2;

double Scale() {
  const char* env = std::getenv("RILL_BENCH_SCALE");
  const double scale = env != nullptr ? std::atof(env) : 1.0;
  return scale > 0 ? scale : 1.0;
}

int Iterations() {
  const char* env = std::getenv("RILL_BENCH_ITERS");
  const int iters = env != nullptr ? std::atoi(env) : 3;
  return iters > 0 ? iters : 3;
}

int64_t Scaled(int64_t n) { return std::max<int64_t>(1, static_cast<int64_t>(n * Scale())); }

// One function of a workload: reads vars `reads[0..nreads)`, writes `write`.
struct Op {
  int32_t reads[2];
  int32_t nreads;
  int32_t write;
};

struct Workload {
  std::string name;
  int32_t vars = 0;
  std::vector<Op> ops;
  bool work = false;  // W5: each function does ~2 us of arithmetic.
};

// Random "read two distinct vars, write a third" functions.
std::vector<Op> RandomOps(int32_t vars, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Op> ops(n);
  for (Op& op : ops) {
    int32_t a, b, c;
    do {
      a = static_cast<int32_t>(rng() % vars);
      b = static_cast<int32_t>(rng() % vars);
      c = static_cast<int32_t>(rng() % vars);
    } while (a == b || a == c || b == c);
    op = Op{{a, b}, 2, c};
  }
  return ops;
}

const Workload& GetWorkload(int w) {
  static const std::vector<Workload>* workloads = [] {
    auto* all = new std::vector<Workload>(6);
    const int64_t million = Scaled(1000000);
    Workload& w1 = (*all)[1];
    w1.name = "W1";
    w1.vars = static_cast<int32_t>(million);
    for (int32_t i = 0; i < w1.vars; ++i) w1.ops.push_back(Op{{0, 0}, 0, i});
    Workload& w2 = (*all)[2];
    w2.name = "W2";
    w2.vars = 1;
    w2.ops.assign(million, Op{{0, 0}, 0, 0});
    Workload& w3 = (*all)[3];
    w3.name = "W3";
    w3.vars = 1000;
    w3.ops = RandomOps(w3.vars, million, 3);
    Workload& w4 = (*all)[4];
    w4.name = "W4";
    w4.vars = 1;
    for (int64_t r = 0, rounds = Scaled(10000); r < rounds; ++r) {
      for (int i = 0; i < 64; ++i) w4.ops.push_back(Op{{0, 0}, 1, -1});
      w4.ops.push_back(Op{{0, 0}, 0, 0});
    }
    Workload& w5 = (*all)[5];
    w5.name = "W5";
    w5.vars = 64;
    w5.ops = RandomOps(w5.vars, Scaled(200000), 5);
    w5.work = true;
    return all;
  }();
  return (*workloads)[w];
}

// --- W5's arithmetic ------------------------------------------------------------

// ~2 us of dependent integer arithmetic (the round count is calibrated once).
uint64_t Work(uint64_t a, uint64_t b, int rounds) {
  uint64_t x = a ^ (b * 0x9e3779b97f4a7c15ull);
  for (int i = 0; i < rounds; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    x ^= x >> 29;
  }
  return x;
}

int g_work_rounds = 1;  // WorkRounds(), once known.

int WorkRounds() {
  static const int rounds = [] {
    constexpr int kProbe = 100000;
    uint64_t sink = 0;
    double best = 1e30;
    for (int attempt = 0; attempt < 5; ++attempt) {
      const auto start = std::chrono::steady_clock::now();
      sink += Work(sink, attempt, kProbe);
      const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
      best = std::min(best, ns / kProbe);
    }
    benchmark::DoNotOptimize(sink);
    return std::max(1, static_cast<int>(2000.0 / best));
  }();
  g_work_rounds = rounds;
  return rounds;
}

// The body of function `op` on `values`: empty, or W5's arithmetic.
inline void Body(const Workload& w, const Op& op, uint64_t* values, int rounds) {
  if (!w.work) return;
  values[op.write] = Work(values[op.reads[0]], values[op.reads[1]], rounds);
}

std::vector<uint64_t> InitialValues(const Workload& w) {
  std::vector<uint64_t> values(w.vars);
  for (int32_t i = 0; i < w.vars; ++i) values[i] = 0x1234567ull * (i + 1);
  return values;
}

// --- Serial reference (W5's useful work) -------------------------------------------

void BM_Serial(benchmark::State& state) {
  const Workload& w = GetWorkload(static_cast<int>(state.range(0)));
  const int rounds = WorkRounds();
  std::vector<uint64_t> values = InitialValues(w);
  for (auto _ : state) {
    for (const Op& op : w.ops) Body(w, op, values.data(), rounds);
    benchmark::DoNotOptimize(values.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.ops.size()));
}

// --- Rill ------------------------------------------------------------------------------

void BM_Rill(benchmark::State& state) {
  const Workload& w = GetWorkload(static_cast<int>(state.range(0)));
  WorkRounds();  // Sets g_work_rounds.
  engine::EngineOptions options;
  options.kind = engine::EngineOptions::Kind::kThreaded;
  options.cpu_workers = kThreads;
  absl::StatusOr<std::unique_ptr<engine::Engine>> created = engine::Engine::Create(options);
  if (!created.ok()) {
    state.SkipWithError(created.status().ToString().c_str());
    return;
  }
  engine::Engine& eng = **created;
  std::vector<engine::VarHandle> vars(w.vars);
  for (auto& v : vars) v = eng.NewVariable();
  std::vector<uint64_t> values = InitialValues(w);
  uint64_t* data = values.data();
  const engine::Context cpu = engine::Context::Host();
  int64_t errors = 0;
  for (auto _ : state) {
    for (const Op& op : w.ops) {
      const engine::VarHandle reads[2] = {vars[op.reads[0]], vars[op.reads[1]]};
      absl::Span<const engine::VarHandle> read_span(reads, op.nreads);
      absl::Span<const engine::VarHandle> write_span;
      engine::VarHandle write;
      if (op.write >= 0) {
        write = vars[op.write];
        write_span = absl::Span<const engine::VarHandle>(&write, 1);
      }
      absl::Status s;
      if (w.work) {
        // Two pointers: fits the function's inline storage, like the peers' captures.
        s = eng.PushSync(
            [o = &op, data](engine::RunContext) {
              data[o->write] = Work(data[o->reads[0]], data[o->reads[1]], g_work_rounds);
              return absl::OkStatus();
            },
            cpu, read_span, write_span);
      } else {
        s = eng.PushSync([](engine::RunContext) { return absl::OkStatus(); }, cpu, read_span,
                         write_span);
      }
      errors += !s.ok();
    }
    errors += !eng.WaitForAll().ok();
  }
  if (errors > 0) state.SkipWithError("engine errors");
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.ops.size()));
  eng.Shutdown(false);
}

// --- OpenMP ------------------------------------------------------------------------------

#ifdef RILL_BENCH_OPENMP
void BM_OpenMP(benchmark::State& state) {
  const Workload& w = GetWorkload(static_cast<int>(state.range(0)));
  const int rounds = WorkRounds();
  std::vector<uint64_t> values = InitialValues(w);
  uint64_t* data = values.data();
  omp_set_num_threads(kThreads);
  for (auto _ : state) {
#pragma omp parallel num_threads(kThreads)
#pragma omp single
    {
      for (const Op& op_ref : w.ops) {
        const Op op = op_ref;  // Firstprivate in each task.
        // The var storage is the dependence address.
        if (op.nreads == 2) {
#pragma omp task depend(in : data[op.reads[0]], data[op.reads[1]]) depend(out : data[op.write])
          Body(w, op, data, rounds);
        } else if (op.nreads == 1) {  // W4's readers.
#pragma omp task depend(in : data[op.reads[0]])
          Body(w, op, data, rounds);
        } else {
#pragma omp task depend(out : data[op.write])
          Body(w, op, data, rounds);
        }
      }
#pragma omp taskwait
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.ops.size()));
}
#endif

// --- oneTBB flow graph -----------------------------------------------------------------

#ifdef RILL_BENCH_TBB
void BM_TBB(benchmark::State& state) {
  namespace flow = oneapi::tbb::flow;
  const Workload& w = GetWorkload(static_cast<int>(state.range(0)));
  const int rounds = WorkRounds();
  std::vector<uint64_t> values = InitialValues(w);
  uint64_t* data = values.data();
  oneapi::tbb::global_control limit(oneapi::tbb::global_control::max_allowed_parallelism, kThreads);
  oneapi::tbb::task_arena arena(kThreads);
  using Node = flow::continue_node<flow::continue_msg>;
  for (auto _ : state) {
    arena.execute([&] {
      flow::graph g;
      std::vector<std::unique_ptr<Node>> nodes;
      nodes.reserve(w.ops.size());
      std::vector<int64_t> last_writer(w.vars, -1);
      std::vector<std::vector<int64_t>> readers(w.vars);
      std::vector<Node*> roots;
      std::vector<int64_t> preds;
      for (size_t i = 0; i < w.ops.size(); ++i) {
        const Op op = w.ops[i];
        nodes.push_back(std::make_unique<Node>(g, [&w, op, data, rounds](const flow::continue_msg&) {
          Body(w, op, data, rounds);
        }));
        preds.clear();
        for (int r = 0; r < op.nreads; ++r) {
          const int32_t v = op.reads[r];
          if (last_writer[v] >= 0) preds.push_back(last_writer[v]);
          readers[v].push_back(static_cast<int64_t>(i));
        }
        if (op.write >= 0) {
          const int32_t v = op.write;
          if (!readers[v].empty()) {
            preds.insert(preds.end(), readers[v].begin(), readers[v].end());
            readers[v].clear();
          } else if (last_writer[v] >= 0) {
            preds.push_back(last_writer[v]);
          }
          last_writer[v] = static_cast<int64_t>(i);
        }
        std::sort(preds.begin(), preds.end());
        preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
        for (int64_t p : preds) flow::make_edge(*nodes[p], *nodes[i]);
        if (preds.empty()) roots.push_back(nodes[i].get());
      }
      for (Node* root : roots) root->try_put(flow::continue_msg());
      g.wait_for_all();
    });
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.ops.size()));
}
#endif

// --- Machine probe -------------------------------------------------------------------

// One-way time of a cache line between two threads (a ping-pong on one
// atomic), as counter "one_way_ns".
void BM_Handoff(benchmark::State& state) {
  constexpr int kRoundTrips = 100000;
  alignas(64) std::atomic<int> line{0};
  double one_way_ns = 0;
  for (auto _ : state) {
    line.store(0);
    std::thread partner([&line] {
      for (int i = 0; i < kRoundTrips; ++i) {
        while (line.load(std::memory_order_acquire) != 2 * i + 1) {
        }
        line.store(2 * i + 2, std::memory_order_release);
      }
    });
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRoundTrips; ++i) {
      line.store(2 * i + 1, std::memory_order_release);
      while (line.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    partner.join();
    one_way_ns = took.count() / (2.0 * kRoundTrips);
  }
  state.counters["one_way_ns"] = one_way_ns;
}

void Register() {
  const int iters = Iterations();
  benchmark::RegisterBenchmark("BM_Handoff/first", BM_Handoff)->Iterations(1)->UseRealTime();
  for (int w = 1; w <= 5; ++w) {
    const std::string name = GetWorkload(w).name;
    benchmark::RegisterBenchmark(("BM_Rill/" + name).c_str(), BM_Rill)
        ->Arg(w)->Iterations(iters)->UseRealTime()->Unit(benchmark::kMillisecond);
#ifdef RILL_BENCH_OPENMP
    benchmark::RegisterBenchmark(("BM_OpenMP/" + name).c_str(), BM_OpenMP)
        ->Arg(w)->Iterations(iters)->UseRealTime()->Unit(benchmark::kMillisecond);
#endif
#ifdef RILL_BENCH_TBB
    benchmark::RegisterBenchmark(("BM_TBB/" + name).c_str(), BM_TBB)
        ->Arg(w)->Iterations(iters)->UseRealTime()->Unit(benchmark::kMillisecond);
#endif
  }
  benchmark::RegisterBenchmark("BM_Serial/W5", BM_Serial)
      ->Arg(5)->Iterations(iters)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Handoff/last", BM_Handoff)->Iterations(1)->UseRealTime();
}

void Summarize(const bench::Results& results, bench::Report& report) {
  auto ns = [&](const std::string& name) {
    for (const auto& [key, measured] : results) {
      if (key.rfind(name + "/", 0) == 0) return measured.real_ns_per_iter;
    }
    return 0.0;
  };
  const std::vector<std::string> peers = {"rill", "openmp", "tbb"};
  const std::vector<std::string> prefixes = {"BM_Rill/", "BM_OpenMP/", "BM_TBB/"};
  const double serial_ns = ns("BM_Serial/W5");
  for (int w = 1; w <= 5; ++w) {
    const Workload& workload = GetWorkload(w);
    const double ops = static_cast<double>(workload.ops.size());
    double mops[3] = {0, 0, 0};
    for (int p = 0; p < 3; ++p) {
      const double t = ns(prefixes[p] + workload.name);
      if (t <= 0) continue;
      mops[p] = ops / t * 1e3;
      report.Figure("engine." + workload.name + "." + peers[p] + "_mops", mops[p]);
      if (workload.work && serial_ns > 0) {
        report.Figure("engine." + workload.name + "." + peers[p] + "_efficiency",
                      serial_ns / (t * kThreads));
      }
    }
    for (int p = 1; p < 3; ++p) {
      if (mops[0] > 0 && mops[p] > 0) {
        report.Ratio("engine." + workload.name + ".rill_vs_" + peers[p], mops[0] / mops[p]);
      }
    }
  }
  for (const std::string when : {"first", "last"}) {
    for (const auto& [key, measured] : results) {
      if (key.rfind("BM_Handoff/" + when + "/", 0) != 0) continue;
      auto counter = measured.counters.find("one_way_ns");
      if (counter != measured.counters.end()) {
        report.Figure("machine.handoff_ns." + when, counter->second);
      }
    }
  }
  if (serial_ns > 0) {
    report.Figure("engine.W5.work_us_per_op",
                  serial_ns / 1e3 / static_cast<double>(GetWorkload(5).ops.size()));
  }
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  rill::Register();
  return rill::bench::RunAndReport(argc, argv, rill::Summarize);
}
