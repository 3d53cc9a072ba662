// Stream front: waits across platforms (through the host), events of
// another platform, and the error-state contract.

#include "stream/stream.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "platform/host/host_platform.h"
#include "rill.h"
#include "tests/testing/status_testing.h"

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
  producer->ThenDoHostCallback([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    flag = 1;
  }).ThenRecordEvent(ready.get());
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
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition,
                       {"detached"}));
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
