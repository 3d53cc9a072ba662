#include "rill/platform/host/host_platform.h"

#include <cstdlib>
#include <future>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/base/env_settings.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"
#include "tests/testing/scoped_env.h"

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

using ::rill::testing::ScopedEnv;

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

// The host platform reads its variables by the table of settings, so it
// takes exactly what ValidateEnvironment takes (1T was once accepted at
// start and refused here).
TEST(HostPlatformOptions, AcceptsWhatTheTableAccepts) {
  {
    ScopedEnv limit("RILL_HOST_MEMORY_LIMIT", "1T");
    absl::StatusOr<HostPlatformOptions> options = HostPlatformOptionsFromEnv();
    ASSERT_TRUE(options.ok()) << options.status();
    EXPECT_EQ(options->memory_limit_bytes, int64_t{1} << 40);
  }
  for (const char* name : {"RILL_HOST_MEMORY_LIMIT", "RILL_HOST_DEVICES"}) {
    const EnvSetting* setting = FindEnvSetting(name);
    ASSERT_NE(setting, nullptr) << name;
    for (const char* value : {"1T", "2g", "64k", "3", "1024", "1025", "1048576", "12Q", "0", "-1",
                              "1.5G", " 2", "abc"}) {
      ScopedEnv env(name, value);
      const absl::Status table = CheckEnvValue(*setting, value);
      const absl::Status here = HostPlatformOptionsFromEnv().status();
      EXPECT_EQ(table.ok(), here.ok()) << name << "=" << value << ": " << here;
      if (!table.ok()) EXPECT_TRUE(HasError(here, table.code(), {std::string(table.message())}));
    }
  }
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
  EXPECT_TRUE(
      HasError(host->Availability(), absl::StatusCode::kUnavailable, {"RILL_HOST_DEVICES='abc'"}));
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
  StreamExecutor* exec =
      *(*PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0);
  KernelSpec spec("cuda_only");
  spec.AddCudaPtx(".version 8.0\n.target sm_90\n");
  EXPECT_TRUE(HasError(exec->LoadKernel(spec).status(), absl::StatusCode::kUnimplemented,
                       {"\"cuda_only\"", "no host variant", "host:0"}));
}

// A host kernel that throws fails its stream with the exception's text,
// on the serial path and on the parallel one (a grid past the threshold),
// instead of ending the process; the executor keeps working.
TEST(HostExecutor, AKernelThatThrowsFailsItsStream) {
  StreamExecutor* exec =
      *(*PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0);
  KernelSpec spec("throws");
  spec.AddHostFunction<uint64_t>([](const HostThread& t, uint64_t throw_at) {
    if (static_cast<uint64_t>(t.global_x()) == throw_at) throw std::runtime_error("kernel gave up");
  });
  absl::StatusOr<TypedKernel<uint64_t>> kernel = exec->LoadKernel<uint64_t>(spec);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  for (const int64_t blocks : {int64_t{4}, int64_t{4096}}) {
    SCOPED_TRACE(blocks);
    auto stream = exec->CreateStream();
    ASSERT_TRUE(stream.ok());
    (*stream)->ThenLaunch(ThreadDim(64), BlockDim(blocks), *kernel, uint64_t{3 * 64 + 5});
    EXPECT_TRUE(HasError((*stream)->BlockHostUntilDone(), absl::StatusCode::kInternal,
                         {"host kernel threw", "kernel gave up"}));
  }
  auto healthy = exec->CreateStream();
  ASSERT_TRUE(healthy.ok());
  (*healthy)->ThenLaunch(ThreadDim(64), BlockDim(4096), *kernel, ~uint64_t{0});
  EXPECT_TRUE(IsOk((*healthy)->BlockHostUntilDone()));
}

// A ThenNotify callback that throws fails the stream instead of ending the
// process from the stream's thread.
TEST(HostExecutor, ANotifyCallbackThatThrowsFailsItsStream) {
  StreamExecutor* exec =
      *(*PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0);
  auto stream = exec->CreateStream();
  ASSERT_TRUE(stream.ok());
  bool notified = false;
  (*stream)->ThenNotify([&](absl::Status) {
    notified = true;
    throw std::runtime_error("listener broke");
  });
  EXPECT_TRUE(HasError((*stream)->BlockHostUntilDone(), absl::StatusCode::kInternal,
                       {"ThenNotify callback threw", "listener broke"}));
  EXPECT_TRUE(notified);
}

// A wait on an event gets the result of the record it was enqueued after,
// not of whichever record ran last: a later record on a failed stream does
// not fail it, and a later healthy record does not hide a failed one.
TEST(HostEvent, AWaitGetsTheResultOfTheRecordItSaw) {
  StreamExecutor* exec =
      *(*PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0);
  for (const bool first_fails : {false, true}) {
    SCOPED_TRACE(first_fails ? "failed record, then a healthy one"
                             : "healthy record, then a failed one");
    auto first = exec->CreateStream(), second = exec->CreateStream(), waiter = exec->CreateStream();
    ASSERT_TRUE(first.ok() && second.ok() && waiter.ok());
    auto event = exec->CreateEvent();
    ASSERT_TRUE(event.ok()) << event.status();
    auto failing = [] { return absl::InternalError("recording stream failed"); };
    if (first_fails) (*first)->ThenDoHostCallbackWithStatus(failing);
    (*first)->ThenRecordEvent(event->get());
    const absl::Status first_status = (*first)->BlockHostUntilDone();
    EXPECT_EQ(first_status.ok(), !first_fails) << first_status;
    EXPECT_EQ((*event)->PollForStatus(),
              first_fails ? Event::Status::kError : Event::Status::kComplete);
    // The wait is enqueued now (it saw the first record) but runs only after
    // the event has been recorded again.
    std::promise<void> recorded_again;
    std::shared_future<void> gate = recorded_again.get_future().share();
    (*waiter)->ThenDoHostCallback([gate] { gate.wait(); });
    (*waiter)->ThenWaitFor(event->get());
    if (!first_fails) (*second)->ThenDoHostCallbackWithStatus(failing);
    (*second)->ThenRecordEvent(event->get());
    (void)(*second)->BlockHostUntilDone();
    recorded_again.set_value();
    absl::Status waited = (*waiter)->BlockHostUntilDone();
    if (first_fails) {
      EXPECT_TRUE(HasError(waited, absl::StatusCode::kInternal, {"recording stream failed"}));
    } else {
      EXPECT_TRUE(IsOk(waited)) << "failed by a record made after the wait";
    }
    // The event itself reports its latest record.
    EXPECT_EQ((*event)->PollForStatus(),
              first_fails ? Event::Status::kComplete : Event::Status::kError);
  }
}

}  // namespace
}  // namespace rill
