// Bad input to the engine gets a clear status, never a crash, a hang or
// silent corruption (the hardening issue, class "Engine"): a shutdown stuck
// on an asynchronous function that never completes has a way out; worker
// counts are bounded, not narrowed; a push to a missing device is refused
// before any thread is made for it; a var handle deleted any number of slot
// reuses ago stays refused; kPrioritized with any int priority goes first;
// a bad RILL_* setting makes the default engine refuse work with the cause.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/engine/var_table.h"
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
using ::rill::engine::testing::WithDeadline;
using ::rill::engine::testing::Workers;
using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using namespace std::chrono_literals;

class EngineBadInput : public ::testing::TestWithParam<Kind> {};
INSTANTIATE_TEST_SUITE_P(Kinds, EngineBadInput, ::testing::Values(Kind::kNaive, Kind::kThreaded),
                         KindName);

using ::rill::testing::ScopedEnv;

// An asynchronous function that keeps its Completion and never calls it.
struct Stuck {
  std::mutex mu;
  std::vector<Completion> kept;
  AsyncFn Fn() {
    return [this](RunContext, Completion done) {
      std::lock_guard<std::mutex> lock(mu);
      kept.push_back(done);
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return kept.size();
  }
};

// --- Shutdown's way out ------------------------------------------------------

// Shutdown with a deadline gives up on an asynchronous function whose
// completion never comes: DeadlineExceeded naming it (with vars or
// without), what waits behind it is cancelled rather than run, the threads
// stop, and the completion called late, also after the engine is
// destroyed, is ignored.
TEST_P(EngineBadInput, ShutdownWithADeadlineAbandonsAStuckAsyncFunction) {
  auto stuck = std::make_shared<Stuck>();
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle v = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushAsync(stuck->Fn(), Context::Host(), {}, {v}, FnProperty::kNormal, 0,
                                     "stuck_writer")));
  ASSERT_TRUE(IsOk(engine->PushAsync(stuck->Fn(), Context::Host(), {}, {}, FnProperty::kNormal, 0,
                                     "stuck_alone")));
  std::atomic<int> behind_ran{0};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&behind_ran](RunContext) {
        behind_ran.fetch_add(1);
        return absl::OkStatus();
      },
      Context::Host(), {v}, {}, FnProperty::kNormal, 0, "behind")));
  ASSERT_TRUE(testing::WaitUntil([&] { return stuck->size() == 2; }));
  // The hang diagnosis names both, also the one that holds no var, once
  // their bodies have returned (a body that has kept its Completion may
  // still be on its way out of the call when size() reads 2).
  std::string pending;
  testing::WaitUntil([&] {
    pending = engine->DescribePending();
    return pending.find("'stuck_alone'") != std::string::npos;
  });
  EXPECT_NE(pending.find("waiting for their completion:"), std::string::npos) << pending;
  EXPECT_NE(pending.find("'stuck_alone'"), std::string::npos) << pending;
  absl::Status shut;
  WithDeadline("Shutdown(false, 200ms) with a stuck async function", engine.get(),
               [&] { shut = engine->Shutdown(/*cancel=*/false, absl::Milliseconds(200)); });
  EXPECT_TRUE(HasError(shut, absl::StatusCode::kDeadlineExceeded,
                       {"stuck_writer", "stuck_alone", "abandoned", "200ms"}));
  EXPECT_EQ(behind_ran.load(), 0) << "a function behind the stuck one ran";
  EXPECT_EQ(engine->Stats().in_flight, 0);
  EXPECT_TRUE(HasError(engine->PushSync(Noop, Context::Host(), {}, {}),
                       absl::StatusCode::kFailedPrecondition));
  // A second Shutdown finds everything stopped.
  EXPECT_TRUE(IsOk(engine->Shutdown(false, absl::Milliseconds(200))));
  // Late completions: ignored while the engine lives and after it is gone.
  stuck->kept[0](absl::OkStatus());
  EXPECT_EQ(engine->Stats().in_flight, 0);
  engine.reset();
  stuck->kept[1](absl::InternalError("too late"));
}

