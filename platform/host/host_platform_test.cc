#include "platform/host/host_platform.h"

#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill.h"
#include "tests/testing/status_testing.h"

namespace rill {
namespace {

TEST(HostPlatform, RegistersItselfAtLoad) {
  absl::StatusOr<Platform*> host = PlatformManager::Default().PlatformWithName("host");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ((*host)->id(), kHostPlatformId);
  EXPECT_EQ((*host)->VisibleDeviceCount(), 2);  // RILL_HOST_DEVICES=2 from ctest.
}

TEST(HostPlatform, SmokeCopyRoundTrip) {
  Platform* host = *PlatformManager::Default().PlatformWithName("host");
  StreamExecutor* exec = *host->ExecutorForDevice(0);
  auto mem = exec->AllocateOwnedArray<int>(100);
  ASSERT_TRUE(mem.ok()) << mem.status();
  std::vector<int> in(100), out(100, -1);
  std::iota(in.begin(), in.end(), 0);
  auto stream = exec->CreateStream();
  ASSERT_TRUE(stream.ok());
  (*stream)->ThenMemcpy(mem->ptr(), in.data(), 400).ThenMemcpy(out.data(), **mem, 400);
  ASSERT_TRUE((*stream)->BlockHostUntilDone().ok());
  EXPECT_EQ(in, out);
}

using ::rill::testing::HasError;
using ::rill::testing::IsOk;

// Sets an environment variable for one scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(HostPlatformOptions, FromEnvironment) {
  ScopedEnv devices("RILL_HOST_DEVICES", "3");
  ScopedEnv limit("RILL_HOST_MEMORY_LIMIT", "512K");
  absl::StatusOr<HostPlatformOptions> options = HostPlatformOptionsFromEnv();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->device_count, 3);
  EXPECT_EQ(options->memory_limit_bytes, 512 * 1024);
  EXPECT_EQ(options->name, "host");
  EXPECT_EQ(options->id, kHostPlatformId);
}

TEST(HostPlatformOptions, DefaultsWithoutEnvironment) {
  ScopedEnv devices("RILL_HOST_DEVICES", nullptr);
  ScopedEnv limit("RILL_HOST_MEMORY_LIMIT", nullptr);
  absl::StatusOr<HostPlatformOptions> options = HostPlatformOptionsFromEnv();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->device_count, 1);
  EXPECT_EQ(options->memory_limit_bytes, 0);
}

TEST(HostPlatformOptions, BadValuesAreNamed) {
  for (const char* bad : {"abc", "0", "-2", "2x", "5000"}) {
    ScopedEnv devices("RILL_HOST_DEVICES", bad);
    EXPECT_TRUE(HasError(HostPlatformOptionsFromEnv().status(), absl::StatusCode::kInvalidArgument,
                         {"RILL_HOST_DEVICES", std::string("'") + bad + "'"}));
  }
  ScopedEnv limit("RILL_HOST_MEMORY_LIMIT", "12Q");
  EXPECT_TRUE(HasError(HostPlatformOptionsFromEnv().status(), absl::StatusCode::kInvalidArgument,
                       {"RILL_HOST_MEMORY_LIMIT", "'12Q'"}));
}

// RILL_HOST_DEVICES=abc: the host platform is still registered, with no
// devices, and says why.
TEST(HostPlatform, BadEnvironmentRegistersAPlatformWithoutDevices) {
  ScopedEnv devices("RILL_HOST_DEVICES", "abc");
  PlatformManager manager;
  ASSERT_TRUE(IsOk(RegisterHostPlatform(manager)));
  ASSERT_EQ(manager.AllPlatforms().size(), 1u);
  EXPECT_TRUE(manager.AvailablePlatforms().empty());
  Platform* host = *manager.PlatformWithName("host");
  EXPECT_EQ(host->VisibleDeviceCount(), 0);
  EXPECT_TRUE(HasError(host->Availability(), absl::StatusCode::kUnavailable,
                       {"RILL_HOST_DEVICES='abc'"}));
  EXPECT_TRUE(HasError(host->ExecutorForDevice(0).status(), absl::StatusCode::kUnavailable,
                       {"host", "'abc'"}));
  EXPECT_TRUE(HasError(manager.PlatformWithName("cuda").status(), absl::StatusCode::kNotFound,
                       {"host (unavailable: RILL_HOST_DEVICES='abc'"}));
}

TEST(HostPlatform, RegisteringTwiceIsHarmless) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(RegisterHostPlatform(manager)));
  ASSERT_TRUE(IsOk(RegisterHostPlatform(manager)));
  EXPECT_EQ(manager.AllPlatforms().size(), 1u);
}

const PlatformIdInfo kCustomIdInfo{"custom"};

TEST(HostPlatform, CustomNameIdAndDevices) {
  HostPlatform platform(HostPlatformOptions{"custom", &kCustomIdInfo, 3, 4096});
  EXPECT_EQ(platform.Name(), "custom");
  EXPECT_EQ(platform.id(), &kCustomIdInfo);
  EXPECT_EQ(platform.VisibleDeviceCount(), 3);
  absl::StatusOr<DeviceDescription> d = platform.DescriptionForDevice(2);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->name, "Host virtual device 2 of 3");
  EXPECT_EQ(d->memory_bytes, 4096);
  StreamExecutor* exec = *platform.ExecutorForDevice(2);
  EXPECT_EQ(exec->DebugName(), "custom:2");
  EXPECT_EQ(exec->GetMemoryStats().bytes_limit, 4096);
  EXPECT_TRUE(HasError(exec->Allocate(4097).status(), absl::StatusCode::kResourceExhausted));
}

TEST(HostPlatform, DefaultMemoryLimitIsPhysicalMemory) {
  HostPlatform platform(HostPlatformOptions{"custom", &kCustomIdInfo, 1, 0});
  absl::StatusOr<DeviceDescription> d = platform.DescriptionForDevice(0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_GT(d->memory_bytes, int64_t{1} << 20);
}

TEST(HostExecutor, LoadKernelWithoutHostVariantIsUnimplemented) {
  StreamExecutor* exec = *(*PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0);
  KernelSpec spec("cuda_only");
  spec.AddCudaPtx(".version 8.0\n.target sm_90\n");
  EXPECT_TRUE(HasError(exec->LoadKernel(spec).status(), absl::StatusCode::kUnimplemented,
                       {"\"cuda_only\"", "no host variant", "host:0"}));
}

}  // namespace
}  // namespace rill
