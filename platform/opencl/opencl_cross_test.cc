// The OpenCL platform next to the host platform, without the engine:
// Stream::ThenWaitFor between a host stream and an OpenCL stream in both
// directions (through the host, since the platforms differ), an error that
// crosses such a wait, and moving data between host-platform memory and
// OpenCL buffers.
//
// Each producer starts slow (a host kernel or callback that sleeps before
// writing), so a consumer that does not really wait reads stale data.
// Waits within one platform are in the conformance suite (conformance/); the engine's
// dispatch across both platforms is in opencl_engine_test.cc.
//
// Copies: Stream::ThenMemcpy(DeviceMemoryBase*, const DeviceMemoryBase&)
// is for memory of the stream's own executor. Between executors of two
// platforms the path is the host: host-platform memory is host memory
// (HostPointer), so an OpenCL stream copies straight from and into it,
// ordered against the host stream with ThenWaitFor.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rill/platform/host/host_executor.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;
using namespace std::chrono_literals;

constexpr uint64_t kN = 256;
constexpr auto kSlow = 50ms;

// y[i] = x[i] * mul + add: a host variant and an OpenCL variant. With
// `slow`, thread 0 of block 0 sleeps kSlow first; the threads of a host
// block run one after another, so the whole block writes late.
KernelSpec AffineSpec(bool slow) {
  KernelSpec spec(slow ? "slow_affine" : "affine");
  spec.AddHostFunction<DeviceMemory<uint32_t>, DeviceMemory<uint32_t>, uint32_t, uint32_t,
                       uint64_t>([slow](const HostThread& t, const uint32_t* x, uint32_t* y,
                                        uint32_t mul, uint32_t add, uint64_t n) {
    const uint64_t i = static_cast<uint64_t>(t.global_x());
    if (slow && i == 0) std::this_thread::sleep_for(kSlow);
    if (i < n) y[i] = x[i] * mul + add;
  });
  spec.AddOpenClSource(R"CL(
__kernel void affine(__global const uint* x, __global uint* y, uint mul, uint add, ulong n) {
  const size_t i = get_global_id(0);
  if (i < n) y[i] = x[i] * mul + add;
}
__kernel void slow_affine(__global const uint* x, __global uint* y, uint mul, uint add, ulong n) {
  const size_t i = get_global_id(0);
  if (i < n) y[i] = x[i] * mul + add;
})CL");
  return spec;
}
using AffineKernel =
    TypedKernel<DeviceMemory<uint32_t>, DeviceMemory<uint32_t>, uint32_t, uint32_t, uint64_t>;

std::vector<uint32_t> Iota(uint64_t n, uint32_t first) {
  std::vector<uint32_t> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = first + static_cast<uint32_t>(i);
  return v;
}

class OpenClCrossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Platform* cl = Must(PlatformManager::Default().PlatformWithName("opencl"));
    if (cl->VisibleDeviceCount() == 0) GTEST_SKIP() << cl->Availability();
    cl_ = Must(cl->ExecutorForDevice(0));
    host_ = Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
    cl_stream_ = Must(cl_->CreateStream());
    host_stream_ = Must(host_->CreateStream());
  }
  // Host-platform memory of kN words, zeroed.
  ScopedDeviceMemory<uint32_t> HostWords() {
    ScopedDeviceMemory<uint32_t> m = Must(host_->AllocateOwnedArray<uint32_t>(kN));
    std::memset(HostPointer(*m), 0, kN * sizeof(uint32_t));
    return m;
  }
  ScopedDeviceMemory<uint32_t> ClWords() {
    ScopedDeviceMemory<uint32_t> m = Must(cl_->AllocateOwnedArray<uint32_t>(kN));
    std::vector<uint32_t> zeros(kN, 0);
    EXPECT_TRUE(IsOk(cl_->SynchronousMemcpy(m.ptr(), zeros.data(), kN * sizeof(uint32_t))));
    return m;
  }
  static const uint32_t* Words(const DeviceMemoryBase& host_memory) {
    return static_cast<const uint32_t*>(HostPointer(host_memory));
  }

  StreamExecutor* cl_ = nullptr;
  StreamExecutor* host_ = nullptr;
  std::unique_ptr<Stream> cl_stream_;
  std::unique_ptr<Stream> host_stream_;
};

