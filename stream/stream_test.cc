// Stream front: waits across platforms (through the host), events of
// another platform, and the error-state contract.

#include "rill/stream/stream.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
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

// Two host platforms that Rill sees as different platforms.
const PlatformIdInfo kAlphaIdInfo{"alpha"};
const PlatformIdInfo kBetaIdInfo{"beta"};

class CrossPlatformTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto [name, id] : {std::pair{"alpha", &kAlphaIdInfo}, std::pair{"beta", &kBetaIdInfo}}) {
      ASSERT_TRUE(IsOk(manager_.RegisterPlatform(
          std::make_unique<HostPlatform>(HostPlatformOptions{name, id, 1, 1 << 20}))));
    }
    alpha_ = Must(Must(manager_.PlatformWithName("alpha"))->ExecutorForDevice(0));
    beta_ = Must(Must(manager_.PlatformWithName("beta"))->ExecutorForDevice(0));
    ASSERT_NE(alpha_->platform()->id(), beta_->platform()->id());
  }

  PlatformManager manager_;  // Destroyed last.
  StreamExecutor* alpha_ = nullptr;
  StreamExecutor* beta_ = nullptr;
};

TEST_F(CrossPlatformTest, WaitForEventOfAnotherPlatformGoesThroughTheHost) {
  std::unique_ptr<Stream> producer = Must(alpha_->CreateStream());
  std::unique_ptr<Stream> consumer = Must(beta_->CreateStream());
  std::unique_ptr<Event> ready = Must(alpha_->CreateEvent());
  std::atomic<int> flag{0};
  int seen = -1;
  producer
      ->ThenDoHostCallback([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        flag = 1;
      })
      .ThenRecordEvent(ready.get());
  consumer->ThenWaitFor(ready.get()).ThenDoHostCallback([&] { seen = flag.load(); });
  ASSERT_TRUE(IsOk(consumer->BlockHostUntilDone()));
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(IsOk(producer->BlockHostUntilDone()));
}

TEST_F(CrossPlatformTest, WaitForStreamOfAnotherPlatformGoesThroughTheHost) {
  std::unique_ptr<Stream> producer = Must(beta_->CreateStream());
  std::unique_ptr<Stream> consumer = Must(alpha_->CreateStream());
  auto gate = Gate::Make();
  OpenOnExit open(gate);
  std::atomic<int> flag{0};
  std::atomic<int> seen{-1};
  producer->ThenDoHostCallback([gate] { gate->Wait(); }).ThenDoHostCallback([&] { flag = 1; });
  consumer->ThenWaitFor(producer.get()).ThenDoHostCallback([&] { seen = flag.load(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(seen.load(), -1) << "the consumer did not wait for the other platform's stream";
  gate->Open();
  ASSERT_TRUE(IsOk(consumer->BlockHostUntilDone()));
  EXPECT_EQ(seen.load(), 1);
  EXPECT_TRUE(IsOk(producer->BlockHostUntilDone()));
}

TEST_F(CrossPlatformTest, ProducerFailureReachesTheWaiter) {
  std::unique_ptr<Stream> producer = Must(alpha_->CreateStream());
  std::unique_ptr<Stream> consumer = Must(beta_->CreateStream());
  producer->ThenDoHostCallbackWithStatus([] { return absl::InternalError("alpha fault 3"); });
  bool ran = false;
  consumer->ThenWaitFor(producer.get()).ThenDoHostCallback([&] { ran = true; });
  EXPECT_TRUE(HasError(consumer->BlockHostUntilDone(), absl::StatusCode::kInternal,
                       {"waiting through the host", "alpha fault 3"}));
  EXPECT_FALSE(ran);
}

TEST_F(CrossPlatformTest, RecordingAnEventOfAnotherPlatformIsInvalidArgument) {
  std::unique_ptr<Stream> stream = Must(alpha_->CreateStream());
  std::unique_ptr<Event> foreign = Must(beta_->CreateEvent());
  stream->ThenRecordEvent(foreign.get());
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"ThenRecordEvent", "beta:0", "alpha:0"}));
  EXPECT_FALSE(foreign->recorded());
}

TEST_F(CrossPlatformTest, WaitingOnANeverRecordedEventOfAnotherPlatform) {
  std::unique_ptr<Stream> stream = Must(alpha_->CreateStream());
  std::unique_ptr<Event> foreign = Must(beta_->CreateEvent());
  stream->ThenWaitFor(foreign.get());
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition,
                       {"never recorded"}));
}

