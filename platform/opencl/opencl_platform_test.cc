// The OpenCL backend's own cases, beyond the conformance suite (conformance/): discovery and
// descriptions, error names, kernel build errors with their log, the
// program cache, sub-buffer kernel arguments and native handles.

#include "rill/platform/opencl/opencl_platform.h"

#include <CL/cl.h>

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "rill/platform/opencl/opencl_plugin.h"
#include "rill/platform/opencl/opencl_status.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

class OpenClPlatformTest : public ::testing::Test {
 protected:
  void SetUp() override {
    platform_ = Must(PlatformManager::Default().PlatformWithName("opencl"));
    if (platform_->VisibleDeviceCount() == 0) GTEST_SKIP() << platform_->Availability();
    executor_ = Must(platform_->ExecutorForDevice(0));
  }
  Platform* platform_ = nullptr;
  StreamExecutor* executor_ = nullptr;
};

TEST(OpenClStatusTest, NamesAndCodes) {
  EXPECT_TRUE(IsOk(ClStatus(CL_SUCCESS, "x")));
  EXPECT_TRUE(HasError(ClStatus(CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel"),
                       absl::StatusCode::kResourceExhausted,
                       {"clEnqueueNDRangeKernel", "CL_OUT_OF_RESOURCES", "-5"}));
  EXPECT_TRUE(HasError(ClStatus(CL_INVALID_KERNEL_NAME, "clCreateKernel"),
                       absl::StatusCode::kInvalidArgument, {"CL_INVALID_KERNEL_NAME"}));
  EXPECT_TRUE(HasError(ClStatus(-1001, "clGetPlatformIDs"), absl::StatusCode::kUnavailable,
                       {"CL_PLATFORM_NOT_FOUND_KHR"}));
  EXPECT_EQ(ClErrorName(-9999), "CL error -9999");
}

TEST_F(OpenClPlatformTest, DescribesItsDevices) {
  const DeviceDescription& d = executor_->GetDeviceDescription();
  EXPECT_FALSE(d.name.empty());
  EXPECT_FALSE(d.vendor.empty());
  EXPECT_NE(d.platform_version.find("OpenCL"), std::string::npos) << d.platform_version;
  EXPECT_GT(d.memory_bytes, 0);
  EXPECT_GT(d.compute_units, 0);
  EXPECT_GT(d.max_threads_per_block, 0);
  EXPECT_TRUE(d.extra.contains("device type"));
  EXPECT_TRUE(d.extra.contains("opencl c"));
  EXPECT_EQ(platform_->Name(), "opencl");
  EXPECT_TRUE(IsOk(platform_->Availability()));
}

TEST_F(OpenClPlatformTest, NativeHandles) {
  cl_context context = Must(OpenClContext(executor_));
  ASSERT_NE(context, nullptr);
  std::unique_ptr<Stream> stream = Must(executor_->CreateStream());
  auto queue = static_cast<cl_command_queue>(stream->native_handle());
  ASSERT_NE(queue, nullptr);
  cl_context queue_context = nullptr;
  ASSERT_EQ(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(queue_context), &queue_context,
                                  nullptr),
            CL_SUCCESS);
  EXPECT_EQ(queue_context, context);

  // Rill memory used directly through OpenCL on the stream's queue.
  ScopedDeviceMemory<int32_t> buffer = Must(executor_->AllocateOwnedArray<int32_t>(4));
  const int32_t in[4] = {1, 2, 3, 4};
  stream->ThenMemZero(buffer.ptr(), 16);
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  ASSERT_EQ(clEnqueueWriteBuffer(queue, ClMem(*buffer), CL_TRUE, 0, 16, in, 0, nullptr, nullptr),
            CL_SUCCESS);
  int32_t out[4] = {};
  stream->ThenMemcpy(out, *buffer, 16);
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_EQ(out[3], 4);
  EXPECT_TRUE(HasError(AsOpenClExecutor(nullptr).status(), absl::StatusCode::kInvalidArgument));
}

// Issue 22, class 8: pinned host memory too large for one OpenCL buffer
// gets the code Allocate gives (it was InvalidArgument).
TEST_F(OpenClPlatformTest, TooMuchPinnedHostMemoryIsResourceExhausted) {
  const uint64_t huge = uint64_t{1}
                        << 50;  // Past CL_DEVICE_MAX_MEM_ALLOC_SIZE, below the front's 2^63 cap.
  EXPECT_TRUE(HasError(executor_->HostMemoryAllocate(huge).status(),
                       absl::StatusCode::kResourceExhausted,
                       {"1125899906842624", "CL_DEVICE_MAX_MEM_ALLOC_SIZE"}));
  EXPECT_TRUE(HasError(executor_->Allocate(huge).status(), absl::StatusCode::kResourceExhausted,
                       {"CL_DEVICE_MAX_MEM_ALLOC_SIZE"}));
}

