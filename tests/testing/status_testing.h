#ifndef RILL_TESTS_TESTING_STATUS_TESTING_H_
#define RILL_TESTS_TESTING_STATUS_TESTING_H_

// Small helpers shared by Rill's tests: status checks that print the status
// on failure, a value-or-abort for test set-up, a gate that holds a
// stream's worker until the test opens it, and a deadline for calls that
// could deadlock.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <initializer_list>
#include <memory>
#include <mutex>
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

// The value of `value`, or a fatal test-setup failure naming `what`. For
// set-up steps (allocations, streams) whose failure makes the rest moot.
template <typename T>
T Must(absl::StatusOr<T> value, std::string_view what = "set-up") {
  if (!value.ok()) {
    ADD_FAILURE() << std::string(what) << " failed: " << value.status();
    std::abort();
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
// Thread-safe.
//   auto gate = Gate::Make();
//   stream->ThenDoHostCallback([gate] { gate->Wait(); });
//   ... check that later work has not run ...
//   gate->Open();
class Gate {
 public:
  static std::shared_ptr<Gate> Make() { return std::make_shared<Gate>(); }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
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

#endif  // RILL_TESTS_TESTING_STATUS_TESTING_H_
