// The differential stress test (STYLE.md, "Tests"): random read/write
// workloads pushed by several threads at once must leave every var exactly
// as a serial execution of the same pushes does -- values and errors.
//
// Each pushing thread owns a region of vars and pushes a random sequence of
// functions, each reading a few vars (its own region and shared read-only
// vars, with duplicates and sometimes the written var itself) and writing
// one: a var of its region (new = mix(old, reads)) or a shared accumulator
// (acc += hash(reads), which commutes, so the final sum does not depend on
// how the threads interleave). Some functions are async and completed from
// completer threads, some fail (poisoning their var and, through the
// engine, everything downstream), some clear errors. Each thread keeps a
// serial model of its own sequence as it pushes; at checkpoints it waits on
// one of its vars and compares, and at the end every var is compared.
//
// Size: 200,000 functions over ~4,000 vars (RILL_ENGINE_STRESS_OPS
// overrides; 20,000 under ThreadSanitizer).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/testing/status_testing.h"
#include "tests/engine/engine_testing.h"

namespace rill::engine {
namespace {

using ::rill::engine::testing::Kind;
using ::rill::engine::testing::kUnderTsan;
using ::rill::engine::testing::MakeEngine;
using ::rill::engine::testing::WithDeadline;
using ::rill::testing::IsOk;

constexpr int kThreads = 4;
constexpr int kVarsPerThread = 1000;
constexpr int kAccumulators = 8;
constexpr int kConstants = 16;

int64_t TotalOps() {
  if (const char* env = std::getenv("RILL_ENGINE_STRESS_OPS")) return std::atoll(env);
  return kUnderTsan ? 20000 : 200000;
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Runs closures on a few threads that are not the engine's: completions of
// async functions come from here.
class Completers {
 public:
  explicit Completers(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~Completers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// The shared state the engine's functions touch. Every element is guarded by
// the engine through its var: a data race here is an engine bug (TSan).
struct World {
  std::vector<uint64_t> values;  // Regions, then accumulators, then constants.
  std::vector<VarHandle> vars;
  int region(int thread) const { return thread * kVarsPerThread; }
  int accumulator(int i) const { return kThreads * kVarsPerThread + i; }
  int constant(int i) const { return kThreads * kVarsPerThread + kAccumulators + i; }
  int size() const { return kThreads * kVarsPerThread + kAccumulators + kConstants; }
};

// One function: reads `reads` (indices into World), writes `write`.
struct Op {
  uint64_t id = 0;
  std::vector<int> reads;
  int write = 0;
  bool accumulate = false;  // values[write] += h, else values[write] = Mix(values[write] + h).
  bool fail = false;
};

// What the function computes; false when it fails (it then writes nothing).
bool Apply(const Op& op, std::vector<uint64_t>& values) {
  if (op.fail) return false;
  uint64_t h = Mix(op.id);
  for (int r : op.reads) h = Mix(h ^ values[r]);
  if (op.accumulate) {
    values[op.write] += h;
  } else {
    values[op.write] = Mix(values[op.write] + h);
  }
  return true;
}

struct StressConfig {
  std::string name;
  Kind kind;
  int cpu_workers;
  int64_t max_in_flight;
  // Half the synchronous pushes go through PushSyncInline, which runs a
  // function whose vars are free on the pushing thread.
  bool inline_pushes = false;
};

void PrintTo(const StressConfig& config, std::ostream* os) { *os << config.name; }

class EngineStress : public ::testing::TestWithParam<StressConfig> {};

INSTANTIATE_TEST_SUITE_P(Configs, EngineStress,
                         ::testing::Values(StressConfig{"Naive", Kind::kNaive, 1, 1 << 16},
                                           StressConfig{"Threaded2", Kind::kThreaded, 2, 1 << 16},
                                           StressConfig{"Threaded4SmallBound", Kind::kThreaded, 4,
                                                        256},
                                           StressConfig{"Threaded2Inline", Kind::kThreaded, 2,
                                                        1 << 16, /*inline_pushes=*/true}),
                         [](const auto& info) { return info.param.name; });

TEST_P(EngineStress, RandomWorkloadsMatchASerialExecution) {
  const StressConfig& config = GetParam();
  EngineOptions options;
  options.cpu_workers = config.cpu_workers;
  options.max_in_flight = config.max_in_flight;
  auto engine = MakeEngine(config.kind, options);
  const int64_t ops_per_thread = TotalOps() / kThreads;

  World world;
  world.values.assign(world.size(), 0);
  for (int i = 0; i < world.size(); ++i) world.vars.push_back(engine->NewVariable());
  // Constants: written once through the engine, read by every thread.
  for (int i = 0; i < kConstants; ++i) {
    const int c = world.constant(i);
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&world, c](RunContext) {
          world.values[c] = Mix(1000 + c);
          return absl::OkStatus();
        },
        Context::Host(), {}, {world.vars[c]})));
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));

