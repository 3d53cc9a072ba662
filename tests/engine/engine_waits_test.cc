// Asynchronous completion and waiting threads that help (DESIGN.md, "The
// dependency engine"): when an asynchronous function counts as finished,
// and how WaitForAll, WaitForVar and a push at the in-flight bound run
// ready host functions while they wait. The other lifecycle rules are in
// engine_lifecycle_test.cc.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "rill/base/status_macros.h"
#include "rill/engine/engine.h"
#include "rill/testing/status_testing.h"
#include "tests/engine/engine_testing.h"

namespace rill::engine {
namespace {

using ::rill::engine::testing::Kind;
using ::rill::engine::testing::KindName;
using ::rill::engine::testing::Latch;
using ::rill::engine::testing::MakeEngine;
using ::rill::engine::testing::OpenLatchOnExit;
using ::rill::engine::testing::PushHeld;
using ::rill::engine::testing::WaitUntil;
using ::rill::engine::testing::WithDeadline;
using ::rill::engine::testing::Workers;
using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using namespace std::chrono_literals;

class EngineWaits : public ::testing::TestWithParam<Kind> {};
INSTANTIATE_TEST_SUITE_P(Kinds, EngineWaits, ::testing::Values(Kind::kNaive, Kind::kThreaded),
                         KindName);

// --- A push at the bound -------------------------------------------------------------

// A long producer loop against a slow consumer never has more than the
// bound in flight (run-ahead cannot eat memory, apache/mxnet#4294).
// A pusher at the bound runs ready functions itself while it waits for
// room: with the one worker held, the pushes still go through, each
// function runs on the pushing thread, and the bound holds throughout.
TEST(ThreadedEngineRules, APusherAtTheBoundRunsReadyFunctionsItself) {
  EngineOptions options = Workers(1);
  options.max_in_flight = 4;
  auto engine = MakeEngine(Kind::kThreaded, options);
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {})));
  constexpr int kPushes = 20;
  std::atomic<int> on_pusher{0};
  std::atomic<int64_t> most_in_flight{0};
  std::thread pusher([&] {
    const std::thread::id me = std::this_thread::get_id();
    for (int i = 0; i < kPushes; ++i) {
      EXPECT_TRUE(IsOk(engine->PushSync(
          [&, me](RunContext) {
            on_pusher.fetch_add(std::this_thread::get_id() == me);
            const int64_t now = engine->Stats().in_flight;
            int64_t seen = most_in_flight.load();
            while (now > seen && !most_in_flight.compare_exchange_weak(seen, now)) {
            }
            return absl::OkStatus();
          },
          Context::Host(), {}, {})));
    }
  });
  WithDeadline("pushing past the bound while the worker is held", engine.get(),
               [&] { pusher.join(); });
  // All but the last few (within the bound) ran on the pusher.
  EXPECT_GE(on_pusher.load(), kPushes - 4);
  EXPECT_LE(most_in_flight.load(), 4);
  gate->Open();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
}

// --- Async completion ------------------------------------------------------------

// An async function completed later from a foreign std::thread: dependents
// wait for the completion, not for the function's return.
TEST_P(EngineWaits, AsyncCompletionFromAForeignThread) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle v = engine->NewVariable();
  std::mutex threads_mu;
  std::vector<std::thread> threads;
  uint64_t value = 0;  // Guarded by the engine through v.
  constexpr int kRounds = 20;
  std::vector<uint64_t> seen(kRounds, 0);
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_TRUE(IsOk(engine->PushAsync(
        [&, i](RunContext, Completion done) {
          std::lock_guard<std::mutex> lock(threads_mu);
          threads.emplace_back([&value, i, done] {
            std::this_thread::sleep_for(2ms);
            value = value * 10 + static_cast<uint64_t>(i % 10);
            done();
          });
        },
        Context::Host(), {}, {v}, FnProperty::kAsync, 0, "async_write")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&, i](RunContext) {
          seen[i] = value;
          return absl::OkStatus();
        },
        Context::Host(), {v}, {}, FnProperty::kNormal, 0, "read")));
  }
  ASSERT_TRUE(IsOk(engine->WaitForVar(v)));
  uint64_t model = 0;
  for (int i = 0; i < kRounds; ++i) {
    model = model * 10 + static_cast<uint64_t>(i % 10);
    EXPECT_EQ(seen[i], model) << "round " << i;
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  std::lock_guard<std::mutex> lock(threads_mu);
  for (std::thread& t : threads) t.join();
}

