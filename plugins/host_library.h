#ifndef RILL_PLUGINS_HOST_LIBRARY_H_
#define RILL_PLUGINS_HOST_LIBRARY_H_

// Host library plugins: implementations that compute on host threads with a
// CPU library (OpenBLAS, BLIS, FFTW, Philox, oneDNN, XNNPACK). They serve any
// device whose memory is host memory -- a backend that declares
// Feature::kHostAddressableMemory -- not only the host backend's.
//
// A plugin registers once, with RILL_REGISTER_HOST_LIBRARY_PLUGIN; a
// platform whose memory is host memory gets every such plugin linked into the
// program with one call, the host backend's included:
//
//   // In the backend's registration function (platform/host does the same):
//   RILL_RETURN_IF_ERROR(RegisterHostLibraryPlugins(kMinePlatformId));
//   ...
//   BlasSupport* blas = mine_executor->AsBlas();  // "openblas", as on the host.
//
// In the plugin: Create() calls CheckHostLibraryPlatform, each call enqueues
// its work with EnqueueHostWork and reads memory through HostPointer().

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/platform/platform_id.h"
#include "rill/plugins/plugin.h"
#include "rill/plugins/plugin_registry.h"

namespace rill {

class Stream;
class StreamExecutor;

// OK when `executor` can run host library plugins: its memory is host memory
// (Feature::kHostAddressableMemory) and its streams run host callbacks. Else
// FailedPrecondition naming `plugin`, the device and the reason: "openblas
// computes on the host: opencl:0 lacks host-addressable memory: an OpenCL
// buffer (cl_mem) is not host memory: ...". InvalidArgument for a null
// executor.
absl::Status CheckHostLibraryPlatform(StreamExecutor* executor, std::string_view plugin);

// `stream`'s backend queue, if `stream` belongs to `owner` (the executor the
// plugin instance serves); else InvalidArgument: "the stream belongs to
// host:1, but this openblas plugin serves host:0: use that executor's
// AsBlas()", or FailedPrecondition for a detached stream. `plugin` and
// `accessor` name the plugin and its As*() call.
absl::StatusOr<StreamInterface*> HostLibraryStream(StreamExecutor* owner, Stream* stream,
                                                   std::string_view plugin,
                                                   std::string_view accessor);

// Enqueues `work` -- a callable returning void or absl::Status -- to run on a
// host thread in `stream`'s order, through the backend's DoHostCallback, so
// it works on every backend that passed CheckHostLibraryPlatform. An error it
// returns, or an exception it throws (std::bad_alloc from a library), puts
// the stream in the error state. The captures go into an absl::AnyInvocable
// (on the heap past two pointers); on the host backend, pipelined 32^3
// sgemms through it and through the old inline queue entry (HostTask)
// differed within the noise of one noisy run (rill/direct median 0.79 vs
// 0.84, docs/blas-threads.md).
template <typename Work>
absl::Status EnqueueHostWork(StreamExecutor* owner, Stream* stream, std::string_view plugin,
                             std::string_view accessor, Work work) {
  absl::StatusOr<StreamInterface*> queue = HostLibraryStream(owner, stream, plugin, accessor);
  if (!queue.ok()) return queue.status();
  return (*queue)->DoHostCallback([work = std::move(work)]() mutable -> absl::Status {
    try {
      if constexpr (std::is_void_v<decltype(work())>) {
        work();
        return absl::OkStatus();
      } else {
        return work();
      }
    } catch (...) {
      return CurrentExceptionStatus("host library call");
    }
  });
}

// Records a host library plugin: `factory` becomes plugin `name` of `kind`
// for every platform given to RegisterHostLibraryPlugins in
// PluginRegistry::Default(), before this call or after it. `make_default`
// as in PluginRegistry::Register. Recording (kind, name) again is harmless:
// the first factory stays. InvalidArgument for an empty name, a null factory
// or an undeclared kind.
absl::Status RegisterHostLibraryPlugin(PluginKind kind, std::string name,
                                       PluginRegistry::Factory factory, bool make_default);

// Registers every recorded host library plugin (those linked into the
// program) for `platform` in `registry`, in recording order and with their
// make_default flags, so the platform's defaults are the host's (openblas
// for BLAS where it is linked). For the default registry the platform is
// also remembered: plugins recorded later get registered for it too, so
// every plugin reaches the platform whatever the order in which backends and
// plugins register at load time. Defaults follow that order, though: a
// make_default plugin recorded later becomes the default. A backend that
// wants a default of its own sets it after load (main(), or
// StreamExecutor::SetPlugin on its executors). The platform's executors must support
// Feature::kHostAddressableMemory (each plugin's Create checks). Calling it
// again is harmless. InvalidArgument for a null platform.
absl::Status RegisterHostLibraryPlugins(PlatformId platform,
                                        PluginRegistry& registry = PluginRegistry::Default());

}  // namespace rill

// Registers a host library plugin when the program loads
// (RegisterHostLibraryPlugin): it then serves the host platform, and every
// platform given to RegisterHostLibraryPlugins.
//   RILL_REGISTER_HOST_LIBRARY_PLUGIN(openblas, PluginKind::kBlas, "openblas",
//                                     CreateOpenBlas, /*make_default=*/true);
// The library holding it must be linked whole-archive (rill_add_plugin does).
#define RILL_REGISTER_HOST_LIBRARY_PLUGIN(tag, kind, name, factory, make_default)                 \
  namespace {                                                                                     \
  const bool rill_host_library_plugin_registered_##tag =                                          \
      ::rill::internal::RegisterHostLibraryPluginAtLoad(#tag, kind, name, factory, make_default); \
  }

namespace rill::internal {
bool RegisterHostLibraryPluginAtLoad(const char* tag, PluginKind kind, const char* name,
                                     PluginRegistry::Factory factory, bool make_default);
}  // namespace rill::internal

#endif  // RILL_PLUGINS_HOST_LIBRARY_H_