// Shutdown(true) (no deadline of its own) and the destructor give up on a
// stuck asynchronous function once nothing has finished for
// EngineOptions::shutdown_timeout, instead of waiting for ever.
TEST_P(EngineBadInput, ShutdownAndTheDestructorDoNotWaitForeverForAStuckCompletion) {
  for (bool explicit_shutdown : {true, false}) {
    SCOPED_TRACE(explicit_shutdown ? "Shutdown(true)" : "destructor");
    auto stuck = std::make_shared<Stuck>();
    EngineOptions options = Workers(1);
    options.shutdown_timeout = absl::Milliseconds(100);
    auto engine = MakeEngine(GetParam(), options);
    VarHandle v = engine->NewVariable();
    ASSERT_TRUE(IsOk(engine->PushAsync(stuck->Fn(), Context::Host(), {}, {v}, FnProperty::kNormal,
                                       0, "never_completes")));
    ASSERT_TRUE(testing::WaitUntil([&] { return stuck->size() == 1; }));
    absl::Status waited;
    std::thread waiter([&] { waited = engine->WaitForVar(v); });
    ASSERT_TRUE(testing::WaitUntil([&] { return engine->Stats().in_flight == 2; }));
    WithDeadline("shutting down an engine with a stuck async function", engine.get(), [&] {
      if (explicit_shutdown) engine->Shutdown(/*cancel=*/true);
      engine.reset();
    });
    waiter.join();
    // The wait behind it was cancelled rather than left blocked.
    EXPECT_TRUE(HasError(waited, absl::StatusCode::kCancelled)) << waited;
    ASSERT_EQ(stuck->size(), 1u);
    stuck->kept[0](absl::OkStatus());  // After the engine is gone: ignored.
  }
}

// Bad input to the overload itself.
TEST(EngineBadInputShutdown, ShutdownFromInsideAFunctionIsRefused) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(1));
  absl::Status inside;
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        inside = engine->Shutdown(false, absl::Seconds(1));
        return absl::OkStatus();
      },
      Context::Host(), {}, {})));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_TRUE(HasError(inside, absl::StatusCode::kFailedPrecondition, {"inside"}));
  EXPECT_TRUE(IsOk(engine->Shutdown(false, absl::Seconds(10))));
}

// --- Worker counts -------------------------------------------------------------

// A worker count from the environment is parsed without narrowing and
// bounded: a value past the bound is refused, naming the variable and the
// value, instead of aborting (99999999999) or silently meaning another
// count (4294967297 used to become 1).
TEST(EngineBadInputOptions, WorkerCountsFromTheEnvironmentAreBounded) {
  for (const char* bad : {"99999999999", "4294967297", "1025", "-1", "0", "2147483648"}) {
    SCOPED_TRACE(bad);
    ScopedEnv workers("RILL_ENGINE_CPU_WORKERS", bad);
    absl::StatusOr<EngineOptions> options = EngineOptions::FromEnv({});
    ASSERT_TRUE(HasError(options.status(), absl::StatusCode::kInvalidArgument,
                         {"RILL_ENGINE_CPU_WORKERS", bad, "1024"}))
        << "cpu_workers became " << (options.ok() ? options->cpu_workers : -1);
    // Engine::CreateFromEnv reads it too: a status, not an abort.
    EXPECT_TRUE(HasError(Engine::CreateFromEnv({}).status(), absl::StatusCode::kInvalidArgument,
                         {"RILL_ENGINE_CPU_WORKERS", bad}));
    // Engine::Create takes its options as given.
    EXPECT_TRUE(Engine::Create({}).ok());
  }
  ScopedEnv workers("RILL_ENGINE_CPU_WORKERS", "1024");
  absl::StatusOr<EngineOptions> options = EngineOptions::FromEnv({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->cpu_workers, EngineOptions::kMaxWorkers);
  ScopedEnv bound("RILL_ENGINE_MAX_IN_FLIGHT", "99999999999999999999");
  EXPECT_TRUE(HasError(EngineOptions::FromEnv({}).status(), absl::StatusCode::kInvalidArgument,
                       {"RILL_ENGINE_MAX_IN_FLIGHT", "99999999999999999999"}));
}

// A bad RILL_ENGINE* setting is refused naming the accepted values, and a
// trace that cannot be written is refused when the engine is created (it
// was found at shutdown, after the whole run).
TEST(EngineBadInputOptions, EngineSettingsAreRefusedNamingWhatIsAccepted) {
  {
    ScopedEnv kind("RILL_ENGINE", "turbo");
    EXPECT_TRUE(HasError(EngineOptions::FromEnv({}).status(), absl::StatusCode::kInvalidArgument,
                         {"RILL_ENGINE='turbo' is not one of: threaded, naive"}));
  }
  {
    ScopedEnv trace("RILL_ENGINE_TRACE", "/dev/full");
    EXPECT_TRUE(
        HasError(Engine::CreateFromEnv({}).status(), absl::StatusCode::kResourceExhausted,
                 {"RILL_ENGINE_TRACE='/dev/full': cannot write", "No space left on device"}));
  }
  const std::string missing =
      (std::filesystem::temp_directory_path() / "rill_no_such_folder_39" / "trace.json").string();
  {
    ScopedEnv trace("RILL_ENGINE_TRACE", missing.c_str());
    EXPECT_TRUE(HasError(Engine::CreateFromEnv({}).status(), absl::StatusCode::kNotFound,
                         {"RILL_ENGINE_TRACE", missing, "No such file or directory"}));
  }
  EngineOptions options;
  options.trace_path = missing;
  EXPECT_TRUE(
      HasError(Engine::Create(options).status(), absl::StatusCode::kNotFound,
               {"EngineOptions::trace_path: cannot write", missing, "No such file or directory"}));
}

// The default engine used to log "using default options" and run on with a
// bad setting (RILL_ENGINE=turbo, RILL_ENGINE_CPU_WORKERS=0, RILL_VERBOSE=abc).
// Now creating it checks every RILL_* setting and, when one is bad, every
// push to it fails with the cause. In a child, where the default engine is
// made first.
TEST(EngineBadInputDeathTest, TheDefaultEngineRefusesWorkWhenASettingIsBad) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  struct Case {
    const char* variable;
    const char* value;
    const char* message;
  };
  for (const Case& c :
       {Case{"RILL_ENGINE", "turbo", " is not one of: threaded, naive"},
        Case{"RILL_ENGINE_CPU_WORKERS", "0", " is not an integer in \\[1, 1024\\]"},
        Case{"RILL_VERBOSE", "abc", " is not an integer in \\[0, 2\\]"},
        Case{"RILL_TRACE", "/dev/full", ": cannot write /dev/full: No space left"}}) {
    SCOPED_TRACE(c.variable);
    ScopedEnv env(c.variable, c.value);
    const std::string cause = absl::StrCat(c.variable, "='", c.value, "'", c.message);
    EXPECT_EXIT(
        {
          const absl::Status pushed = Engine::Default().PushSync(Noop, Context::Host(), {}, {});
          const bool named = absl::StrContains(pushed.message(), c.variable) &&
                             Engine::DefaultStatus().message() == pushed.message();
          std::fprintf(stderr, "push: %s\n", pushed.ToString().c_str());
          _exit(!pushed.ok() && named ? 0 : 1);
        },
        ::testing::ExitedWithCode(0),
        absl::StrCat("push: .*the default engine was not created: ", cause));
  }
}

