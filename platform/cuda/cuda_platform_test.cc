// The CUDA backend's own cases, beyond the conformance suite (conformance/). The first group
// runs everywhere (no device: the platform's reason, error mapping, interop
// checks); the rest needs a GPU and skips with the platform's reason when
// there is none.

#include "rill/platform/cuda/cuda_platform.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

extern const unsigned char rill_cuda_test_fatbin[];
extern const std::size_t rill_cuda_test_fatbin_size;

namespace rill {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

Platform* Cuda() { return Must(PlatformManager::Default().PlatformWithName("cuda")); }

TEST(CudaStatusTest, NamesTextAndCodes) {
  EXPECT_TRUE(IsOk(CudaStatus(cudaSuccess, "x")));
  EXPECT_TRUE(HasError(CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc"),
                       absl::StatusCode::kResourceExhausted,
                       {"cudaMalloc", "cudaErrorMemoryAllocation", "(2)", "out of memory"}));
  EXPECT_TRUE(HasError(CudaStatus(cudaErrorInsufficientDriver, "cudaGetDeviceCount"),
                       absl::StatusCode::kUnavailable, {"cudaErrorInsufficientDriver", "(35)"}));
  EXPECT_TRUE(HasError(CudaStatus(cudaErrorInvalidConfiguration, "cudaLaunchKernel"),
                       absl::StatusCode::kInvalidArgument, {"cudaErrorInvalidConfiguration"}));
  EXPECT_TRUE(HasError(CudaStatus(cudaErrorSymbolNotFound, "cudaLibraryGetKernel"),
                       absl::StatusCode::kNotFound, {"cudaErrorSymbolNotFound"}));
  EXPECT_TRUE(HasError(CudaStatus(cudaErrorIllegalAddress, "cudaStreamSynchronize"),
                       absl::StatusCode::kInternal, {"cudaErrorIllegalAddress"}));
}

TEST(CudaPlatformNoDeviceTest, ReportsWhyThereIsNoDevice) {
  Platform* cuda = Cuda();
  EXPECT_EQ(cuda->Name(), "cuda");
  if (cuda->VisibleDeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_TRUE(
      HasError(cuda->Availability(), absl::StatusCode::kUnavailable, {"no CUDA device", "cuda"}));
  // Asking for a device anyway: Unavailable with the reason, never a crash.
  EXPECT_TRUE(HasError(cuda->ExecutorForDevice(0).status(), absl::StatusCode::kUnavailable,
                       {"cuda", "no CUDA device"}));
  EXPECT_TRUE(HasError(cuda->DescriptionForDevice(0).status(), absl::StatusCode::kUnavailable));
}

TEST(CudaPlatformNoDeviceTest, NegativeOrdinal) {
  EXPECT_TRUE(
      HasError(Cuda()->ExecutorForDevice(-1).status(), absl::StatusCode::kInvalidArgument, {"-1"}));
}

TEST(CudaInteropTest, RejectsExecutorsAndStreamsOfOtherPlatforms) {
  StreamExecutor* host =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  EXPECT_TRUE(HasError(CudaDeviceOrdinal(host).status(), absl::StatusCode::kInvalidArgument,
                       {"not a CUDA executor"}));
  std::unique_ptr<Stream> stream = Must(host->CreateStream());
  EXPECT_TRUE(HasError(CudaPluginStream(host, stream.get(), "cublas", "AsBlas()").status(),
                       absl::StatusCode::kInvalidArgument, {"not a CUDA stream", "host"}));
  EXPECT_TRUE(HasError(CudaPluginStream(host, nullptr, "cublas", "AsBlas()").status(),
                       absl::StatusCode::kInvalidArgument, {"stream is null"}));
}

// --- With a device.

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Cuda()->VisibleDeviceCount() == 0) GTEST_SKIP() << Cuda()->Availability();
    executor_ = Must(Cuda()->ExecutorForDevice(0));
  }
  KernelSpec TestSpec(const char* name) {
    KernelSpec spec(name);
    spec.AddCudaFatbin(rill_cuda_test_fatbin, rill_cuda_test_fatbin_size);
    return spec;
  }
  StreamExecutor* executor_ = nullptr;
};

