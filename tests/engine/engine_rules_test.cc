// The dependency rules of DESIGN.md ("The dependency engine"): ordering,
// concurrency (observed, not assumed), var-list normalization, linearized
// pushes, checked handles, deletion, waits. Every rule that applies to both
// engine kinds runs on both; rules about concurrency run on the threaded
// engine. Scheduling and lifecycle rules are in engine_lifecycle_test.cc.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/testing/status_testing.h"
#include "tests/engine/engine_testing.h"

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

class EngineRules : public ::testing::TestWithParam<Kind> {};
INSTANTIATE_TEST_SUITE_P(Kinds, EngineRules, ::testing::Values(Kind::kNaive, Kind::kThreaded),
                         KindName);

// --- Write order -----------------------------------------------------------

// Writers of a var run in push order, and every reader sees exactly the
// writes pushed before it (none after).
TEST_P(EngineRules, WritesRunInPushOrderAndReadersSeeThePrecedingWrites) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  constexpr int kOps = 3000;
  VarHandle v = engine->NewVariable();
  uint64_t value = 0;  // Guarded by the engine through v.
  std::vector<uint64_t> seen(kOps, ~uint64_t{0});
  std::vector<uint64_t> expected(kOps, ~uint64_t{0});
  uint64_t model = 0;
  for (int i = 0; i < kOps; ++i) {
    if (i % 3 == 0) {
      ASSERT_TRUE(IsOk(engine->PushSync(
          [&value, i](RunContext) {
            value = value * 1000003 + static_cast<uint64_t>(i);
            return absl::OkStatus();
          },
          Context::Host(), {}, {v}, FnProperty::kNormal, 0, "write")));
      model = model * 1000003 + static_cast<uint64_t>(i);
    } else {
      ASSERT_TRUE(IsOk(engine->PushSync(
          [&value, &seen, i](RunContext) {
            seen[i] = value;
            return absl::OkStatus();
          },
          Context::Host(), {v}, {}, FnProperty::kNormal, 0, "read")));
      expected[i] = model;
    }
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(value, model);
  EXPECT_EQ(seen, expected);
}

// A long queue on one var (its waiting entries outgrow the var's ring many
// times over while the first writer is held) is granted in push order, is
// reported oldest first by DescribePending, and works again after the queue
// drained and the ring was given back.
TEST(ThreadedEngineRules, ALongQueueOnOneVarKeepsPushOrderAcrossRingGrowth) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(2));
  VarHandle v = engine->NewVariable();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    auto gate = Latch::Make();
    OpenLatchOnExit open_gate(gate);
    ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {v})));
    constexpr int kQueued = 1000;
    std::vector<int> order;  // Guarded by the engine through v (writes).
    std::atomic<int> reads_seen_wrong{0};
    for (int i = 0; i < kQueued; ++i) {
      if (i % 4 == 3) {  // Readers between writes see every write before them.
        ASSERT_TRUE(IsOk(engine->PushSync(
            [&order, &reads_seen_wrong, i](RunContext) {
              if (static_cast<int>(order.size()) != i - i / 4) reads_seen_wrong.fetch_add(1);
              return absl::OkStatus();
            },
            Context::Host(), {v}, {}, FnProperty::kNormal, 0, absl::StrCat("r", i))));
      } else {
        ASSERT_TRUE(IsOk(engine->PushSync(
            [&order, i](RunContext) {
              order.push_back(i);
              return absl::OkStatus();
            },
            Context::Host(), {}, {v}, FnProperty::kNormal, 0, absl::StrCat("w", i))));
      }
    }
    const std::string pending = engine->DescribePending();
    const size_t held = pending.find("'held' (write)");
    const size_t first = pending.find("'w0' (write)");
    const size_t third_read = pending.find("'r3' (read)");
    const size_t last = pending.find("'w998' (write)");
    EXPECT_NE(held, std::string::npos) << pending.substr(0, 400);
    EXPECT_NE(last, std::string::npos) << pending.substr(0, 400);
    EXPECT_LT(first, third_read);
    EXPECT_LT(third_read, last);
    gate->Open();
    ASSERT_TRUE(IsOk(engine->WaitForAll()));
    std::vector<int> expected;
    for (int i = 0; i < kQueued; ++i) {
      if (i % 4 != 3) expected.push_back(i);
    }
    EXPECT_EQ(order, expected);
    EXPECT_EQ(reads_seen_wrong.load(), 0);
  }
}