// An async function whose completion is called -- inline, or by another
// thread -- before its body returns completes only when the body returns:
// a dependent never overlaps the body, and a completion followed by a throw
// is still reported by the WaitForAll that follows.
TEST_P(EngineWaits, AnAsyncFunctionCompletedBeforeItReturnsCompletesAtTheReturn) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle v = engine->NewVariable();
  std::atomic<bool> body_returning{false};
  std::atomic<bool> dependent_saw_return{false};
  ASSERT_TRUE(IsOk(engine->PushAsync(
      [&](RunContext, Completion done) {
        std::thread other([done] { done(); });
        other.join();                       // Completed from another thread, body still running.
        std::this_thread::sleep_for(20ms);  // A dependent would start now if it could.
        body_returning.store(true);
      },
      Context::Host(), {}, {v}, FnProperty::kNormal, 0, "completed_early")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        dependent_saw_return.store(body_returning.load());
        return absl::OkStatus();
      },
      Context::Host(), {v}, {}, FnProperty::kNormal, 0, "dependent")));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_TRUE(dependent_saw_return.load()) << "the dependent ran before the body returned";

  // Inline completion, then a throw: the second call is a double completion,
  // and WaitForAll (which cannot return before the body has) reports it.
  ASSERT_TRUE(IsOk(engine->PushAsync(
      [](RunContext, Completion done) {
        done();
        throw std::runtime_error("after completing");
      },
      Context::Host(), {}, {v}, FnProperty::kNormal, 0, "completes_then_throws")));
  EXPECT_TRUE(
      HasError(engine->WaitForAll(), absl::StatusCode::kFailedPrecondition, {"called again"}));
  EXPECT_EQ(engine->Stats().double_completions, 1);
  EXPECT_TRUE(IsOk(engine->WaitForVar(v))) << "the first completion (OK) is the function's result";
  EXPECT_TRUE(IsOk(engine->WaitForAll()));  // WaitForVar's own function may still be retiring.
  EXPECT_EQ(engine->Stats().in_flight, 0);
}

// --- A waiting thread helps ---------------------------------------------------------

// With one worker held busy by a function that waits for another, only the
// thread waiting in WaitForAll / WaitForVar can run that other function:
// the wait returns (it would hang without the help), and the function ran
// on the waiting thread.
TEST(ThreadedEngineRules, AWaitingThreadRunsReadyHostFunctions) {
  for (bool wait_for_var : {false, true}) {
    SCOPED_TRACE(wait_for_var ? "WaitForVar" : "WaitForAll");
    auto engine = MakeEngine(Kind::kThreaded, Workers(1));
    VarHandle a = engine->NewVariable();
    VarHandle b = engine->NewVariable();
    auto b_ran = Latch::Make();
    OpenLatchOnExit open_b(b_ran);  // A failed test never leaves the worker blocked.
    std::atomic<bool> a_saw_b{false};
    std::thread::id b_thread;
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&, b_ran](RunContext) {
          a_saw_b.store(b_ran->Wait(10s));
          return absl::OkStatus();
        },
        Context::Host(), {}, {a}, FnProperty::kNormal, 0, "a_waits_for_b")));
    // Let the one worker take `a` first, so that only the waiter is left for `b`.
    std::this_thread::sleep_for(5ms);
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&, b_ran](RunContext) {
          b_thread = std::this_thread::get_id();
          b_ran->Open();
          return absl::OkStatus();
        },
        Context::Host(), {}, {b}, FnProperty::kNormal, 0, "b")));
    std::thread::id waiter;
    WithDeadline("a wait that only its own help can end", engine.get(), [&] {
      waiter = std::this_thread::get_id();
      EXPECT_TRUE(IsOk(wait_for_var ? engine->WaitForVar(a) : engine->WaitForAll()));
    });
    EXPECT_TRUE(a_saw_b.load()) << "'b' did not run while the worker was held";
    EXPECT_EQ(b_thread, waiter) << "'b' did not run on the waiting thread";
    EXPECT_TRUE(IsOk(engine->WaitForAll()));
  }
}

// A waiting thread that finds nothing to run goes to sleep with the
// workers; the retirement that ends its wait wakes it, and it returns (a
// helper that took the wake-up and then looked again once used to sleep
// for ever). Both waits, with the last function long enough for the
// waiter to be asleep when it ends.
TEST(ThreadedEngineRules, AHelpingWaiterAsleepIsWokenWhenItsWaitEnds) {
  for (bool wait_for_var : {false, true}) {
    SCOPED_TRACE(wait_for_var ? "WaitForVar" : "WaitForAll");
    auto engine = MakeEngine(Kind::kThreaded, Workers(1));
    VarHandle v = engine->NewVariable();
    for (int round = 0; round < 3; ++round) {
      ASSERT_TRUE(IsOk(engine->PushSync(
          [](RunContext) {
            std::this_thread::sleep_for(5ms);
            return absl::OkStatus();
          },
          Context::Host(), {}, {v}, FnProperty::kNormal, 0, "slow")));
      std::this_thread::sleep_for(1ms);  // The worker has taken it.
      WithDeadline("a wait that ends while the waiter sleeps", engine.get(), [&] {
        EXPECT_TRUE(IsOk(wait_for_var ? engine->WaitForVar(v) : engine->WaitForAll()));
      });
    }
  }
}

