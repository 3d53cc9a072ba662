// The dependency engine against its peers, side by side, each on 2 threads
// counting the one that pushes (it runs functions while it waits):
//   rill        the threaded engine, 1 CPU worker + the pushing thread
//               (PushSync, then WaitForAll, which helps)
//   rill_async  the same with PushAsync, each body calling its completion
//               before it returns
//   openmp      OpenMP tasks with depend(in/out) clauses (libgomp), the
//               single producer thread + 1
//   tbb         a dependency tracker on oneTBB: per function an atomic count
//               of pending predecessors and a spin_mutex-guarded successor
//               list with a done flag, ready functions started with
//               task_group::run, task_group::wait at the end; arena of 2
//               with the pushing thread in it. Its predecessors are found as
//               Rill's are (last writer of each var it reads; for a var it
//               writes, the readers since the last write, else that writer),
//               and that bookkeeping counts, as Rill's push does.
//
// Every function's body touches shared per-var state as real ops touch
// their data: it checks, with relaxed atomics, that each var it reads or
// writes holds the version it must see in push order, and bumps the
// version of the var it writes. A peer (or engine) that broke an ordering
// fails the run ("ordering errors"), as does a wrong final state.
//
// Workloads:
//   W1  1,000,000 independent functions, each writing its own var
//   W2  1,000,000 functions writing one var
//   W3  1,000 vars, 1,000,000 functions each reading 2 random vars and
//       writing a third (fixed seed)
//   W4  10,000 rounds of 64 readers of one var, then 1 writer
//   W5  as W3 with 64 vars and 200,000 functions of ~2 us of arithmetic;
//       efficiency = serial work time / (wall time x 2 threads)
//
//   build/bench/engine_bench                       # full size
//   RILL_BENCH_SCALE=0.1 build/bench/engine_bench  # a tenth, for quick runs
//   RILL_BENCH_ITERS=1 ...                         # iterations per benchmark (default 3)
//   bench/engine_bench.sh [runs]                   # medians and ranges over processes
//
// Ends with FIGURE engine.W<n>.<peer>_mops lines (millions of functions per
// second), FIGURE engine.W5.<peer>_efficiency, RATIO engine.W<n>.rill_vs_<peer>
// and engine.W<n>.rill_vs_best (Rill's rate over the peer's, over the best
// peer's), and RATIO engine.W1.async_cost_over_sync (PushAsync's time per
// function over PushSync's; lower is better).
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

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "bench/bench_report.h"
#include "benchmark/benchmark.h"
#include "rill/engine/engine.h"

#ifdef RILL_BENCH_OPENMP
#include <omp.h>
#endif
#ifdef RILL_BENCH_TBB
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/spin_mutex.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif

namespace rill {
namespace {

// Threads per runtime, the pushing thread included.
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

// One function of a workload: reads vars `reads[0..nreads)`, writes `write`
// (-1: none), and the versions it must find them at (the number of writes
// to each var before it, in push order).
struct Op {
  int32_t reads[2];
  int32_t nreads;
  int32_t write;
  uint32_t read_versions[2];
  uint32_t write_version;
};

struct Workload {
  std::string name;
  int32_t vars = 0;
  std::vector<Op> ops;
  bool work = false;                     // W5: each function does ~2 us of arithmetic.
  std::vector<uint32_t> final_versions;  // Writes per var.
};

Op MakeOp(std::initializer_list<int32_t> reads, int32_t write) {
  Op op{{0, 0}, 0, write, {0, 0}, 0};
  for (int32_t r : reads) op.reads[op.nreads++] = r;
  return op;
}

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
    op = MakeOp({a, b}, c);
  }
  return ops;
}

// Fills in the versions each function must see, and the final ones.
void NumberVersions(Workload& w) {
  std::vector<uint32_t> writes(w.vars, 0);
  for (Op& op : w.ops) {
    for (int r = 0; r < op.nreads; ++r) op.read_versions[r] = writes[op.reads[r]];
    if (op.write >= 0) op.write_version = writes[op.write]++;
  }
  w.final_versions = std::move(writes);
}

