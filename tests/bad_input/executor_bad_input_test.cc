// Bad input to the executor layer: synchronous copies, ownership of views,
// allocation sizes and plugin kinds (issue 22, classes 1, 2 and 6). Each
// case names the call a hostile user made and the status it must get.

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/clock.h"
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

const PlatformIdInfo kTwoIdInfo{"two"};

// A fresh host platform "two" of two devices with 1 MiB each.
std::unique_ptr<PlatformManager> TwoDevices() {
  return testing::PrivateHostPlatform(&kTwoIdInfo, 2);
}

class ExecutorBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    manager_ = TwoDevices();
    Platform* platform = Must(manager_->PlatformWithName("two"));
    exec_ = Must(platform->ExecutorForDevice(0));
    other_ = Must(platform->ExecutorForDevice(1));
  }

  std::unique_ptr<PlatformManager> manager_;
  StreamExecutor* exec_ = nullptr;
  StreamExecutor* other_ = nullptr;
  std::vector<uint8_t> host_ = std::vector<uint8_t>(256, 7);
};

// --- Class 1: synchronous copies make the stream path's ownership check.

TEST_F(ExecutorBadInput, SynchronousCopyOfAFreedBufferIsRefused) {
  DeviceMemoryBase m = Must(exec_->Allocate(64));
  DeviceMemoryBase stale = m;
  ASSERT_TRUE(IsOk(exec_->Deallocate(&m)));
  EXPECT_TRUE(HasError(exec_->SynchronousMemcpy(&stale, host_.data(), 64),
                       absl::StatusCode::kInvalidArgument,
                       {"SynchronousMemcpy(host->device, 64 bytes) on two:0", "destination",
                        "is not in an allocation of two:0"}));
  EXPECT_TRUE(HasError(exec_->SynchronousMemcpy(host_.data(), stale, 64),
                       absl::StatusCode::kInvalidArgument, {"source", "freed memory"}));
}

TEST_F(ExecutorBadInput, SynchronousCopyOfAnotherDevicesBufferIsRefused) {
  ScopedDeviceMemory<uint8_t> theirs = Must(other_->AllocateOwnedArray<uint8_t>(64));
  DeviceMemoryBase view = *theirs;
  EXPECT_TRUE(HasError(exec_->SynchronousMemcpy(&view, host_.data(), 64),
                       absl::StatusCode::kInvalidArgument, {"is not in an allocation of two:0"}));
  EXPECT_TRUE(HasError(exec_->SynchronousMemcpy(host_.data(), view, 64),
                       absl::StatusCode::kInvalidArgument, {"is not in an allocation of two:0"}));
  // Their own executor takes it.
  EXPECT_TRUE(IsOk(other_->SynchronousMemcpy(&view, host_.data(), 64)));
}

TEST_F(ExecutorBadInput, SynchronousCopyOfAForeignHandleIsRefused) {
  // A handle the host backend never made (another platform's cl_mem looks
  // like this to it): refused before the backend dereferences it.
  uint64_t not_device_memory[4] = {};
  DeviceMemoryBase foreign(not_device_memory, sizeof(not_device_memory));
  EXPECT_TRUE(HasError(exec_->SynchronousMemcpy(&foreign, host_.data(), 8),
                       absl::StatusCode::kInvalidArgument, {"is not in an allocation of two:0"}));
}

TEST(ExecutorBadInputCrossPlatform, AnOpenClBufferHandedToTheHostIsRefused) {
  // Once a glibc abort: the host backend took the cl_mem for a pointer.
  absl::StatusOr<Platform*> opencl = PlatformManager::Default().PlatformWithName("opencl");
  if (!opencl.ok() || (*opencl)->VisibleDeviceCount() == 0) {
    GTEST_SKIP() << "no OpenCL device: "
                 << (opencl.ok() ? (*opencl)->Availability() : opencl.status());
  }
  StreamExecutor* cl = Must((*opencl)->ExecutorForDevice(0));
  StreamExecutor* host =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  ScopedDeviceMemory<uint8_t> buffer = Must(cl->AllocateOwnedArray<uint8_t>(64));
  DeviceMemoryBase view = *buffer;
  std::vector<uint8_t> bytes(64, 1);
  EXPECT_TRUE(HasError(host->SynchronousMemcpy(&view, bytes.data(), 64),
                       absl::StatusCode::kInvalidArgument, {"is not in an allocation of host:0"}));
  EXPECT_TRUE(HasError(host->SynchronousMemcpy(bytes.data(), view, 64),
                       absl::StatusCode::kInvalidArgument, {"is not in an allocation of host:0"}));
  std::unique_ptr<Stream> stream = Must(host->CreateStream());
  stream->ThenMemcpy(&view, bytes.data(), 64);
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"is not in an allocation of host:0"}));
}

