// Errors in the engine (DESIGN.md, "Errors"): every way a function can fail
// poisons the vars it writes; later users are skipped and pass the error on;
// WaitForVar reports it every time until ClearError or deletion; WaitForAll
// reports the first error since the previous call; kNoSkip functions run
// anyway; completions are exactly-once; the engine keeps working.

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/testing/status_testing.h"
#include "tests/engine/engine_testing.h"

namespace rill::engine {
namespace {

using ::rill::engine::testing::Kind;
using ::rill::engine::testing::KindName;
using ::rill::engine::testing::kUnderTsan;
using ::rill::engine::testing::MakeEngine;
using ::rill::engine::testing::Noop;
using ::rill::engine::testing::WaitUntil;
using ::rill::engine::testing::WithDeadline;
using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using namespace std::chrono_literals;

// Joins the foreign threads a test started to complete async functions.
class ForeignThreads {
 public:
  ~ForeignThreads() { JoinAll(); }
  void Start(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back(std::move(fn));
  }
  void JoinAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

// How a failing function fails.
enum class Failure {
  kReturnsError,        // SyncFn returns an error status.
  kThrows,              // SyncFn throws std::runtime_error.
  kCompletesWithError,  // AsyncFn calls its completion with an error.
  kForeignThreadError,  // AsyncFn's completion is called with an error from another thread.
  kAsyncThrows,         // AsyncFn throws before completing.
};

std::string FailureName(Failure f) {
  switch (f) {
    case Failure::kReturnsError:
      return "ReturnsError";
    case Failure::kThrows:
      return "Throws";
    case Failure::kCompletesWithError:
      return "CompletesWithError";
    case Failure::kForeignThreadError:
      return "ForeignThreadError";
    case Failure::kAsyncThrows:
      return "AsyncThrows";
  }
  return "?";
}

// Pushes a function that writes `out` and fails in the manner of `failure`,
// with `message` in its error.
absl::Status PushFailing(Engine& engine, Failure failure, VarHandle out, const std::string& message,
                         ForeignThreads& threads, std::string_view name = "failing_op") {
  switch (failure) {
    case Failure::kReturnsError:
      return engine.PushSync([message](RunContext) { return absl::DataLossError(message); },
                             Context::Host(), {}, {out}, FnProperty::kNormal, 0, name);
    case Failure::kThrows:
      return engine.PushSync(
          [message](RunContext) -> absl::Status { throw std::runtime_error(message); },
          Context::Host(), {}, {out}, FnProperty::kNormal, 0, name);
    case Failure::kCompletesWithError:
      return engine.PushAsync(
          [message](RunContext, Completion done) { done(absl::DataLossError(message)); },
          Context::Host(), {}, {out}, FnProperty::kAsync, 0, name);
    case Failure::kForeignThreadError:
      return engine.PushAsync(
          [message, &threads](RunContext, Completion done) {
            threads.Start([message, done] {
              std::this_thread::sleep_for(5ms);
              done(absl::DataLossError(message));
            });
          },
          Context::Host(), {}, {out}, FnProperty::kAsync, 0, name);
    case Failure::kAsyncThrows:
      return engine.PushAsync(
          [message](RunContext, Completion) { throw std::runtime_error(message); }, Context::Host(),
          {}, {out}, FnProperty::kAsync, 0, name);
  }
  return absl::InternalError("unreachable");
}

// The error carries the function's message (and, where it returned a
// status, its code).
::testing::AssertionResult IsTheError(const absl::Status& status, Failure failure,
                                      const std::string& message) {
  if (status.ok()) return ::testing::AssertionFailure() << "OK instead of the error";
  if (std::string(status.message()).find(message) == std::string::npos) {
    return ::testing::AssertionFailure() << status << " lacks \"" << message << "\"";
  }
  const bool has_code = failure == Failure::kReturnsError ||
                        failure == Failure::kCompletesWithError ||
                        failure == Failure::kForeignThreadError;
  if (has_code && status.code() != absl::StatusCode::kDataLoss) {
    return ::testing::AssertionFailure() << status << " lost the code DATA_LOSS";
  }
  return ::testing::AssertionSuccess();
}

class EngineErrors : public ::testing::TestWithParam<std::tuple<Kind, Failure>> {
 protected:
  Kind kind() const { return std::get<0>(GetParam()); }
  Failure failure() const { return std::get<1>(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(
    KindsAndFailures, EngineErrors,
    ::testing::Combine(::testing::Values(Kind::kNaive, Kind::kThreaded),
                       ::testing::Values(Failure::kReturnsError, Failure::kThrows,
                                         Failure::kCompletesWithError, Failure::kForeignThreadError,
                                         Failure::kAsyncThrows)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == Kind::kNaive ? "Naive" : "Threaded") + "_" +
             FailureName(std::get<1>(info.param));
    });

// a <- fails; b <- f(a); c <- f(b); a <- g(); e <- f(d); nothing <- noskip(a).
// Downstream of a is skipped and inherits the error; unrelated work runs;
// the kNoSkip function runs; every wait reports the error, every time.
TEST_P(EngineErrors, FailurePoisonsWrittenVarsAndDownstream) {
  auto engine = MakeEngine(kind());
  ForeignThreads threads;
  VarHandle a = engine->NewVariable(), b = engine->NewVariable(), c = engine->NewVariable();
  VarHandle d = engine->NewVariable(), e = engine->NewVariable(), f = engine->NewVariable();
  const std::string message = "boom-" + FailureName(failure());
  std::atomic<bool> ran_b{false}, ran_c{false}, ran_rewrite{false}, ran_e{false}, ran_noskip{false};
  auto flag = [](std::atomic<bool>& ran) {
    return [&ran](RunContext) {
      ran = true;
      return absl::OkStatus();
    };
  };
  const EngineStats before = engine->Stats();
  ASSERT_TRUE(IsOk(PushFailing(*engine, failure(), a, message, threads)));
  ASSERT_TRUE(IsOk(engine->PushSync(flag(ran_b), Context::Host(), {a}, {b}, FnProperty::kNormal, 0,
                                    "b_from_a")));
  ASSERT_TRUE(IsOk(engine->PushSync(flag(ran_c), Context::Host(), {b, d}, {c}, FnProperty::kNormal,
                                    0, "c_from_b")));
  ASSERT_TRUE(IsOk(engine->PushSync(flag(ran_rewrite), Context::Host(), {}, {a},
                                    FnProperty::kNormal, 0, "rewrite_a")));
  ASSERT_TRUE(IsOk(engine->PushSync(flag(ran_e), Context::Host(), {d}, {e}, FnProperty::kNormal, 0,
                                    "e_from_d")));
  ASSERT_TRUE(IsOk(engine->PushSync(flag(ran_noskip), Context::Host(), {a}, {f},
                                    FnProperty::kNoSkip, 0, "cleanup")));

  WithDeadline("waits after a failure", engine.get(), [&] {
    EXPECT_TRUE(IsTheError(engine->WaitForAll(), failure(), message));
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(IsTheError(engine->WaitForVar(a), failure(), message)) << "wait #" << i;
    }
    EXPECT_TRUE(IsTheError(engine->WaitForVar(b), failure(), message));
    EXPECT_TRUE(IsTheError(engine->WaitForVar(c), failure(), message));
    EXPECT_TRUE(IsOk(engine->WaitForVar(d)));
    EXPECT_TRUE(IsOk(engine->WaitForVar(e)));
  });
  EXPECT_FALSE(ran_b.load()) << "a reader of a poisoned var ran";
  EXPECT_FALSE(ran_c.load()) << "a reader of an inherited poison ran";
  EXPECT_FALSE(ran_rewrite.load()) << "a writer of a poisoned var ran";
  EXPECT_TRUE(ran_e.load()) << "unrelated work was skipped";
  EXPECT_TRUE(ran_noskip.load()) << "a kNoSkip function was skipped";
  const EngineStats after = engine->Stats();
  EXPECT_EQ(after.failed - before.failed, 1);
  EXPECT_EQ(after.skipped - before.skipped, 3);
  EXPECT_EQ(after.double_completions, 0);

  // The first reader did not heal the var: work pushed after the waits is
  // still skipped, and the error is still there.
  std::atomic<bool> ran_late{false};
  ASSERT_TRUE(IsOk(engine->PushSync(flag(ran_late), Context::Host(), {a}, {}, FnProperty::kNormal,
                                    0, "late_reader")));
  EXPECT_TRUE(IsTheError(engine->WaitForVar(a), failure(), message));
  EXPECT_FALSE(ran_late.load());

  // The late reader was skipped since the last WaitForAll: that is reported
  // (nothing is lost silently), with the poison's error, once.
  EXPECT_TRUE(IsTheError(engine->WaitForAll(), failure(), message));
  EXPECT_TRUE(IsOk(engine->WaitForAll()));

  // The engine keeps working; unrelated work reports nothing.
  std::atomic<bool> ran_fresh{false};
  VarHandle fresh = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSync(flag(ran_fresh), Context::Host(), {d}, {fresh})));
  EXPECT_TRUE(IsOk(engine->WaitForVar(fresh)));
  EXPECT_TRUE(ran_fresh.load());
  EXPECT_TRUE(IsOk(engine->WaitForAll()));