const std::vector<uint64_t>& SerialValues(const Workload& w);

const Workload& GetWorkload(int w) {
  static const std::vector<Workload>* workloads = [] {
    auto* all = new std::vector<Workload>(6);
    const int64_t million = Scaled(1000000);
    Workload& w1 = (*all)[1];
    w1.name = "W1";
    w1.vars = static_cast<int32_t>(million);
    for (int32_t i = 0; i < w1.vars; ++i) w1.ops.push_back(MakeOp({}, i));
    Workload& w2 = (*all)[2];
    w2.name = "W2";
    w2.vars = 1;
    w2.ops.assign(million, MakeOp({}, 0));
    Workload& w3 = (*all)[3];
    w3.name = "W3";
    w3.vars = 1000;
    w3.ops = RandomOps(w3.vars, million, 3);
    Workload& w4 = (*all)[4];
    w4.name = "W4";
    w4.vars = 1;
    for (int64_t r = 0, rounds = Scaled(10000); r < rounds; ++r) {
      for (int i = 0; i < 64; ++i) w4.ops.push_back(MakeOp({0}, -1));
      w4.ops.push_back(MakeOp({}, 0));
    }
    Workload& w5 = (*all)[5];
    w5.name = "W5";
    w5.vars = 64;
    w5.ops = RandomOps(w5.vars, Scaled(200000), 5);
    w5.work = true;
    for (int i = 1; i <= 5; ++i) NumberVersions((*all)[i]);
    return all;
  }();
  SerialValues((*workloads)[5]);  // Before any timing.
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

int WorkRounds() {
  static const int rounds = [] {
    constexpr int kProbe = 100000;
    uint64_t sink = 0;
    double best = 1e30;
    for (int attempt = 0; attempt < 5; ++attempt) {
      const auto start = std::chrono::steady_clock::now();
      sink += Work(sink, attempt, kProbe);
      const double ns =
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
              .count();
      best = std::min(best, ns / kProbe);
    }
    benchmark::DoNotOptimize(sink);
    return std::max(1, static_cast<int>(2000.0 / best));
  }();
  return rounds;
}

// --- The state the functions touch ------------------------------------------------

// Per var: its version (bumped by each write) and, for W5, its value. Each
// runtime gets a fresh one per iteration.
struct State {
  explicit State(const Workload& w)
      : workload(w),
        versions(new std::atomic<uint32_t>[w.vars]),
        values(w.vars),
        rounds(WorkRounds()) {
    for (int32_t i = 0; i < w.vars; ++i) {
      versions[i].store(0, std::memory_order_relaxed);
      values[i] = 0x1234567ull * (i + 1);
    }
  }
  const Workload& workload;
  std::unique_ptr<std::atomic<uint32_t>[]> versions;
  std::vector<uint64_t> values;
  const int rounds;
  std::atomic<int64_t> errors{0};  // Touched only on a mismatch.
};

// The body of one function: its vars must hold the versions push order
// gives them; then the write (W5: the arithmetic on the read values).
inline void Body(State& st, const Op& op) {
  bool ok = true;
  for (int r = 0; r < op.nreads; ++r) {
    ok &= st.versions[op.reads[r]].load(std::memory_order_relaxed) == op.read_versions[r];
  }
  if (op.write >= 0) {
    std::atomic<uint32_t>& v = st.versions[op.write];
    ok &= v.load(std::memory_order_relaxed) == op.write_version;
    if (st.workload.work) {
      st.values[op.write] = Work(st.values[op.reads[0]], st.values[op.reads[1]], st.rounds);
    }
    v.store(op.write_version + 1, std::memory_order_relaxed);
  }
  if (!ok) st.errors.fetch_add(1, std::memory_order_relaxed);
}

// W5's values in push order, once: what every runtime must end with.
const std::vector<uint64_t>& SerialValues(const Workload& w) {
  static std::vector<uint64_t>* values = [&w] {
    State st(w);
    for (const Op& op : w.ops) Body(st, op);
    return new std::vector<uint64_t>(st.values);
  }();
  return *values;
}

// Fails the benchmark unless the run kept every ordering and ended right.
// Not timed.
bool Check(benchmark::State& state, State& st) {
  state.PauseTiming();
  struct Resume {
    benchmark::State& state;
    ~Resume() { state.ResumeTiming(); }
  } resume{state};
  const Workload& w = st.workload;
  int64_t errors = st.errors.load();
  for (int32_t i = 0; i < w.vars; ++i) errors += st.versions[i].load() != w.final_versions[i];
  if (w.work && st.values != SerialValues(w)) ++errors;
  if (errors == 0) return true;
  state.SkipWithError(("ordering errors: " + std::to_string(errors)).c_str());
  return false;
}

// --- Serial reference (W5's useful work) -------------------------------------------

void BM_Serial(benchmark::State& state) {
  const Workload& w = GetWorkload(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    state.PauseTiming();
    State st(w);
    state.ResumeTiming();
    for (const Op& op : w.ops) Body(st, op);
    benchmark::DoNotOptimize(st.values.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.ops.size()));
}

// --- Rill ------------------------------------------------------------------------------

// state.range(1): 0 PushSync, 1 PushAsync (completion called in the body).
void BM_Rill(benchmark::State& state) {
  const Workload& w = GetWorkload(static_cast<int>(state.range(0)));
  const bool async = state.range(1) != 0;
  engine::EngineOptions options;
  options.kind = engine::EngineOptions::Kind::kThreaded;
  options.cpu_workers = kThreads - 1;  // And the pushing thread, in WaitForAll.
  absl::StatusOr<std::unique_ptr<engine::Engine>> created = engine::Engine::Create(options);
  if (!created.ok()) {
    state.SkipWithError(created.status().ToString().c_str());
    return;
  }
  engine::Engine& eng = **created;
  std::vector<engine::VarHandle> vars(w.vars);
  for (auto& v : vars) v = eng.NewVariable();
  const engine::Context cpu = engine::Context::Host();
  int64_t errors = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto st = std::make_unique<State>(w);
    State* s = st.get();
    state.ResumeTiming();
    for (const Op& op : w.ops) {
      const engine::VarHandle reads[2] = {vars[op.reads[0]], vars[op.reads[1]]};
      absl::Span<const engine::VarHandle> read_span(reads, op.nreads);
      absl::Span<const engine::VarHandle> write_span;
      engine::VarHandle write;
      if (op.write >= 0) {
        write = vars[op.write];
        write_span = absl::Span<const engine::VarHandle>(&write, 1);
      }
      // Two pointers: fits the function's inline storage, like the peers' captures.
      absl::Status pushed;
      if (async) {
        pushed = eng.PushAsync(
            [s, o = &op](engine::RunContext, engine::Completion done) {
              Body(*s, *o);
              done();
            },
            cpu, read_span, write_span);
      } else {
        pushed = eng.PushSync(
            [s, o = &op](engine::RunContext) {
              Body(*s, *o);
              return absl::OkStatus();
            },
            cpu, read_span, write_span);
      }
      errors += !pushed.ok();
    }
    errors += !eng.WaitForAll().ok();
    if (!Check(state, *st)) break;
  }
  if (errors > 0) state.SkipWithError("engine errors");
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.ops.size()));
  eng.Shutdown(false);
}

