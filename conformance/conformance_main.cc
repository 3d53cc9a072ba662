// main() of every conformance binary (rill_add_conformance_test): checks
// the platforms under test before any case, and bounds each case's time.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "rill/base/env_settings.h"
#include "rill/conformance/conformance.h"

namespace rill::conformance {
namespace {

// Ends the run, naming the case, when one case runs longer than the bound:
// a wait the suite does not bound itself (a backend's BlockHostUntilDone
// that never returns) then fails the run with the case's name instead of
// hanging it. Thread-safe.
class CaseWatchdog : public ::testing::EmptyTestEventListener {
 public:
  explicit CaseWatchdog(std::chrono::seconds limit) : limit_(limit) {
    thread_ = std::thread([this] { Watch(); });
  }
  ~CaseWatchdog() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void OnTestStart(const ::testing::TestInfo& info) override {
    std::lock_guard<std::mutex> lock(mu_);
    name_ = std::string(info.test_suite_name()) + "." + info.name();
    deadline_ = std::chrono::steady_clock::now() + limit_;
    running_ = true;
    cv_.notify_all();
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
    cv_.notify_all();
  }

 private:
  void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (!running_) {
        cv_.wait(lock);
        continue;
      }
      if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && running_ &&
          std::chrono::steady_clock::now() >= deadline_) {
        std::fprintf(stderr,
                     "\nconformance: %s did not finish in %lld s: a wait in it never returned. "
                     "Streams must run work asynchronously and finish it (StreamInterface in "
                     "rill/executor/stream_executor_interface.h). Ending the run "
                     "(RILL_CONFORMANCE_CASE_TIMEOUT_S sets the bound).\n",
                     name_.c_str(), static_cast<long long>(limit_.count()));
        std::fflush(stdout);
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }

  const std::chrono::seconds limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool running_ = false;
  std::string name_;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

// RILL_CONFORMANCE_CASE_TIMEOUT_S, 60 when unset; a value the table of
// settings refuses (base/env_settings.cc) is reported and 60 used.
std::chrono::seconds CaseTimeout() {
  const absl::StatusOr<std::optional<int64_t>> seconds = EnvInt("RILL_CONFORMANCE_CASE_TIMEOUT_S");
  if (!seconds.ok()) {
    std::fprintf(stderr, "conformance: %s; using 60\n",
                 std::string(seconds.status().message()).c_str());
    return std::chrono::seconds(60);
  }
  return std::chrono::seconds(seconds->value_or(60));
}

}  // namespace
}  // namespace rill::conformance

int main(int argc, char** argv) {
  // Before the suites are instantiated: their devices come from the
  // platforms registered then (an op suite's device list included).
  const absl::Status loaded = rill::conformance::internal::LoadPlugins();
  ::testing::InitGoogleTest(&argc, argv);
  // Not when gtest_discover_tests lists the cases at build time: a build
  // machine need not have the device (Conformance.PlatformsUnderTest makes
  // the same check when the cases run).
  const bool listing = ::testing::GTEST_FLAG(list_tests);
  if (!loaded.ok() && !listing) {
    std::fprintf(stderr, "conformance: %s\n", std::string(loaded.message()).c_str());
    return 1;
  }
  if (absl::Status s = rill::conformance::internal::CheckPlatforms(); !s.ok() && !listing) {
    std::fprintf(stderr, "conformance: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  // Owned by GoogleTest's listener list once appended; released before the
  // run ends so that its thread is joined here.
  auto* watchdog = new rill::conformance::CaseWatchdog(rill::conformance::CaseTimeout());
  ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
  listeners.Append(watchdog);
  const int rc = RUN_ALL_TESTS();
  delete listeners.Release(watchdog);
  return rc;
}
