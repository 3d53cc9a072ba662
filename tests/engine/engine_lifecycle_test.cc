// The engine's scheduling and lifecycle rules (DESIGN.md, "The dependency
// engine"): priorities, backpressure, operators, shutdown and destruction,
// statistics, options and the default engine. Rules that apply to both
// engine kinds run on both. The dependency rules are in
// engine_rules_test.cc; asynchronous completion and waiting threads that
// help in engine_waits_test.cc.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/base/status_macros.h"
#include "rill/engine/engine.h"
#include "rill/testing/status_testing.h"
#include "tests/engine/engine_testing.h"
#include "tests/testing/scoped_env.h"

namespace rill::engine {
namespace {

using ::rill::engine::testing::Kind;
using ::rill::engine::testing::KindName;
using ::rill::engine::testing::kUnderTsan;
using ::rill::engine::testing::Latch;
using ::rill::engine::testing::MakeEngine;
using ::rill::engine::testing::Noop;
using ::rill::engine::testing::OpenLatchOnExit;
using ::rill::engine::testing::PushHeld;
using ::rill::engine::testing::Rendezvous;
using ::rill::engine::testing::WaitUntil;
using ::rill::engine::testing::WithDeadline;
using ::rill::engine::testing::Workers;
using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using namespace std::chrono_literals;

class EngineLifecycle : public ::testing::TestWithParam<Kind> {};
INSTANTIATE_TEST_SUITE_P(Kinds, EngineLifecycle, ::testing::Values(Kind::kNaive, Kind::kThreaded),
                         KindName);

// --- Priorities -----------------------------------------------------------------

// One worker and a WaitForAll that does not help: a single thread takes
// the ready functions, so the order they run in is the order they are
// taken in. (With a helping waiter two threads take from the queue in that
// order, and may finish out of it.)
EngineOptions OneConsumer() {
  EngineOptions options = Workers(1);
  options.waiting_thread_helps = false;
  return options;
}

// With one worker held busy, ready functions are taken by priority, then by
// push order: both for functions with no vars and for readers released
// together when a write completes.
TEST(ThreadedEngineRules, ReadyFunctionsRunByPriorityThenPushOrder) {
  for (bool through_var : {false, true}) {
    SCOPED_TRACE(through_var ? "released by a var" : "no vars");
    auto engine = MakeEngine(Kind::kThreaded, OneConsumer());
    VarHandle v = engine->NewVariable();
    auto gate = Latch::Make();
    OpenLatchOnExit open_gate(gate);
    std::mutex order_mu;
    std::vector<std::string> order;
    ASSERT_TRUE(IsOk(PushHeld(*engine, gate,
                              through_var ? std::vector<VarHandle>{v} : std::vector<VarHandle>{},
                              "blocker")));
    const std::vector<std::pair<std::string, int>> pushes = {{"low0", 0}, {"low1", 0}, {"high0", 9},
                                                             {"mid0", 4}, {"low2", 0}, {"high1", 9},
                                                             {"mid1", 4}};
    for (const auto& [name, priority] : pushes) {
      ASSERT_TRUE(IsOk(engine->PushSync(
          [&order, &order_mu, name = name](RunContext) {
            std::lock_guard<std::mutex> lock(order_mu);
            order.push_back(name);
            return absl::OkStatus();
          },
          Context::Host(), through_var ? std::vector<VarHandle>{v} : std::vector<VarHandle>{}, {},
          FnProperty::kNormal, priority, name)));
    }
    gate->Open();
    ASSERT_TRUE(IsOk(engine->WaitForAll()));
    EXPECT_EQ(order,
              (std::vector<std::string>{"high0", "high1", "mid0", "mid1", "low0", "low1", "low2"}));
  }
}

// kPrioritized functions go ahead of normal ones in their queue.
TEST(ThreadedEngineRules, PrioritizedPropertyGoesAheadOfNormalFunctions) {
  auto engine = MakeEngine(Kind::kThreaded, OneConsumer());
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  std::mutex order_mu;
  std::vector<std::string> order;
  ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {}, "blocker")));
  auto record = [&](std::string name) {
    return [&order, &order_mu, name](RunContext) {
      std::lock_guard<std::mutex> lock(order_mu);
      order.push_back(name);
      return absl::OkStatus();
    };
  };
  ASSERT_TRUE(IsOk(engine->PushSync(record("normal0"), Context::Host(), {}, {})));
  ASSERT_TRUE(IsOk(engine->PushSync(record("normal1"), Context::Host(), {}, {})));
  ASSERT_TRUE(IsOk(
      engine->PushSync(record("prioritized"), Context::Host(), {}, {}, FnProperty::kPrioritized)));
  gate->Open();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(order, (std::vector<std::string>{"prioritized", "normal0", "normal1"}));
}