  // ClearError heals a, and only a.
  ASSERT_TRUE(IsOk(engine->ClearError(a)));
  EXPECT_TRUE(IsOk(engine->WaitForVar(a)));
  std::atomic<bool> ran_after_clear{false};
  ASSERT_TRUE(IsOk(engine->PushSync(flag(ran_after_clear), Context::Host(), {a}, {a})));
  EXPECT_TRUE(IsOk(engine->WaitForVar(a)));
  EXPECT_TRUE(ran_after_clear.load());
  EXPECT_TRUE(IsTheError(engine->WaitForVar(b), failure(), message));
  threads.JoinAll();
}

// --- Per-kind error rules ---------------------------------------------------------

class EngineErrorRules : public ::testing::TestWithParam<Kind> {};
INSTANTIATE_TEST_SUITE_P(Kinds, EngineErrorRules, ::testing::Values(Kind::kNaive, Kind::kThreaded),
                         KindName);

// ClearError is an ordered write: functions pushed between the failure and
// the clear are skipped, those pushed after it run.
TEST_P(EngineErrorRules, ClearErrorTakesEffectInPushOrder) {
  auto engine = MakeEngine(GetParam());
  VarHandle v = engine->NewVariable();
  std::atomic<int> before_clear{0}, after_clear{0};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [](RunContext) {
        std::this_thread::sleep_for(10ms);
        return absl::AbortedError("failed write");
      },
      Context::Host(), {}, {v})));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        before_clear.fetch_add(1);
        return absl::OkStatus();
      },
      Context::Host(), {v}, {})));
  ASSERT_TRUE(IsOk(engine->ClearError(v)));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        after_clear.fetch_add(1);
        return absl::OkStatus();
      },
      Context::Host(), {v}, {})));
  EXPECT_TRUE(IsOk(engine->WaitForVar(v)));
  EXPECT_EQ(before_clear.load(), 0);
  EXPECT_EQ(after_clear.load(), 1);
  EXPECT_TRUE(HasError(engine->WaitForAll(), absl::StatusCode::kAborted, {"failed write"}));
}

