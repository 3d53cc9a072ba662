// Engine::PushSyncInline: a host function whose vars are free runs on the
// pushing thread, in its place in its vars' order; one that must wait, or
// one pushed from inside an engine function, is queued as PushSync would.
// (The randomized comparison against serial execution is the stress test's
// Threaded2Inline configuration.)
#include <atomic>
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
using ::rill::engine::testing::Latch;
using ::rill::engine::testing::MakeEngine;
using ::rill::engine::testing::OpenLatchOnExit;
using ::rill::engine::testing::PushHeld;
using ::rill::engine::testing::Workers;
using ::rill::testing::IsOk;

// --- PushSyncInline --------------------------------------------------------

// A host function whose vars are free runs on the pushing thread, before
// the push returns.
TEST(ThreadedEngineInline, AFunctionOnFreeVarsRunsOnThePusherBeforeTheReturn) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(2));
  VarHandle v = engine->NewVariable(), r = engine->NewVariable();
  std::thread::id ran_on;
  bool ran = false;
  ASSERT_TRUE(IsOk(engine->PushSyncInline(
      [&](RunContext) {
        ran_on = std::this_thread::get_id();
        ran = true;
        return absl::OkStatus();
      },
      Context::Host(), {r}, {v})));
  EXPECT_TRUE(ran);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(IsOk(engine->WaitForAll()));
}

// A function that must wait (its var is held by a running writer) is pushed
// as usual: it runs later, after the writer, in push order with the rest.
TEST(ThreadedEngineInline, AFunctionThatMustWaitIsPushedAndKeepsPushOrder) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(2));
  VarHandle v = engine->NewVariable();
  std::vector<int> order;  // Guarded by the engine through v.
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {v})));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(IsOk(engine->PushSyncInline(
        [&order, i](RunContext) {
          order.push_back(i);
          return absl::OkStatus();
        },
        Context::Host(), {}, {v})));
  }
  // Nothing ran inline: the held writer still has the var.
  gate->Open();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

// Its error poisons what it writes, and a later reader is skipped, as with
// PushSync.
TEST(ThreadedEngineInline, AnInlineFailurePoisonsItsWrittenVars) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(2));
  VarHandle v = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSyncInline(
      [](RunContext) { return absl::InternalError("inline failure"); }, Context::Host(), {}, {v})));
  bool reader_ran = false;
  ASSERT_TRUE(IsOk(engine->PushSyncInline(
      [&](RunContext) {
        reader_ran = true;
        return absl::OkStatus();
      },
      Context::Host(), {v}, {})));
  absl::Status s = engine->WaitForVar(v);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("inline failure"), std::string::npos) << s;
  EXPECT_FALSE(reader_ran);
  (void)engine->WaitForAll();
}

// Pushed from inside an engine function, it is never run there (the
// calling function holds its own vars and its worker): it is queued. With
// one worker, busy with the outer function, and no helping waiter, the
// inner function cannot have run when the push returns.
TEST(ThreadedEngineInline, FromInsideAFunctionItIsQueued) {
  EngineOptions options = Workers(1);
  options.waiting_thread_helps = false;
  auto engine = MakeEngine(Kind::kThreaded, options);
  VarHandle outer = engine->NewVariable(), inner = engine->NewVariable();
  std::atomic<bool> inner_ran{false};
  bool ran_before_push_returned = true;
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        absl::Status pushed = engine->PushSyncInline(
            [&](RunContext) {
              inner_ran.store(true);
              return absl::OkStatus();
            },
            Context::Host(), {}, {inner});
        ran_before_push_returned = inner_ran.load();
        return pushed;
      },
      Context::Host(), {}, {outer})));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_FALSE(ran_before_push_returned);
  EXPECT_TRUE(inner_ran.load());
}

}  // namespace
}  // namespace rill::engine
