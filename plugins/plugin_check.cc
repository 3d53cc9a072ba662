#include "rill/plugins/plugin_check.h"

#include "absl/strings/str_cat.h"
#include "rill/executor/stream_executor.h"
#include "rill/stream/stream.h"

namespace rill {

absl::Status CheckPluginStream(Stream* stream) {
  if (stream == nullptr) return absl::InvalidArgumentError("stream is null");
  if (stream->parent() == nullptr) {
    return absl::FailedPreconditionError("stream is detached from its executor");
  }
  return absl::OkStatus();
}

absl::Status CheckBuffer(Stream* stream, const char* role, const DeviceMemoryBase& memory,
                         uint64_t min_bytes) {
  if (memory.is_null())
    return absl::InvalidArgumentError(absl::StrCat(role, " is null device memory"));
  if (memory.size() < min_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        role, " ", memory.ToString(), " is too small: the shape needs ", min_bytes, " bytes"));
  }
  return stream->parent()->CheckOwner(role, memory);
}

}  // namespace rill