// WaitForAll returns the first error since the previous WaitForAll, then OK.
TEST_P(EngineErrorRules, WaitForAllReturnsTheFirstErrorSinceThePreviousCall) {
  auto engine = MakeEngine(GetParam());
  VarHandle a = engine->NewVariable(), b = engine->NewVariable(), c = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::InternalError("first"); },
                                    Context::Host(), {}, {a})));
  EXPECT_FALSE(engine->WaitForVar(a).ok());
  ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::UnknownError("second"); },
                                    Context::Host(), {}, {b})));
  EXPECT_FALSE(engine->WaitForVar(b).ok());
  EXPECT_TRUE(HasError(engine->WaitForAll(), absl::StatusCode::kInternal, {"first"}));
  EXPECT_TRUE(IsOk(engine->WaitForAll())) << "WaitForAll reported an error twice";
  // a and b stay poisoned; WaitForAll is about errors, not var state.
  EXPECT_FALSE(engine->WaitForVar(a).ok());
  ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::OutOfRangeError("third"); },
                                    Context::Host(), {}, {c})));
  EXPECT_TRUE(HasError(engine->WaitForAll(), absl::StatusCode::kOutOfRange, {"third"}));
  EXPECT_TRUE(IsOk(engine->WaitForAll()));
}

// A kNoSkip function runs although the vars it reads and writes are
// poisoned (cleanup), e.g. to free a buffer.
TEST_P(EngineErrorRules, NoSkipFunctionsRunOnPoisonedVars) {
  auto engine = MakeEngine(GetParam());
  VarHandle v = engine->NewVariable(), w = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::InternalError("bad"); },
                                    Context::Host(), {}, {v, w})));
  std::atomic<int> ran{0};
  auto count = [&ran](RunContext) {
    ran.fetch_add(1);
    return absl::OkStatus();
  };
  ASSERT_TRUE(IsOk(engine->PushSync(count, Context::Host(), {v}, {}, FnProperty::kNoSkip)));
  ASSERT_TRUE(IsOk(engine->PushSync(count, Context::Host(), {}, {w}, FnProperty::kNoSkip)));
  ASSERT_TRUE(IsOk(engine->PushSync(count, Context::Host(), {v}, {w})));  // Skipped.
  EXPECT_FALSE(engine->WaitForVar(w).ok());
  EXPECT_FALSE(engine->WaitForVar(v).ok());
  EXPECT_EQ(ran.load(), 2);
  EXPECT_FALSE(engine->WaitForAll().ok());
}

