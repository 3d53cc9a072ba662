#ifndef RILL_TESTS_BAD_INPUT_PRIVATE_HOST_PLATFORM_H_
#define RILL_TESTS_BAD_INPUT_PRIVATE_HOST_PLATFORM_H_

#include <memory>

#include "rill/base/logging.h"
#include "rill/platform/host/host_platform.h"
#include "rill/platform/platform_manager.h"

namespace rill::testing {

// A fresh manager holding one host platform named `id->name` with `devices`
// devices of 1 MiB each, destroyed with the manager: a bad-input test may
// free, destroy or misuse its executors without touching the default ones.
inline std::unique_ptr<PlatformManager> PrivateHostPlatform(const PlatformIdInfo* id, int devices) {
  auto manager = std::make_unique<PlatformManager>();
  HostPlatformOptions options;
  options.name = id->name;
  options.id = id;
  options.device_count = devices;
  options.memory_limit_bytes = 1 << 20;
  RILL_CHECK_OK(manager->RegisterPlatform(std::make_unique<HostPlatform>(options)));
  return manager;
}

}  // namespace rill::testing

#endif  // RILL_TESTS_BAD_INPUT_PRIVATE_HOST_PLATFORM_H_
