#include "rill/platform/host/host_task.h"

#include <array>
#include <memory>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "gtest/gtest.h"

namespace rill {
namespace {

// Counts live copies of itself through a shared counter.
struct Tracked {
  explicit Tracked(std::shared_ptr<int> live) : live(std::move(live)) { ++*this->live; }
  Tracked(Tracked&& other) noexcept : live(other.live) { ++*live; }
  ~Tracked() { --*live; }
  std::shared_ptr<int> live;
};

TEST(HostTaskTest, RunsAnInlineCallableAndReturnsItsStatus) {
  int calls = 0;
  HostTask task([&calls] {
    ++calls;
    return absl::InvalidArgumentError("bad");
  });
  ASSERT_TRUE(task);
  EXPECT_EQ(std::move(task)().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(calls, 1);
}

TEST(HostTaskTest, LargeCapturesGoToTheHeapAndStillRun) {
  std::array<char, 4 * HostTask::kInlineSize> big{};
  big.back() = 7;
  HostTask task([big] { return big.back() == 7 ? absl::OkStatus() : absl::InternalError("lost"); });
  HostTask moved = std::move(task);
  EXPECT_FALSE(task);  // NOLINT: checking the moved-from state on purpose.
  EXPECT_TRUE(std::move(moved)().ok());
}

TEST(HostTaskTest, MovesAndResetDestroyEachCaptureExactlyOnce) {
  auto live = std::make_shared<int>(0);
  for (bool inline_size : {true, false}) {
    {
      Tracked tracked(live);
      std::array<char, HostTask::kInlineSize> pad{};
      HostTask task = inline_size
                          ? HostTask([t = std::move(tracked)] { return absl::OkStatus(); })
                          : HostTask([t = std::move(tracked), pad] { return absl::OkStatus(); });
      EXPECT_EQ(*live, 2);  // `tracked` (moved-from) and the capture.
      HostTask second = std::move(task);
      HostTask third;
      third = std::move(second);
      EXPECT_EQ(*live, 2);
      EXPECT_TRUE(std::move(third)().ok());
      third.Reset();
      EXPECT_FALSE(third);
      EXPECT_EQ(*live, 1);
    }
    EXPECT_EQ(*live, 0);
  }
}

TEST(HostTaskTest, HoldsAnAnyInvocable) {
  absl::AnyInvocable<absl::Status()&&> callback = [] { return absl::CancelledError("x"); };
  HostTask task(std::move(callback));
  EXPECT_EQ(std::move(task)().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace rill
