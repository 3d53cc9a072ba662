#include "rill/stream/stream_status.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace rill {
namespace {

TEST(StreamStatus, KeepsTheFirstErrorOnly) {
  StreamStatus status;
  EXPECT_TRUE(status.ok());
  EXPECT_TRUE(status.Get().ok());
  status.Update(absl::OkStatus());
  EXPECT_TRUE(status.ok());
  status.Update(absl::InvalidArgumentError("first"));
  status.Update(absl::InternalError("second"));
  status.Update(absl::OkStatus());
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.Get(), absl::InvalidArgumentError("first"));
}

TEST(StreamStatus, AFrontErrorReachesTheQueueOnlyThroughItsMarker) {
  StreamStatus status;
  EXPECT_TRUE(status.UpdateAtFront(absl::InvalidArgumentError("bad size 8")));
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.Get(), absl::InvalidArgumentError("bad size 8"));
  EXPECT_TRUE(status.queue_ok()) << "work queued before the bad call still runs";
  EXPECT_TRUE(status.QueueGet().ok());
  // A second front error is not kept and needs no marker.
  EXPECT_FALSE(status.UpdateAtFront(absl::InternalError("later")));
  // A task failing before the marker is reached: the queue fails with it,
  // the front keeps the error it reported first.
  status.Update(absl::DataLossError("task 3 failed"));
  EXPECT_FALSE(status.queue_ok());
  EXPECT_EQ(status.QueueGet(), absl::DataLossError("task 3 failed"));
  EXPECT_EQ(status.Get(), absl::InvalidArgumentError("bad size 8"));
  // The marker, reached later, changes neither.
  status.Update(absl::InvalidArgumentError("bad size 8"));
  EXPECT_EQ(status.QueueGet(), absl::DataLossError("task 3 failed"));
}

TEST(StreamStatus, AQueueErrorFailsBothViews) {
  StreamStatus status;
  status.Update(absl::UnavailableError("link down"));
  EXPECT_FALSE(status.ok());
  EXPECT_FALSE(status.queue_ok());
  EXPECT_EQ(status.QueueGet(), absl::UnavailableError("link down"));
  EXPECT_FALSE(status.UpdateAtFront(absl::InvalidArgumentError("late")));
  EXPECT_EQ(status.Get(), absl::UnavailableError("link down"));
}

TEST(StreamStatus, ConcurrentUpdatesKeepExactlyOneOfThem) {
  StreamStatus status;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&status, t] {
      for (int i = 0; i < 100; ++i) {
        status.Update(absl::InternalError(std::to_string(t * 1000 + i)));
        (void)status.ok();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const absl::Status kept = status.Get();
  ASSERT_EQ(kept.code(), absl::StatusCode::kInternal);
  const int value = std::stoi(std::string(kept.message()));
  EXPECT_EQ(value % 1000, 0) << "the first update of some thread wins: " << kept;
  EXPECT_EQ(status.Get(), kept) << "and stays";
}

}  // namespace
}  // namespace rill
