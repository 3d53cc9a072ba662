#ifndef RILL_TESTING_STATUS_TESTING_H_
#define RILL_TESTING_STATUS_TESTING_H_

// Small helpers for tests of Rill and of its backends and plugins (installed
// with rill::testing; the conformance suite uses them): status checks that
// print the status on failure, a value-or-fail for test set-up, a gate that
// holds a stream's worker until the test opens it, and a deadline for calls
// that could deadlock.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace rill::testing {

// Success when `status` has `code` and its message contains every part.
//   EXPECT_TRUE(HasError(s, absl::StatusCode::kNotFound, {"ordinal 7", "0..1"}));
inline ::testing::AssertionResult HasError(const absl::Status& status, absl::StatusCode code,
                                           std::initializer_list<std::string_view> parts = {}) {
  if (status.code() != code) {
    return ::testing::AssertionFailure()
           << "expected code " << absl::StatusCodeToString(code) << ", got " << status;
  }
  const std::string message(status.message());
  for (std::string_view part : parts) {
    if (message.find(part) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message of " << status << " lacks \"" << std::string(part) << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult IsOk(const absl::Status& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status;
}

// Thrown by Must. GoogleTest catches it and fails the running test with
// its message; the other tests of the binary still run.
class MustFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The value of `value`; otherwise the running test fails naming `what` and
// the status (by throwing MustFailure out of the test body or fixture). For
// set-up steps (allocations, streams) whose failure makes the rest moot,
// also inside helpers that return values, where ASSERT_* cannot be used.
// Not for host callbacks: an exception there fails the stream, not the test.
template <typename T>
T Must(absl::StatusOr<T> value, std::string_view what = "set-up") {
  if (!value.ok()) {
    throw MustFailure(std::string(what) + " failed: " + value.status().ToString());
  }
  return std::move(value).value();
}

// Runs `fn` on its own thread and waits up to `timeout` for it. If it has
// not returned by then (a deadlock), prints `what`, calls `diagnose` (which
// may print more) and aborts the binary: a hang becomes a failure that says
// what hung instead of a ctest timeout.
inline void WithDeadline(const std::string& what, std::function<void()> fn,
                         std::chrono::milliseconds timeout = std::chrono::seconds(20),
                         std::function<void()> diagnose = nullptr) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> future = done->get_future();
  std::thread runner([fn = std::move(fn), done] {
    fn();
    done->set_value();
  });
  if (future.wait_for(timeout) != std::future_status::ready) {
    std::fprintf(stderr, "DEADLOCK: %s did not finish in %lld ms\n", what.c_str(),
                 static_cast<long long>(timeout.count()));
    if (diagnose) diagnose();
    std::fflush(stderr);
    std::abort();
  }
  runner.join();
}

// A latch a host callback blocks on until the test opens it. Shared by
// pointer, so a callback still blocked when a test fails keeps it alive.
// The wait is bounded (`timeout`, 60 s unless given): a backend that runs
// the callback inside Then* (synchronously, on the test's own thread) makes
// the test fail after the bound instead of hanging it. Thread-safe.
//   auto gate = Gate::Make();
//   stream->ThenDoHostCallback([gate] { gate->Wait(); });
//   ... check that later work has not run ...
//   gate->Open();
class Gate {
 public:
  static std::shared_ptr<Gate> Make(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    auto gate = std::make_shared<Gate>();
    gate->timeout_ = timeout;
    return gate;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // True once the gate is open; false (with a line on stderr) when it was
  // not opened within the bound.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, timeout_, [this] { return open_; })) return true;
    std::fprintf(stderr,
                 "Gate: not opened within %lld ms. If a stream ran this callback inside "
                 "ThenDoHostCallback, on the caller's thread, the test could not open it: "
                 "streams must run their work asynchronously.\n",
                 static_cast<long long>(timeout_.count()));
    return false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  std::chrono::milliseconds timeout_{60000};
};

// Opens `gate` when it leaves scope, so a failing ASSERT never leaves a
// stream blocked (which would hang the stream's destructor). Declare it
// after the streams it guards.
class OpenOnExit {
 public:
  explicit OpenOnExit(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  ~OpenOnExit() { gate_->Open(); }
  OpenOnExit(const OpenOnExit&) = delete;
  OpenOnExit& operator=(const OpenOnExit&) = delete;

 private:
  std::shared_ptr<Gate> gate_;
};

}  // namespace rill::testing

#endif  // RILL_TESTING_STATUS_TESTING_H_
