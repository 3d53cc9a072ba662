#include "tests/conformance/conformance.h"

#include <cctype>

namespace rill::conformance {

std::vector<Device> AllDevices() {
  std::vector<Device> devices;
  for (Platform* platform : PlatformManager::Default().AvailablePlatforms()) {
    for (int i = 0; i < platform->VisibleDeviceCount(); ++i) devices.push_back({platform, i});
  }
  return devices;
}

void PrintTo(const Device& device, std::ostream* os) {
  *os << device.platform->Name() << ":" << device.ordinal;
}

std::string DeviceTestName(const ::testing::TestParamInfo<Device>& info) {
  std::string name = info.param.platform->Name();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name + "_" + std::to_string(info.param.ordinal);
}

absl::Status RequireFeature(StreamExecutor* executor, Feature feature,
                            const std::function<absl::Status()>& first_use) {
  absl::Status supported = executor->Supports(feature);
  if (supported.ok()) return supported;
  EXPECT_EQ(supported.code(), absl::StatusCode::kUnimplemented)
      << "Supports(" << FeatureName(feature) << ") must be OK or Unimplemented: " << supported;
  EXPECT_TRUE(testing::HasError(first_use(), absl::StatusCode::kUnimplemented))
      << "the backend declares " << FeatureName(feature)
      << " unsupported, so its first use must fail with Unimplemented";
  return supported;
}

void ConformanceTest::SetUp() {
  absl::StatusOr<StreamExecutor*> executor = platform()->ExecutorForDevice(GetParam().ordinal);
  ASSERT_TRUE(executor.ok()) << executor.status();
  executor_ = *executor;
  stream_ = NewStream();
}

}  // namespace rill::conformance
