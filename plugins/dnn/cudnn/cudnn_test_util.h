#ifndef RILL_PLUGINS_DNN_CUDNN_CUDNN_TEST_UTIL_H_
#define RILL_PLUGINS_DNN_CUDNN_CUDNN_TEST_UTIL_H_

// Shared by the cudnn plugin's tests: a fixture on CUDA device 0 with the
// "cudnn" plugin and a stream -- skipped, with the cuda platform's
// Availability() reason, where there is no CUDA device -- device
// upload/download, and the tolerance check of the oneDNN plugin's tests
// (plugins/dnn/onednn/onednn_test_util.h; copied, since that header pulls in
// the host plugin).

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/plugins/dnn/cudnn/cudnn_dnn.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/plugins/dnn/dnn_test_reference.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill::testing {

// |got - ref| <= abs_tol + rel_tol |ref| for every element.
template <typename T>
::testing::AssertionResult AllNear(const char* what, const std::vector<T>& got,
                                   const std::vector<double>& ref, double abs_tol, double rel_tol) {
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

// Why CUDA tests cannot run here ("" when device 0 exists).
inline std::string NoCudaDeviceReason() {
  absl::StatusOr<Platform*> cuda = PlatformManager::Default().PlatformWithName("cuda");
  if (!cuda.ok()) return "no cuda platform: " + cuda.status().ToString();
  if ((*cuda)->VisibleDeviceCount() > 0) return "";
  const absl::Status why = (*cuda)->Availability();  // "no CUDA device: cudaGetDeviceCount: ...".
  return why.ok() ? std::string("no CUDA device: the cuda platform reports 0 devices")
                  : std::string(why.message());
}

// CUDA device 0, its "cudnn" plugin and a stream.
class CudnnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = NoCudaDeviceReason(); !why.empty()) GTEST_SKIP() << why;
    Platform* cuda = Must(PlatformManager::Default().PlatformWithName("cuda"));
    exec_ = Must(cuda->ExecutorForDevice(0));
    ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, CuDnn::kName)));
    dnn_ = exec_->AsDnn();
    ASSERT_NE(dnn_, nullptr);
    ASSERT_EQ(dnn_->Name(), "cudnn");
    stream_ = Must(exec_->CreateStream());
  }

  template <typename T>
  DeviceMemory<T> Upload(const std::vector<T>& host) {
    auto owned =
        std::make_shared<ScopedDeviceMemory<T>>(Must(exec_->AllocateOwnedArray<T>(host.size())));
    keep_.push_back(owned);
    stream_->ThenMemcpy(owned->ptr(), host.data(), host.size() * sizeof(T));
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return **owned;
  }
  // Filled with NaN, so unwritten outputs are caught.
  template <typename T = float>
  DeviceMemory<T> Output(size_t n) {
    return Upload(std::vector<T>(n, std::nan("")));
  }
  template <typename T>
  std::vector<T> Download(const DeviceMemory<T>& memory) {
    std::vector<T> host(memory.ElementCount());
    stream_->ThenMemcpy(host.data(), memory, memory.size());
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return host;
  }

  StreamExecutor* exec_ = nullptr;
  DnnSupport* dnn_ = nullptr;
  std::unique_ptr<Stream> stream_;
  std::vector<std::shared_ptr<void>> keep_;
};

}  // namespace rill::testing

#endif  // RILL_PLUGINS_DNN_CUDNN_CUDNN_TEST_UTIL_H_
