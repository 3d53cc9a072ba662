#ifndef RILL_TESTS_CONFORMANCE_CONFORMANCE_H_
#define RILL_TESTS_CONFORMANCE_CONFORMANCE_H_

// The conformance fixture: every case runs once per device of every
// registered platform with at least one device (PlatformManager::Default()),
// through the public interfaces of rill.h only. A new backend that links
// into this binary is tested with no extra code.

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "rill/rill.h"
#include "tests/testing/status_testing.h"

namespace rill::conformance {

// One device under test.
struct Device {
  Platform* platform;
  int ordinal;
};

// "host:0", so that ctest shows which device a case ran on.
void PrintTo(const Device& device, std::ostream* os);

// Every device of every available platform, in registration order.
std::vector<Device> AllDevices();
// "host_0": the platform name (non-alphanumerics as '_') and the ordinal.
std::string DeviceTestName(const ::testing::TestParamInfo<Device>& info);

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

}  // namespace rill::conformance

#endif  // RILL_TESTS_CONFORMANCE_CONFORMANCE_H_