// --- Backpressure ---------------------------------------------------------------

// With max_in_flight = 4 and the only worker held, a pushing thread gets
// at most 4 functions in flight, then blocks in Push until work completes;
// once released, everything runs.
TEST(ThreadedEngineRules, PushBlocksPastTheInFlightBound) {
  EngineOptions options = Workers(1);
  options.max_in_flight = 4;
  options.waiting_thread_helps = false;  // Else the pusher runs them (next test).
  auto engine = MakeEngine(Kind::kThreaded, options);
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  std::atomic<bool> started{false};
  std::atomic<int> ran{0};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        started = true;
        gate->Wait();
        ran.fetch_add(1);
        return absl::OkStatus();
      },
      Context::Host(), {}, {}, FnProperty::kNormal, 0, "blocker")));
  ASSERT_TRUE(WaitUntil([&] { return started.load(); }));
  constexpr int kPushes = 20;
  std::atomic<int> pushed{0};
  std::thread pusher([&] {
    for (int i = 0; i < kPushes; ++i) {
      EXPECT_TRUE(IsOk(engine->PushSync(
          [&ran](RunContext) {
            ran.fetch_add(1);
            return absl::OkStatus();
          },
          Context::Host(), {}, {})));
      pushed.fetch_add(1);
    }
  });
  // The pusher gets some functions in and then must stop at the bound.
  EXPECT_TRUE(WaitUntil([&] { return pushed.load() >= 2; }));
  std::this_thread::sleep_for(200ms);
  const int pushed_while_held = pushed.load();
  EXPECT_LE(pushed_while_held, 4) << "Push did not wait at max_in_flight = 4";
  EXPECT_LE(engine->Stats().in_flight, 4);
  EXPECT_EQ(ran.load(), 0);
  gate->Open();
  pusher.join();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(pushed.load(), kPushes);
  EXPECT_EQ(ran.load(), kPushes + 1);
  EXPECT_EQ(engine->Stats().in_flight, 0);
}

TEST(ThreadedEngineRules, InFlightStaysWithinTheBoundUnderALongProducerLoop) {
  EngineOptions options = Workers(2);
  options.max_in_flight = 64;
  auto engine = MakeEngine(Kind::kThreaded, options);
  VarHandle v = engine->NewVariable();
  std::atomic<int64_t> max_seen{0};
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [](RunContext) {
          std::this_thread::sleep_for(5us);
          return absl::OkStatus();
        },
        Context::Host(), {}, {v})));
    const int64_t in_flight = engine->Stats().in_flight;
    if (in_flight > max_seen.load()) max_seen = in_flight;
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_LE(max_seen.load(), 64);
  EXPECT_GT(max_seen.load(), 1);
}