TEST_F(CrossPlatformTest, WaitingOnADetachedStreamIsFailedPrecondition) {
  auto other = std::make_unique<PlatformManager>();
  const PlatformIdInfo gamma_id{"gamma"};
  ASSERT_TRUE(IsOk(other->RegisterPlatform(
      std::make_unique<HostPlatform>(HostPlatformOptions{"gamma", &gamma_id, 1, 1 << 20}))));
  std::unique_ptr<Stream> orphan =
      Must(Must(Must(other->PlatformWithName("gamma"))->ExecutorForDevice(0))->CreateStream());
  other.reset();
  std::unique_ptr<Stream> stream = Must(alpha_->CreateStream());
  stream->ThenWaitFor(orphan.get());
  EXPECT_TRUE(
      HasError(stream->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition, {"detached"}));
}

// The front refuses device memory its executor does not own -- another
// platform's, or a view past its allocation -- before any backend sees it;
// a device-to-device copy also takes memory of another device of the same
// platform (a peer copy).
TEST_F(CrossPlatformTest, MemoryOfAnotherPlatformIsInvalidArgument) {
  ScopedDeviceMemory<uint32_t> theirs = Must(beta_->AllocateOwnedArray<uint32_t>(16));
  ScopedDeviceMemory<uint32_t> ours = Must(alpha_->AllocateOwnedArray<uint32_t>(16));
  uint32_t host[16] = {};
  std::unique_ptr<Stream> s1 = Must(alpha_->CreateStream());
  s1->ThenMemcpy(theirs.ptr(), host, sizeof(host));
  EXPECT_TRUE(HasError(s1->status(), absl::StatusCode::kInvalidArgument,
                       {"destination", "not in an allocation of", alpha_->DebugName()}));
  std::unique_ptr<Stream> s2 = Must(alpha_->CreateStream());
  s2->ThenMemcpy(host, *theirs, sizeof(host));
  EXPECT_TRUE(HasError(s2->status(), absl::StatusCode::kInvalidArgument, {"source"}));
  std::unique_ptr<Stream> s3 = Must(alpha_->CreateStream());
  s3->ThenMemcpy(ours.ptr(), *theirs, sizeof(host));
  EXPECT_TRUE(HasError(s3->status(), absl::StatusCode::kInvalidArgument,
                       {"source", "or of another device of its platform"}));
  std::unique_ptr<Stream> s4 = Must(alpha_->CreateStream());
  s4->ThenMemset32(theirs.ptr(), 7, sizeof(host));
  EXPECT_TRUE(HasError(s4->status(), absl::StatusCode::kInvalidArgument, {"destination"}));
  // A view past its allocation, made by hand.
  DeviceMemoryBase past(ours->opaque(), 64, 32);
  std::unique_ptr<Stream> s5 = Must(alpha_->CreateStream());
  s5->ThenMemcpy(&past, host, 64);
  EXPECT_TRUE(HasError(s5->status(), absl::StatusCode::kInvalidArgument, {"offset=32", "size=64"}));
}

TEST(StreamPeerCopy, DeviceToDeviceBetweenDevicesOfOnePlatform) {
  PlatformManager manager;
  const PlatformIdInfo id{"pair"};
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(
      std::make_unique<HostPlatform>(HostPlatformOptions{"pair", &id, 2, 1 << 20}))));
  Platform* pair = Must(manager.PlatformWithName("pair"));
  StreamExecutor* d0 = Must(pair->ExecutorForDevice(0));
  StreamExecutor* d1 = Must(pair->ExecutorForDevice(1));
  ScopedDeviceMemory<uint32_t> a = Must(d0->AllocateOwnedArray<uint32_t>(4));
  ScopedDeviceMemory<uint32_t> b = Must(d1->AllocateOwnedArray<uint32_t>(4));
  const uint32_t in[4] = {1, 2, 3, 4};
  uint32_t out[4] = {};
  std::unique_ptr<Stream> s = Must(d0->CreateStream());
  s->ThenMemcpy(a.ptr(), in, sizeof(in)).ThenMemcpy(b.ptr(), *a, sizeof(in));
  ASSERT_TRUE(IsOk(s->BlockHostUntilDone()));
  std::unique_ptr<Stream> t = Must(d1->CreateStream());
  t->ThenMemcpy(out, *b, sizeof(out));
  ASSERT_TRUE(IsOk(t->BlockHostUntilDone()));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], in[i]);
}

TEST(Stream, SetErrorKeepsTheFirstError) {
  Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
  std::unique_ptr<Stream> stream = Must(Must(host->ExecutorForDevice(0))->CreateStream());
  EXPECT_TRUE(stream->ok());
  stream->SetError(absl::OkStatus());
  EXPECT_TRUE(stream->ok());
  stream->SetError(absl::NotFoundError("plugin gone"));
  stream->SetError(absl::InternalError("second"));
  EXPECT_FALSE(stream->ok());
  EXPECT_TRUE(HasError(stream->status(), absl::StatusCode::kNotFound, {"plugin gone"}));
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kNotFound));
  EXPECT_EQ(stream->native_handle(), nullptr);
}

}  // namespace
}  // namespace rill