// A helper whose wait is over leaves a chain of functions to the workers,
// even an endless one (a function that pushes its own successor), instead
// of running it for ever from inside WaitForVar.
TEST(ThreadedEngineRules, AHelperLeavesAnEndlessChainWhenItsWaitIsOver) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(1));
  VarHandle u = engine->NewVariable();
  VarHandle v = engine->NewVariable();
  VarHandle w = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  // The worker is busy with a function that 'the_wait' must follow: the
  // queue holds only the chain, which the waiting thread takes.
  ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {w})));
  std::atomic<bool> stop{false};
  std::atomic<int> links{0};
  std::function<absl::Status(RunContext)> link = [&](RunContext) {
    links.fetch_add(1);
    if (!stop.load()) {
      // Its successor, on the var it writes: granted when this completes.
      RILL_RETURN_IF_ERROR(engine->PushSync(link, Context::Host(), {}, {u}));
    }
    return absl::OkStatus();
  };
  ASSERT_TRUE(
      IsOk(engine->PushSync(link, Context::Host(), {}, {u}, FnProperty::kNormal, 0, "chain")));
  ASSERT_TRUE(IsOk(engine->PushSync(testing::Noop, Context::Host(), {w}, {v}, FnProperty::kNormal,
                                    0, "the_wait")));
  std::thread opener([&] {
    std::this_thread::sleep_for(20ms);
    gate->Open();  // The worker finishes, and runs 'the_wait'.
  });
  WithDeadline("WaitForVar while the waiting thread runs an endless chain", engine.get(),
               [&] { EXPECT_TRUE(IsOk(engine->WaitForVar(v))); });
  stop.store(true);
  opener.join();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_GT(links.load(), 1);
}

// Shutdown(true) that gives up on a held function (its deadline passed)
// cancels a WaitForVar queued behind it when the holder finally finishes:
// the waiting thread, asleep among the workers, is woken with Cancelled.
TEST(ThreadedEngineRules, AHelpingWaitForVarIsWokenWhenShutdownCancelsItsFunction) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(1));
  VarHandle v = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {v})));
  absl::Status waited;
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    waited = engine->WaitForVar(v);
    returned = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return engine->Stats().in_flight == 2; }));
  std::this_thread::sleep_for(5ms);  // The waiter helps, finds nothing, sleeps.
  EXPECT_TRUE(HasError(engine->Shutdown(/*cancel=*/true, absl::Milliseconds(100)),
                       absl::StatusCode::kDeadlineExceeded));
  gate->Open();
  const bool woke = WaitUntil([&] { return returned.load(); });
  EXPECT_TRUE(woke) << "WaitForVar still blocked after its function was cancelled";
  if (!woke) std::abort();  // The waiter thread cannot be joined.
  waiter.join();
  EXPECT_TRUE(HasError(waited, absl::StatusCode::kCancelled, {"WaitForVar"}));
}

// Off, the waiting thread only waits: the same 'b' runs on the worker once
// 'a' lets it go (here: at its timeout, short).
TEST(ThreadedEngineRules, AWaitingThreadThatMustNotHelpOnlyWaits) {
  EngineOptions options = Workers(1);
  options.waiting_thread_helps = false;
  auto engine = MakeEngine(Kind::kThreaded, options);
  VarHandle a = engine->NewVariable();
  std::thread::id ran_on;
  ASSERT_TRUE(IsOk(engine->PushSync(
      [](RunContext) {
        std::this_thread::sleep_for(20ms);
        return absl::OkStatus();
      },
      Context::Host(), {}, {}, FnProperty::kNormal, 0, "busy")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        ran_on = std::this_thread::get_id();
        return absl::OkStatus();
      },
      Context::Host(), {}, {a}, FnProperty::kNormal, 0, "later")));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

// A default engine leaves a core to the thread that pushes (and helps).
TEST(ThreadedEngineRules, TheDefaultWorkerCountLeavesACoreToThePusher) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  auto engine = MakeEngine(Kind::kThreaded, EngineOptions{});
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  for (unsigned i = 0; i < 4 * cores; ++i) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext) {
          const int now = running.fetch_add(1) + 1;
          int seen = most.load();
          while (now > seen && !most.compare_exchange_weak(seen, now)) {
          }
          std::this_thread::sleep_for(2ms);
          running.fetch_sub(1);
          return absl::OkStatus();
        },
        Context::Host(), {}, {})));
  }
  // Not waiting here: only the workers run them.
  ASSERT_TRUE(WaitUntil([&] { return engine->Stats().in_flight == 0; }));
  EXPECT_LE(most.load(), static_cast<int>(std::max(1u, cores - 1)));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
}

}  // namespace
}  // namespace rill::engine