// Workers look for a pusher waiting for room every few retirements and
// whenever they run out of work, not at every retirement. Here exactly
// enough functions can run to make room (the bound of 1000 resumes a pusher
// at 875 in flight: 125 retirements), and everything else waits on a holder
// that finishes only once the blocked push has returned: the pusher must be
// woken by the worker that runs dry, or the holder gives up after 10 s.
TEST(ThreadedEngineRules, APusherAtTheBoundResumesWhenTheWorkersRunDry) {
  EngineOptions options = Workers(2);
  options.max_in_flight = 1000;
  auto engine = MakeEngine(Kind::kThreaded, options);
  const VarHandle x = engine->NewVariable();
  const VarHandle y = engine->NewVariable();
  auto resumed = Latch::Make();
  OpenLatchOnExit open_resumed(resumed);
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  std::atomic<bool> holder_gave_up{false};
  // The pusher starts only once both workers hold the holder and the gate:
  // a pusher that helps while it waits must not pick up either itself.
  auto holder_started = Latch::Make();
  auto gate_started = Latch::Make();
  ASSERT_TRUE(IsOk(engine->PushSync(
      [resumed, holder_started, &holder_gave_up](RunContext) {
        holder_started->Open();
        if (!resumed->Wait(10s)) holder_gave_up = true;
        return absl::OkStatus();
      },
      Context::Host(), {}, {x}, FnProperty::kNormal, 0, "holder")));
  for (int i = 0; i < 874; ++i) ASSERT_TRUE(IsOk(engine->PushSync(Noop, Context::Host(), {x}, {})));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [gate, gate_started](RunContext) {
        gate_started->Open();
        gate->Wait();
        return absl::OkStatus();
      },
      Context::Host(), {}, {y}, FnProperty::kNormal, 0, "gate")));
  for (int i = 0; i < 124; ++i) ASSERT_TRUE(IsOk(engine->PushSync(Noop, Context::Host(), {y}, {})));
  ASSERT_EQ(engine->Stats().in_flight, 1000);
  ASSERT_TRUE(holder_started->Wait(10s) && gate_started->Wait(10s)) << "the workers did not start";
  std::atomic<bool> returned{false};
  std::thread pusher([&] {
    EXPECT_TRUE(IsOk(engine->PushSync(Noop, Context::Host(), {}, {})));
    returned = true;
    resumed->Open();
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(returned.load()) << "Push did not wait at max_in_flight = 1000";
  gate->Open();
  pusher.join();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_FALSE(holder_gave_up.load())
      << "the pusher blocked at the bound resumed only after the holder gave up";
}

// --- Operators ---------------------------------------------------------------------

// NewOperator + Push runs the function each time with its fixed vars, in
// order; DeleteOperator lets pushed runs finish and later pushes fail.
TEST_P(EngineLifecycle, OperatorsArePushedManyTimesAndDeletedCleanly) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle in = engine->NewVariable(), out = engine->NewVariable();
  int64_t in_value = 3, out_value = 0;  // Guarded by the engine.
  absl::StatusOr<OperatorHandle> op = engine->NewOperator(
      [&](RunContext, Completion done) {
        out_value = out_value * 2 + in_value;
        done();
      },
      {in, in}, {out}, FnProperty::kNormal, "accumulate");
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_FALSE(op->is_null());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(IsOk(engine->Push(*op, Context::Host())));
  ASSERT_TRUE(IsOk(engine->DeleteOperator(*op)));
  EXPECT_FALSE(engine->Push(*op, Context::Host()).ok()) << "pushed a deleted operator";
  ASSERT_TRUE(IsOk(engine->WaitForVar(out)));
  int64_t model = 0;
  for (int i = 0; i < 10; ++i) model = model * 2 + 3;
  EXPECT_EQ(out_value, model);
  EXPECT_FALSE(engine->Push(OperatorHandle::FromId(987654321), Context::Host()).ok());
  EXPECT_FALSE(engine->DeleteOperator(OperatorHandle::FromId(987654321)).ok());
}