// Deleting a poisoned var still runs its function (it frees the resource)
// and clears the poison: the engine is left clean.
TEST_P(EngineErrorRules, DeletingAPoisonedVarRunsItsFunction) {
  auto engine = MakeEngine(GetParam());
  VarHandle v = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSync([](RunContext) { return absl::InternalError("bad"); },
                                    Context::Host(), {}, {v})));
  std::atomic<bool> freed{false};
  ASSERT_TRUE(IsOk(engine->DeleteVariable(
      [&freed](RunContext) {
        freed = true;
        return absl::OkStatus();
      },
      Context::Host(), v)));
  EXPECT_TRUE(HasError(engine->WaitForAll(), absl::StatusCode::kInternal, {"bad"}));
  EXPECT_TRUE(freed.load()) << "the delete function of a poisoned var was skipped";
  EXPECT_TRUE(IsOk(engine->WaitForAll()));
}

// A reusable operator that failed once does not taint its later pushes
// (MXNet's trap 6): after ClearError the next push runs and succeeds.
TEST_P(EngineErrorRules, AFailedOperatorDoesNotTaintItsLaterPushes) {
  auto engine = MakeEngine(GetParam());
  VarHandle v = engine->NewVariable();
  std::atomic<int> calls{0};
  absl::StatusOr<OperatorHandle> op = engine->NewOperator(
      [&calls](RunContext, Completion done) {
        done(calls.fetch_add(1) == 0 ? absl::InternalError("first run fails") : absl::OkStatus());
      },
      {}, {v}, FnProperty::kNormal, "flaky");
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(IsOk(engine->Push(*op, Context::Host())));
  EXPECT_TRUE(HasError(engine->WaitForVar(v), absl::StatusCode::kInternal, {"first run fails"}));
  ASSERT_TRUE(IsOk(engine->ClearError(v)));
  ASSERT_TRUE(IsOk(engine->Push(*op, Context::Host())));
  EXPECT_TRUE(IsOk(engine->WaitForVar(v)));
  EXPECT_EQ(calls.load(), 2);
  ASSERT_TRUE(IsOk(engine->DeleteOperator(*op)));
  EXPECT_FALSE(engine->WaitForAll().ok());  // The first failure, reported once.
  EXPECT_TRUE(IsOk(engine->WaitForAll()));
}

// A second call of a completion is reported (Stats and WaitForAll), does not
// crash, and does not change the var: its error is not applied.
TEST_P(EngineErrorRules, DoubleCompletionIsReportedNotACrash) {
  auto engine = MakeEngine(GetParam());
  VarHandle v = engine->NewVariable();
  ForeignThreads threads;
  uint64_t value = 0;
  ASSERT_TRUE(IsOk(engine->PushAsync(
      [&](RunContext, Completion done) {
        value = 42;
        Completion copy = done;
        done();
        copy(absl::InternalError("second completion"));  // A copy shares the completion.
      },
      Context::Host(), {}, {v}, FnProperty::kAsync, 0, "completes_twice")));
  // And a second completion from a foreign thread, after the first.
  ASSERT_TRUE(IsOk(engine->PushAsync(
      [&](RunContext, Completion done) {
        done();
        threads.Start([done] {
          std::this_thread::sleep_for(2ms);
          done();
        });
      },
      Context::Host(), {v}, {}, FnProperty::kAsync, 0, "completes_twice_late")));
  EXPECT_TRUE(IsOk(engine->WaitForVar(v))) << "a second completion changed the var";
  threads.JoinAll();
  EXPECT_TRUE(WaitUntil([&] { return engine->Stats().double_completions == 2; }))
      << "double completions counted: " << engine->Stats().double_completions;
  EXPECT_TRUE(HasError(engine->WaitForAll(), absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(value, 42u);
  // The engine keeps working.
  std::atomic<bool> ran{false};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&ran](RunContext) {
        ran = true;
        return absl::OkStatus();
      },
      Context::Host(), {v}, {v})));
  EXPECT_TRUE(IsOk(engine->WaitForVar(v)));
  EXPECT_TRUE(ran.load());
  EXPECT_TRUE(IsOk(engine->WaitForAll()));
}

