// Stream::ThenCollective: the forward to the executor's CollectivesSupport.

#include "rill/plugins/collectives/collectives.h"
#include "rill/stream/stream_plugin.h"

namespace rill {

Stream& Stream::ThenCollective(Communicator* comm, const CollectiveArgs& args) {
  return ThenPlugin<CollectivesSupport>(
      [&] { return absl::StrCat("ThenCollective(", args.ToString(), ")"); },
      [&](CollectivesSupport* c) -> absl::Status {
        if (comm == nullptr) return absl::InvalidArgumentError("null communicator");
        return c->Run(this, comm, args);
      });
}

}  // namespace rill
