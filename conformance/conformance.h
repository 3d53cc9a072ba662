#ifndef RILL_CONFORMANCE_CONFORMANCE_H_
#define RILL_CONFORMANCE_CONFORMANCE_H_

// The conformance suite (rill::conformance): every case runs once per
// device of the platforms a binary tests, through the public interfaces of
// rill.h only. A backend is tested by one CMake line,
//
//   rill_add_conformance_test(NAME mine_conformance_test
//                             BACKENDS rill::mine PLATFORMS mine)
//
// which builds a binary of these cases (main() included) for platform
// "mine" and registers its cases with ctest. The binary fails at once,
// before any case, when a named platform is not registered or has no
// device; a case that waits for a stream fails after a bound instead of
// hanging (RILL_CONFORMANCE_CASE_TIMEOUT_S, default 60, ends the run with
// the case's name if a wait outside the suite's own bounds hangs).
//
// A backend declares what it lacks through StreamExecutorInterface::
// Supports: those cases then check that the first use fails with
// Unimplemented and skip. A backend whose kernels are not host functions
// provides the suite's kernels through rill/conformance/suite_kernels.h.

#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill::conformance {

// One device under test.
struct Device {
  Platform* platform;
  int ordinal;
};

// "host:0", so that ctest shows which device a case ran on.
void PrintTo(const Device& device, std::ostream* os);

// Every device of the platforms this binary tests, in the order named.
std::vector<Device> AllDevices();
// "host_0": the platform name (non-alphanumerics as '_') and the ordinal.
std::string DeviceTestName(const ::testing::TestParamInfo<Device>& info);

// How long the suite waits for a stream's work that the test itself holds
// back (a Gate): past it the case fails.
inline constexpr std::chrono::milliseconds kBoundedWait = std::chrono::seconds(10);

// OK when `executor` supports `feature`. Otherwise the backend declared it
// unsupported: checks that `first_use` (the call the case would make first)
// fails with Unimplemented, as the contract requires, and returns the
// declared reason for the case to skip with:
//   if (absl::Status s = RequireFeature(exec, Feature::kTimers, [&] {
//         return Timer::Create(exec).status(); }); !s.ok()) GTEST_SKIP() << s;
absl::Status RequireFeature(StreamExecutor* executor, Feature feature,
                            const std::function<absl::Status()>& first_use);

class ConformanceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override;

  Platform* platform() const { return GetParam().platform; }
  // OK when the platform has `count` devices here; otherwise the reason to
  // skip, with the platform's own hint for getting more (MoreDevicesHint).
  absl::Status RequireDevices(int count) const;
  // A new stream on the device under test.
  std::unique_ptr<Stream> NewStream() { return NewStreamOn(executor_); }
  static std::unique_ptr<Stream> NewStreamOn(StreamExecutor* executor) {
    return testing::Must(executor->CreateStream(), "CreateStream");
  }
  template <typename T>
  ScopedDeviceMemory<T> Allocate(uint64_t count) {
    return testing::Must(executor_->AllocateOwnedArray<T>(count), "AllocateOwnedArray");
  }

  StreamExecutor* executor_ = nullptr;
  std::unique_ptr<Stream> stream_;
};

namespace internal {
// The platforms a binary tests, comma-separated; defined by the source file
// rill_add_conformance_test generates. Required ones must be registered
// with at least one device; optional ones are tested where they have one.
extern const char* const kRequiredPlatforms;
extern const char* const kOptionalPlatforms;
// The run-time plugin files to load first, ':'-separated (PLUGINS).
extern const char* const kPlugins;
// Loads kPlugins into PlatformManager::Default(); the first failure.
absl::Status LoadPlugins();
// OK when every required platform is registered and has a device;
// otherwise FailedPrecondition saying what to link or set.
absl::Status CheckPlatforms();
}  // namespace internal

}  // namespace rill::conformance

#endif  // RILL_CONFORMANCE_CONFORMANCE_H_