// A completion called from a foreign thread lets WaitForAll return; the
// program may then destroy the engine at once, while that thread is still
// on its way out of the call, and copies of the completion may be
// destroyed after the engine (they hold nothing of it). Many short engine
// lives; ASan and TSan report any touch of the freed engine.
TEST_P(EngineErrorRules, ACompletionMayOutliveItsEngine) {
  const int lives = kUnderTsan ? 100 : 400;
  for (int life = 0; life < lives; ++life) {
    ForeignThreads threads;
    std::atomic<bool> engine_gone{false};
    {
      auto engine = MakeEngine(GetParam());
      VarHandle v = engine->NewVariable();
      ASSERT_TRUE(IsOk(engine->PushAsync(
          [&](RunContext, Completion done) {
            threads.Start([done, &engine_gone, life] {
              [[maybe_unused]] Completion kept =
                  done;  // Destroyed after the engine, every other life.
              done();
              if (life % 2 == 0) {
                while (!engine_gone.load()) std::this_thread::yield();
              }
            });
          },
          Context::Host(), {}, {v}, FnProperty::kAsync, 0, "completed_elsewhere")));
      ASSERT_TRUE(IsOk(engine->WaitForAll())) << "life " << life;
    }
    engine_gone = true;
  }
}

// An async function that completes and then throws (MXNet's trap 7) is not
// completed twice into a crash: the engine reports something and goes on.
TEST_P(EngineErrorRules, AsyncFunctionThatCompletesThenThrows) {
  auto engine = MakeEngine(GetParam());
  VarHandle v = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushAsync(
      [](RunContext, Completion done) {
        done();
        throw std::runtime_error("thrown after completing");
      },
      Context::Host(), {}, {v}, FnProperty::kAsync, 0, "completes_then_throws")));
  WithDeadline("wait after complete-then-throw", engine.get(), [&] {
    (void)engine->WaitForVar(v);
    EXPECT_FALSE(engine->WaitForAll().ok()) << "the exception was lost silently";
  });
  VarHandle fresh = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSync(Noop, Context::Host(), {}, {fresh})));
  EXPECT_TRUE(IsOk(engine->WaitForVar(fresh)));
}

// Errors in many independent chains at once, from both worker threads and
// foreign threads: each chain's vars get their own error, nothing else.
TEST(ThreadedEngineErrors, ConcurrentFailuresStayInTheirChains) {
  EngineOptions options;
  options.cpu_workers = 2;
  auto engine = MakeEngine(Kind::kThreaded, options);
  ForeignThreads threads;
  constexpr int kChains = 64;
  std::vector<VarHandle> heads, tails;
  std::atomic<int> tail_ran{0};
  for (int i = 0; i < kChains; ++i) {
    VarHandle head = engine->NewVariable(), tail = engine->NewVariable();
    heads.push_back(head);
    tails.push_back(tail);
    const bool fail = i % 3 == 0;
    const std::string message = "chain " + std::to_string(i);
    if (i % 2 == 0) {
      ASSERT_TRUE(IsOk(engine->PushSync(
          [fail, message](RunContext) {
            return fail ? absl::InternalError(message) : absl::OkStatus();
          },
          Context::Host(), {}, {head})));
    } else {
      ASSERT_TRUE(IsOk(engine->PushAsync(
          [fail, message, &threads](RunContext, Completion done) {
            threads.Start([fail, message, done] {
              done(fail ? absl::InternalError(message) : absl::OkStatus());
            });
          },
          Context::Host(), {}, {head})));
    }
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&tail_ran](RunContext) {
          tail_ran.fetch_add(1);
          return absl::OkStatus();
        },
        Context::Host(), {head}, {tail})));
  }
  int failed = 0;
  for (int i = 0; i < kChains; ++i) {
    const absl::Status status = engine->WaitForVar(tails[i]);
    if (i % 3 == 0) {
      ++failed;
      EXPECT_TRUE(HasError(status, absl::StatusCode::kInternal, {"chain " + std::to_string(i)}));
    } else {
      EXPECT_TRUE(IsOk(status)) << "chain " << i;
    }
  }
  EXPECT_EQ(tail_ran.load(), kChains - failed);
  EXPECT_FALSE(engine->WaitForAll().ok());
  EXPECT_TRUE(IsOk(engine->WaitForAll()));
  threads.JoinAll();
}

}  // namespace
}  // namespace rill::engine
