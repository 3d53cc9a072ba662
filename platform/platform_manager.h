#ifndef RILL_PLATFORM_PLATFORM_MANAGER_H_
#define RILL_PLATFORM_PLATFORM_MANAGER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_id.h"

namespace rill {

// The registry of platforms. The process default (Default()) is created on
// first use and never destroyed, so nothing depends on static destruction
// order; tests may build their own. Owns its platforms.
//
// Registration is a plain call, e.g. RegisterHostPlatform(manager); the
// backends linked into a program also register with Default() at load time
// through RILL_REGISTER_PLATFORM (the build links backends whole-archive, so
// this cannot be dropped). Registering a platform whose id is already
// registered is harmless (the new object is dropped); a different platform
// under a taken name is AlreadyExists. Names match case-insensitively.
//
//   RILL_ASSIGN_OR_RETURN(Platform* p, PlatformManager::Default().PlatformWithName("host"));
//
// Thread-safe.
class PlatformManager {
 public:
  PlatformManager();
  ~PlatformManager();
  PlatformManager(const PlatformManager&) = delete;
  PlatformManager& operator=(const PlatformManager&) = delete;

  // The process-wide registry.
  static PlatformManager& Default();

  absl::Status RegisterPlatform(std::unique_ptr<Platform> platform);
  // Registers here a new instance of every platform linked into the program
  // (each RILL_REGISTER_PLATFORM function, which registered one with
  // Default() at load), for a second, independent manager (rill::Runtime):
  // its executors, and what hangs on them, are its own. The first failure
  // is returned; the platforms registered before it stay.
  absl::Status RegisterLinkedPlatforms();

  // NotFound for an unknown name; the message lists the registered
  // platforms and, for each without devices, why.
  absl::StatusOr<Platform*> PlatformWithName(std::string_view name) const;
  absl::StatusOr<Platform*> PlatformWithId(PlatformId id) const;
  // Every registered platform, in registration order, usable or not.
  std::vector<Platform*> AllPlatforms() const;
  // The registered platforms with at least one device.
  std::vector<Platform*> AvailablePlatforms() const;

 private:
  std::string DescribeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::vector<std::unique_ptr<Platform>> platforms_ ABSL_GUARDED_BY(mu_);
};

// StreamExecutor's name for the registry.
using MultiPlatformManager = PlatformManager;

}  // namespace rill

// Registers a platform with PlatformManager::Default() when the program
// loads. `register_fn` is a function `absl::Status(PlatformManager&)`; a
// failure is logged. Use once at namespace scope in the backend's .cc:
//   RILL_REGISTER_PLATFORM(host, RegisterHostPlatform);
#define RILL_REGISTER_PLATFORM(tag, register_fn)              \
  namespace {                                                 \
  const bool rill_platform_registered_##tag =                 \
      ::rill::internal::RegisterAtLoad(#tag, &(register_fn)); \
  }

namespace rill::internal {
bool RegisterAtLoad(const char* tag, absl::Status (*register_fn)(PlatformManager&));
}  // namespace rill::internal

#endif  // RILL_PLATFORM_PLATFORM_MANAGER_H_