  // The serial model: each thread's region, poison flags and its
  // contributions to the accumulators. Constants are the same for all.
  std::vector<uint64_t> model(world.size(), 0);
  for (int i = 0; i < kConstants; ++i) model[world.constant(i)] = Mix(1000 + world.constant(i));
  std::vector<char> model_poisoned(world.size(), 0);
  std::vector<std::vector<uint64_t>> acc_parts(kThreads, std::vector<uint64_t>(kAccumulators, 0));

  Completers completers(2);
  std::atomic<int64_t> checkpoint_mismatches{0}, push_errors{0};
  std::atomic<int64_t> failures_pushed{0}, model_failed{0}, model_skipped{0};

  auto pusher = [&](int t) {
    std::mt19937_64 rng(0x5eed0000 + t);
    auto uniform = [&rng](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    const int base = world.region(t);
    // Model arrays are per thread region; accumulators are summed per thread.
    for (int64_t i = 0; i < ops_per_thread; ++i) {
      Op op;
      op.id = (static_cast<uint64_t>(t) << 40) | static_cast<uint64_t>(i);
      const int nreads = uniform(4);
      for (int r = 0; r < nreads; ++r) {
        op.reads.push_back(uniform(10) == 0 ? world.constant(uniform(kConstants))
                                            : base + uniform(kVarsPerThread));
      }
      // A local hot set makes long dependency chains.
      op.write = base + (uniform(4) == 0 ? uniform(kVarsPerThread) : uniform(32));
      const int kind_roll = uniform(1000);
      // Accumulator writers read only healthy vars (per the model), so an
      // accumulator is never poisoned and its sum is order-independent.
      bool reads_healthy = true;
      for (int r : op.reads) reads_healthy = reads_healthy && !model_poisoned[r];
      if (kind_roll < 50 && reads_healthy) {
        op.accumulate = true;
        op.write = world.accumulator(uniform(kAccumulators));
      } else if (kind_roll >= 999 && uniform(2) == 0) {  // 1 in 2,000.
        op.fail = true;
        failures_pushed.fetch_add(1);
      }

      // Var lists: duplicates, and sometimes the written var also as a read.
      std::vector<VarHandle> const_vars, mutate_vars;
      for (int r : op.reads) const_vars.push_back(world.vars[r]);
      if (!const_vars.empty() && uniform(8) == 0) const_vars.push_back(const_vars[0]);
      if (uniform(16) == 0) const_vars.push_back(world.vars[op.write]);
      mutate_vars.push_back(world.vars[op.write]);
      if (uniform(16) == 0) mutate_vars.push_back(world.vars[op.write]);
      const int priority = uniform(3);

      // The model: skipped if anything it touches is poisoned.
      bool skipped = model_poisoned[op.write] != 0;
      for (int r : op.reads) skipped = skipped || model_poisoned[r] != 0;
      if (skipped) model_skipped.fetch_add(1);
      if (!skipped && op.fail) model_failed.fetch_add(1);
      if (skipped || op.fail) {
        model_poisoned[op.write] = 1;
      } else if (op.accumulate) {
        uint64_t h = Mix(op.id);
        for (int r : op.reads) h = Mix(h ^ model[r]);
        acc_parts[t][op.write - world.accumulator(0)] += h;
      } else {
        Apply(op, model);
      }

      absl::Status status;
      const int style = uniform(20);
      if (style == 0) {
        // Async, completed by a completer thread that does the work.
        status = engine->PushAsync(
            [&world, &completers, op](RunContext, Completion done) {
              completers.Post([&world, op, done] {
                done(Apply(op, world.values) ? absl::OkStatus()
                                             : absl::InternalError("op " + std::to_string(op.id)));
              });
            },
            Context::Host(), const_vars, mutate_vars, FnProperty::kAsync, priority, "async_op");
      } else if (style == 1) {
        // Async, completed inline.
        status = engine->PushAsync(
            [&world, op](RunContext, Completion done) {
              done(Apply(op, world.values) ? absl::OkStatus()
                                           : absl::InternalError("op " + std::to_string(op.id)));
            },
            Context::Host(), const_vars, mutate_vars, FnProperty::kAsync, priority,
            "inline_async_op");
      } else {
        auto fn = [&world, op = std::move(op)](RunContext) {
          return Apply(op, world.values) ? absl::OkStatus()
                                         : absl::InternalError("op " + std::to_string(op.id));
        };
        status =
            config.inline_pushes && uniform(2) == 0
                ? engine->PushSyncInline(std::move(fn), Context::Host(), const_vars, mutate_vars,
                                         FnProperty::kNormal, priority, "inline_sync_op")
                : engine->PushSync(std::move(fn), Context::Host(), const_vars, mutate_vars,
                                   FnProperty::kNormal, priority, "sync_op");
      }
      if (!status.ok()) {
        push_errors.fetch_add(1);
        return;
      }

      // Now and then clear the errors of the region (ordered writes), so
      // that poison spreads for a while but does not take over.
      if (i % 512 == 511) {
        for (int v = base; v < base + kVarsPerThread; ++v) {
          if (!model_poisoned[v]) continue;
          if (!engine->ClearError(world.vars[v]).ok()) push_errors.fetch_add(1);
          model_poisoned[v] = 0;
        }
      }
      // Checkpoint: wait for one var of the region and compare.
      if (i % 4096 == 4095) {
        const int v = base + uniform(32);
        const absl::Status waited = engine->WaitForVar(world.vars[v]);
        if (waited.ok() != (model_poisoned[v] == 0) || world.values[v] != model[v]) {
          checkpoint_mismatches.fetch_add(1);
        }
      }
    }
  };

  WithDeadline(
      "stress workload", engine.get(),
      [&] {
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) threads.emplace_back(pusher, t);
        for (std::thread& th : threads) th.join();
        const absl::Status all = engine->WaitForAll();
        EXPECT_EQ(all.ok(), failures_pushed.load() == 0) << all;
        EXPECT_TRUE(IsOk(engine->WaitForAll()));
      },
      std::chrono::seconds(kUnderTsan ? 110 : 60));
  ASSERT_EQ(push_errors.load(), 0);
  EXPECT_EQ(checkpoint_mismatches.load(), 0);

