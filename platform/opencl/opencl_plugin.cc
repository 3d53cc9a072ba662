#include "rill/platform/opencl/opencl_plugin.h"

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/opencl/opencl_platform.h"
#include "rill/platform/platform.h"
#include "rill/stream/stream.h"

namespace rill {

absl::StatusOr<OpenClExecutor*> AsOpenClExecutor(StreamExecutor* executor) {
  if (executor == nullptr) return absl::InvalidArgumentError("executor is null");
  if (executor->platform()->id() != kOpenClPlatformId) {
    return absl::InvalidArgumentError(
        absl::StrCat(executor->DebugName(), " is not an OpenCL executor"));
  }
  return static_cast<OpenClExecutor*>(executor->implementation());
}

absl::StatusOr<cl_context> OpenClContext(StreamExecutor* executor) {
  RILL_ASSIGN_OR_RETURN(OpenClExecutor * cl, AsOpenClExecutor(executor));
  return cl->context();
}

absl::StatusOr<OpenClStream*> OpenClPluginStream(StreamExecutor* owner, Stream* stream,
                                                 absl::string_view plugin,
                                                 absl::string_view accessor) {
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
  // Every stream of an OpenCL executor is an OpenClStream.
  return static_cast<OpenClStream*>(stream->implementation());
}

absl::Status EnqueueOpenClWork(StreamExecutor* owner, Stream* stream, absl::string_view plugin,
                               absl::string_view accessor, OpenClStream::DeviceWork work) {
  RILL_ASSIGN_OR_RETURN(OpenClStream * cl, OpenClPluginStream(owner, stream, plugin, accessor));
  cl->EnqueueDeviceWork(std::move(work));
  return absl::OkStatus();
}

}  // namespace rill
