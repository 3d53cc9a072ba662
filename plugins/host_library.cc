#include "rill/plugins/host_library.h"

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "rill/base/logging.h"
#include "rill/base/mutex.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/stream/stream.h"

namespace rill {
namespace {

struct Recorded {
  PluginKind kind;
  std::string name;
  PluginRegistry::Factory factory;
  bool make_default;
};

// The recorded plugins and the platforms that take them in the default
// registry. Registry calls are made under mu, so a plugin recorded while a
// platform is being added reaches it exactly once (repeats are harmless
// anyway). Lock order: this mu, then the registry's.
struct HostLibraries {
  Mutex mu;
  std::vector<Recorded> plugins ABSL_GUARDED_BY(mu);
  std::vector<PlatformId> platforms ABSL_GUARDED_BY(mu);
};

HostLibraries& Libraries() {
  static HostLibraries* libraries = new HostLibraries();  // Never destroyed.
  return *libraries;
}

absl::Status Register(PluginRegistry& registry, PlatformId platform, const Recorded& plugin) {
  return registry.Register(platform, plugin.kind, plugin.name, plugin.factory, plugin.make_default);
}

}  // namespace

absl::Status CheckHostLibraryPlatform(StreamExecutor* executor, std::string_view plugin) {
  if (executor == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(AsAbsl(plugin), ": executor is null"));
  }
  for (Feature feature : {Feature::kHostAddressableMemory, Feature::kHostCallbacks}) {
    absl::Status supported = executor->Supports(feature);
    if (!supported.ok()) {
      // "<device> lacks <feature>: <reason>" (StreamExecutor::Supports).
      return absl::FailedPreconditionError(
          absl::StrCat(AsAbsl(plugin), " computes on the host: ", supported.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<StreamInterface*> HostLibraryStream(StreamExecutor* owner, Stream* stream,
                                                   std::string_view plugin,
                                                   std::string_view accessor) {
  if (stream == nullptr) return absl::InvalidArgumentError("stream is null");
  StreamExecutor* parent = stream->parent();
  if (parent == nullptr) {
    return absl::FailedPreconditionError("the stream is detached: its executor was destroyed");
  }
  if (parent != owner) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the stream belongs to ", parent->DebugName(), ", but this ", AsAbsl(plugin),
        " plugin serves ", owner->DebugName(), ": use that executor's ", AsAbsl(accessor)));
  }
  return stream->implementation();
}

absl::Status RegisterHostLibraryPlugin(PluginKind kind, std::string name,
                                       PluginRegistry::Factory factory, bool make_default) {
  RILL_RETURN_IF_ERROR(CheckPluginKind(kind));
  if (name.empty() || !factory) {
    return absl::InvalidArgumentError(absl::StrCat("RegisterHostLibraryPlugin(",
                                                   PluginKindName(kind), ", \"", name,
                                                   "\"): name and factory must be set"));
  }
  HostLibraries& libraries = Libraries();
  MutexLock lock(&libraries.mu);
  for (const Recorded& r : libraries.plugins) {
    if (r.kind == kind && r.name == name) return absl::OkStatus();  // Harmless repeat.
  }
  libraries.plugins.push_back(Recorded{kind, std::move(name), std::move(factory), make_default});
  for (PlatformId platform : libraries.platforms) {
    RILL_RETURN_IF_ERROR(Register(PluginRegistry::Default(), platform, libraries.plugins.back()));
  }
  return absl::OkStatus();
}

absl::Status RegisterHostLibraryPlugins(PlatformId platform, PluginRegistry& registry) {
  if (platform == nullptr) {
    return absl::InvalidArgumentError("RegisterHostLibraryPlugins: the platform id is null");
  }
  HostLibraries& libraries = Libraries();
  MutexLock lock(&libraries.mu);
  if (&registry == &PluginRegistry::Default()) {
    bool known = false;
    for (PlatformId p : libraries.platforms) known = known || p == platform;
    if (!known) libraries.platforms.push_back(platform);
  }
  for (const Recorded& plugin : libraries.plugins) {
    RILL_RETURN_IF_ERROR(Register(registry, platform, plugin));
  }
  return absl::OkStatus();
}

namespace internal {

bool RegisterHostLibraryPluginAtLoad(const char* tag, PluginKind kind, const char* name,
                                     PluginRegistry::Factory factory, bool make_default) {
  absl::Status status = RegisterHostLibraryPlugin(kind, name, std::move(factory), make_default);
  if (!status.ok()) {
    RILL_LOG(ERROR) << "registering host library plugin " << tag
                    << " failed: " << status.ToString();
  }
  return status.ok();
}

}  // namespace internal
}  // namespace rill
