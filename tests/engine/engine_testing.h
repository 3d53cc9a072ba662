#ifndef RILL_TESTS_ENGINE_ENGINE_TESTING_H_
#define RILL_TESTS_ENGINE_ENGINE_TESTING_H_

// Helpers shared by the engine tests: engine construction per kind, bounded
// waits (a broken engine fails a test instead of hanging it), a deadline
// guard for calls that could deadlock, and a latch.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/testing/status_testing.h"

namespace rill::engine::testing {

using Kind = EngineOptions::Kind;

inline std::string KindName(const ::testing::TestParamInfo<Kind>& info) {
  return info.param == Kind::kNaive ? "Naive" : "Threaded";
}

// Whether this binary runs under ThreadSanitizer (then sizes shrink).
constexpr bool kUnderTsan =
#if defined(__SANITIZE_THREAD__)
    true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

// An engine of `kind`; aborts the test binary if it cannot be created.
inline std::unique_ptr<Engine> MakeEngine(Kind kind, EngineOptions options = {}) {
  options.kind = kind;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(options);
  if (!engine.ok()) {
    ADD_FAILURE() << "Engine::Create failed: " << engine.status();
    std::abort();
  }
  return std::move(engine).value();
}

inline absl::Status Ok() { return absl::OkStatus(); }
// A function body that does nothing.
inline absl::Status Noop(RunContext) { return absl::OkStatus(); }

// Options with `cpu_workers` CPU workers.
inline EngineOptions Workers(int cpu_workers) {
  EngineOptions options;
  options.cpu_workers = cpu_workers;
  return options;
}

// Polls `done` until it holds or `timeout` passes; returns whether it held.
inline bool WaitUntil(const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// ::rill::testing::WithDeadline, printing the engine's DescribePending()
// when `fn` hangs.
inline void WithDeadline(const std::string& what, Engine* engine, std::function<void()> fn,
                         std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  ::rill::testing::WithDeadline(what, std::move(fn), timeout, [engine] {
    if (engine != nullptr) {
      std::fprintf(stderr, "DescribePending():\n%s\n", engine->DescribePending().c_str());
    }
  });
}

// A latch: Wait() blocks until Open(), or until `timeout` (then returns
// false, so a broken engine cannot hang a gated function forever).
// Shared by pointer so a function still blocked when a test fails keeps it
// alive. Thread-safe.
class Latch {
 public:
  static std::shared_ptr<Latch> Make() { return std::make_shared<Latch>(); }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool Wait(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return open_; });
  }
  bool is_open() {
    std::lock_guard<std::mutex> lock(mu_);
    return open_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Opens a latch when it leaves scope, so a failed ASSERT never leaves a
// worker blocked (which would hang the engine's destructor).
class OpenLatchOnExit {
 public:
  explicit OpenLatchOnExit(std::shared_ptr<Latch> latch) : latch_(std::move(latch)) {}
  ~OpenLatchOnExit() { latch_->Open(); }
  OpenLatchOnExit(const OpenLatchOnExit&) = delete;
  OpenLatchOnExit& operator=(const OpenLatchOnExit&) = delete;

 private:
  std::shared_ptr<Latch> latch_;
};

// Pushes a host function `name` that writes `writes` and blocks until
// `gate` opens, and waits until it has started: a worker is then busy and
// whatever the test pushes on `writes` next queues behind it.
//   auto gate = Latch::Make();
//   OpenLatchOnExit open_gate(gate);
//   ASSERT_TRUE(IsOk(PushHeld(*engine, gate, {v})));
inline absl::Status PushHeld(Engine& engine, std::shared_ptr<Latch> gate,
                             std::vector<VarHandle> writes, const std::string& name = "held") {
  auto started = std::make_shared<std::atomic<bool>>(false);
  absl::Status pushed = engine.PushSync(
      [gate = std::move(gate), started](RunContext) {
        started->store(true);
        gate->Wait();
        return absl::OkStatus();
      },
      Context::Host(), {}, writes, FnProperty::kNormal, 0, name);
  if (!pushed.ok()) return pushed;
  if (!WaitUntil([&] { return started->load(); })) {
    return absl::DeadlineExceededError(
        absl::StrCat("held function '", name, "' did not start in 10 s"));
  }
  return absl::OkStatus();
}

// Waits, with a timeout, until `count` reaches `target`: used inside engine
// functions to observe that two of them are running at the same time.
inline bool Rendezvous(std::atomic<int>& count, int target,
                       std::chrono::milliseconds timeout = std::chrono::seconds(2)) {
  count.fetch_add(1);
  return WaitUntil([&] { return count.load() >= target; }, timeout);
}

}  // namespace rill::engine::testing

#endif  // RILL_TESTS_ENGINE_ENGINE_TESTING_H_
