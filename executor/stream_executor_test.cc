#include "rill/executor/stream_executor.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rill/base/logging.h"
#include "rill/platform/host/host_executor.h"
#include "rill/platform/host/host_platform.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::Gate;
using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;
using ::rill::testing::OpenOnExit;
using ::rill::testing::WithDeadline;

const PlatformIdInfo kSmallIdInfo{"small"};
const PlatformIdInfo kLimitedIdInfo{"limited"};

// A fresh manager holding one host platform "small" of `devices` devices
// with 1 MiB each, independent of the environment.
std::unique_ptr<PlatformManager> SmallManager(int devices = 1) {
  auto manager = std::make_unique<PlatformManager>();
  HostPlatformOptions options;
  options.name = "small";
  options.id = &kSmallIdInfo;
  options.device_count = devices;
  options.memory_limit_bytes = 1 << 20;
  RILL_CHECK_OK(manager->RegisterPlatform(std::make_unique<HostPlatform>(options)));
  return manager;
}

StreamExecutor* ExecutorOf(PlatformManager& manager, const char* name, int ordinal = 0) {
  return Must(Must(manager.PlatformWithName(name))->ExecutorForDevice(ordinal));
}

TEST(StreamExecutor, AllocationsBeyondTheLimitAreResourceExhausted) {
  auto manager = SmallManager();
  StreamExecutor* exec = ExecutorOf(*manager, "small");
  EXPECT_EQ(exec->GetDeviceDescription().memory_bytes, 1 << 20);
  EXPECT_TRUE(HasError(exec->Allocate((1 << 20) + 1).status(), absl::StatusCode::kResourceExhausted,
                       {"1048577 bytes requested", "1048576-byte limit", "small:0"}));

  DeviceMemoryBase half = Must(exec->Allocate(1 << 19));
  DeviceMemoryBase rest = Must(exec->Allocate(1 << 19));
  EXPECT_TRUE(HasError(exec->Allocate(1).status(), absl::StatusCode::kResourceExhausted,
                       {"1 bytes requested", "0 of the 1048576-byte limit free"}));
  MemoryStats stats = exec->GetMemoryStats();
  EXPECT_EQ(stats.bytes_in_use, 1 << 20);
  EXPECT_EQ(stats.num_allocs, 2);
  EXPECT_EQ(stats.bytes_limit, 1 << 20);

  ASSERT_TRUE(IsOk(exec->Deallocate(&half)));
  DeviceMemoryBase again = Must(exec->Allocate(1 << 19));  // The freed half is reusable.
  ASSERT_TRUE(IsOk(exec->Deallocate(&again)));
  ASSERT_TRUE(IsOk(exec->Deallocate(&rest)));
  stats = exec->GetMemoryStats();
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_EQ(stats.num_allocs, 0);
  EXPECT_EQ(stats.peak_bytes_in_use, 1 << 20);
}

