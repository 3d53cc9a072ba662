#include "rill/base/env_settings.h"

#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/base/logging.h"
#include "tests/testing/scoped_env.h"

namespace rill {
namespace {

using ::rill::testing::ScopedEnv;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

void ExpectRefused(const char* name, const char* value, const std::string& message) {
  ScopedEnv env(name, value);
  const absl::Status status = ValidateEnvironment();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name << "=" << value;
  EXPECT_THAT(status.message(), HasSubstr(message));
}

// The reported settings that warned and ran on with defaults (or, for
// RILL_LOG_LEVEL, silently turned INFO on).
TEST(EnvSettings, TheReportedBadSettingsAreRefusedNamingWhatIsAccepted) {
  ExpectRefused("RILL_ENGINE", "turbo", "RILL_ENGINE='turbo' is not one of: threaded, naive");
  ExpectRefused("RILL_VERBOSE", "abc", "RILL_VERBOSE='abc' is not an integer in [0, 2]");
  ExpectRefused("RILL_ENGINE_CPU_WORKERS", "0",
                "RILL_ENGINE_CPU_WORKERS='0' is not an integer in [1, 1024]");
  ExpectRefused("RILL_LOG_LEVEL", "abc",
                "RILL_LOG_LEVEL='abc' is not an integer in [0, 3] (0: INFO");
}

TEST(EnvSettings, EveryKindOfSettingIsChecked) {
  ExpectRefused("RILL_HOST_DEVICES", "99999999999", "RILL_HOST_DEVICES='99999999999' is not an");
  ExpectRefused("RILL_HOST_MEMORY_LIMIT", "lots",
                "RILL_HOST_MEMORY_LIMIT='lots' is not a positive");
  ExpectRefused("RILL_HOST_MEMORY_LIMIT", "99999999999T", "RILL_HOST_MEMORY_LIMIT='99999999999T'");
  ExpectRefused("RILL_MAX_FILE_BYTES", "abc", "RILL_MAX_FILE_BYTES='abc' is not a positive");
  ExpectRefused("RILL_FFTW_PLANNER", "fast",
                "RILL_FFTW_PLANNER='fast' is not one of: estimate, measure, patient, exhaustive");
  ExpectRefused("RILL_OPS_HOST_FALLBACK", "yes",
                "RILL_OPS_HOST_FALLBACK='yes' is not one of: 0, 1");
  ExpectRefused("RILL_BLAS_THREADS", "-3",
                "RILL_BLAS_THREADS='-3' is not an integer in [1, 1024] or auto");
  ExpectRefused("RILL_COLLECTIVE_TIMEOUT", "-1",
                "RILL_COLLECTIVE_TIMEOUT='-1' is not a number of seconds");
  ExpectRefused("RILL_BLAS", "openblas,,blis",
                "RILL_BLAS='openblas,,blis' is not a list of plugin names");
  ExpectRefused("RILL_HOST_CORES", "0", "RILL_HOST_CORES='0' is not an integer in [1, 65536]");
}

TEST(EnvSettings, GoodSettingsPass) {
  ScopedEnv a("RILL_ENGINE", "naive"), b("RILL_BLAS_THREADS", "auto"), c("RILL_LOG_LEVEL", "2"),
      d("RILL_HOST_MEMORY_LIMIT", "512M"), e("RILL_COLLECTIVE_TIMEOUT", "0.5"),
      f("RILL_DNN", "xnnpack, onednn"), g("RILL_VERBOSE", "");
  EXPECT_TRUE(ValidateEnvironment().ok()) << ValidateEnvironment();
}

TEST(EnvSettings, EveryBadSettingIsListed) {
  ScopedEnv a("RILL_ENGINE", "turbo"), b("RILL_VERBOSE", "abc");
  const absl::Status status = ValidateEnvironment();
  EXPECT_THAT(status.message(), HasSubstr("RILL_VERBOSE='abc'"));
  EXPECT_THAT(status.message(), HasSubstr("RILL_ENGINE='turbo'"));
}

TEST(EnvSettings, ATraceThatCannotBeWrittenIsRefusedAtOnceWithTheReason) {
  for (const char* name : {"RILL_TRACE", "RILL_ENGINE_TRACE"}) {
    {
      ScopedEnv env(name, "/dev/full");
      const absl::Status status = ValidateEnvironment();
      EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
      EXPECT_THAT(status.message(), HasSubstr(std::string(name) + "='/dev/full': cannot write"));
      EXPECT_THAT(status.message(), HasSubstr("No space left on device"));
    }
    {
      ScopedEnv env(name, "/tmp/rill_no_such_folder_39/trace.json");
      const absl::Status status = ValidateEnvironment();
      EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
      EXPECT_THAT(status.message(), HasSubstr("No such file or directory"));
    }
    {
      ScopedEnv env(name, "/");
      EXPECT_THAT(ValidateEnvironment().message(), HasSubstr("Is a directory"));
    }
  }
  // A writable path passes and the check leaves nothing behind.
  const std::string path = ::testing::TempDir() + "env_settings_trace.json";
  ::unlink(path.c_str());
  ScopedEnv env("RILL_TRACE", path.c_str());
  EXPECT_TRUE(ValidateEnvironment().ok());
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
  ScopedEnv null_device("RILL_ENGINE_TRACE", "/dev/null");
  EXPECT_TRUE(ValidateEnvironment().ok());
}

TEST(EnvSettings, AnUnknownVariableIsAWarningNamingTheClosestKnownOne) {
  ScopedEnv typo("RILL_VERBSE", "1");
  EXPECT_THAT(UnknownEnvWarnings(),
              ElementsAre("RILL_VERBSE is not a variable Rill reads (did you mean RILL_VERBOSE?)"));
  EXPECT_TRUE(ValidateEnvironment().ok());
  ScopedEnv other("RILL_ZZZZZZZZZZZZZZZZZZZZZZ", "1");
  EXPECT_THAT(UnknownEnvWarnings(),
              ::testing::Contains(HasSubstr("RILL_ZZZZZZZZZZZZZZZZZZZZZZ is not a variable Rill "
                                            "reads; it is ignored")));
}

TEST(EnvSettings, ReadersParseByTheTable) {
  {
    ScopedEnv env("RILL_ENGINE_CPU_WORKERS", "3");
    EXPECT_EQ(*EnvInt("RILL_ENGINE_CPU_WORKERS"), 3);
  }
  {
    ScopedEnv env("RILL_ENGINE_CPU_WORKERS", "4294967297");
    EXPECT_EQ(EnvInt("RILL_ENGINE_CPU_WORKERS").status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  {
    ScopedEnv env("RILL_DNN_THREADS", "auto");
    EXPECT_EQ(*EnvInt("RILL_DNN_THREADS"), std::nullopt);
  }
  {
    ScopedEnv env("RILL_HOST_MEMORY_LIMIT", "2g");
    EXPECT_EQ(*EnvBytes("RILL_HOST_MEMORY_LIMIT"), int64_t{2} << 30);
  }
  {
    ScopedEnv env("RILL_DNN_DETERMINISTIC", "1");
    EXPECT_EQ(*EnvBool("RILL_DNN_DETERMINISTIC"), true);
  }
  {
    ScopedEnv env("RILL_COLLECTIVE_STALL", "2.5");
    EXPECT_EQ(*EnvSeconds("RILL_COLLECTIVE_STALL"), 2.5);
  }
  {
    ScopedEnv env("RILL_ENGINE", "");
    EXPECT_EQ(*EnvString("RILL_ENGINE"), std::nullopt);
  }
  EXPECT_EQ(ParseByteCount("8E"), std::nullopt);
  EXPECT_EQ(ParseByteCount("8191P"), std::nullopt);
  EXPECT_EQ(ParseByteCount("8388607T"), int64_t{8388607} << 40);
  EXPECT_EQ(ParseByteCount("8388608T"), std::nullopt);
  EXPECT_EQ(ParseByteCount("0"), std::nullopt);
}

TEST(EnvSettings, EveryEntryIsUniqueAndDescribed) {
  for (const EnvSetting& s : EnvSettings()) {
    EXPECT_EQ(FindEnvSetting(s.name), &s) << s.name;
    EXPECT_FALSE(s.what.empty()) << s.name;
    if (s.kind == EnvKind::kInt) {
      EXPECT_LE(s.min, s.max) << s.name;
    }
  }
}

// RILL_LOG_LEVEL=abc turned every INFO message on (atoi gave 0); now it
// keeps WARNING and says why. In a child, where the threshold is first read.
TEST(EnvSettingsDeathTest, ABadLogLevelKeepsWarningAndSaysSo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv env("RILL_LOG_LEVEL", "abc");
  EXPECT_EXIT(_exit(logging::IsEnabled(logging::Severity::INFO) ? 1 : 0),
              ::testing::ExitedWithCode(0),
              "RILL_LOG_LEVEL='abc' is not an integer in \\[0, 3\\].*logging WARNING and up");
}

}  // namespace
}  // namespace rill
