#include "rill/plugins/plugin_chain.h"

#include "rill/base/logging.h"
#include "rill/stream/stream_listener.h"

namespace rill::internal {

void RecordHandOff(PluginInterface& from, PluginInterface& to, PluginKind kind,
                   const std::string& operation, const absl::Status& why) {
  from.handed_on_.fetch_add(1, std::memory_order_relaxed);
  to.taken_over_.fetch_add(1, std::memory_order_relaxed);
  if (StreamListenersActive())
    NotePlugin(to.Name());  // Verbose lines and traces name the plugin that ran it.
  RILL_LOG(INFO) << PluginKindName(kind) << " plugin " << from.Name() << " hands " << operation
                 << " to " << to.Name() << ": " << why.message();
}

}  // namespace rill::internal