// An operator whose var was deleted cannot be pushed any more, also once a
// new var has taken the deleted var's slot: the push fails naming the
// deleted handle, and the new var is never written or poisoned by it.
TEST_P(EngineLifecycle, AnOperatorOfADeletedVarNeverWritesTheVarThatReusesItsSlot) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle a = engine->NewVariable();
  std::atomic<int> runs{0};
  absl::StatusOr<OperatorHandle> op = engine->NewOperator(
      [&](RunContext, Completion done) {
        ++runs;
        done(absl::InternalError("operator ran"));
      },
      {}, {a}, FnProperty::kNormal, "writes_a");
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(IsOk(engine->DeleteVariable(nullptr, Context::Host(), a)));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  absl::Status before = engine->Push(*op, Context::Host());
  EXPECT_EQ(before.code(), absl::StatusCode::kInvalidArgument) << before;
  // Slots are reused: keep making vars until one lands in a's slot (the
  // handle's low 28 bits, engine/var_table.h).
  constexpr uint64_t kSlotBits = (uint64_t{1} << 28) - 1;
  VarHandle b;
  for (int i = 0; i < 64 && (b.is_null() || (b.bits() & kSlotBits) != (a.bits() & kSlotBits));
       ++i) {
    b = engine->NewVariable();
  }
  ASSERT_EQ(b.bits() & kSlotBits, a.bits() & kSlotBits) << "no new var reused a's slot";
  ASSERT_NE(b.bits(), a.bits());
  absl::Status after = engine->Push(*op, Context::Host());
  EXPECT_EQ(after.code(), absl::StatusCode::kInvalidArgument) << after;
  EXPECT_NE(after.message().find("was deleted"), std::string::npos) << after;
  EXPECT_NE(after.message().find("writes_a"), std::string::npos) << after;
  EXPECT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(runs.load(), 0);
  EXPECT_TRUE(IsOk(engine->WaitForVar(b))) << "the new var was poisoned by the old operator";
}

// DeleteOperator does not wait on or write the operator's vars (MXNet's
// trap 4): it returns while a pushed run still waits behind a held writer,
// and that run still happens.
TEST(ThreadedEngineRules, DeleteOperatorDoesNotWaitOnItsVars) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(2));
  VarHandle v = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {v}, "held_writer")));
  std::atomic<int> runs{0};
  absl::StatusOr<OperatorHandle> op = engine->NewOperator(
      [&runs](RunContext, Completion done) {
        runs.fetch_add(1);
        done();
      },
      {v}, {}, FnProperty::kNormal, "reader_op");
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(IsOk(engine->Push(*op, Context::Host())));
  const auto start = std::chrono::steady_clock::now();
  WithDeadline("DeleteOperator while its run waits", engine.get(),
               [&] { EXPECT_TRUE(IsOk(engine->DeleteOperator(*op))); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(runs.load(), 0);
  gate->Open();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(runs.load(), 1);
}

// --- Shutdown and destruction ------------------------------------------------------

// Shutdown(false) drains: everything pushed runs. Later pushes fail with
// FailedPrecondition; Shutdown is idempotent.
TEST_P(EngineLifecycle, ShutdownDrainsPendingWorkAndRejectsLaterPushes) {
  auto engine = MakeEngine(GetParam(), Workers(1));
  VarHandle v = engine->NewVariable();
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&ran](RunContext) {
          std::this_thread::sleep_for(200us);
          ran.fetch_add(1);
          return absl::OkStatus();
        },
        Context::Host(), {}, i % 2 ? std::vector<VarHandle>{v} : std::vector<VarHandle>{})));
  }
  engine->Shutdown(/*cancel=*/false);
  EXPECT_EQ(ran.load(), 50);
  EXPECT_TRUE(HasError(engine->PushSync(Noop, Context::Host(), {}, {v}),
                       absl::StatusCode::kFailedPrecondition));
  engine->Shutdown(false);
  engine->Shutdown(true);
  engine.reset();
}