// --- OpenMP ------------------------------------------------------------------------------

#ifdef RILL_BENCH_OPENMP
void BM_OpenMP(benchmark::State& state) {
  const Workload& w = GetWorkload(static_cast<int>(state.range(0)));
  omp_set_num_threads(kThreads);
  for (auto _ : state) {
    state.PauseTiming();
    auto st = std::make_unique<State>(w);
    State* s = st.get();
    // The dependence addresses: one per var.
    [[maybe_unused]] std::atomic<uint32_t>* deps = s->versions.get();  // Used in depend() only.
    state.ResumeTiming();
#pragma omp parallel num_threads(kThreads)
#pragma omp single
    {
      for (const Op& op_ref : w.ops) {
        const Op* op = &op_ref;
        if (op->nreads == 2) {
#pragma omp task depend(in : deps[op->reads[0]], deps[op->reads[1]]) depend(out : deps[op->write])
          Body(*s, *op);
        } else if (op->nreads == 1) {  // W4's readers.
#pragma omp task depend(in : deps[op->reads[0]])
          Body(*s, *op);
        } else {
#pragma omp task depend(out : deps[op->write])
          Body(*s, *op);
        }
      }
#pragma omp taskwait
    }
    if (!Check(state, *st)) break;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.ops.size()));
}
#endif