// Each WaitForVar(v) returns once everything pushed on v before it is done,
// while later unrelated work may still be pending.
TEST_P(EngineRules, WaitForVarWaitsForEveryEarlierUserOfTheVar) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle v = engine->NewVariable();
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) {
    const bool write = i % 4 == 0;
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&done](RunContext) {
          std::this_thread::sleep_for(1ms);
          done.fetch_add(1);
          return absl::OkStatus();
        },
        Context::Host(), write ? std::vector<VarHandle>{} : std::vector<VarHandle>{v},
        write ? std::vector<VarHandle>{v} : std::vector<VarHandle>{})));
  }
  ASSERT_TRUE(IsOk(engine->WaitForVar(v)));
  EXPECT_EQ(done.load(), 20);
  // A var nobody touched is ready at once.
  EXPECT_TRUE(IsOk(engine->WaitForVar(engine->NewVariable())));
}

// --- Concurrency (observed) -------------------------------------------------

// Two readers of one var are inside their functions at the same time: each
// waits (up to 2 s) for the other to arrive.
TEST(ThreadedEngineRules, ReadersOfOneVarRunConcurrently) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(2));
  VarHandle v = engine->NewVariable();
  ASSERT_TRUE(
      IsOk(engine->PushSync(Noop, Context::Host(), {}, {v}, FnProperty::kNormal, 0, "init")));
  std::atomic<int> arrived{0};
  std::atomic<bool> met[2] = {false, false};
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&arrived, &met, r](RunContext) {
          met[r] = Rendezvous(arrived, 2);
          return absl::OkStatus();
        },
        Context::Host(), {v}, {}, FnProperty::kNormal, 0, "reader")));
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_TRUE(met[0].load() && met[1].load()) << "the two readers never ran at the same time";
}

// Functions with no common written var are unordered: writers of different
// vars, and a reader of x with a writer of y that both read z, run together.
TEST(ThreadedEngineRules, FunctionsWithoutACommonWrittenVarRunConcurrently) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(2));
  VarHandle x = engine->NewVariable(), y = engine->NewVariable(), z = engine->NewVariable();
  std::atomic<int> arrived{0};
  std::atomic<int> met{0};
  auto meet = [&](RunContext) {
    if (Rendezvous(arrived, 2)) met.fetch_add(1);
    return absl::OkStatus();
  };
  ASSERT_TRUE(IsOk(engine->PushSync(meet, Context::Host(), {}, {x})));
  ASSERT_TRUE(IsOk(engine->PushSync(meet, Context::Host(), {}, {y})));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(met.load(), 2) << "writers of different vars were serialized";

  arrived = 0;
  met = 0;
  ASSERT_TRUE(IsOk(engine->PushSync(meet, Context::Host(), {z}, {x})));
  ASSERT_TRUE(IsOk(engine->PushSync(meet, Context::Host(), {z}, {y})));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(met.load(), 2) << "functions sharing only a read var were serialized";
}

