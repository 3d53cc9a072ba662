#include "rill/base/logging.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "rill/base/status_macros.h"

namespace rill {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::Status Quarter(int x, int* out) {
  RILL_ASSIGN_OR_RETURN(int half, Half(x));
  RILL_ASSIGN_OR_RETURN(*out, Half(half));
  return absl::OkStatus();
}

TEST(StatusMacros, PropagateErrorsAndValues) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  absl::Status status = Quarter(6, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

TEST(StatusMacros, AnnotateKeepsCodeAndPrefixesMessage) {
  absl::Status s = Annotate(absl::NotFoundError("gone"), "lookup(x)");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "lookup(x): gone");
  EXPECT_TRUE(Annotate(absl::OkStatus(), "ctx").ok());
}

TEST(Logging, CheckFailureAbortsWithMessage) {
  EXPECT_DEATH(RILL_CHECK(1 + 1 == 3) << "arithmetic", "Check failed: 1 \\+ 1 == 3 arithmetic");
}

TEST(Logging, PassingCheckDoesNotEvaluateStream) {
  int evaluated = 0;
  RILL_CHECK(true) << ++evaluated;
  EXPECT_EQ(evaluated, 0);
}

}  // namespace
}  // namespace rill
