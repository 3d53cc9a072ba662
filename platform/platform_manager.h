#ifndef RILL_PLATFORM_PLATFORM_MANAGER_H_
#define RILL_PLATFORM_PLATFORM_MANAGER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_id.h"

namespace rill {

namespace abi {
class LoadedPlugin;
}  // namespace abi

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
// Backends and libraries also arrive at run time as plugins through the C
// ABI (rill/abi/rill_plugin.h): LoadPlugin(path), and for Default(), on its
// first query, every plugin in the directories of RILL_PLUGIN_PATH
// (':'-separated; a file there is loaded as is), then in the install's
// lib/rill/plugins and in <program's folder>/../lib/rill/plugins (a tool
// in the build tree finds the build's plugins there). A plugin that fails is skipped with its
// reason, which Plugins() (and rill-info) report.
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

  // A run-time plugin as loaded, or refused.
  struct PluginInfo {
    std::string path;
    std::string name, version;              // The plugin's own, once its entry ran.
    uint32_t abi_major = 0, abi_minor = 0;  // The ABI it was built for (0.0: unknown).
    std::vector<std::string> provides;      // "platform cbackend", "blas c_blas".
    absl::Status status;                    // OK when loaded; else why it was skipped.
  };

  // Loads the plugin shared object at `path`: opens it (dlopen, local
  // symbols), runs its entry, checks its ABI version and tables, registers
  // its platform here and its BLAS and DNN libraries with
  // PluginRegistry::Default() (a host-memory library for every host-memory
  // platform; its platform too gets the host libraries when its memory is
  // host memory). The attempt is recorded (Plugins()) either way.
  // Errors name the file: NotFound (no file, no entry symbol),
  // FailedPrecondition (not a shared object, entry returned NULL, another
  // ABI major, missing mandatory entries -- all named), AlreadyExists (the
  // file was loaded here already, its platform or library name is taken).
  // The plugin stays loaded while anything made from it lives: its
  // platform until this manager is destroyed, a host-memory library for
  // the process's life.
  absl::Status LoadPlugin(std::string_view path);
  // Loads every plugin of `search_path` (':'-separated directories, each
  // one's *.so files in name order, or files), recording and skipping
  // failures. Returns how many loaded.
  int LoadPluginsFrom(std::string_view search_path);
  // Every load attempt, in order.
  std::vector<PluginInfo> Plugins() const;

 private:
  // Default(): loads the plugins of RILL_PLUGIN_PATH and the default
  // directory, once, before the first query.
  void DiscoverPlugins() const;

  std::string DescribeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  Mutex load_mu_;  // One LoadPlugin at a time: its checks and registrations.
  std::vector<std::unique_ptr<Platform>> platforms_ ABSL_GUARDED_BY(mu_);
  std::vector<PluginInfo> plugins_ ABSL_GUARDED_BY(mu_);
  // The loaded plugins, for RegisterLinkedPlatforms.
  std::vector<std::shared_ptr<abi::LoadedPlugin>> loaded_ ABSL_GUARDED_BY(mu_);
  bool discover_ = false;  // Set for Default() only.
  mutable absl::once_flag discover_once_;
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
// Whether PlatformManager::Default() discovers run-time plugins (on by
// default). A module that carries its own copy of Rill
// (rill/abi/export_platform.h) turns it off, so that it loads nothing.
void SetPluginDiscovery(bool on);
}  // namespace rill::internal

#endif  // RILL_PLATFORM_PLATFORM_MANAGER_H_