// W1 (held) ; R1 R2 R3 ; W2 ; R4 on one var: the readers wait for W1, then
// run together; W2 runs after all three and alone; R4 (pushed after W2)
// sees W2's write: a writer is not starved by readers around it.
TEST(ThreadedEngineRules, ReadersBetweenTwoWritesRunTogetherAndTheWriterIsNotStarved) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(3));
  VarHandle v = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  std::atomic<int> value{0};
  std::atomic<bool> w1_started{false};
  std::atomic<int> readers_started{0}, readers_finished{0}, readers_met{0};
  std::atomic<int> readers_active{0};
  std::atomic<int> w2_saw_finished{-1}, w2_saw_active{-1};
  std::atomic<int> r4_saw{-1};

  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        w1_started = true;
        gate->Wait();
        value = 1;
        return absl::OkStatus();
      },
      Context::Host(), {}, {v}, FnProperty::kNormal, 0, "W1")));
  std::atomic<int> arrived{0};
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext) {
          readers_started.fetch_add(1);
          readers_active.fetch_add(1);
          if (value.load() == 1 && Rendezvous(arrived, 3)) readers_met.fetch_add(1);
          readers_active.fetch_sub(1);
          readers_finished.fetch_add(1);
          return absl::OkStatus();
        },
        Context::Host(), {v}, {}, FnProperty::kNormal, 0, "R")));
  }
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        w2_saw_finished = readers_finished.load();
        w2_saw_active = readers_active.load();
        value = 2;
        return absl::OkStatus();
      },
      Context::Host(), {}, {v}, FnProperty::kNormal, 0, "W2")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        r4_saw = value.load();
        return absl::OkStatus();
      },
      Context::Host(), {v}, {}, FnProperty::kNormal, 0, "R4")));

  ASSERT_TRUE(WaitUntil([&] { return w1_started.load(); }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(readers_started.load(), 0) << "a reader ran before the earlier write finished";
  gate->Open();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(readers_met.load(), 3) << "readers between two writes did not run together";
  EXPECT_EQ(w2_saw_finished.load(), 3);
  EXPECT_EQ(w2_saw_active.load(), 0);
  EXPECT_EQ(r4_saw.load(), 2) << "a reader pushed after a write overtook it";
}

// A writer pushed while readers keep arriving runs before every reader
// pushed after it (writers never starve), on a busy stream of readers.
TEST(ThreadedEngineRules, WriterPushedAmongManyReadersIsNotStarved) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(2));
  VarHandle v = engine->NewVariable();
  std::atomic<int> generation{0};
  constexpr int kReaders = 400;
  std::vector<int> seen(2 * kReaders, -1);
  for (int i = 0; i < 2 * kReaders; ++i) {
    if (i == kReaders) {
      ASSERT_TRUE(IsOk(engine->PushSync(
          [&](RunContext) {
            generation = 1;
            return absl::OkStatus();
          },
          Context::Host(), {}, {v}, FnProperty::kNormal, 0, "writer")));
    }
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&seen, &generation, i](RunContext) {
          std::this_thread::sleep_for(20us);
          seen[i] = generation.load();
          return absl::OkStatus();
        },
        Context::Host(), {v}, {}, FnProperty::kNormal, 0, "reader")));
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  for (int i = 0; i < 2 * kReaders; ++i) {
    ASSERT_EQ(seen[i], i < kReaders ? 0 : 1) << "reader " << i;
  }
}

// --- Var-list normalization -------------------------------------------------

// A var listed twice, and a var in both lists, do not deadlock the function
// against itself (MXNet's trap 1).
TEST_P(EngineRules, DuplicateVarsAndAVarInBothListsDoNotSelfDeadlock) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle a = engine->NewVariable(), b = engine->NewVariable();
  std::atomic<int> ran{0};
  auto count = [&ran](RunContext) {
    ran.fetch_add(1);
    return absl::OkStatus();
  };
  WithDeadline("pushes with duplicate vars", engine.get(), [&] {
    EXPECT_TRUE(IsOk(engine->PushSync(count, Context::Host(), {a, a, a}, {b})));
    EXPECT_TRUE(IsOk(engine->PushSync(count, Context::Host(), {}, {b, b})));
    EXPECT_TRUE(IsOk(engine->PushSync(count, Context::Host(), {a}, {a})));
    EXPECT_TRUE(IsOk(engine->PushSync(count, Context::Host(), {a, b, a}, {a, b, b})));
    EXPECT_TRUE(IsOk(engine->PushAsync(
        [&ran](RunContext, Completion done) {
          ran.fetch_add(1);
          done();
        },
        Context::Host(), {b, b}, {a, a})));
    EXPECT_TRUE(IsOk(engine->WaitForAll()));
    EXPECT_TRUE(IsOk(engine->WaitForVar(a)));
    EXPECT_TRUE(IsOk(engine->WaitForVar(b)));
  });
  EXPECT_EQ(ran.load(), 5);
}

// A var read twice counts as one read: the writer after it still runs, and
// only after the reader finished.
TEST_P(EngineRules, AVarListedTwiceAsReadCountsOnce) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle v = engine->NewVariable();
  std::atomic<bool> reader_done{false};
  std::atomic<int> writer_saw{-1};
  WithDeadline("reader with a duplicate var, then a writer", engine.get(), [&] {
    EXPECT_TRUE(IsOk(engine->PushSync(
        [&](RunContext) {
          std::this_thread::sleep_for(20ms);
          reader_done = true;
          return absl::OkStatus();
        },
        Context::Host(), {v, v}, {})));
    EXPECT_TRUE(IsOk(engine->PushSync(
        [&](RunContext) {
          writer_saw = reader_done.load() ? 1 : 0;
          return absl::OkStatus();
        },
        Context::Host(), {}, {v})));
    EXPECT_TRUE(IsOk(engine->WaitForVar(v)));
  });
  EXPECT_EQ(writer_saw.load(), 1);
}

