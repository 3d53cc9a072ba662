// Concurrency stress for host streams, meant for ThreadSanitizer: many
// producer threads, each enqueueing on its own streams, with cross-stream
// waits whose missing edge would be a data race or a wrong result.

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rill/platform/host/host_platform.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::IsOk;
using ::rill::testing::Must;

const PlatformIdInfo kStressIdInfo{"stress"};

class HostStreamStress : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(IsOk(manager_.RegisterPlatform(std::make_unique<HostPlatform>(
        HostPlatformOptions{"stress", &kStressIdInfo, 2, 64 << 20}))));
    platform_ = Must(manager_.PlatformWithName("stress"));
  }
  PlatformManager manager_;
  Platform* platform_ = nullptr;
};

// K producers, one stream each (alternating devices). In round r, stream t
// computes cell[t][r] = cell[t][r-1] + cell[t+1][r-1] + t, reading its
// neighbour's cell only after waiting for the neighbour's round r-1 event.
// The neighbour's event is published to this thread through Event::recorded().
TEST_F(HostStreamStress, RingOfProducersWithCrossWaits) {
  constexpr int kStreams = 6, kRounds = 60;
  std::vector<std::vector<int64_t>> cell(kStreams, std::vector<int64_t>(kRounds + 1, 0));
  for (int t = 0; t < kStreams; ++t) cell[t][0] = t + 1;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::vector<std::unique_ptr<Event>>> events(kStreams);
  for (int t = 0; t < kStreams; ++t) {
    StreamExecutor* exec = Must(platform_->ExecutorForDevice(t % 2));
    streams.push_back(Must(exec->CreateStream()));
    for (int r = 0; r <= kRounds; ++r) events[t].push_back(Must(exec->CreateEvent()));
  }
  std::vector<std::thread> producers;
  for (int t = 0; t < kStreams; ++t) {
    producers.emplace_back([&, t] {
      Stream& s = *streams[t];
      const int next = (t + 1) % kStreams;
      s.ThenRecordEvent(events[t][0].get());
      for (int r = 1; r <= kRounds; ++r) {
        Event* neighbour = events[next][r - 1].get();
        while (!neighbour->recorded()) std::this_thread::yield();
        s.ThenWaitFor(neighbour).ThenDoHostCallback(
            [&cell, t, next, r] { cell[t][r] = cell[t][r - 1] + cell[next][r - 1] + t; });
        s.ThenRecordEvent(events[t][r].get());
      }
    });
  }
  for (std::thread& p : producers) p.join();
  for (auto& s : streams) ASSERT_TRUE(IsOk(s->BlockHostUntilDone()));

  std::vector<std::vector<int64_t>> expected(kStreams, std::vector<int64_t>(kRounds + 1, 0));
  for (int t = 0; t < kStreams; ++t) expected[t][0] = t + 1;
  for (int r = 1; r <= kRounds; ++r) {
    for (int t = 0; t < kStreams; ++t) {
      expected[t][r] = expected[t][r - 1] + expected[(t + 1) % kStreams][r - 1] + t;
    }
  }
  EXPECT_EQ(cell, expected);
}

// Producers copy through device memory on their own streams while a
// consumer stream per producer waits on the producer's stream and reads the
// result back; meanwhile another thread polls events and synchronizes the
// whole device.
TEST_F(HostStreamStress, CopyPipelinesWithObservers) {
  constexpr int kPipelines = 4, kItems = 40, kWords = 256;
  StreamExecutor* exec = Must(platform_->ExecutorForDevice(0));
  std::vector<std::vector<int32_t>> results(kPipelines, std::vector<int32_t>(kItems * kWords, -1));
  std::vector<std::unique_ptr<Event>> last(kPipelines);
  for (auto& e : last) e = Must(exec->CreateEvent());
  std::atomic<bool> done{false};
  std::thread observer([&] {
    while (!done.load()) {
      for (auto& e : last) (void)e->PollForStatus();
      (void)exec->SynchronizeAllActivity();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> producers;
  for (int p = 0; p < kPipelines; ++p) {
    producers.emplace_back([&, p] {
      std::unique_ptr<Stream> producer = Must(exec->CreateStream());
      std::unique_ptr<Stream> consumer = Must(exec->CreateStream());
      ScopedDeviceMemory<int32_t> staging = Must(exec->AllocateOwnedArray<int32_t>(kWords));
      std::vector<int32_t> source(kItems * kWords);
      for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<int32_t>(p * 1000000 + i);
      for (int item = 0; item < kItems; ++item) {
        // The producer may only overwrite staging once the consumer read it.
        producer->ThenWaitFor(consumer.get())
            .ThenMemcpy(staging.ptr(), &source[item * kWords], kWords * 4);
        consumer->ThenWaitFor(producer.get())
            .ThenMemcpy(&results[p][item * kWords], *staging, kWords * 4);
      }
      consumer->ThenRecordEvent(last[p].get());
      EXPECT_TRUE(IsOk(consumer->BlockHostUntilDone()));
      EXPECT_TRUE(IsOk(producer->BlockHostUntilDone()));
      EXPECT_EQ(results[p], source);
    });
  }
  for (std::thread& t : producers) t.join();
  done = true;
  observer.join();
  for (auto& e : last) EXPECT_EQ(e->PollForStatus(), Event::Status::kComplete);
}

// Streams created and destroyed on many threads while the device is
// synchronized over and over.
TEST_F(HostStreamStress, StreamChurnWithSynchronizeAll) {
  StreamExecutor* exec = Must(platform_->ExecutorForDevice(1));
  std::atomic<int> callbacks{0};
  std::atomic<bool> done{false};
  std::thread syncer([&] {
    while (!done.load()) (void)exec->SynchronizeAllActivity();
  });
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        std::unique_ptr<Stream> s = Must(exec->CreateStream());
        for (int k = 0; k < 4; ++k) s->ThenDoHostCallback([&callbacks] { ++callbacks; });
        if (i % 2 == 0) {
          EXPECT_TRUE(IsOk(s->BlockHostUntilDone()));
        }
      }  // Destroying a stream drains it.
    });
  }
  for (std::thread& t : workers) t.join();
  done = true;
  syncer.join();
  EXPECT_EQ(callbacks.load(), 4 * 25 * 4);
}

}  // namespace
}  // namespace rill
