#include "rill/base/slow_notice.h"

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rill {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SlowWorkNotice, SlowWorkIsAnnouncedOnceThenTimed) {
  ::testing::internal::CaptureStderr();
  {
    SlowWorkNotice notice("compiling the test kernels (first use)...", absl::Milliseconds(50));
    absl::SleepFor(absl::Milliseconds(250));
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("[rill W slow_notice_test.cc:"));
  EXPECT_THAT(err, HasSubstr("compiling the test kernels (first use)...\n"));
  EXPECT_THAT(err, HasSubstr("compiling the test kernels (first use)... done in 0."));
}

TEST(SlowWorkNotice, FastWorkPrintsNothing) {
  ::testing::internal::CaptureStderr();
  { SlowWorkNotice notice("fast work", absl::Milliseconds(100)); }
  absl::SleepFor(absl::Milliseconds(200));  // Past the deadline it no longer has.
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(SlowWorkNotice, OnlyTheSlowOfSeveralIsAnnounced) {
  ::testing::internal::CaptureStderr();
  {
    SlowWorkNotice slow("the slow one", absl::Milliseconds(60));
    {
      SlowWorkNotice later("the cancelled one", absl::Milliseconds(150));
      SlowWorkNotice sooner("the quick one", absl::Milliseconds(30));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("the slow one"));
  EXPECT_THAT(err, Not(HasSubstr("the cancelled one")));
  EXPECT_THAT(err, Not(HasSubstr("the quick one")));
}

}  // namespace
}  // namespace rill