// A var in both lists is a write: a later reader waits for it.
TEST(ThreadedEngineRules, AVarInBothListsIsAWrite) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(2));
  VarHandle v = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  std::atomic<bool> started{false}, reader_ran{false};
  std::atomic<int> value{0}, reader_saw{-1};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        started = true;
        gate->Wait();
        value = 7;
        return absl::OkStatus();
      },
      Context::Host(), {v}, {v}, FnProperty::kNormal, 0, "read_write")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        reader_ran = true;
        reader_saw = value.load();
        return absl::OkStatus();
      },
      Context::Host(), {v}, {}, FnProperty::kNormal, 0, "reader")));
  ASSERT_TRUE(WaitUntil([&] { return started.load(); }));
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(reader_ran.load()) << "a var in both lists was treated as a read";
  gate->Open();
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(reader_saw.load(), 7);
}

// --- Functions with no vars --------------------------------------------------

// Functions with no vars still count for WaitForAll (MXNet's trap 5), async
// ones completed later from another thread included.
TEST_P(EngineRules, FunctionsWithNoVarsCountForWaitForAll) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&ran](RunContext) {
          std::this_thread::sleep_for(100us);
          ran.fetch_add(1);
          return absl::OkStatus();
        },
        Context::Host(), {}, {})));
  }
  std::atomic<bool> async_done{false};
  std::thread completer;
  std::mutex completer_mu;
  ASSERT_TRUE(IsOk(engine->PushAsync(
      [&](RunContext, Completion done) {
        std::lock_guard<std::mutex> lock(completer_mu);
        completer = std::thread([&async_done, done] {
          std::this_thread::sleep_for(50ms);
          async_done = true;
          done();
        });
      },
      Context::Host(), {}, {})));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(ran.load(), 100);
  EXPECT_TRUE(async_done.load());
  std::lock_guard<std::mutex> lock(completer_mu);
  completer.join();
}

// --- Linearized pushes --------------------------------------------------------

// Two threads push "read X, write Y" and "read Y, write X" at the same time
// (MXNet's trap 2): no deadlock, and no two conflicting functions overlap.
TEST_P(EngineRules, ConcurrentCrossedPushesDoNotDeadlockOrOverlap) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  const int kPerThread = kUnderTsan ? 3000 : 20000;
  VarHandle x = engine->NewVariable(), y = engine->NewVariable();
  uint64_t x_value = 1, y_value = 2;  // Guarded by the engine.
  std::atomic<int> writing_x{0}, writing_y{0}, overlaps{0};
  std::atomic<int> ran{0};
  WithDeadline("crossed pushes from two threads", engine.get(), [&] {
    auto pusher = [&](bool read_x) {
      for (int i = 0; i < kPerThread; ++i) {
        absl::Status status;
        if (read_x) {
          status = engine->PushSync(
              [&](RunContext) {
                writing_y.fetch_add(1);
                if (writing_x.load() != 0 || writing_y.load() != 1) overlaps.fetch_add(1);
                y_value = y_value * 31 + x_value;
                writing_y.fetch_sub(1);
                ran.fetch_add(1);
                return absl::OkStatus();
              },
              Context::Host(), {x}, {y});
        } else {
          status = engine->PushSync(
              [&](RunContext) {
                writing_x.fetch_add(1);
                if (writing_y.load() != 0 || writing_x.load() != 1) overlaps.fetch_add(1);
                x_value = x_value * 37 + y_value;
                writing_x.fetch_sub(1);
                ran.fetch_add(1);
                return absl::OkStatus();
              },
              Context::Host(), {y}, {x});
        }
        if (!status.ok()) {
          ADD_FAILURE() << status;
          return;
        }
      }
    };
    std::thread t1(pusher, true), t2(pusher, false);
    t1.join();
    t2.join();
    EXPECT_TRUE(IsOk(engine->WaitForAll()));
  });
  EXPECT_EQ(ran.load(), 2 * kPerThread);
  EXPECT_EQ(overlaps.load(), 0);
}

