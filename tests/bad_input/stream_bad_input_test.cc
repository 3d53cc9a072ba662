// Bad input to the stream layer: untyped kernel launches and lifetimes of
// events and streams (issue 22, classes 3 and 4).

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "rill/base/logging.h"
#include "rill/platform/host/host_platform.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"
#include "tests/bad_input/private_host_platform.h"

namespace rill {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

const PlatformIdInfo kOwnIdInfo{"own"};

// A fresh host platform "own" of one device, destroyed with the manager.
std::unique_ptr<PlatformManager> OwnPlatform() {
  return testing::PrivateHostPlatform(&kOwnIdInfo, 1);
}

StreamExecutor* Executor(PlatformManager& manager) {
  return Must(Must(manager.PlatformWithName("own"))->ExecutorForDevice(0));
}

// y[i] = i + n for i < n: the kernel reads its uint64_t parameter, so a
// narrower value would read past the argument.
void Fill(const HostThread& t, uint64_t* y, uint64_t n) {
  if (uint64_t i = t.global_x(); i < n) y[i] = i + n;
}

KernelSpec FillSpec() {
  KernelSpec spec("fill");
  spec.AddHostFunction<DeviceMemory<uint64_t>, uint64_t>(Fill);
  return spec;
}

// --- Class 3: untyped launches are checked against the declared parameters.

class UntypedLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    manager_ = OwnPlatform();
    exec_ = Executor(*manager_);
    kernel_ = Must(exec_->LoadKernel(FillSpec()));
    y_ = Must(exec_->AllocateOwnedArray<uint64_t>(8));
    stream_ = Must(exec_->CreateStream());
  }

  absl::Status Launch(KernelArgs args) {
    stream_->ThenLaunch(ThreadDim(8), BlockDim(1), *kernel_, std::move(args));
    return stream_->BlockHostUntilDone();
  }

  std::unique_ptr<PlatformManager> manager_;
  StreamExecutor* exec_ = nullptr;
  std::unique_ptr<Kernel> kernel_;
  ScopedDeviceMemory<uint64_t> y_;
  std::unique_ptr<Stream> stream_;
};

TEST_F(UntypedLaunch, TheDeclaredParametersAreKept) {
  ASSERT_EQ(kernel_->params().size(), 2u);
  EXPECT_TRUE(kernel_->params()[0].is_memory);
  EXPECT_FALSE(kernel_->params()[1].is_memory);
  EXPECT_EQ(kernel_->params()[1].size, sizeof(uint64_t));
}

TEST_F(UntypedLaunch, ARightlyPackedLaunchRuns) {
  ASSERT_TRUE(IsOk(Launch({PackKernelArg(*y_), PackKernelArg(uint64_t{8})})));
  std::vector<uint64_t> y(8);
  ASSERT_TRUE(IsOk(exec_->SynchronousMemcpy(y.data(), *y_, 64)));
  for (uint64_t i = 0; i < 8; ++i) EXPECT_EQ(y[i], i + 8) << i;
}

TEST_F(UntypedLaunch, ANarrowerValueIsRefused) {
  EXPECT_TRUE(HasError(
      Launch({PackKernelArg(*y_), PackKernelArg(uint8_t{8})}), absl::StatusCode::kInvalidArgument,
      {"argument 1 of kernel \"fill\" is a 1-byte value where the kernel declares a "
       "8-byte value",
       "ThenLaunch(\"fill\""}));
}

TEST_F(UntypedLaunch, DeviceMemoryWhereAValueIsDeclaredIsRefused) {
  EXPECT_TRUE(
      HasError(Launch({PackKernelArg(*y_), PackKernelArg(*y_)}), absl::StatusCode::kInvalidArgument,
               {"argument 1 of kernel \"fill\" is device memory where the kernel declares a 8-byte "
                "value"}));
}

TEST_F(UntypedLaunch, AValueWhereDeviceMemoryIsDeclaredIsRefused) {
  EXPECT_TRUE(
      HasError(Launch({PackKernelArg(uint64_t{0x1000}), PackKernelArg(uint64_t{8})}),
               absl::StatusCode::kInvalidArgument,
               {"argument 0 of kernel \"fill\" is a 8-byte value where the kernel declares device "
                "memory"}));
}

