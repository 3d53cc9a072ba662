#ifndef RILL_PLUGINS_RNG_PHILOX_PHILOX_TEST_UTIL_H_
#define RILL_PLUGINS_RNG_PHILOX_PHILOX_TEST_UTIL_H_

// Shared by the Philox tests: generation through a host stream into a host
// vector.

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "rill/plugins/rng/philox/philox_rng.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill::philox_testing {

inline StreamExecutor* HostExecutor(int ordinal) {
  Platform* host =
      testing::Must(PlatformManager::Default().PlatformWithName("host"), "host platform");
  return testing::Must(host->ExecutorForDevice(ordinal), "host executor");
}

// The executor's plugin as a PhiloxRng (the host default).
inline PhiloxRng* PhiloxOf(StreamExecutor* executor) {
  PluginInterface* plugin = testing::Must(executor->GetPlugin(PluginKind::kRng), "rng plugin");
  EXPECT_EQ(plugin->Name(), "philox");
  return dynamic_cast<PhiloxRng*>(plugin);
}

enum class What { kBits, kUniform, kNormal };

// Generates `n` values of T (uint32_t: bits; float/double: uniform, or
// normal with `mean`/`stddev`) with `rng` on a fresh stream of `executor`.
template <typename T>
std::vector<T> Generate(StreamExecutor* executor, RngSupport* rng, What what, uint64_t n,
                        double mean = 0, double stddev = 1) {
  ScopedDeviceMemory<T> device = testing::Must(executor->AllocateOwnedArray<T>(n), "allocation");
  std::unique_ptr<Stream> stream = testing::Must(executor->CreateStream(), "stream");
  absl::Status status;
  if constexpr (std::is_same_v<T, uint32_t>) {
    status = rng->DoPopulateRandBits(stream.get(), device.ptr());
  } else if (what == What::kUniform) {
    status = rng->DoPopulateRandUniform(stream.get(), device.ptr());
  } else {
    status = rng->DoPopulateRandGaussian(stream.get(), static_cast<T>(mean), static_cast<T>(stddev),
                                         device.ptr());
  }
  EXPECT_TRUE(testing::IsOk(status));
  std::vector<T> host(n);
  stream->ThenMemcpy(host.data(), *device, n * sizeof(T));
  EXPECT_TRUE(testing::IsOk(stream->BlockHostUntilDone()));
  return host;
}

}  // namespace rill::philox_testing

#endif  // RILL_PLUGINS_RNG_PHILOX_PHILOX_TEST_UTIL_H_