// --- Checked handles ----------------------------------------------------------

TEST_P(EngineRules, NewVariablesAreDistinctAndNonNull) {
  auto engine = MakeEngine(GetParam());
  std::vector<VarHandle> vars;
  for (int i = 0; i < 1000; ++i) vars.push_back(engine->NewVariable());
  for (VarHandle v : vars) EXPECT_FALSE(v.is_null());
  std::sort(vars.begin(), vars.end());
  EXPECT_EQ(std::adjacent_find(vars.begin(), vars.end()), vars.end());
}

// A push naming a deleted var is rejected with an error and its function
// does not run (MXNet's trap 3); so is a second deletion. A new var that
// may reuse the slot is distinct from the deleted handle.
TEST_P(EngineRules, UsingADeletedVarIsAnError) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle v = engine->NewVariable();
  VarHandle other = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSync(Noop, Context::Host(), {}, {v})));
  ASSERT_TRUE(IsOk(engine->DeleteVariable(nullptr, Context::Host(), v)));
  std::atomic<int> ran{0};
  auto count = [&ran](RunContext) {
    ran.fetch_add(1);
    return absl::OkStatus();
  };
  EXPECT_FALSE(engine->PushSync(count, Context::Host(), {v}, {}).ok());
  EXPECT_FALSE(engine->PushSync(count, Context::Host(), {}, {v}).ok());
  EXPECT_FALSE(engine->PushSync(count, Context::Host(), {other}, {v}).ok());
  EXPECT_FALSE(engine
                   ->PushAsync(
                       [&ran](RunContext, Completion done) {
                         ran.fetch_add(1);
                         done();
                       },
                       Context::Host(), {v}, {other})
                   .ok());
  EXPECT_FALSE(engine->NewOperator([](RunContext, Completion done) { done(); }, {v}, {}).ok());
  EXPECT_FALSE(engine->DeleteVariable(nullptr, Context::Host(), v).ok());
  // Fresh vars (the slot may be reused) never equal the deleted handle, and
  // the deleted handle stays rejected.
  for (int i = 0; i < 100; ++i) EXPECT_NE(engine->NewVariable(), v);
  EXPECT_FALSE(engine->PushSync(count, Context::Host(), {}, {v}).ok());
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(ran.load(), 0);
  // The engine still works, and the untouched var is fine.
  EXPECT_TRUE(IsOk(engine->PushSync(count, Context::Host(), {}, {other})));
  EXPECT_TRUE(IsOk(engine->WaitForVar(other)));
  EXPECT_EQ(ran.load(), 1);
}

// A var of another engine, a forged handle and the null handle are rejected.
TEST_P(EngineRules, AVarOfAnotherEngineOrAForgedHandleIsAnError) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  auto other_engine = MakeEngine(GetParam(), Workers(1));
  VarHandle mine = engine->NewVariable();
  VarHandle theirs = other_engine->NewVariable();
  std::atomic<int> ran{0};
  auto count = [&ran](RunContext) {
    ran.fetch_add(1);
    return absl::OkStatus();
  };
  EXPECT_FALSE(engine->PushSync(count, Context::Host(), {theirs}, {mine}).ok());
  EXPECT_FALSE(engine->PushSync(count, Context::Host(), {}, {theirs}).ok());
  EXPECT_FALSE(engine->DeleteVariable(nullptr, Context::Host(), theirs).ok());
  EXPECT_FALSE(engine->PushSync(count, Context::Host(), {}, {VarHandle()}).ok());
  for (uint64_t bits :
       {uint64_t{1}, uint64_t{12345678}, ~uint64_t{0}, mine.bits() ^ (uint64_t{1} << 40)}) {
    if (bits == mine.bits()) continue;
    EXPECT_FALSE(engine->PushSync(count, Context::Host(), {}, {VarHandle::FromBits(bits)}).ok())
        << "forged handle " << bits;
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(ran.load(), 0);
  // Both engines still work with their own vars.
  EXPECT_TRUE(IsOk(engine->PushSync(count, Context::Host(), {}, {mine})));
  EXPECT_TRUE(IsOk(other_engine->PushSync(count, Context::Host(), {}, {theirs})));
  EXPECT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_TRUE(IsOk(other_engine->WaitForAll()));
  EXPECT_EQ(ran.load(), 2);
}

