#ifndef RILL_PLUGINS_PLUGIN_CHECK_H_
#define RILL_PLUGINS_PLUGIN_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "rill/base/status_macros.h"
#include "rill/executor/device_memory.h"

namespace rill {

class Stream;

// Argument checks shared by the plugin interfaces (BlasSupport, RngSupport,
// ...), so every implementation rejects bad input the same way.

// `stream` is non-null and attached to an executor.
absl::Status CheckPluginStream(Stream* stream);

// `memory` (called `role` in messages) is non-null, holds at least
// `min_bytes`, and belongs to the stream's executor.
absl::Status CheckBuffer(Stream* stream, const char* role, const DeviceMemoryBase& memory,
                         uint64_t min_bytes);

}  // namespace rill

#endif  // RILL_PLUGINS_PLUGIN_CHECK_H_