// Destroying the engine drains pending work and joins its threads.
TEST_P(EngineLifecycle, DestructorDrainsPendingWork) {
  std::atomic<int> ran{0};
  {
    auto engine = MakeEngine(GetParam(), Workers(2));
    VarHandle v = engine->NewVariable();
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(IsOk(engine->PushSync(
          [&ran](RunContext) {
            std::this_thread::sleep_for(50us);
            ran.fetch_add(1);
            return absl::OkStatus();
          },
          Context::Host(), {}, {v})));
    }
  }
  EXPECT_EQ(ran.load(), 100);
}

// Shutdown(true) skips what has not started: the held function finishes,
// the 20 queued behind it never run, and they are counted as skipped.
TEST(ThreadedEngineRules, ShutdownWithCancelSkipsWhatHasNotStarted) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(1));
  VarHandle v = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  std::atomic<bool> started{false}, held_finished{false};
  std::atomic<int> queued_ran{0};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        started = true;
        gate->Wait();
        held_finished = true;
        return absl::OkStatus();
      },
      Context::Host(), {}, {v}, FnProperty::kNormal, 0, "held")));
  ASSERT_TRUE(WaitUntil([&] { return started.load(); }));
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&queued_ran](RunContext) {
          queued_ran.fetch_add(1);
          return absl::OkStatus();
        },
        Context::Host(), i % 2 ? std::vector<VarHandle>{v} : std::vector<VarHandle>{}, {})));
  }
  const int64_t skipped_before = engine->Stats().skipped;
  std::thread shutdown([&] { engine->Shutdown(/*cancel=*/true); });
  // Shutdown has begun once pushes are refused; only then release the held
  // function, so nothing queued can start before the cancel.
  std::atomic<int> probes{0};
  EXPECT_TRUE(WaitUntil([&] {
    probes.fetch_add(1);
    return engine->PushSync(Noop, Context::Host(), {}, {}).code() ==
           absl::StatusCode::kFailedPrecondition;
  }));
  gate->Open();
  shutdown.join();
  EXPECT_TRUE(held_finished.load());
  EXPECT_EQ(queued_ran.load(), 0) << "cancelled functions ran";
  EXPECT_GE(engine->Stats().skipped - skipped_before, 20);
}

// A WaitForVar whose function Shutdown(true) cancels returns Cancelled
// instead of waiting forever for a function that will never run.
TEST(ThreadedEngineRules, WaitForVarReturnsWhenShutdownCancelsItsFunction) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(1));
  VarHandle v = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  std::atomic<bool> started{false};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        started = true;
        gate->Wait();
        return absl::OkStatus();
      },
      Context::Host(), {}, {v}, FnProperty::kNormal, 0, "held")));
  ASSERT_TRUE(WaitUntil([&] { return started.load(); }));
  absl::Status waited;
  std::atomic<bool> waiter_returned{false};
  std::thread waiter([&] {
    waited = engine->WaitForVar(v);
    waiter_returned = true;
  });
  // The wait's function is queued behind `held` once in flight is 2.
  ASSERT_TRUE(WaitUntil([&] { return engine->Stats().in_flight == 2; }));
  std::thread shutdown([&] { engine->Shutdown(/*cancel=*/true); });
  ASSERT_TRUE(WaitUntil([&] {
    return engine->PushSync(Noop, Context::Host(), {}, {}).code() ==
           absl::StatusCode::kFailedPrecondition;
  }));
  gate->Open();
  shutdown.join();
  const bool returned = WaitUntil([&] { return waiter_returned.load(); });
  EXPECT_TRUE(returned) << "WaitForVar still blocked after Shutdown(true)";
  if (!returned) std::abort();  // The waiter thread cannot be joined.
  waiter.join();
  EXPECT_TRUE(HasError(waited, absl::StatusCode::kCancelled, {"WaitForVar", "shut down"}));
}

