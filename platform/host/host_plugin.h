#ifndef RILL_PLATFORM_HOST_HOST_PLUGIN_H_
#define RILL_PLATFORM_HOST_HOST_PLUGIN_H_

// For library plugins of the host platform (OpenBLAS, BLIS, Philox, FFTW,
// oneDNN): the one way they put a library call on a stream.

#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/platform/host/host_stream.h"

namespace rill {

class Stream;
class StreamExecutor;

// `stream`'s host queue, if `stream` belongs to `owner` (the executor the
// plugin instance serves); else InvalidArgument: "the stream belongs to
// host:1, but this openblas plugin serves host:0: use that executor's
// AsBlas()". `plugin` and `accessor` name the plugin and its As*() call.
absl::StatusOr<HostStream*> HostPluginStream(StreamExecutor* owner, Stream* stream,
                                             std::string_view plugin, std::string_view accessor);

// Enqueues `work` -- a callable returning void or absl::Status -- to run on
// `stream`'s worker thread in stream order, without a heap allocation when
// its captures fit HostTask::kInlineSize. An error it returns puts the
// stream in the error state.
template <typename Work>
absl::Status EnqueueHostWork(StreamExecutor* owner, Stream* stream, std::string_view plugin,
                             std::string_view accessor, Work work) {
  absl::StatusOr<HostStream*> host = HostPluginStream(owner, stream, plugin, accessor);
  if (!host.ok()) return host.status();
  (*host)->EnqueueTask([work = std::move(work)]() mutable -> absl::Status {
    if constexpr (std::is_void_v<decltype(work())>) {
      work();
      return absl::OkStatus();
    } else {
      return work();
    }
  });
  return absl::OkStatus();
}

}  // namespace rill

#endif  // RILL_PLATFORM_HOST_HOST_PLUGIN_H_