// The same bounds for options set through the API: each field named with
// its value.
TEST(EngineBadInputOptions, WorkerCountsFromTheApiAreBounded) {
  ScopedEnv workers("RILL_ENGINE_CPU_WORKERS", nullptr);
  struct Case {
    const char* field;
    int EngineOptions::*member;
    int value;
  };
  const Case cases[] = {
      {"cpu_workers", &EngineOptions::cpu_workers, EngineOptions::kMaxWorkers + 1},
      {"workers_per_device", &EngineOptions::workers_per_device, 5000},
      {"copy_workers_per_device", &EngineOptions::copy_workers_per_device, 0},
      {"streams_per_device", &EngineOptions::streams_per_device, -3},
      {"cpu_workers", &EngineOptions::cpu_workers, INT_MAX},
      {"cpu_workers", &EngineOptions::cpu_workers, -1},
      {"workers_per_device", &EngineOptions::workers_per_device, INT_MAX},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.field, "=", c.value));
    for (Kind kind : {Kind::kNaive, Kind::kThreaded}) {
      EngineOptions options;
      options.kind = kind;
      options.*(c.member) = c.value;
      absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(options);
      ASSERT_TRUE(HasError(engine.status(), absl::StatusCode::kInvalidArgument,
                           {c.field, absl::StrCat(c.value), "1024"}));
    }
  }
  EngineOptions no_timeout;
  no_timeout.shutdown_timeout = absl::ZeroDuration();
  EXPECT_TRUE(HasError(Engine::Create(no_timeout).status(), absl::StatusCode::kInvalidArgument,
                       {"shutdown_timeout"}));
  EngineOptions most;
  most.cpu_workers = kUnderTsan ? 8 : EngineOptions::kMaxWorkers;
  EXPECT_TRUE(Engine::Create(most).ok());
}

// --- Device ordinals -----------------------------------------------------------

int ThreadCount() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

