#ifndef RILL_STREAM_STREAM_PLUGIN_H_
#define RILL_STREAM_STREAM_PLUGIN_H_

// Private to the stream_<library>.cc files: the shared forwarding of
// Stream::Then<Library>* calls to the executor's plugin.

#include "absl/strings/str_cat.h"
#include "rill/executor/stream_executor.h"
#include "rill/stream/stream.h"
#include "rill/stream/stream_trace_state.h"

namespace rill {

template <typename T, typename What, typename Call>
Stream& Stream::ThenPlugin(What what, Call call) {
  if (!Usable()) return *this;
  const bool traced = TraceBegin();
  absl::StatusOr<PluginInterface*> plugin = parent()->GetPlugin(T::kKind);
  if (!plugin.ok()) return Done(traced, plugin.status(), [&] { return std::string(what()); });
  if (traced) internal::SetTracedPlugin(op_.get(), (*plugin)->Name());
  return Done(traced, call(static_cast<T*>(*plugin)),
              [&] { return absl::StrCat(what(), " [", (*plugin)->Name(), "]"); });
}

}  // namespace rill

#endif  // RILL_STREAM_STREAM_PLUGIN_H_