// --- oneTBB dependency tracker ---------------------------------------------------------

#ifdef RILL_BENCH_TBB
// One function: pending predecessors (+1 while it is being pushed), and
// the functions to release when it is done.
struct TbbTask {
  std::atomic<int> pending{1};
  oneapi::tbb::spin_mutex mu;
  bool done = false;
  absl::InlinedVector<TbbTask*, 4> successors;
  const Op* op = nullptr;
};

struct TbbTracker {
  State* st;
  oneapi::tbb::task_group* group;

  void Run(TbbTask* t) {
    group->run([this, t] { Execute(t); });
  }
  void Execute(TbbTask* t) {
    Body(*st, *t->op);
    absl::InlinedVector<TbbTask*, 4> released;
    {
      oneapi::tbb::spin_mutex::scoped_lock lock(t->mu);
      t->done = true;
      released.swap(t->successors);
    }
    for (TbbTask* s : released) {
      if (s->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) Run(s);
    }
  }
  // Links `t` behind `pred` unless it is done; returns whether it did.
  static bool After(TbbTask* pred, TbbTask* t) {
    oneapi::tbb::spin_mutex::scoped_lock lock(pred->mu);
    if (pred->done) return false;
    pred->successors.push_back(t);
    return true;
  }
};

void BM_TBB(benchmark::State& state) {
  const Workload& w = GetWorkload(static_cast<int>(state.range(0)));
  oneapi::tbb::global_control limit(oneapi::tbb::global_control::max_allowed_parallelism, kThreads);
  // kThreads slots, one of them for the pushing thread (arena.execute).
  oneapi::tbb::task_arena arena(kThreads, 1);
  for (auto _ : state) {
    state.PauseTiming();
    auto st = std::make_unique<State>(w);
    state.ResumeTiming();
    arena.execute([&] {
      oneapi::tbb::task_group group;
      TbbTracker tracker{st.get(), &group};
      std::unique_ptr<TbbTask[]> tasks(new TbbTask[w.ops.size()]);
      std::vector<TbbTask*> last_writer(w.vars, nullptr);
      std::vector<absl::InlinedVector<TbbTask*, 4>> readers(w.vars);
      absl::InlinedVector<TbbTask*, 8> preds;
      for (size_t i = 0; i < w.ops.size(); ++i) {
        const Op& op = w.ops[i];
        TbbTask* t = &tasks[i];
        t->op = &op;
        preds.clear();
        for (int r = 0; r < op.nreads; ++r) {
          const int32_t v = op.reads[r];
          if (last_writer[v] != nullptr) preds.push_back(last_writer[v]);
          readers[v].push_back(t);
        }
        if (op.write >= 0) {
          const int32_t v = op.write;
          if (!readers[v].empty()) {
            preds.insert(preds.end(), readers[v].begin(), readers[v].end());
            readers[v].clear();
          } else if (last_writer[v] != nullptr) {
            preds.push_back(last_writer[v]);
          }
          last_writer[v] = t;
        }
        // Two reads of one writer's var make it a predecessor once.
        if (preds.size() == 2 && preds[0] == preds[1]) preds.pop_back();
        int linked = 0;
        t->pending.store(static_cast<int>(preds.size()) + 1, std::memory_order_relaxed);
        for (TbbTask* p : preds) linked += TbbTracker::After(p, t);
        const int drop = static_cast<int>(preds.size()) - linked + 1;
        if (t->pending.fetch_sub(drop, std::memory_order_acq_rel) == drop) tracker.Run(t);
      }
      group.wait();
    });
    if (!Check(state, *st)) break;
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

struct Peer {
  const char* name;    // In FIGURE and RATIO names.
  const char* prefix;  // Benchmark name prefix.
};
// Rill first, its async variant second, then the peers built in.
const std::vector<Peer>& Peers() {
  static const std::vector<Peer>* peers = new std::vector<Peer>{
      {"rill", "BM_Rill/"},
      {"rill_async", "BM_RillAsync/"},
#ifdef RILL_BENCH_OPENMP
      {"openmp", "BM_OpenMP/"},
#endif
#ifdef RILL_BENCH_TBB
      {"tbb", "BM_TBB/"},
#endif
  };
  return *peers;
}

void Register() {
  const int iters = Iterations();
  benchmark::RegisterBenchmark("BM_Handoff/first", BM_Handoff)->Iterations(1)->UseRealTime();
  for (int w = 1; w <= 5; ++w) {
    const std::string name = GetWorkload(w).name;
    auto add = [&](const std::string& prefix, auto fn, int variant) {
      benchmark::RegisterBenchmark((prefix + name).c_str(), fn)
          ->Args({w, variant})
          ->Iterations(iters)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    };
    add("BM_Rill/", BM_Rill, 0);
    add("BM_RillAsync/", BM_Rill, 1);
#ifdef RILL_BENCH_OPENMP
    add("BM_OpenMP/", BM_OpenMP, 0);
#endif
#ifdef RILL_BENCH_TBB
    add("BM_TBB/", BM_TBB, 0);
#endif
  }
  benchmark::RegisterBenchmark("BM_Serial/W5", BM_Serial)
      ->Arg(5)
      ->Iterations(iters)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Handoff/last", BM_Handoff)->Iterations(1)->UseRealTime();
}

void Summarize(const bench::Results& results, bench::Report& report) {
  auto ns = [&](const std::string& name) {
    for (const auto& [key, measured] : results) {
      if (key.rfind(name + "/", 0) == 0) return measured.real_ns_per_iter;
    }
    return 0.0;
  };
  const std::vector<Peer>& peers = Peers();
  const double serial_ns = ns("BM_Serial/W5");
  for (int w = 1; w <= 5; ++w) {
    const Workload& workload = GetWorkload(w);
    const double ops = static_cast<double>(workload.ops.size());
    std::vector<double> mops(peers.size(), 0);
    for (size_t p = 0; p < peers.size(); ++p) {
      const double t = ns(peers[p].prefix + workload.name);
      if (t <= 0) continue;
      mops[p] = ops / t * 1e3;
      report.Figure("engine." + workload.name + "." + peers[p].name + "_mops", mops[p]);
      if (workload.work && serial_ns > 0) {
        report.Figure("engine." + workload.name + "." + peers[p].name + "_efficiency",
                      serial_ns / (t * kThreads));
      }
    }
    if (mops[0] <= 0) continue;
    double best = 0;
    for (size_t p = 2; p < peers.size(); ++p) {
      if (mops[p] <= 0) continue;
      report.Ratio("engine." + workload.name + ".rill_vs_" + peers[p].name, mops[0] / mops[p]);
      best = std::max(best, mops[p]);
    }
    if (best > 0) report.Ratio("engine." + workload.name + ".rill_vs_best", mops[0] / best);
    if (w == 1 && mops[1] > 0) report.Ratio("engine.W1.async_cost_over_sync", mops[0] / mops[1]);
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
