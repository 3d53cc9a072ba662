#include "rill/conformance/conformance.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "rill/base/mutex.h"
#include "rill/base/status_macros.h"
#include "rill/conformance/suite_kernels.h"

namespace rill::conformance {
namespace {

std::vector<std::string> Names(const char* list, char separator = ',') {
  return absl::StrSplit(list, separator, absl::SkipWhitespace());
}

// The platforms under test, required ones first, as named.
std::vector<std::string> PlatformsUnderTest() {
  std::vector<std::string> names = Names(internal::kRequiredPlatforms);
  for (std::string& name : Names(internal::kOptionalPlatforms)) names.push_back(std::move(name));
  return names;
}

struct Providers {
  Mutex mu;
  std::vector<std::pair<PlatformId, SuiteKernelProvider>> list ABSL_GUARDED_BY(mu);
};
Providers& KernelProviders() {
  static auto* providers = new Providers;
  return *providers;
}

}  // namespace

std::vector<Device> AllDevices() {
  std::vector<Device> devices;
  for (const std::string& name : PlatformsUnderTest()) {
    absl::StatusOr<Platform*> platform = PlatformManager::Default().PlatformWithName(name);
    if (!platform.ok()) continue;  // CheckPlatforms has said so.
    for (int i = 0; i < (*platform)->VisibleDeviceCount(); ++i) devices.push_back({*platform, i});
  }
  return devices;
}

void PrintTo(const Device& device, std::ostream* os) {
  *os << device.platform->Name() << ":" << device.ordinal;
}

std::string DeviceTestName(const ::testing::TestParamInfo<Device>& info) {
  std::string name = info.param.platform->Name();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name + "_" + std::to_string(info.param.ordinal);
}

absl::Status RequireFeature(StreamExecutor* executor, Feature feature,
                            const std::function<absl::Status()>& first_use) {
  absl::Status supported = executor->Supports(feature);
  if (supported.ok()) return supported;
  EXPECT_EQ(supported.code(), absl::StatusCode::kUnimplemented)
      << "Supports(" << FeatureName(feature) << ") must be OK or Unimplemented: " << supported;
  EXPECT_TRUE(testing::HasError(first_use(), absl::StatusCode::kUnimplemented))
      << "the backend declares " << FeatureName(feature)
      << " unsupported, so its first use must fail with Unimplemented";
  return supported;
}

void ConformanceTest::SetUp() {
  absl::StatusOr<StreamExecutor*> executor = platform()->ExecutorForDevice(GetParam().ordinal);
  ASSERT_TRUE(executor.ok()) << executor.status();
  executor_ = *executor;
  // A backend still being written (platform/skeleton) has no streams yet:
  // every case skips, saying so, rather than failing.
  absl::StatusOr<std::unique_ptr<Stream>> stream = executor_->CreateStream();
  if (absl::IsUnimplemented(stream.status())) {
    GTEST_SKIP() << "streams are not implemented: " << stream.status();
  }
  ASSERT_TRUE(stream.ok()) << "CreateStream: " << stream.status();
  stream_ = *std::move(stream);
}

absl::Status ConformanceTest::RequireDevices(int count) const {
  const int have = platform()->VisibleDeviceCount();
  if (have >= count) return absl::OkStatus();
  std::string hint = platform()->MoreDevicesHint();
  return absl::FailedPreconditionError(
      absl::StrCat("this case needs ", count, " devices; ", platform()->Name(), " has ", have,
                   " here", hint.empty() ? "" : absl::StrCat(" (to test it: ", hint, ")")));
}

bool RegisterSuiteKernels(PlatformId platform, SuiteKernelProvider provider) {
  Providers& providers = KernelProviders();
  MutexLock lock(&providers.mu);
  for (const auto& [id, p] : providers.list) {
    if (id == platform && p == provider) return true;
  }
  providers.list.emplace_back(platform, provider);
  return true;
}

absl::StatusOr<KernelSpec> WithBackendVariants(KernelSpec spec) {
  std::vector<std::pair<PlatformId, SuiteKernelProvider>> list;
  {
    Providers& providers = KernelProviders();
    MutexLock lock(&providers.mu);
    list = providers.list;
  }
  for (const auto& [id, provider] : list) {
    if (absl::Status s = provider(spec.name(), spec); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("the ", id->name, " provider of suite kernel '",
                                                 spec.name(), "' failed: ", s.message()));
    }
  }
  return spec;
}

namespace internal {

absl::Status LoadPlugins() {
  for (const std::string& path : Names(kPlugins, ':')) {
    RILL_RETURN_IF_ERROR(PlatformManager::Default().LoadPlugin(path));
  }
  return absl::OkStatus();
}

absl::Status CheckPlatforms() {
  std::vector<std::string> required = Names(kRequiredPlatforms);
  if (required.empty() && Names(kOptionalPlatforms).empty()) {
    return absl::FailedPreconditionError(
        "no platform to test: name one with rill_add_conformance_test(... PLATFORMS <name>)");
  }
  std::vector<std::string> problems;
  for (const std::string& name : PlatformsUnderTest()) {
    absl::StatusOr<Platform*> platform = PlatformManager::Default().PlatformWithName(name);
    if (!platform.ok()) {
      std::vector<std::string> registered;
      for (Platform* p : PlatformManager::Default().AllPlatforms()) registered.push_back(p->Name());
      problems.push_back(absl::StrCat(
          "platform ", name, " not registered -- link its backend target (rill::", name,
          ") made with rill_add_backend, which links it whole-archive so that its registration "
          "runs (registered here: ",
          registered.empty() ? "none" : absl::StrJoin(registered, ", "), ")"));
      continue;
    }
    const bool is_required = std::find(required.begin(), required.end(), name) != required.end();
    if (is_required && (*platform)->VisibleDeviceCount() < 1) {
      const std::string hint = (*platform)->MoreDevicesHint();
      problems.push_back(absl::StrCat(
          "platform ", name, " has no device here: ", (*platform)->Availability().ToString(),
          hint.empty() ? "" : absl::StrCat(" (", hint, ")")));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrJoin(problems, "; "));
}

}  // namespace internal

namespace {

// One case that always runs: it names what is tested, and skips, saying
// why, when an optional platform has no device here (so a binary for a
// GPU backend on a machine without one reports a skip, not an empty pass).
TEST(Conformance, PlatformsUnderTest) {
  ASSERT_TRUE(testing::IsOk(internal::CheckPlatforms()));
  std::vector<std::string> tested, absent;
  for (const std::string& name : PlatformsUnderTest()) {
    absl::StatusOr<Platform*> platform = PlatformManager::Default().PlatformWithName(name);
    if (!platform.ok()) {
      absent.push_back(absl::StrCat(name, " (not registered)"));
    } else if ((*platform)->VisibleDeviceCount() == 0) {
      absent.push_back(absl::StrCat(name, " (", (*platform)->Availability().ToString(), ")"));
    } else {
      tested.push_back(absl::StrCat(name, " x", (*platform)->VisibleDeviceCount()));
    }
  }
  std::printf("conformance: testing %s\n",
              tested.empty() ? "nothing" : absl::StrJoin(tested, ", ").c_str());
  if (tested.empty()) {
    GTEST_SKIP() << "no device of the optional platforms here: " << absl::StrJoin(absent, "; ");
  }
}

}  // namespace
}  // namespace rill::conformance