// A push to a device ordinal the platform does not have is refused at
// push, naming the context and the ordinal, before a worker pool (a thread)
// or a stream is made for it: 50 bad pushes leave the thread count alone.
TEST_P(EngineBadInput, APushToAMissingDeviceIsRefusedBeforeAnyThreadStarts) {
  absl::StatusOr<Context> host0 = Context::Device("host", 0);
  ASSERT_TRUE(host0.ok()) << host0.status();
  auto engine = MakeEngine(GetParam(), Workers(1));
  VarHandle v = engine->NewVariable();
  absl::StatusOr<OperatorHandle> op =
      engine->NewOperator([](RunContext, Completion done) { done(absl::OkStatus()); }, {}, {v},
                          FnProperty::kNormal, "op_on_device");
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  const int threads_before = ThreadCount();
  for (int i = 0; i < 50; ++i) {
    const int ordinal = 2 + i;  // The tests run with RILL_HOST_DEVICES=2.
    const Context bad = Context::Device(host0->platform, ordinal);
    const bool copy = i % 2 == 1;
    absl::Status pushed = engine->PushSync(
        Noop, bad, {}, {v}, copy ? FnProperty::kCopyToDevice : FnProperty::kNormal, 0, "misplaced");
    ASSERT_TRUE(HasError(
        pushed, absl::StatusCode::kNotFound,
        {"misplaced", absl::StrCat("host:", ordinal), absl::StrCat("ordinal ", ordinal), "0..1"}));
    ASSERT_TRUE(HasError(engine->Push(*op, bad), absl::StatusCode::kNotFound,
                         {absl::StrCat("ordinal ", ordinal)}));
  }
  EXPECT_TRUE(HasError(engine->PushSync(Noop, Context::Device(host0->platform, -1), {}, {v},
                                        FnProperty::kNormal, 0, "negative"),
                       absl::StatusCode::kInvalidArgument, {"negative", "-1"}));
  EXPECT_TRUE(HasError(engine->PushSync(Noop, Context::Device(host0->platform, INT_MAX), {}, {v}),
                       absl::StatusCode::kNotFound, {absl::StrCat(INT_MAX)}));
  // Nothing was recorded against the var (a refused push never ran), and
  // no thread was started for a bad ordinal, also once everything settled.
  EXPECT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_LE(ThreadCount(), threads_before) << "bad device pushes started threads";
  // A good device still works.
  EXPECT_TRUE(IsOk(engine->PushSync(Noop, *host0, {}, {v})));
  EXPECT_TRUE(IsOk(engine->WaitForVar(v)));
}

// --- Var handle generations ----------------------------------------------------