// --- Deletion ---------------------------------------------------------------------

// Deleting a var is an ordered write: its function runs after every earlier
// reader and writer of the var has finished, and gets its context.
TEST_P(EngineRules, DeleteVariableRunsAfterEarlierUsers) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle v = engine->NewVariable();
  std::atomic<int> finished{0};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        std::this_thread::sleep_for(20ms);
        finished.fetch_add(1);
        return absl::OkStatus();
      },
      Context::Host(), {}, {v})));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext) {
          std::this_thread::sleep_for(10ms);
          finished.fetch_add(1);
          return absl::OkStatus();
        },
        Context::Host(), {v}, {})));
  }
  std::atomic<int> delete_saw{-1};
  std::atomic<bool> delete_ctx_is_host{false};
  ASSERT_TRUE(IsOk(engine->DeleteVariable(
      [&](RunContext rc) {
        delete_saw = finished.load();
        delete_ctx_is_host = rc.ctx.is_host() && rc.stream == nullptr;
        return absl::OkStatus();
      },
      Context::Host(), v)));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_EQ(delete_saw.load(), 4) << "the delete ran before earlier users of the var finished";
  EXPECT_TRUE(delete_ctx_is_host.load());
}

// --- Waits from inside a running function -------------------------------------------

// WaitForVar / WaitForAll called from inside a function either complete or
// fail fast with FailedPrecondition; they never deadlock.
TEST_P(EngineRules, WaitsFromInsideAFunctionDoNotDeadlock) {
  auto engine = MakeEngine(GetParam(), Workers(2));
  VarHandle idle = engine->NewVariable(), v = engine->NewVariable();
  std::optional<absl::Status> var_status, all_status, self_status;
  WithDeadline("waits from inside a function", engine.get(), [&] {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext) {
          var_status = engine->WaitForVar(idle);
          self_status = engine->WaitForVar(v);  // v is written by this very function.
          all_status = engine->WaitForAll();
          return absl::OkStatus();
        },
        Context::Host(), {}, {v}, FnProperty::kNormal, 0, "waiter")));
    EXPECT_TRUE(IsOk(engine->WaitForAll()));
  });
  for (const auto* s : {&var_status, &all_status, &self_status}) {
    ASSERT_TRUE(s->has_value());
    EXPECT_TRUE((*s)->ok() || (*s)->code() == absl::StatusCode::kFailedPrecondition) << **s;
  }
}

// With one worker, a function waits on a var whose pending writer needs that
// very worker (apache/mxnet#4521): the wait must help or fail fast.
TEST(ThreadedEngineRules, WaitFromTheOnlyWorkerForWorkThatNeedsItDoesNotDeadlock) {
  auto engine = MakeEngine(Kind::kThreaded, Workers(1));
  VarHandle v = engine->NewVariable();
  auto gate = Latch::Make();
  OpenLatchOnExit open_gate(gate);
  std::atomic<bool> blocker_started{false};
  std::atomic<bool> written{false};
  std::optional<absl::Status> wait_status;
  bool written_when_ok = false;
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        blocker_started = true;
        gate->Wait();
        return absl::OkStatus();
      },
      Context::Host(), {}, {}, FnProperty::kNormal, 0, "blocker")));
  ASSERT_TRUE(WaitUntil([&] { return blocker_started.load(); }));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        written = true;
        return absl::OkStatus();
      },
      Context::Host(), {}, {v}, FnProperty::kNormal, 0, "writer")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        wait_status = engine->WaitForVar(v);
        written_when_ok = written.load();
        return absl::OkStatus();
      },
      Context::Host(), {}, {}, FnProperty::kNormal, 10, "waiter")));
  gate->Open();
  WithDeadline("WaitForVar from the only worker", engine.get(),
               [&] { EXPECT_TRUE(IsOk(engine->WaitForAll())); });
  ASSERT_TRUE(wait_status.has_value());
  if (wait_status->ok()) {
    EXPECT_TRUE(written_when_ok) << "WaitForVar returned OK before the writer ran";
  } else {
    EXPECT_TRUE(HasError(*wait_status, absl::StatusCode::kFailedPrecondition));
  }
  EXPECT_TRUE(written.load());
}

}  // namespace
}  // namespace rill::engine