// Every push racing Shutdown either runs before Shutdown returns or is
// refused: none is accepted and then dropped (which would leave it in
// flight for ever). Many short engine lives, since the window is narrow.
TEST(ThreadedEngineRules, APushRacingShutdownRunsOrIsRefused) {
  const int lives = kUnderTsan ? 300 : 2000;
  for (int life = 0; life < lives; ++life) {
    auto engine = MakeEngine(Kind::kThreaded, Workers(1));
    VarHandle v = engine->NewVariable();
    std::atomic<int64_t> accepted{0}, ran{0};
    std::atomic<bool> go{false};
    std::thread pusher([&] {
      while (!go.load()) {
      }
      for (;;) {
        absl::Status s = engine->PushSync(
            [&ran](RunContext) {
              ran.fetch_add(1);
              return absl::OkStatus();
            },
            Context::Host(), {}, {v});
        if (!s.ok()) {
          EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
          break;
        }
        accepted.fetch_add(1);
      }
    });
    go = true;
    std::this_thread::yield();
    engine->Shutdown(false);
    pusher.join();
    ASSERT_EQ(accepted.load(), ran.load()) << "engine life " << life;
    ASSERT_EQ(engine->Stats().in_flight, 0) << "engine life " << life;
  }
}

// Shutdown from inside one of the engine's own functions would wait for
// that function: it is refused (logged) and the function returns; the
// engine keeps working. A second, concurrent Shutdown returns only once the
// first has drained.
TEST(ThreadedEngineRules, ShutdownFromInsideAFunctionIsRefusedAndConcurrentShutdownsBothWait) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(2));
  VarHandle v = engine->NewVariable();
  ::testing::internal::CaptureStderr();
  WithDeadline("Shutdown inside a function", engine.get(), [&] {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext) {
          engine->Shutdown(false);
          return absl::OkStatus();
        },
        Context::Host(), {}, {v}, FnProperty::kNormal, 0, "shuts_down")));
    EXPECT_TRUE(IsOk(engine->WaitForAll()));
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("inside one of the engine's own functions"), std::string::npos) << err;
  EXPECT_TRUE(IsOk(engine->PushSync(Noop, Context::Host(), {}, {v})));

  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  std::atomic<bool> started{false}, finished{false};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        started = true;
        gate->Wait();
        finished = true;
        return absl::OkStatus();
      },
      Context::Host(), {}, {v}, FnProperty::kNormal, 0, "held")));
  ASSERT_TRUE(WaitUntil([&] { return started.load(); }));
  std::atomic<int> returned{0};
  std::atomic<bool> early{false};
  auto shut = [&] {
    engine->Shutdown(false);
    if (!finished.load()) early = true;
    returned.fetch_add(1);
  };
  std::thread first(shut), second(shut);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(returned.load(), 0) << "a Shutdown returned while a function was still running";
  gate->Open();
  first.join();
  second.join();
  EXPECT_FALSE(early.load());
  EXPECT_EQ(returned.load(), 2);
}

// --- Stats, options, the default engine -----------------------------------------

TEST_P(EngineLifecycle, StatsCountPushedAndCompletedFunctions) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle v = engine->NewVariable();
  const EngineStats before = engine->Stats();
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(IsOk(engine->PushSync(Noop, Context::Host(), {}, {v})));
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  const EngineStats after = engine->Stats();
  EXPECT_EQ(after.pushed - before.pushed, 30);
  EXPECT_EQ(after.completed - before.completed, 30);
  EXPECT_EQ(after.in_flight, 0);
  EXPECT_EQ(after.failed, 0);
  EXPECT_EQ(after.skipped, 0);
  EXPECT_EQ(after.double_completions, 0);
}

using ::rill::testing::ScopedEnv;

