#include "rill/platform/platform_manager.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "rill/platform/host/host_platform.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;

// Ids of test platforms, distinct from the host backend's.
const PlatformIdInfo kOtherIdInfo{"other"};
const PlatformIdInfo kThirdIdInfo{"third"};

std::unique_ptr<HostPlatform> MakeHost(std::string name, PlatformId id, int devices = 1) {
  HostPlatformOptions options;
  options.name = std::move(name);
  options.id = id;
  options.device_count = devices;
  options.memory_limit_bytes = 1 << 20;
  return std::make_unique<HostPlatform>(options);
}

TEST(PlatformManager, RegistersAndFindsByNameAndId) {
  PlatformManager manager;
  EXPECT_TRUE(manager.AllPlatforms().empty());
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(MakeHost("alpha", &kOtherIdInfo))));
  absl::StatusOr<Platform*> by_name = manager.PlatformWithName("alpha");
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  EXPECT_EQ((*by_name)->id(), &kOtherIdInfo);
  absl::StatusOr<Platform*> by_id = manager.PlatformWithId(&kOtherIdInfo);
  ASSERT_TRUE(by_id.ok()) << by_id.status();
  EXPECT_EQ(*by_id, *by_name);
  EXPECT_TRUE(HasError(manager.PlatformWithId(&kThirdIdInfo).status(), absl::StatusCode::kNotFound,
                       {"third", "alpha"}));
}

TEST(PlatformManager, LookupIgnoresCase) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(MakeHost("alpha", &kOtherIdInfo))));
  absl::StatusOr<Platform*> upper = manager.PlatformWithName("ALPHA");
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ((*upper)->Name(), "alpha");
  EXPECT_TRUE(manager.PlatformWithName("AlPhA").ok());
}

TEST(PlatformManager, UnknownNameIsNotFoundListingKnownPlatforms) {
  PlatformManager manager;
  EXPECT_TRUE(HasError(manager.PlatformWithName("cuda").status(), absl::StatusCode::kNotFound,
                       {"\"cuda\"", "no platform is registered"}));
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(MakeHost("alpha", &kOtherIdInfo, 2))));
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(
      std::make_unique<HostPlatform>(HostPlatformOptions{"beta", &kThirdIdInfo, 1, 0},
                                     absl::UnavailableError("no driver loaded")))));
  EXPECT_TRUE(
      HasError(manager.PlatformWithName("cuda").status(), absl::StatusCode::kNotFound,
               {"\"cuda\"", "alpha (2 device(s))", "beta (unavailable: no driver loaded)"}));
}

TEST(PlatformManager, RegisteringTheSameIdTwiceIsHarmless) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(MakeHost("alpha", &kOtherIdInfo))));
  Platform* first = *manager.PlatformWithName("alpha");
  EXPECT_TRUE(IsOk(manager.RegisterPlatform(MakeHost("alpha", &kOtherIdInfo))));
  EXPECT_EQ(manager.AllPlatforms().size(), 1u);
  EXPECT_EQ(*manager.PlatformWithName("alpha"), first) << "the first registration stays";
}

TEST(PlatformManager, AnotherPlatformUnderATakenNameIsAlreadyExists) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(MakeHost("alpha", &kOtherIdInfo))));
  EXPECT_TRUE(HasError(manager.RegisterPlatform(MakeHost("alpha", &kThirdIdInfo)),
                       absl::StatusCode::kAlreadyExists, {"\"alpha\""}));
  EXPECT_TRUE(HasError(manager.RegisterPlatform(MakeHost("ALPHA", &kThirdIdInfo)),
                       absl::StatusCode::kAlreadyExists, {"ALPHA"}));
  EXPECT_EQ(manager.AllPlatforms().size(), 1u);
  EXPECT_TRUE(HasError(manager.RegisterPlatform(nullptr), absl::StatusCode::kInvalidArgument));
}

TEST(PlatformManager, AvailablePlatformsLeaveOutThoseWithoutDevices) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(MakeHost("alpha", &kOtherIdInfo))));
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(std::make_unique<HostPlatform>(
      HostPlatformOptions{"beta", &kThirdIdInfo, 1, 0}, absl::UnavailableError("no device")))));
  EXPECT_EQ(manager.AllPlatforms().size(), 2u);
  ASSERT_EQ(manager.AvailablePlatforms().size(), 1u);
  EXPECT_EQ(manager.AvailablePlatforms()[0]->Name(), "alpha");
  Platform* beta = *manager.PlatformWithName("beta");
  EXPECT_EQ(beta->VisibleDeviceCount(), 0);
  EXPECT_TRUE(HasError(beta->ExecutorForDevice(0).status(), absl::StatusCode::kUnavailable,
                       {"beta", "no device"}));
}

TEST(PlatformManager, DefaultHoldsTheLinkedHostBackend) {
  absl::StatusOr<Platform*> host = PlatformManager::Default().PlatformWithName("host");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ((*host)->id(), kHostPlatformId);
  EXPECT_EQ(&MultiPlatformManager::Default(), &PlatformManager::Default());
}

TEST(Platform, OrdinalOutOfRange) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(MakeHost("alpha", &kOtherIdInfo, 2))));
  Platform* platform = *manager.PlatformWithName("alpha");
  EXPECT_TRUE(HasError(platform->ExecutorForDevice(-1).status(), absl::StatusCode::kInvalidArgument,
                       {"ordinal -1", "negative"}));
  EXPECT_TRUE(HasError(platform->ExecutorForDevice(2).status(), absl::StatusCode::kNotFound,
                       {"ordinal 2", "2 device(s)"}));
  EXPECT_TRUE(HasError(platform->ExecutorForDevice(1000).status(), absl::StatusCode::kNotFound,
                       {"ordinal 1000"}));
  EXPECT_TRUE(HasError(platform->DescriptionForDevice(2).status(), absl::StatusCode::kNotFound));
  EXPECT_TRUE(HasError(platform->DescriptionForDevice(-3).status(),
                       absl::StatusCode::kInvalidArgument, {"-3"}));
}

TEST(Platform, ExecutorsAreCachedPerOrdinal) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(MakeHost("alpha", &kOtherIdInfo, 2))));
  Platform* platform = *manager.PlatformWithName("alpha");
  StreamExecutor* zero = *platform->ExecutorForDevice(0);
  StreamExecutor* one = *platform->ExecutorForDevice(1);
  EXPECT_NE(zero, one);
  EXPECT_EQ(*platform->ExecutorForDevice(0), zero);
  StreamExecutorConfig config;
  config.ordinal = 1;
  EXPECT_EQ(*platform->GetExecutor(config), one);
  EXPECT_EQ(zero->platform(), platform);
  EXPECT_EQ(one->device_ordinal(), 1);
  EXPECT_EQ(one->DebugName(), "alpha:1");
}

TEST(DeviceDescription, ToStringNamesEveryField) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(MakeHost("alpha", &kOtherIdInfo, 2))));
  absl::StatusOr<DeviceDescription> d =
      (*manager.PlatformWithName("alpha"))->DescriptionForDevice(1);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->memory_bytes, 1 << 20);
  EXPECT_GE(d->compute_units, 1);
  const std::string text = d->ToString();
  EXPECT_NE(text.find(d->name), std::string::npos) << text;
  EXPECT_NE(text.find("1048576"), std::string::npos) << text;
}

}  // namespace
}  // namespace rill