TEST_F(UntypedLaunch, AnEmptyValueIsRefused) {
  KernelArg empty;  // Neither memory nor bytes.
  EXPECT_TRUE(HasError(Launch({PackKernelArg(*y_), empty}), absl::StatusCode::kInvalidArgument,
                       {"argument 1", "is a 0-byte value"}));
}

TEST(UntypedLaunchSpec, DeclareParamsChecksADeviceOnlySpec) {
  KernelSpec spec("device_only");
  spec.AddOpenClSource("__kernel void device_only(__global ulong* y, ulong n) {}");
  EXPECT_TRUE(spec.params().empty());
  spec.DeclareParams<DeviceMemory<uint64_t>, uint64_t>();
  ASSERT_EQ(spec.params().size(), 2u);
  EXPECT_EQ(spec.host_arity(), 2);
  EXPECT_TRUE(spec.params()[0].is_memory);
  EXPECT_EQ(spec.params()[1].size, 8u);
}

// --- Class 4: lifetimes.

TEST(EventLifetime, AnEventOutlivingItsExecutorIsRefusedNotUsed) {
  auto owner = OwnPlatform();
  std::unique_ptr<Event> recorded = Must(Executor(*owner)->CreateEvent());
  std::unique_ptr<Event> fresh = Must(Executor(*owner)->CreateEvent());
  {
    std::unique_ptr<Stream> stream = Must(Executor(*owner)->CreateStream());
    stream->ThenRecordEvent(recorded.get());
    ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  }
  EXPECT_NE(recorded->parent(), nullptr);
  owner.reset();  // Destroys the executor; the events stay.

  EXPECT_EQ(recorded->parent(), nullptr);
  EXPECT_TRUE(HasError(recorded->CheckAlive(), absl::StatusCode::kFailedPrecondition,
                       {"event of own:0 used after its executor was destroyed"}));
  EXPECT_TRUE(HasError(recorded->Synchronize(), absl::StatusCode::kFailedPrecondition, {"own:0"}));
  EXPECT_EQ(recorded->PollForStatus(), Event::Status::kError);

  // A stream of a live executor (another platform) refuses both uses.
  auto other = OwnPlatform();
  std::unique_ptr<Stream> stream = Must(Executor(*other)->CreateStream());
  stream->ThenWaitFor(recorded.get());
  EXPECT_TRUE(
      HasError(stream->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition,
               {"ThenWaitFor(event)", "event of own:0 used after its executor was destroyed"}));
  std::unique_ptr<Stream> second = Must(Executor(*other)->CreateStream());
  second->ThenRecordEvent(fresh.get());
  EXPECT_TRUE(HasError(second->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition,
                       {"ThenRecordEvent", "used after its executor was destroyed"}));
  // Destroying them afterwards is safe (AddressSanitizer checks it).
  recorded.reset();
  fresh.reset();
}

// A stream (or its executor) destroyed from one of its own callbacks is a
// checked precondition: the process stops with a message naming the cause,
// instead of a thread joining itself (std::system_error) or a hang.
TEST(StreamLifetimeDeathTest, AStreamDestroyedFromItsOwnCallbackStopsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto manager = OwnPlatform();
        std::unique_ptr<Stream> stream = Must(Executor(*manager)->CreateStream());
        Stream* raw = stream.release();
        raw->ThenDoHostCallback([raw] { delete raw; });
        absl::SleepFor(absl::Seconds(5));
      },
      "a Stream was destroyed from a host callback of its own stream");
}

TEST(StreamLifetimeDeathTest, AnExecutorDestroyedFromItsStreamsCallbackStopsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto* manager = OwnPlatform().release();
        std::unique_ptr<Stream> stream = Must(Executor(*manager)->CreateStream());
        stream->ThenDoHostCallback([manager] { delete manager; });
        absl::SleepFor(absl::Seconds(5));
      },
      "an executor destroyed from a host callback of its own stream");
}

}  // namespace
}  // namespace rill