TEST(EngineOptionsFromEnv, EnvironmentOverridesOptions) {
  ScopedEnv kind("RILL_ENGINE", "naive");
  ScopedEnv workers("RILL_ENGINE_CPU_WORKERS", "3");
  ScopedEnv bound("RILL_ENGINE_MAX_IN_FLIGHT", "77");
  ScopedEnv trace("RILL_ENGINE_TRACE", "/tmp/rill_engine_env_trace.json");
  ScopedEnv streams("RILL_ENGINE_STREAMS_PER_DEVICE", "4");
  absl::StatusOr<EngineOptions> options = EngineOptions::FromEnv({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->kind, Kind::kNaive);
  EXPECT_EQ(options->cpu_workers, 3);
  EXPECT_EQ(options->streams_per_device, 4);
  EXPECT_EQ(options->max_in_flight, 77);
  EXPECT_EQ(options->trace_path, "/tmp/rill_engine_env_trace.json");
  ScopedEnv threaded("RILL_ENGINE", "threaded");
  options = EngineOptions::FromEnv({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->kind, Kind::kThreaded);
}

TEST(EngineOptionsFromEnv, NoEnvironmentKeepsTheBase) {
  ScopedEnv kind("RILL_ENGINE", nullptr);
  ScopedEnv workers("RILL_ENGINE_CPU_WORKERS", nullptr);
  ScopedEnv bound("RILL_ENGINE_MAX_IN_FLIGHT", nullptr);
  ScopedEnv trace("RILL_ENGINE_TRACE", nullptr);
  ScopedEnv watchdog("RILL_ENGINE_WATCHDOG_MS", nullptr);
  ScopedEnv streams("RILL_ENGINE_STREAMS_PER_DEVICE", nullptr);
  EngineOptions base;
  base.kind = Kind::kNaive;
  base.cpu_workers = 5;
  absl::StatusOr<EngineOptions> options = EngineOptions::FromEnv(base);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->kind, Kind::kNaive);
  EXPECT_EQ(options->cpu_workers, 5);
}

TEST(EngineOptionsFromEnv, BadValuesAreNamed) {
  {
    ScopedEnv kind("RILL_ENGINE", "turbo");
    EXPECT_TRUE(HasError(EngineOptions::FromEnv({}).status(), absl::StatusCode::kInvalidArgument,
                         {"RILL_ENGINE", "turbo"}));
  }
  {
    ScopedEnv workers("RILL_ENGINE_CPU_WORKERS", "two");
    EXPECT_TRUE(HasError(EngineOptions::FromEnv({}).status(), absl::StatusCode::kInvalidArgument,
                         {"RILL_ENGINE_CPU_WORKERS", "two"}));
  }
  {
    ScopedEnv bound("RILL_ENGINE_MAX_IN_FLIGHT", "-5");
    EXPECT_TRUE(HasError(EngineOptions::FromEnv({}).status(), absl::StatusCode::kInvalidArgument,
                         {"RILL_ENGINE_MAX_IN_FLIGHT", "-5"}));
  }
  {
    ScopedEnv streams("RILL_ENGINE_STREAMS_PER_DEVICE", "0");
    EXPECT_TRUE(HasError(EngineOptions::FromEnv({}).status(), absl::StatusCode::kInvalidArgument,
                         {"RILL_ENGINE_STREAMS_PER_DEVICE", "0"}));
  }
}

// The process default engine is created on first use, is one object, works,
// and is shut down explicitly.
TEST(DefaultEngine, CreatedOnFirstUseAndShutDownExplicitly) {
  Engine& engine = Engine::Default();
  EXPECT_EQ(&engine, &Engine::Default());
  VarHandle v = engine.NewVariable();
  std::atomic<int> ran{0};
  ASSERT_TRUE(IsOk(engine.PushSync(
      [&ran](RunContext) {
        ran.fetch_add(1);
        return absl::OkStatus();
      },
      Context::Host(), {}, {v})));
  ASSERT_TRUE(IsOk(engine.WaitForVar(v)));
  EXPECT_EQ(ran.load(), 1);
  Engine::ShutdownDefault();
}

}  // namespace
}  // namespace rill::engine