TEST_F(OpenClPlatformTest, BuildErrorCarriesTheLog) {
  KernelSpec spec("broken");
  spec.AddOpenClSource("__kernel void broken(__global float* x) { x[0] = undefined_name; }");
  EXPECT_TRUE(HasError(executor_->LoadKernel(spec).status(), absl::StatusCode::kInvalidArgument,
                       {"CL_BUILD_PROGRAM_FAILURE", "broken", "undefined_name"}));
  KernelSpec wrong_name("not_there");
  wrong_name.AddOpenClSource("__kernel void other(__global float* x) { x[0] = 1.0f; }");
  EXPECT_TRUE(HasError(executor_->LoadKernel(wrong_name).status(), absl::StatusCode::kNotFound,
                       {"clCreateKernel", "not_there", "CL_INVALID_KERNEL_NAME"}));
}

constexpr char kFillSource[] = R"CL(
__kernel void fill(__global int* out, int value, ulong n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = value + (int)i;
}
)CL";

TEST_F(OpenClPlatformTest, ProgramsAreCachedAndSubBuffersAreArguments) {
  auto* cl = Must(AsOpenClExecutor(executor_));
  KernelSpec spec("fill");
  spec.AddOpenClSource(kFillSource);
  const int64_t before = cl->programs().size();
  auto fill = Must(executor_->LoadKernel<DeviceMemory<int32_t>, int32_t, uint64_t>(spec));
  auto again = Must(executor_->LoadKernel<DeviceMemory<int32_t>, int32_t, uint64_t>(spec));
  EXPECT_LE(cl->programs().size(), before + 1) << "the second load must reuse the program";

  const uint64_t align = cl->info().base_align;
  ASSERT_GT(align, 0u);
  const uint64_t n = align / 4 * 3;
  ScopedDeviceMemory<int32_t> buffer = Must(executor_->AllocateOwnedArray<int32_t>(n));
  DeviceMemory<int32_t> tail = Must(buffer->GetSlice(align / 4, align / 4));  // Aligned offset.
  std::unique_ptr<Stream> stream = Must(executor_->CreateStream());
  std::vector<int32_t> out(n, -1);
  stream->ThenMemZero(buffer.ptr(), n * 4)
      .ThenLaunch(ThreadDim(16), BlockDim((align / 4 + 15) / 16), again, tail, int32_t{100},
                  uint64_t{align / 4})
      .ThenMemcpyD2H<int32_t>(*buffer, absl::MakeSpan(out));
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  for (uint64_t i = 0; i < n; ++i) {
    const bool inside = i >= align / 4 && i < align / 2;
    ASSERT_EQ(out[i], inside ? static_cast<int32_t>(100 + i - align / 4) : 0) << i;
  }

  // A misaligned view cannot be a sub-buffer: refused at enqueue.
  DeviceMemory<int32_t> odd = Must(buffer->GetSlice(1, 4));
  std::unique_ptr<Stream> bad = Must(executor_->CreateStream());
  bad->ThenLaunch(ThreadDim(4), BlockDim(1), fill, odd, int32_t{1}, uint64_t{4});
  EXPECT_TRUE(HasError(bad->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"argument 0", "offset 4", "CL_DEVICE_MEM_BASE_ADDR_ALIGN"}));
}

TEST_F(OpenClPlatformTest, KernelMayGoWhileItsLaunchIsQueued) {
  KernelSpec spec("fill");
  spec.AddOpenClSource(kFillSource);
  ScopedDeviceMemory<int32_t> buffer = Must(executor_->AllocateOwnedArray<int32_t>(64));
  std::unique_ptr<Stream> stream = Must(executor_->CreateStream());
  std::vector<int32_t> out(64, -1);
  {
    auto fill = Must(executor_->LoadKernel<DeviceMemory<int32_t>, int32_t, uint64_t>(spec));
    stream->ThenDoHostCallback([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); })
        .ThenLaunch(ThreadDim(64), BlockDim(1), fill, *buffer, int32_t{7}, uint64_t{64});
  }
  stream->ThenMemcpyD2H<int32_t>(*buffer, absl::MakeSpan(out));
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_EQ(out[63], 7 + 63);
}

}  // namespace
}  // namespace rill
