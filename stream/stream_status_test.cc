#include "stream/stream_status.h"

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
