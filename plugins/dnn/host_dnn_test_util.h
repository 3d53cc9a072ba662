#ifndef RILL_PLUGINS_DNN_HOST_DNN_TEST_UTIL_H_
#define RILL_PLUGINS_DNN_HOST_DNN_TEST_UTIL_H_

// Shared by the tests of the host DNN plugins (the naive references are in
// plugins/dnn/dnn_test_reference.h): a fixture parameterized over the host
// devices (RILL_HOST_DEVICES=2 from ctest) with one plugin selected alone
// (no fallback, so an unsupported call fails), device upload/download, and
// a tolerance check that prints the index, value and reference.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/platform/host/host_platform.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/plugins/dnn/dnn_test_reference.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill::testing {

// |got - ref| <= abs_tol + rel_tol |ref| for every element.
inline ::testing::AssertionResult AllNear(const char* what, const std::vector<float>& got,
                                          const std::vector<double>& ref, double abs_tol,
                                          double rel_tol) {
  if (got.size() != ref.size()) {
    return ::testing::AssertionFailure()
           << what << ": " << got.size() << " values, reference " << ref.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = abs_tol + rel_tol * std::fabs(ref[i]);
    if (!(std::fabs(got[i] - ref[i]) <= tol)) {
      return ::testing::AssertionFailure() << what << "[" << i << "] = " << got[i] << ", reference "
                                           << ref[i] << ", tolerance " << tol;
    }
  }
  return ::testing::AssertionSuccess();
}

// One host device (the parameter), the DNN plugin `plugin` alone, and a
// stream.
class HostDnnTest : public ::testing::TestWithParam<int> {
 protected:
  explicit HostDnnTest(std::string plugin) : plugin_(std::move(plugin)) {}

  void SetUp() override {
    Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
    if (GetParam() >= host->VisibleDeviceCount()) {
      GTEST_SKIP() << "host device " << GetParam() << " is not visible (RILL_HOST_DEVICES)";
    }
    exec_ = Must(host->ExecutorForDevice(GetParam()));
    ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, plugin_)));
    dnn_ = exec_->AsDnn();
    ASSERT_NE(dnn_, nullptr);
    ASSERT_EQ(dnn_->Name(), plugin_);
    stream_ = Must(exec_->CreateStream());
  }

  DeviceMemory<float> Upload(const std::vector<float>& host) {
    auto owned = std::make_shared<ScopedDeviceMemory<float>>(
        Must(exec_->AllocateOwnedArray<float>(host.size())));
    keep_.push_back(owned);
    stream_->ThenMemcpy(owned->ptr(), host.data(), host.size() * sizeof(float));
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return **owned;
  }
  // Filled with a NaN pattern, so unwritten outputs are caught.
  DeviceMemory<float> Output(size_t n) { return Upload(std::vector<float>(n, std::nanf(""))); }
  std::vector<float> Download(const DeviceMemory<float>& memory) {
    std::vector<float> host(memory.ElementCount());
    stream_->ThenMemcpy(host.data(), memory, memory.size());
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return host;
  }

  const std::string plugin_;
  StreamExecutor* exec_ = nullptr;
  DnnSupport* dnn_ = nullptr;
  std::unique_ptr<Stream> stream_;
  std::vector<std::shared_ptr<void>> keep_;
};

inline std::string DeviceName(const ::testing::TestParamInfo<int>& info) {
  return "host" + std::to_string(info.param);
}

}  // namespace rill::testing

#endif  // RILL_PLUGINS_DNN_HOST_DNN_TEST_UTIL_H_