TEST_F(ExecutorBadInput, SynchronousCopyOfAViewPastItsAllocationIsRefused) {
  ScopedDeviceMemory<uint8_t> m = Must(exec_->AllocateOwnedArray<uint8_t>(64));
  DeviceMemoryBase past(m->opaque(), 64, 32);  // Bytes [32, 96) of a 64-byte block.
  EXPECT_TRUE(HasError(exec_->SynchronousMemcpy(&past, host_.data(), 64),
                       absl::StatusCode::kInvalidArgument,
                       {"offset=32, size=64", "past its allocation"}));
  EXPECT_TRUE(HasError(exec_->SynchronousMemcpy(host_.data(), past, 64),
                       absl::StatusCode::kInvalidArgument, {"past its allocation"}));
  // The view that fits is taken, and its bytes arrive.
  DeviceMemoryBase inside = Must(m->GetByteSlice(32, 32));
  ASSERT_TRUE(IsOk(exec_->SynchronousMemcpy(&inside, host_.data(), 32)));
  std::vector<uint8_t> back(32, 0);
  ASSERT_TRUE(IsOk(exec_->SynchronousMemcpy(back.data(), inside, 32)));
  EXPECT_EQ(back, std::vector<uint8_t>(32, 7));
}

// --- Class 2: offsets and sizes near 2^64 do not wrap.

TEST_F(ExecutorBadInput, AnOffsetNearTwoToThe64IsNotInTheAllocation) {
  ScopedDeviceMemory<uint8_t> m = Must(exec_->AllocateOwnedArray<uint8_t>(64));
  DeviceMemoryBase evil(m->opaque(), 64, UINT64_MAX - 31);  // offset + size wraps to 32.
  EXPECT_FALSE(exec_->implementation()->Owns(evil));
  EXPECT_TRUE(HasError(exec_->CheckOwner("view", evil), absl::StatusCode::kInvalidArgument,
                       {"view DeviceMemory{", "offset=18446744073709551584"}));
  EXPECT_TRUE(HasError(exec_->SynchronousMemcpy(&evil, host_.data(), 64),
                       absl::StatusCode::kInvalidArgument, {"past its allocation"}));

  std::unique_ptr<Stream> stream = Must(exec_->CreateStream());
  stream->ThenMemcpy(&evil, host_.data(), 64);
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"ThenMemcpy(host->device, 64 bytes)", "past its allocation"}));
}

TEST_F(ExecutorBadInput, AByteSliceWhoseOffsetWouldWrapIsRefused) {
  DeviceMemoryBase near_end(reinterpret_cast<void*>(0x1000), 64, UINT64_MAX - 10);
  EXPECT_TRUE(HasError(near_end.GetByteSlice(32, 8).status(), absl::StatusCode::kInvalidArgument,
                       {"slice [offset=32, size=8] does not fit"}));
  EXPECT_TRUE(HasError(DeviceMemory<double>(near_end).GetSlice(UINT64_MAX / 4, 1).status(),
                       absl::StatusCode::kInvalidArgument, {"does not fit"}));
}

TEST_F(ExecutorBadInput, AllocationsNearTwoToThe64AreRefused) {
  for (uint64_t bytes : {UINT64_MAX, UINT64_MAX - 8, uint64_t{1} << 63}) {
    SCOPED_TRACE(bytes);
    EXPECT_TRUE(HasError(exec_->HostMemoryAllocate(bytes).status(),
                         absl::StatusCode::kResourceExhausted,
                         {"HostMemoryAllocate on two:0", "more than any device gives"}));
    EXPECT_TRUE(HasError(exec_->Allocate(bytes).status(), absl::StatusCode::kResourceExhausted,
                         {"Allocate on two:0"}));
  }
  // The host backend itself, below the front's check: rounding up to its
  // alignment must not wrap into a tiny block.
  absl::StatusOr<void*> raw = exec_->implementation()->HostMemoryAllocate(UINT64_MAX - 8);
  EXPECT_TRUE(
      HasError(raw.status(), absl::StatusCode::kResourceExhausted, {"18446744073709551607"}));
  EXPECT_TRUE(HasError(exec_->AllocateArray<double>(UINT64_MAX / 4).status(),
                       absl::StatusCode::kInvalidArgument, {"overflow a 64-bit size"}));
}

// Found by tests/fuzz/api_fuzz: an asynchronous copy still queued read a
// buffer freed after it was enqueued (heap-use-after-free on the host
// stream's thread). The free is now deferred past the queued work.
TEST_F(ExecutorBadInput, AFreeWaitsForQueuedWorkThatUsesTheMemory) {
  DeviceMemoryBase m = Must(exec_->Allocate(256));
  ASSERT_TRUE(IsOk(exec_->SynchronousMemcpy(&m, host_.data(), 256)));
  std::unique_ptr<Stream> stream = Must(exec_->CreateStream());
  std::vector<uint8_t> back(256, 0);
  stream->ThenDoHostCallback([] { absl::SleepFor(absl::Milliseconds(50)); })
      .ThenMemcpy(back.data(), m, 256);
  ASSERT_TRUE(IsOk(exec_->Deallocate(&m)));  // Returns at once; the copy has not run.
  EXPECT_TRUE(m.is_null());
  EXPECT_EQ(exec_->GetMemoryStats().bytes_in_use, 0);
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_EQ(back, host_);  // The copy read the live buffer (ASan checks).
}