  for (int a = 0; a < kAccumulators; ++a) {
    for (int t = 0; t < kThreads; ++t) model[world.accumulator(a)] += acc_parts[t][a];
  }
  int64_t value_mismatches = 0, poison_mismatches = 0, poisoned = 0;
  for (int v = 0; v < world.size(); ++v) {
    const absl::Status status = engine->WaitForVar(world.vars[v]);
    if (status.ok() == (model_poisoned[v] != 0)) {
      if (++poison_mismatches <= 5) {
        ADD_FAILURE() << "var " << v << ": engine says " << status << ", serial model says "
                      << (model_poisoned[v] ? "poisoned" : "OK");
      }
    }
    poisoned += model_poisoned[v];
    if (world.values[v] != model[v] && ++value_mismatches <= 5) {
      ADD_FAILURE() << "var " << v << ": engine " << world.values[v] << " != serial " << model[v];
    }
  }
  EXPECT_EQ(value_mismatches, 0);
  EXPECT_EQ(poison_mismatches, 0);
  const EngineStats stats = engine->Stats();
  // WaitForVar may return just before its own internal function retires.
  EXPECT_TRUE(::rill::engine::testing::WaitUntil([&] { return engine->Stats().in_flight == 0; },
                                                 std::chrono::seconds(5)))
      << "in flight: " << engine->Stats().in_flight;
  EXPECT_EQ(stats.double_completions, 0);
  EXPECT_EQ(stats.failed, model_failed.load()) << "functions that ran and failed";
  EXPECT_EQ(stats.skipped, model_skipped.load()) << "functions skipped behind a poisoned var";
  EXPECT_GE(stats.pushed, kThreads * ops_per_thread);
  std::printf(
      "[ stress ] %lld functions, %d vars, %lld failing, %lld vars poisoned at the end, "
      "%lld skipped\n",
      static_cast<long long>(kThreads * ops_per_thread), world.size(),
      static_cast<long long>(failures_pushed.load()), static_cast<long long>(poisoned),
      static_cast<long long>(stats.skipped));
}