TEST_F(CudaDeviceTest, DescribesTheDevice) {
  const DeviceDescription& d = executor_->GetDeviceDescription();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.memory_bytes, 0);
  EXPECT_GT(d.compute_units, 0);
  EXPECT_TRUE(d.extra.contains("compute capability"));
  EXPECT_TRUE(d.extra.contains("pci bus id"));
  EXPECT_NE(d.platform_version.find("CUDA runtime"), std::string::npos);
}

TEST_F(CudaDeviceTest, OrdinalOutOfRange) {
  const int n = Cuda()->VisibleDeviceCount();
  EXPECT_TRUE(HasError(Cuda()->ExecutorForDevice(n).status(), absl::StatusCode::kInvalidArgument,
                       {std::to_string(n)}));
}

TEST_F(CudaDeviceTest, AllocationBeyondDeviceMemory) {
  const uint64_t too_much =
      static_cast<uint64_t>(executor_->GetDeviceDescription().memory_bytes) * 2;
  EXPECT_TRUE(HasError(executor_->Allocate(too_much).status(), absl::StatusCode::kResourceExhausted,
                       {std::to_string(too_much)}));
}

TEST_F(CudaDeviceTest, KernelSpecWithoutCudaVariant) {
  KernelSpec spec("host_only");
  spec.AddOpenClSource("__kernel void host_only() {}");
  EXPECT_TRUE(HasError(executor_->LoadKernel(spec).status(), absl::StatusCode::kUnimplemented,
                       {"host_only", "no CUDA variant"}));
}

TEST_F(CudaDeviceTest, KernelNameNotInTheImage) {
  EXPECT_TRUE(HasError(executor_->LoadKernel(TestSpec("no_such_kernel")).status(),
                       absl::StatusCode::kNotFound, {"no_such_kernel"}));
}

TEST_F(CudaDeviceTest, LaunchAxpyAndCheck) {
  constexpr uint64_t n = 100003;
  auto kernel =
      Must(executor_->LoadKernel<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(
          TestSpec("axpy")));
  std::vector<float> x(n), y(n), out(n);
  for (uint64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 97);
    y[i] = static_cast<float>(i % 13);
  }
  ScopedDeviceMemory<float> dx = Must(executor_->AllocateOwnedArray<float>(n));
  ScopedDeviceMemory<float> dy = Must(executor_->AllocateOwnedArray<float>(n));
  std::unique_ptr<Stream> s = Must(executor_->CreateStream());
  s->ThenMemcpy(dx.ptr(), x.data(), n * sizeof(float))
      .ThenMemcpy(dy.ptr(), y.data(), n * sizeof(float))
      .ThenLaunch(ThreadDim(256), BlockDim((n + 255) / 256), kernel, 2.0f, *dx, *dy, n)
      .ThenMemcpy(out.data(), *dy, n * sizeof(float));
  ASSERT_TRUE(IsOk(s->BlockHostUntilDone()));
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], y[i] + 2.0f * x[i]) << i;
}

TEST_F(CudaDeviceTest, ArgumentCountAndSizeMismatch) {
  std::unique_ptr<Kernel> kernel = Must(executor_->LoadKernel(TestSpec("axpy")));
  ScopedDeviceMemory<float> d = Must(executor_->AllocateOwnedArray<float>(4));
  std::unique_ptr<Stream> s = Must(executor_->CreateStream());
  s->ThenLaunch(ThreadDim(1), BlockDim(1), *kernel, KernelArgs{PackKernelArg(1.0f)});
  EXPECT_TRUE(
      HasError(s->status(), absl::StatusCode::kInvalidArgument, {"axpy", "takes 4", "got 1"}));
  std::unique_ptr<Stream> s2 = Must(executor_->CreateStream());
  s2->ThenLaunch(ThreadDim(1), BlockDim(1), *kernel,
                 KernelArgs{PackKernelArg(1.0), PackKernelArg(*d), PackKernelArg(*d),
                            PackKernelArg(uint64_t{4})});
  EXPECT_TRUE(HasError(s2->status(), absl::StatusCode::kInvalidArgument,
                       {"argument 0", "8 bytes", "4 bytes"}));
}