TEST(StreamExecutor, ZeroByteAllocationsAreInvalidArgument) {
  auto manager = SmallManager();
  StreamExecutor* exec = ExecutorOf(*manager, "small");
  EXPECT_TRUE(HasError(exec->Allocate(0).status(), absl::StatusCode::kInvalidArgument,
                       {"small:0", "0 bytes"}));
  EXPECT_TRUE(
      HasError(exec->AllocateOwnedArray<int>(0).status(), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(exec->HostMemoryAllocate(0).status(), absl::StatusCode::kInvalidArgument));
}

TEST(StreamExecutor, DeallocateRejectsWhatItDidNotAllocate) {
  auto manager = SmallManager(2);
  StreamExecutor* zero = ExecutorOf(*manager, "small", 0);
  StreamExecutor* one = ExecutorOf(*manager, "small", 1);
  DeviceMemoryBase memory = Must(zero->Allocate(64));
  DeviceMemoryBase tail = Must(memory.GetByteSlice(8, 56));
  EXPECT_TRUE(HasError(zero->Deallocate(&tail), absl::StatusCode::kInvalidArgument,
                       {"sub-range", "offset=8", "size=56"}));
  DeviceMemoryBase head = Must(memory.GetByteSlice(0, 32));
  EXPECT_TRUE(HasError(zero->Deallocate(&head), absl::StatusCode::kInvalidArgument,
                       {"32-byte view of a 64-byte allocation"}));
  DeviceMemoryBase copy = memory;
  EXPECT_TRUE(HasError(one->Deallocate(&copy), absl::StatusCode::kInvalidArgument,
                       {"small:1", "not an allocation of this device"}));
  EXPECT_FALSE(copy.is_null()) << "a failed Deallocate leaves the handle";
  EXPECT_EQ(zero->GetMemoryStats().num_allocs, 1);
  EXPECT_TRUE(IsOk(zero->Deallocate(&memory)));
  EXPECT_TRUE(
      HasError(zero->Deallocate(&copy), absl::StatusCode::kInvalidArgument, {"already freed"}));
}

TEST(StreamExecutor, ScopedDeviceMemoryFreesOnceAcrossMoves) {
  auto manager = SmallManager();
  StreamExecutor* exec = ExecutorOf(*manager, "small");
  {
    ScopedDeviceMemory<float> a = Must(exec->AllocateOwnedArray<float>(16));
    ScopedDeviceMemory<float> b = Must(exec->AllocateOwnedArray<float>(16));
    EXPECT_EQ(exec->GetMemoryStats().num_allocs, 2);
    b = std::move(a);  // Frees b's old allocation.
    EXPECT_EQ(exec->GetMemoryStats().num_allocs, 1);
    ScopedDeviceMemory<float> c(std::move(b));
    EXPECT_EQ(exec->GetMemoryStats().num_allocs, 1);
    DeviceMemory<float> released = c.Release();
    EXPECT_TRUE(c.is_null());
    EXPECT_TRUE(IsOk(exec->Deallocate(&released)));
  }
  EXPECT_EQ(exec->GetMemoryStats().num_allocs, 0);
  EXPECT_EQ(exec->GetMemoryStats().bytes_in_use, 0);
}

TEST(StreamExecutor, SynchronizeAllActivityWaitsForEveryStream) {
  auto manager = SmallManager();
  StreamExecutor* exec = ExecutorOf(*manager, "small");
  std::atomic<int> done{0};
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < 3; ++i) {
    streams.push_back(Must(exec->CreateStream()));
    streams.back()->ThenDoHostCallback([&done] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ++done;
    });
  }
  EXPECT_TRUE(IsOk(exec->SynchronizeAllActivity()));
  EXPECT_EQ(done.load(), 3);
}

// SynchronizeAllActivity waits for streams without holding the executor's
// stream registry, so work it waits for may create and destroy streams of
// the same executor (this deadlocked when the registry lock was held).
TEST(StreamExecutor, SynchronizeAllActivityLetsTheWorkItWaitsForCreateAndDestroyStreams) {
  auto manager = SmallManager();
  StreamExecutor* exec = ExecutorOf(*manager, "small");
  std::unique_ptr<Stream> stream = Must(exec->CreateStream());
  std::unique_ptr<Stream> other = Must(exec->CreateStream());
  auto gate = Gate::Make();
  OpenOnExit open(gate);
  std::atomic<bool> created{false}, destroyed{false};
  stream->ThenDoHostCallback([&, gate] {
    gate->Wait();
    absl::StatusOr<std::unique_ptr<Stream>> fresh = exec->CreateStream();
    created = fresh.ok();
    other.reset();
    destroyed = true;
  });
  WithDeadline("SynchronizeAllActivity while a callback creates and destroys streams", [&] {
    // Opened once SynchronizeAllActivity is (most likely) waiting.
    std::thread opener([gate] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      gate->Open();
    });
    EXPECT_TRUE(IsOk(exec->SynchronizeAllActivity()));
    opener.join();
  });
  EXPECT_TRUE(created);
  EXPECT_TRUE(destroyed);
}

