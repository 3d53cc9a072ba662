#include "plugins/plugin_chain.h"

#include "base/logging.h"

namespace rill::internal {

void RecordHandOff(PluginInterface& from, PluginInterface& to, PluginKind kind, const std::string& operation,
                   const absl::Status& why) {
  from.handed_on_.fetch_add(1, std::memory_order_relaxed);
  to.taken_over_.fetch_add(1, std::memory_order_relaxed);
  RILL_LOG(INFO) << PluginKindName(kind) << " plugin " << from.Name() << " hands " << operation << " to "
                 << to.Name() << ": " << why.message();
}

}  // namespace rill::internal