// A var handle stays refused however many times its slot is reused: 65,536
// reuses used to bring a 16-bit generation back to the deleted handle's.
TEST(EngineBadInputVars, AHandleDeletedManySlotReusesAgoIsRefused) {
  constexpr uint64_t kSlotBits = (uint64_t{1} << 28) - 1;  // engine/var_table.h
  // The naive engine deletes at push, so the next var takes the same slot.
  auto engine = MakeEngine(Kind::kNaive);
  const VarHandle old = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->DeleteVariable(nullptr, Context::Host(), old)));
  VarHandle now;
  for (int reuse = 1; reuse <= 65536; ++reuse) {
    now = engine->NewVariable();
    ASSERT_EQ(now.bits() & kSlotBits, old.bits() & kSlotBits) << "slot not reused at " << reuse;
    if (reuse == 65536) break;
    ASSERT_TRUE(IsOk(engine->DeleteVariable(nullptr, Context::Host(), now)));
  }
  EXPECT_NE(now.bits(), old.bits());
  std::atomic<int> wrote_old{0};
  EXPECT_TRUE(HasError(engine->PushSync(
                           [&wrote_old](RunContext) {
                             wrote_old.fetch_add(1);
                             return absl::OkStatus();
                           },
                           Context::Host(), {}, {old}),
                       absl::StatusCode::kInvalidArgument, {"was deleted"}));
  EXPECT_TRUE(HasError(engine->WaitForVar(old), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(engine->DeleteVariable(nullptr, Context::Host(), old),
                       absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(wrote_old.load(), 0);
  // The var now in the slot is untouched by all that.
  EXPECT_TRUE(IsOk(engine->PushSync(Noop, Context::Host(), {}, {now})));
  EXPECT_TRUE(IsOk(engine->WaitForVar(now)));
}

// A slot whose generation reaches the table's last one is retired instead
// of wrapping around: no handle of it ever resolves again, and new vars go
// to other slots. (A small last generation stands for 2^24 - 1.)
TEST(EngineBadInputVars, AVarTableRetiresASlotRatherThanWrapItsGeneration) {
  constexpr uint32_t kLast = 3;
  internal::VarTable table(/*engine_tag=*/7, /*max_generation=*/kLast);
  std::vector<VarHandle> deleted;
  for (uint32_t generation = 1; generation <= kLast; ++generation) {
    VarHandle h = table.New();
    absl::StatusOr<internal::Var*> var = table.Resolve(h, /*for_delete=*/true);
    ASSERT_TRUE(var.ok()) << var.status();
    EXPECT_EQ((*var)->index, 0u) << "slot 0 is reused until it is retired";
    table.Free(*var);
    deleted.push_back(h);
  }
  for (int i = 0; i < 10; ++i) {
    VarHandle h = table.New();
    absl::StatusOr<internal::Var*> var = table.Resolve(h, false);
    ASSERT_TRUE(var.ok()) << var.status();
    EXPECT_NE((*var)->index, 0u) << "a retired slot was reused";
    for (VarHandle d : deleted) {
      EXPECT_TRUE(HasError(table.Resolve(d, false).status(), absl::StatusCode::kInvalidArgument,
                           {"was deleted"}));
    }
  }
}

// --- Priorities ----------------------------------------------------------------

// kPrioritized goes ahead of every normal function whatever the two int
// priorities (priority=INT_MAX used to overflow to the back), then by
// priority; INT_MIN is fine too. Both for one-shot pushes and operators.
TEST(EngineBadInputPriorities, PrioritizedWithAnyIntPriorityRunsBeforeNormalFunctions) {
  EngineOptions one_consumer = Workers(1);
  one_consumer.waiting_thread_helps = false;  // One thread takes them: they run in order.
  auto engine = MakeEngine(Kind::kThreaded, one_consumer);
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  std::mutex order_mu;
  std::vector<std::string> order;
  auto record = [&](std::string name) {
    return [&order, &order_mu, name](RunContext) {
      std::lock_guard<std::mutex> lock(order_mu);
      order.push_back(name);
      return absl::OkStatus();
    };
  };
  absl::StatusOr<OperatorHandle> prioritized_op = engine->NewOperator(
      [&](RunContext rc, Completion done) { done(record("op_prioritized_max")(rc)); }, {}, {},
      FnProperty::kPrioritized, "op_prioritized_max");
  ASSERT_TRUE(prioritized_op.ok()) << prioritized_op.status();
  ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {}, "blocker")));
  ASSERT_TRUE(IsOk(engine->PushSync(record("normal_max"), Context::Host(), {}, {},
                                    FnProperty::kNormal, INT_MAX)));
  ASSERT_TRUE(IsOk(engine->PushSync(record("normal_0"), Context::Host(), {}, {})));
  ASSERT_TRUE(IsOk(engine->PushSync(record("normal_min"), Context::Host(), {}, {},
                                    FnProperty::kNormal, INT_MIN)));
  ASSERT_TRUE(IsOk(engine->PushSync(record("prioritized_min"), Context::Host(), {}, {},
                                    FnProperty::kPrioritized, INT_MIN)));
  ASSERT_TRUE(IsOk(engine->PushSync(record("prioritized_0"), Context::Host(), {}, {},
                                    FnProperty::kPrioritized, 0)));
  ASSERT_TRUE(IsOk(engine->PushSync(record("prioritized_max"), Context::Host(), {}, {},
                                    FnProperty::kPrioritized, INT_MAX)));
  ASSERT_TRUE(IsOk(engine->Push(*prioritized_op, Context::Host(), INT_MAX)));
  gate->Open();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(order,
            (std::vector<std::string>{"prioritized_max", "op_prioritized_max", "prioritized_0",
                                      "prioritized_min", "normal_max", "normal_0", "normal_min"}));
}

// Class 8: a trace written where it cannot be gets the system's reason and
// the code errno gives (it was Internal with the path alone).
TEST_P(EngineBadInput, ATraceWrittenToAMissingFolderNamesTheReason) {
  auto engine = MakeEngine(GetParam());
  engine->StartProfiling();
  ASSERT_TRUE(IsOk(engine->PushSync(Noop, Context::Host(), {}, {})));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  const std::string path =
      (std::filesystem::temp_directory_path() / "rill_no_such_folder_22" / "trace.json").string();
  EXPECT_TRUE(HasError(engine->WriteTrace(path), absl::StatusCode::kNotFound,
                       {"cannot write the trace to", path, "No such file or directory"}));
}

}  // namespace
}  // namespace rill::engine