// From a host callback of one of its streams, SynchronizeAllActivity
// cannot wait for that stream: FailedPrecondition, after the others.
TEST(StreamExecutor, SynchronizeAllActivityFromACallbackOfItsStreamIsFailedPrecondition) {
  auto manager = SmallManager();
  StreamExecutor* exec = ExecutorOf(*manager, "small");
  std::unique_ptr<Stream> stream = Must(exec->CreateStream());
  std::unique_ptr<Stream> other = Must(exec->CreateStream());
  std::atomic<bool> other_done{false};
  other->ThenDoHostCallback([&other_done] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    other_done = true;
  });
  absl::Status inner = absl::UnknownError("the callback did not run");
  bool other_done_then = false;
  WithDeadline("SynchronizeAllActivity from a callback of its own stream", [&] {
    stream->ThenDoHostCallback([&] {
      inner = exec->SynchronizeAllActivity();
      other_done_then = other_done.load();
    });
    (void)stream->BlockHostUntilDone();
  });
  EXPECT_TRUE(HasError(inner, absl::StatusCode::kFailedPrecondition,
                       {"SynchronizeAllActivity", "would deadlock"}));
  EXPECT_TRUE(other_done_then) << "the other stream was not waited for";
}

// Destroying an executor and its streams on different threads at once:
// each stream is either drained and detached by the executor or leaves it
// by itself, never touched by one side after the other freed it (a
// heap-use-after-free under ASan and TSan before).
TEST(StreamExecutor, AnExecutorAndItsStreamsMayBeDestroyedAtOnce) {
  for (int round = 0; round < 100; ++round) {
    auto manager = SmallManager();
    StreamExecutor* exec = ExecutorOf(*manager, "small");
    std::vector<std::unique_ptr<Stream>> streams;
    std::atomic<int> ran{0};
    for (int i = 0; i < 4; ++i) {
      streams.push_back(Must(exec->CreateStream()));
      streams.back()->ThenDoHostCallback([&ran] { ++ran; });
    }
    auto go = Gate::Make();
    std::thread destroyer([&streams, go] {
      go->Wait();
      streams.clear();
    });
    go->Open();
    manager.reset();
    destroyer.join();
    EXPECT_EQ(ran.load(), 4) << "round " << round << ": work of a stream was lost";
  }
}

// Destroying the executor (through its manager) while a stream lives: the
// stream's work is drained, later calls fail with FailedPrecondition, and
// destroying the stream afterwards is safe.
TEST(StreamExecutor, StreamsOutlivingTheirExecutorAreDetached) {
  auto manager = SmallManager();
  StreamExecutor* exec = ExecutorOf(*manager, "small");
  std::unique_ptr<Stream> stream = Must(exec->CreateStream());
  std::unique_ptr<Stream> failed = Must(exec->CreateStream());
  failed->ThenDoHostCallbackWithStatus([] { return absl::DataLossError("first error 17"); });
  std::atomic<bool> ran{false};
  stream->ThenDoHostCallback([&ran] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ran = true;
  });
  manager.reset();
  EXPECT_TRUE(ran) << "the executor's destruction must drain the stream's work";
  EXPECT_EQ(stream->parent(), nullptr);

  bool later = false;
  int32_t host = 1;
  DeviceMemoryBase stale(&host, 4);  // Never touched: the call fails first.
  stream->ThenDoHostCallback([&later] { later = true; }).ThenMemcpy(&stale, &host, 4);
  EXPECT_TRUE(HasError(stream->status(), absl::StatusCode::kFailedPrecondition,
                       {"executor was destroyed"}));
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition));
  EXPECT_FALSE(later);
  // A stream already in error keeps its first error.
  EXPECT_TRUE(
      HasError(failed->BlockHostUntilDone(), absl::StatusCode::kDataLoss, {"first error 17"}));
  stream.reset();
  failed.reset();
}

TEST(StreamExecutor, LoadKernelChecks) {
  auto manager = SmallManager();
  StreamExecutor* exec = ExecutorOf(*manager, "small");
  KernelSpec ptx_only("ptx_only");
  ptx_only.AddCudaPtx(".version 8.0").AddOpenClSource("__kernel void ptx_only() {}");
  EXPECT_TRUE(HasError(exec->LoadKernel(ptx_only).status(), absl::StatusCode::kUnimplemented,
                       {"ptx_only", "no host variant", "small:0"}));

  KernelSpec add("add");
  add.AddHostFunction<DeviceMemory<int>, int>([](const HostThread&, int* p, int v) { *p += v; });
  EXPECT_TRUE(HasError(exec->LoadKernel<DeviceMemory<float>, int>(add).status(),
                       absl::StatusCode::kInvalidArgument, {"\"add\"", "differ"}));
  EXPECT_TRUE(HasError(exec->LoadKernel<DeviceMemory<int>>(add).status(),
                       absl::StatusCode::kInvalidArgument, {"1 parameter(s)", "the 2"}));
  absl::StatusOr<TypedKernel<DeviceMemory<int>, int>> typed =
      exec->LoadKernel<DeviceMemory<int>, int>(add);
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_EQ(typed->kernel().name(), "add");
  EXPECT_EQ(typed->kernel().arity(), 2);
  EXPECT_EQ(typed->kernel().parent(), exec);
}

