#include "platform/host/host_platform.h"

#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "rill.h"

namespace rill {
namespace {

TEST(HostPlatform, RegistersItselfAtLoad) {
  absl::StatusOr<Platform*> host = PlatformManager::Default().PlatformWithName("host");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ((*host)->id(), kHostPlatformId);
  EXPECT_EQ((*host)->VisibleDeviceCount(), 2);  // RILL_HOST_DEVICES=2 from ctest.
}

TEST(HostPlatform, SmokeCopyRoundTrip) {
  Platform* host = *PlatformManager::Default().PlatformWithName("host");
  StreamExecutor* exec = *host->ExecutorForDevice(0);
  auto mem = exec->AllocateOwnedArray<int>(100);
  ASSERT_TRUE(mem.ok()) << mem.status();
  std::vector<int> in(100), out(100, -1);
  std::iota(in.begin(), in.end(), 0);
  auto stream = exec->CreateStream();
  ASSERT_TRUE(stream.ok());
  (*stream)->ThenMemcpy(mem->ptr(), in.data(), 400).ThenMemcpy(out.data(), **mem, 400);
  ASSERT_TRUE((*stream)->BlockHostUntilDone().ok());
  EXPECT_EQ(in, out);
}

}  // namespace
}  // namespace rill
