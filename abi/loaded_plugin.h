#ifndef RILL_ABI_LOADED_PLUGIN_H_
#define RILL_ABI_LOADED_PLUGIN_H_

// rill:internal -- not installed: the adapter's side of rill_plugin.h.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/abi/rill_plugin.h"
#include "rill/platform/platform_id.h"

namespace rill {
class Platform;
class StreamStatus;
}  // namespace rill

namespace rill::abi {

// One plugin shared object: opened (dlopen, local symbols), initialized
// through its entry and validated -- versions, struct sizes, every
// mandatory entry (all missing ones named at once). Every adapter object
// made from it (platform, executors, streams, events, kernels, library
// instances, registry factories) holds a shared_ptr, so the object is
// closed (the plugin's shutdown, then dlclose) only when the last of them
// is gone. Thread-safe (immutable after Open).
class LoadedPlugin {
 public:
  // Opens `path`. Errors name the file and say what to do: NotFound for a
  // missing file or entry symbol, FailedPrecondition for a file that is not
  // a shared object, an entry that returned NULL, another ABI major or a
  // minor below RILL_PLUGIN_ABI_MIN_MINOR, struct too small, missing
  // mandatory entries, a half-declared backend.
  static absl::StatusOr<std::shared_ptr<LoadedPlugin>> Open(const std::string& path);
  ~LoadedPlugin();
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  uint32_t abi_major() const { return abi_major_; }
  uint32_t abi_minor() const { return abi_minor_; }

  // The plugin's tables, copied into zero-filled structs of this Rill's
  // size: a field past the plugin's struct_size reads as NULL / 0.
  bool has_platform() const { return has_platform_; }
  const RillPlatformFns& platform() const { return platform_; }
  const RillExecutorFns& executor() const { return executor_; }
  const RillStreamFns& stream() const { return stream_; }
  const RillEventFns& event() const { return event_; }
  const RillBlasFns* blas() const { return has_blas_ ? &blas_ : nullptr; }
  const RillDnnFns* dnn() const { return has_dnn_ ? &dnn_ : nullptr; }
  const std::string& platform_name() const { return platform_name_; }
  const std::string& blas_name() const { return blas_name_; }
  const std::string& dnn_name() const { return dnn_name_; }

  // What it provides, for rill-info: "platform cbackend", "blas c_blas".
  std::vector<std::string> Provides() const;

 private:
  LoadedPlugin() = default;
  absl::Status Validate(const RillPlugin& table);

  std::string path_;
  void* handle_ = nullptr;
  void (*shutdown_)(void) = nullptr;
  std::string name_, version_;
  uint32_t abi_major_ = 0, abi_minor_ = 0;
  bool has_platform_ = false, has_blas_ = false, has_dnn_ = false;
  RillPlatformFns platform_{};
  RillExecutorFns executor_{};
  RillStreamFns stream_{};
  RillEventFns event_{};
  RillBlasFns blas_{};
  RillDnnFns dnn_{};
  std::string platform_name_, blas_name_, dnn_name_;
};

// The id of the plugin platform named `name`: one per name for the
// process's life, so a plugin loaded again (after an unload, or into a
// second PlatformManager) keeps its registry entries.
PlatformId PluginPlatformId(const std::string& name);

// The host table every plugin receives.
const RillHostApi* HostApi();

// Takes `error` (destroys it) and returns it as a Status; OK for NULL.
absl::Status TakeError(RillError* error);
// A new error with `status`'s code and message (NULL for OK).
RillError* NewError(const absl::Status& status);

inline RillStreamStatus* ToC(StreamStatus* status) {
  return reinterpret_cast<RillStreamStatus*>(status);
}

// The platform of a plugin that has one (its name and the plugin's tables).
absl::StatusOr<std::unique_ptr<Platform>> MakePluginPlatform(std::shared_ptr<LoadedPlugin> plugin);

// Registers the plugin's BLAS and DNN libraries with PluginRegistry::Default():
// a host-memory library for every host-memory platform
// (RegisterHostLibraryPlugin), an own-platform library for the plugin's
// platform. AlreadyExists when the name is taken for that kind.
absl::Status RegisterPluginLibraries(const std::shared_ptr<LoadedPlugin>& plugin);

}  // namespace rill::abi

#endif  // RILL_ABI_LOADED_PLUGIN_H_