// A backend that lacks some features: the host executor with Supports()
// saying no. The front must refuse each use with Unimplemented.
class LimitedExecutor : public HostExecutor {
 public:
  using HostExecutor::HostExecutor;
  absl::Status Supports(Feature feature) const override {
    return absl::UnimplementedError("this test backend has no such thing");
  }
};

class LimitedPlatform : public HostPlatform {
 public:
  LimitedPlatform() : HostPlatform(HostPlatformOptions{"limited", &kLimitedIdInfo, 1, 1 << 20}) {}

 protected:
  absl::StatusOr<std::unique_ptr<StreamExecutorInterface>> CreateExecutorImplementation(
      const StreamExecutorConfig& config) override {
    return std::make_unique<LimitedExecutor>(*DescriptionForDevice(config.ordinal), 1 << 20);
  }
};

TEST(StreamExecutor, UnsupportedFeaturesFailWithUnimplemented) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(std::make_unique<LimitedPlatform>())));
  StreamExecutor* exec = ExecutorOf(manager, "limited");
  EXPECT_TRUE(HasError(exec->Supports(Feature::kTimers), absl::StatusCode::kUnimplemented,
                       {"limited:0 lacks timers", "no such thing"}));

  auto fails = [&](const std::function<void(Stream&)>& use, const char* feature) {
    std::unique_ptr<Stream> stream = Must(exec->CreateStream());
    use(*stream);
    EXPECT_TRUE(
        HasError(stream->BlockHostUntilDone(), absl::StatusCode::kUnimplemented, {feature}));
  };
  bool ran = false;
  fails([&](Stream& s) { s.ThenDoHostCallback([&ran] { ran = true; }); }, "host callbacks");
  EXPECT_FALSE(ran);
  ScopedDeviceMemory<int> a = Must(exec->AllocateOwnedArray<int>(4));
  ScopedDeviceMemory<int> b = Must(exec->AllocateOwnedArray<int>(4));
  fails([&](Stream& s) { s.ThenMemcpy(b.ptr(), *a, 16); }, "device-to-device copy");
  KernelSpec spec("noop");
  spec.AddHostFunction<int>([](const HostThread&, int) {});
  auto kernel = Must(exec->LoadKernel<int>(spec));
  fails([&](Stream& s) { s.ThenLaunch(ThreadDim(1), BlockDim(1), kernel, 1); }, "kernel launch");
  EXPECT_TRUE(HasError(Timer::Create(exec).status(), absl::StatusCode::kUnimplemented, {"timers"}));
  EXPECT_TRUE(HasError(exec->HostMemoryAllocate(64).status(), absl::StatusCode::kUnimplemented,
                       {"pinned host memory"}));
  // Copies, fills and events need no optional feature.
  std::unique_ptr<Stream> stream = Must(exec->CreateStream());
  std::unique_ptr<Event> event = Must(exec->CreateEvent());
  int out[4] = {1, 1, 1, 1};
  stream->ThenMemZero(a.ptr(), 16).ThenMemcpy(out, *a, 16).ThenRecordEvent(event.get());
  EXPECT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_EQ(out[3], 0);
  EXPECT_EQ(event->PollForStatus(), Event::Status::kComplete);
}

TEST(StreamExecutor, FeatureNamesAreReadable) {
  EXPECT_STREQ(FeatureName(Feature::kHostCallbacks), "host callbacks");
  EXPECT_STREQ(FeatureName(Feature::kDeviceToDeviceCopy), "device-to-device copy");
  EXPECT_STREQ(FeatureName(static_cast<Feature>(99)), "unknown feature");
}

}  // namespace
}  // namespace rill