TEST_F(CudaDeviceTest, LaunchDimensionsOverTheLimits) {
  auto kernel =
      Must(executor_->LoadKernel<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(
          TestSpec("axpy")));
  ScopedDeviceMemory<float> d = Must(executor_->AllocateOwnedArray<float>(4));
  std::unique_ptr<Stream> s = Must(executor_->CreateStream());
  s->ThenLaunch(ThreadDim(executor_->GetDeviceDescription().max_threads_per_block + 1), BlockDim(1),
                kernel, 1.0f, *d, *d, uint64_t{4});
  EXPECT_TRUE(HasError(s->status(), absl::StatusCode::kInvalidArgument));
}

TEST_F(CudaDeviceTest, Memset32WithMixedBytes) {
  constexpr uint64_t n = 4099;
  ScopedDeviceMemory<uint32_t> d = Must(executor_->AllocateOwnedArray<uint32_t>(n));
  std::vector<uint32_t> out(n);
  std::unique_ptr<Stream> s = Must(executor_->CreateStream());
  s->ThenMemset32(d.ptr(), 0xdeadbeef, n * 4).ThenMemcpy(out.data(), *d, n * 4);
  ASSERT_TRUE(IsOk(s->BlockHostUntilDone()));
  for (uint32_t v : out) ASSERT_EQ(v, 0xdeadbeefu);
}

TEST_F(CudaDeviceTest, HostCallbackRunsAfterDeviceWorkAndMayCallCuda) {
  auto spin = Must(executor_->LoadKernel<int64_t, DeviceMemory<int>>(TestSpec("spin")));
  ScopedDeviceMemory<int> flag = Must(executor_->AllocateOwnedArray<int>(1));
  std::unique_ptr<Stream> s = Must(executor_->CreateStream());
  int seen = -1;
  s->ThenMemset32(flag.ptr(), 0, 4)
      .ThenLaunch(ThreadDim(1), BlockDim(1), spin, int64_t{20'000'000}, *flag)
      .ThenDoHostCallback([&] {
        // CUDA calls are allowed here: the callback does not run on CUDA's thread.
        EXPECT_TRUE(IsOk(executor_->SynchronousMemcpy(&seen, *flag, 4)));
      });
  ASSERT_TRUE(IsOk(s->BlockHostUntilDone()));
  EXPECT_EQ(seen, 1);
}

TEST_F(CudaDeviceTest, EventsOrderStreamsAndTime) {
  auto spin = Must(executor_->LoadKernel<int64_t, DeviceMemory<int>>(TestSpec("spin")));
  ScopedDeviceMemory<int> flag = Must(executor_->AllocateOwnedArray<int>(1));
  std::unique_ptr<Stream> a = Must(executor_->CreateStream());
  std::unique_ptr<Stream> b = Must(executor_->CreateStream(StreamOptions{.priority = 1}));
  std::unique_ptr<Event> end = Must(executor_->CreateEvent());
  int seen = -1;
  std::unique_ptr<Timer> timer = Must(Timer::Create(executor_));
  a->ThenMemset32(flag.ptr(), 0, 4).ThenStartTimer(timer.get());
  a->ThenLaunch(ThreadDim(1), BlockDim(1), spin, int64_t{20'000'000}, *flag)
      .ThenStopTimer(timer.get());
  a->ThenRecordEvent(end.get());
  b->ThenWaitFor(end.get()).ThenMemcpy(&seen, *flag, 4);
  ASSERT_TRUE(IsOk(b->BlockHostUntilDone()));
  EXPECT_EQ(seen, 1);
  ASSERT_TRUE(IsOk(a->BlockHostUntilDone()));
  absl::Duration elapsed = Must(timer->Elapsed());
  EXPECT_GT(elapsed, absl::ZeroDuration());
}

TEST_F(CudaDeviceTest, FailingCallbackPoisonsTheStream) {
  std::unique_ptr<Stream> s = Must(executor_->CreateStream());
  bool later_ran = false;
  s->ThenDoHostCallbackWithStatus([] { return absl::DataLossError("callback broke"); });
  s->ThenDoHostCallback([&] { later_ran = true; });
  EXPECT_TRUE(HasError(s->BlockHostUntilDone(), absl::StatusCode::kDataLoss, {"callback broke"}));
  EXPECT_FALSE(later_ran);
}

}  // namespace
}  // namespace rill
