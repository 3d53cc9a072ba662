#include "rill/platform/host/host_plugin.h"

#include "absl/strings/str_cat.h"
#include "rill/executor/stream_executor.h"
#include "rill/stream/stream.h"

namespace rill {

absl::StatusOr<HostStream*> HostPluginStream(StreamExecutor* owner, Stream* stream,
                                             std::string_view plugin, std::string_view accessor) {
  if (stream == nullptr) return absl::InvalidArgumentError("stream is null");
  StreamExecutor* parent = stream->parent();
  if (parent == nullptr) {
    return absl::FailedPreconditionError("the stream is detached: its executor was destroyed");
  }
  if (parent != owner) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the stream belongs to ", parent->DebugName(), ", but this ", std::string(plugin),
        " plugin serves ", owner->DebugName(), ": use that executor's ", std::string(accessor)));
  }
  // Every stream of a host executor is a HostStream.
  return static_cast<HostStream*>(stream->implementation());
}

}  // namespace rill