// host kernel (slow) writes host memory -> the OpenCL stream waits for the
// host stream, copies that memory into a buffer and runs a kernel on it.
TEST_F(OpenClCrossTest, OpenClStreamWaitsForHostStream) {
  ScopedDeviceMemory<uint32_t> in = HostWords(), produced = HostWords();
  ScopedDeviceMemory<uint32_t> buffer = ClWords(), result = ClWords();
  std::memcpy(HostPointer(*in), Iota(kN, 1).data(), kN * sizeof(uint32_t));
  auto host_kernel =
      Must(host_->LoadKernel<DeviceMemory<uint32_t>, DeviceMemory<uint32_t>, uint32_t, uint32_t,
                             uint64_t>(AffineSpec(/*slow=*/true)));
  auto cl_kernel = Must(
      cl_->LoadKernel<DeviceMemory<uint32_t>, DeviceMemory<uint32_t>, uint32_t, uint32_t, uint64_t>(
          AffineSpec(/*slow=*/false)));

  // produced = 3 * (i + 1) + 1, late.
  host_stream_->ThenLaunch(ThreadDim(kN), BlockDim(1), host_kernel, *in, *produced, 3u, 1u, kN);
  std::vector<uint32_t> out(kN, 0);
  cl_stream_->ThenWaitFor(host_stream_.get())
      .ThenMemcpy(buffer.ptr(), Words(*produced), kN * sizeof(uint32_t))
      .ThenLaunch(ThreadDim(64), BlockDim(kN / 64), cl_kernel, *buffer, *result, 2u, 0u, kN)
      .ThenMemcpyD2H<uint32_t>(*result, absl::MakeSpan(out));
  ASSERT_TRUE(IsOk(cl_stream_->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(host_stream_->BlockHostUntilDone()));
  for (uint64_t i = 0; i < kN; ++i) ASSERT_EQ(out[i], 2 * (3 * (i + 1) + 1)) << i;
}

// OpenCL (a slow callback, then a kernel) writes a buffer and copies it into
// host memory -> the host stream waits for the OpenCL stream and runs a host
// kernel on that memory.
TEST_F(OpenClCrossTest, HostStreamWaitsForOpenClStream) {
  ScopedDeviceMemory<uint32_t> staged = HostWords(), result = HostWords();
  ScopedDeviceMemory<uint32_t> source = ClWords(), buffer = ClWords();
  const std::vector<uint32_t> input = Iota(kN, 10);
  auto cl_kernel = Must(
      cl_->LoadKernel<DeviceMemory<uint32_t>, DeviceMemory<uint32_t>, uint32_t, uint32_t, uint64_t>(
          AffineSpec(/*slow=*/false)));
  auto host_kernel =
      Must(host_->LoadKernel<DeviceMemory<uint32_t>, DeviceMemory<uint32_t>, uint32_t, uint32_t,
                             uint64_t>(AffineSpec(/*slow=*/false)));

  cl_stream_->ThenDoHostCallback([] { std::this_thread::sleep_for(kSlow); })
      .ThenMemcpyH2D<uint32_t>(input, source.ptr())
      .ThenLaunch(ThreadDim(64), BlockDim(kN / 64), cl_kernel, *source, *buffer, 5u, 7u, kN)
      .ThenMemcpy(HostPointer(*staged), *buffer, kN * sizeof(uint32_t));
  host_stream_->ThenWaitFor(cl_stream_.get())
      .ThenLaunch(ThreadDim(kN), BlockDim(1), host_kernel, *staged, *result, 1u, 1000u, kN);
  ASSERT_TRUE(IsOk(host_stream_->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(cl_stream_->BlockHostUntilDone()));
  for (uint64_t i = 0; i < kN; ++i) ASSERT_EQ(Words(*result)[i], (10 + i) * 5 + 7 + 1000) << i;
}

// Events of the other platform, both ways, over several rounds that reuse
// one word: each round's consumer must see that round's value. One event
// per record (see WaitKeepsTheRecordItSawAcrossPlatforms).
TEST_F(OpenClCrossTest, EventsOfTheOtherPlatformOrderBothWays) {
  ScopedDeviceMemory<uint32_t> word = HostWords();
  ScopedDeviceMemory<uint32_t> buffer = ClWords();
  auto* host_word = static_cast<uint32_t*>(HostPointer(*word));
  constexpr int kRounds = 4;
  std::vector<std::unique_ptr<Event>> events;
  std::vector<uint32_t> seen_on_cl(kRounds, 0);
  std::vector<uint32_t> seen_on_host(kRounds, 0);
  for (int round = 0; round < kRounds; ++round) {
    // host: a late write of 100 + round; OpenCL reads it into the buffer
    // and back, then (late) fills the buffer with 200 + round.
    host_stream_->ThenDoHostCallback([host_word, round] {
      std::this_thread::sleep_for(10ms);
      *host_word = 100 + round;
    });
    events.push_back(Must(host_->CreateEvent()));
    host_stream_->ThenRecordEvent(events.back().get());
    cl_stream_->ThenWaitFor(events.back().get())
        .ThenMemcpy(buffer.ptr(), host_word, sizeof(uint32_t))
        .ThenMemcpy(&seen_on_cl[round], *buffer, sizeof(uint32_t))
        .ThenDoHostCallback([] { std::this_thread::sleep_for(10ms); })
        .ThenMemset32(buffer.ptr(), 200 + round, sizeof(uint32_t));
    events.push_back(Must(cl_->CreateEvent()));
    cl_stream_->ThenRecordEvent(events.back().get());
    // host: once OpenCL's fill is done, read the word on the host stream's
    // thread (a synchronous copy, on another OpenCL queue).
    host_stream_->ThenWaitFor(events.back().get()).ThenDoHostCallbackWithStatus([&, round] {
      return cl_->SynchronousMemcpy(&seen_on_host[round], *buffer, sizeof(uint32_t));
    });
  }
  ASSERT_TRUE(IsOk(host_stream_->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(cl_stream_->BlockHostUntilDone()));
  for (int round = 0; round < kRounds; ++round) {
    EXPECT_EQ(seen_on_cl[round], 100u + round) << round;
    EXPECT_EQ(seen_on_host[round], 200u + round) << round;
  }
}

// Event's contract: "re-recording moves the point; waits already enqueued
// keep the record they saw". Across platforms the wait is a host callback
// whose waiter (EventInterface::WaiterForLatestRecord) is taken at enqueue,
// so a wait enqueued after record 1 does not wait for a record 2 made later
// -- here one held behind a closed gate (with streams that wait on each
// other, waiting for it would deadlock).
TEST_F(OpenClCrossTest, WaitKeepsTheRecordItSawAcrossPlatforms) {
  std::unique_ptr<Event> event = Must(host_->CreateEvent());
  auto gate = ::rill::testing::Gate::Make();
  std::atomic<bool> passed{false};
  host_stream_->ThenRecordEvent(event.get());  // Record 1: completes at once.
  cl_stream_->ThenDoHostCallback([] { std::this_thread::sleep_for(kSlow); })
      .ThenWaitFor(event.get())  // Must wait for record 1 only.
      .ThenDoHostCallback([&passed] { passed = true; });
  host_stream_->ThenDoHostCallback([gate] { gate->Wait(); });
  host_stream_->ThenRecordEvent(event.get());  // Record 2: held by the gate.
  ::rill::testing::OpenOnExit open(gate);
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (!passed && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(passed) << "the OpenCL stream's wait is held by a record made after it was enqueued";
  gate->Open();
  EXPECT_TRUE(IsOk(cl_stream_->BlockHostUntilDone()));
  EXPECT_TRUE(IsOk(host_stream_->BlockHostUntilDone()));
}

// A failure before the record fails the waiting stream of the other
// platform with the first error, and its later work is skipped.
TEST_F(OpenClCrossTest, FailureCrossesTheWaitBothWays) {
  std::atomic<bool> ran{false};
  cl_stream_->ThenDoHostCallbackWithStatus(
      [] { return absl::DataLossError("opencl producer broke"); });
  host_stream_->ThenWaitFor(cl_stream_.get()).ThenDoHostCallback([&ran] { ran = true; });
  EXPECT_TRUE(HasError(host_stream_->BlockHostUntilDone(), absl::StatusCode::kDataLoss,
                       {"opencl producer broke", "waiting through the host"}));
  EXPECT_FALSE(ran);

  std::unique_ptr<Stream> host_producer = Must(host_->CreateStream());
  std::unique_ptr<Stream> cl_consumer = Must(cl_->CreateStream());
  host_producer->ThenDoHostCallbackWithStatus(
      [] { return absl::DataLossError("host producer broke"); });
  cl_consumer->ThenWaitFor(host_producer.get()).ThenDoHostCallback([&ran] { ran = true; });
  EXPECT_TRUE(HasError(cl_consumer->BlockHostUntilDone(), absl::StatusCode::kDataLoss,
                       {"host producer broke", "waiting through the host"}));
  EXPECT_FALSE(ran);
}

// Host-platform memory <-> OpenCL buffer, through the host side of the
// OpenCL copies, at unaligned offsets and odd sizes on both sides.
TEST_F(OpenClCrossTest, CopiesBetweenHostMemoryAndOpenClBuffers) {
  constexpr uint64_t kBytes = 4099;
  ScopedDeviceMemory<uint8_t> host_a = Must(host_->AllocateOwnedArray<uint8_t>(kBytes));
  ScopedDeviceMemory<uint8_t> host_b = Must(host_->AllocateOwnedArray<uint8_t>(kBytes));
  ScopedDeviceMemory<uint8_t> cl_buffer = Must(cl_->AllocateOwnedArray<uint8_t>(kBytes));
  std::vector<uint8_t> pattern(kBytes);
  for (uint64_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<uint8_t>(i * 7 + 3);

  // The host stream fills host_a (late); OpenCL copies host_a[3, 3+1000)
  // into cl[5, ...), then cl[5, ...) into host_b[2001, ...). host_b is
  // zeroed on the host stream before, so OpenCL's write must come after it.
  host_stream_->ThenDoHostCallback([&] {
    std::this_thread::sleep_for(kSlow);
    std::memcpy(HostPointer(*host_a), pattern.data(), kBytes);
    std::memset(HostPointer(*host_b), 0, kBytes);
  });
  DeviceMemoryBase src = Must(host_a->GetByteSlice(3, 1000));
  DeviceMemoryBase cl_mid = Must(cl_buffer->GetByteSlice(5, 1000));
  DeviceMemoryBase dst = Must(host_b->GetByteSlice(2001, 1000));
  cl_stream_->ThenWaitFor(host_stream_.get())
      .ThenMemcpy(&cl_mid, HostPointer(src), 1000)
      .ThenMemcpy(HostPointer(dst), cl_mid, 1000);
  host_stream_->ThenWaitFor(cl_stream_.get());
  ASSERT_TRUE(IsOk(host_stream_->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(cl_stream_->BlockHostUntilDone()));
  std::vector<uint8_t> expected(kBytes, 0);
  std::copy(pattern.begin() + 3, pattern.begin() + 1003, expected.begin() + 2001);
  std::vector<uint8_t> got(kBytes);
  std::memcpy(got.data(), HostPointer(*host_b), kBytes);
  EXPECT_EQ(got, expected);

  // Whole buffers, the other way round: OpenCL -> host memory -> OpenCL,
  // through OpenCL's pinned host memory as well.
  void* pinned = Must(cl_->HostMemoryAllocate(kBytes));
  std::vector<uint8_t> back(kBytes, 0);
  cl_stream_->ThenMemcpy(cl_buffer.ptr(), pattern.data(), kBytes)
      .ThenMemcpy(HostPointer(*host_a), *cl_buffer, kBytes);
  host_stream_->ThenWaitFor(cl_stream_.get()).ThenMemcpy(pinned, *host_a, kBytes);
  cl_stream_->ThenWaitFor(host_stream_.get())
      .ThenMemZero(cl_buffer.ptr(), kBytes)
      .ThenMemcpy(cl_buffer.ptr(), pinned, kBytes)
      .ThenMemcpy(back.data(), *cl_buffer, kBytes);
  ASSERT_TRUE(IsOk(cl_stream_->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(host_stream_->BlockHostUntilDone()));
  EXPECT_EQ(back, pattern);
  EXPECT_TRUE(IsOk(cl_->HostMemoryDeallocate(pinned)));
}

// Stream::ThenMemcpy(device, device) with memory of another platform is
// refused by the front (StreamExecutorInterface::Owns of every device
// operand), before a backend could take the foreign handle for its own.
TEST_F(OpenClCrossTest, DeviceToDeviceCopyAcrossPlatformsIsInvalidArgument) {
  ScopedDeviceMemory<uint32_t> host_memory = HostWords();
  ScopedDeviceMemory<uint32_t> cl_memory = ClWords();
  cl_stream_->ThenMemcpy(cl_memory.ptr(), *host_memory, kN * sizeof(uint32_t));
  EXPECT_TRUE(HasError(cl_stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"source", cl_->DebugName()}));
  host_stream_->ThenMemcpy(host_memory.ptr(), *cl_memory, kN * sizeof(uint32_t));
  EXPECT_TRUE(HasError(host_stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"source", host_->DebugName()}));
}

}  // namespace
}  // namespace rill