// Long queues on a few hot vars: the path where the pushing thread appends
// to a busy var without its lock (a pending buffer that the workers move
// into the var's queue when it empties). Two threads push chains on their
// own two vars and add to one shared accumulator; cheap bodies let the
// workers catch up with the pushers (the var stops being busy), and a slow
// function every 2,048 lets a queue grow past the buffer. Every written
// value and every reader's view must match a serial execution.
struct HotVarConfig {
  std::string name;
  int cpu_workers;
  int64_t max_in_flight;
};

void PrintTo(const HotVarConfig& config, std::ostream* os) { *os << config.name; }

class EngineHotVarStress : public ::testing::TestWithParam<HotVarConfig> {};

INSTANTIATE_TEST_SUITE_P(Configs, EngineHotVarStress,
                         ::testing::Values(HotVarConfig{"Threaded2", 2, 4096},
                                           HotVarConfig{"Threaded4SmallBound", 4, 256}),
                         [](const auto& info) { return info.param.name; });

TEST_P(EngineHotVarStress, LongQueuesOnFewVarsMatchASerialExecution) {
  constexpr int kPushers = 2;
  const HotVarConfig& config = GetParam();
  EngineOptions options;
  options.cpu_workers = config.cpu_workers;
  options.max_in_flight = config.max_in_flight;
  auto engine = MakeEngine(Kind::kThreaded, options);
  const int64_t ops_per_thread = TotalOps() / kPushers;

  // values[2t], values[2t+1]: thread t's chain vars; values[2 * kPushers]: the accumulator.
  std::vector<uint64_t> values(2 * kPushers + 1, 0);
  std::vector<VarHandle> vars;
  for (size_t i = 0; i < values.size(); ++i) vars.push_back(engine->NewVariable());
  const int acc = 2 * kPushers;
  // What each reader saw (0 where the function was not a reader).
  std::vector<std::vector<uint64_t>> seen(kPushers, std::vector<uint64_t>(ops_per_thread, 0));
  std::vector<std::vector<uint64_t>> seen_model = seen;
  std::vector<uint64_t> acc_model(kPushers, 0);
  std::vector<uint64_t> chain_model(2 * kPushers, 0);
  std::atomic<int64_t> push_errors{0};
  Completers completers(2);

  auto pusher = [&](int t) {
    std::mt19937_64 rng(0x407000 + t);
    const int a = 2 * t, b = 2 * t + 1;
    uint64_t& ma = chain_model[a];
    uint64_t& mb = chain_model[b];
    for (int64_t i = 0; i < ops_per_thread; ++i) {
      const uint64_t id = Mix((static_cast<uint64_t>(t) << 40) | static_cast<uint64_t>(i));
      const int roll = static_cast<int>(rng() % 100);
      absl::Status pushed;
      if (roll < 60) {  // a = Mix(a + id): a chain whose order shows in the result.
        ma = Mix(ma + id);
        const bool slow = i % 2048 == 2047;
        if (roll < 8) {  // Async, completed from another thread.
          pushed = engine->PushAsync(
              [&values, &completers, a, id](RunContext, Completion done) {
                values[a] = Mix(values[a] + id);
                completers.Post([done] { done(); });
              },
              Context::Host(), {}, {vars[a]});
        } else {
          pushed = engine->PushSync(
              [&values, a, id, slow](RunContext) {
                if (slow) std::this_thread::sleep_for(std::chrono::microseconds(200));
                values[a] = Mix(values[a] + id);
                return absl::OkStatus();
              },
              Context::Host(), {}, {vars[a]});
        }
      } else if (roll < 75) {  // b = Mix(b ^ a ^ id)
        mb = Mix(mb ^ ma ^ id);
        pushed = engine->PushSync(
            [&values, a, b, id](RunContext) {
              values[b] = Mix(values[b] ^ values[a] ^ id);
              return absl::OkStatus();
            },
            Context::Host(), {vars[a]}, {vars[b]});
      } else if (roll < 90) {  // A reader of both.
        seen_model[t][i] = Mix(ma ^ mb) | 1;
        pushed = engine->PushSync(
            [&values, &seen, t, i, a, b](RunContext) {
              seen[t][i] = Mix(values[a] ^ values[b]) | 1;
              return absl::OkStatus();
            },
            Context::Host(), {vars[a], vars[b]}, {});
      } else {  // acc += Mix(a ^ id): commutes across the two threads.
        acc_model[t] += Mix(ma ^ id);
        pushed = engine->PushSync(
            [&values, a, acc, id](RunContext) {
              values[acc] += Mix(values[a] ^ id);
              return absl::OkStatus();
            },
            Context::Host(), {vars[a]}, {vars[acc]});
      }
      if (!pushed.ok()) push_errors.fetch_add(1);
    }
  };

  WithDeadline(
      "hot-var workload", engine.get(),
      [&] {
        std::vector<std::thread> threads;
        for (int t = 0; t < kPushers; ++t) threads.emplace_back(pusher, t);
        for (std::thread& th : threads) th.join();
        EXPECT_TRUE(IsOk(engine->WaitForAll()));
      },
      std::chrono::seconds(kUnderTsan ? 110 : 60));
  ASSERT_EQ(push_errors.load(), 0);

  for (int v = 0; v < 2 * kPushers; ++v) {
    EXPECT_EQ(values[v], chain_model[v]) << "chain var " << v;
  }
  uint64_t acc_sum = 0;
  for (uint64_t part : acc_model) acc_sum += part;
  EXPECT_EQ(values[acc], acc_sum) << "accumulator";
  int64_t wrong_views = 0;
  for (int t = 0; t < kPushers; ++t) {
    for (int64_t i = 0; i < ops_per_thread; ++i) {
      if (seen[t][i] != seen_model[t][i] && ++wrong_views <= 5) {
        ADD_FAILURE() << "thread " << t << " function " << i << ": the reader saw " << seen[t][i]
                      << ", a serial execution " << seen_model[t][i];
      }
    }
  }
  EXPECT_EQ(wrong_views, 0);
  EXPECT_EQ(engine->Stats().double_completions, 0);
}

}  // namespace
}  // namespace rill::engine