// Also found by the fuzzer: a stream of device 1 may copy from device 0's
// memory (a peer copy), so device 0's free must wait for it too.
TEST_F(ExecutorBadInput, AFreeWaitsForAPeerDeviceStreamThatUsesTheMemory) {
  DeviceMemoryBase m = Must(exec_->Allocate(256));
  DeviceMemoryBase dst = Must(other_->Allocate(256));
  ASSERT_TRUE(IsOk(exec_->SynchronousMemcpy(&m, host_.data(), 256)));
  std::unique_ptr<Stream> peer = Must(other_->CreateStream());
  peer->ThenDoHostCallback([] { absl::SleepFor(absl::Milliseconds(50)); }).ThenMemcpy(&dst, m, 256);
  ASSERT_TRUE(IsOk(peer->ok() ? absl::OkStatus() : absl::InternalError("peer copy refused")));
  ASSERT_TRUE(IsOk(exec_->Deallocate(&m)));  // Device 0 has no stream at all.
  ASSERT_TRUE(IsOk(peer->BlockHostUntilDone()));
  std::vector<uint8_t> back(256, 0);
  ASSERT_TRUE(IsOk(other_->SynchronousMemcpy(back.data(), dst, 256)));
  EXPECT_EQ(back, host_);  // The copy read the live buffer (ASan checks).
  ASSERT_TRUE(IsOk(other_->Deallocate(&dst)));
}

TEST_F(ExecutorBadInput, AFreeFromAHostCallbackNeitherBlocksNorFreesEarly) {
  // Stream `user` has a copy of `m` queued behind a sleep; a callback of
  // stream `freer` frees `m` meanwhile. Waiting for `user` there could
  // deadlock (if `user` waited on `freer`); freeing at once would break
  // the copy.
  DeviceMemoryBase m = Must(exec_->Allocate(256));
  ASSERT_TRUE(IsOk(exec_->SynchronousMemcpy(&m, host_.data(), 256)));
  std::unique_ptr<Stream> user = Must(exec_->CreateStream());
  std::unique_ptr<Stream> freer = Must(exec_->CreateStream());
  std::vector<uint8_t> back(256, 0);
  user->ThenDoHostCallback([] { absl::SleepFor(absl::Milliseconds(50)); })
      .ThenMemcpy(back.data(), m, 256);
  absl::Status from_callback = absl::UnknownError("not run");
  freer->ThenDoHostCallback([&] { from_callback = exec_->Deallocate(&m); });
  ASSERT_TRUE(IsOk(freer->BlockHostUntilDone()));
  EXPECT_TRUE(IsOk(from_callback));
  ASSERT_TRUE(IsOk(user->BlockHostUntilDone()));
  EXPECT_EQ(back, host_);
  // A freed handle is refused at once, though its bytes may still be held.
  DeviceMemoryBase stale(back.data(), 256);
  EXPECT_TRUE(HasError(exec_->Deallocate(&stale), absl::StatusCode::kInvalidArgument,
                       {"not an allocation of this device"}));
}

// --- Class 6: enums from integers.

TEST_F(ExecutorBadInput, APluginKindOutsideTheEnumIsRefused) {
  for (int value : {5, 7, -1, 1 << 30}) {
    SCOPED_TRACE(value);
    const auto kind = static_cast<PluginKind>(value);
    const std::string named = absl::StrCat("plugin kind ", value, " is not a PluginKind");
    EXPECT_TRUE(HasError(exec_->GetPlugin(kind).status(), absl::StatusCode::kInvalidArgument,
                         {"GetPlugin on two:0", named}));
    EXPECT_TRUE(HasError(exec_->SetPlugin(kind, "openblas"), absl::StatusCode::kInvalidArgument,
                         {"SetPlugin on two:0", named}));
    EXPECT_TRUE(
        HasError(exec_->PluginName(kind).status(), absl::StatusCode::kInvalidArgument, {named}));
    EXPECT_TRUE(HasError(CheckPluginKind(kind), absl::StatusCode::kInvalidArgument, {named}));
  }
  EXPECT_TRUE(IsOk(CheckPluginKind(PluginKind::kFft)));
  EXPECT_TRUE(IsOk(CheckPluginKind(PluginKind::kCollectives)));
}

}  // namespace
}  // namespace rill
