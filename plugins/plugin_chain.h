#ifndef RILL_PLUGINS_PLUGIN_CHAIN_H_
#define RILL_PLUGINS_PLUGIN_CHAIN_H_

// Fallback chains of plugins. An executor may hold several plugins of one
// kind in order (StreamExecutor::SetPlugin(PluginKind::kDnn,
// "xnnpack,onednn"), or RILL_DNN=xnnpack,onednn): each plugin's fallback()
// is the next. Before a call dispatches, the interface asks the plugin it
// was made on whether it supports the operation (DnnSupport::Supports,
// BlasSupport::Supports); a plugin that does not hands the call on to the
// first later plugin that does. Every hand-on is counted on both plugins
// (calls_handed_on(), calls_taken_over(); rill-info and the demo print
// them) and logged at INFO (RILL_LOG_LEVEL=0) with the reason.
//
// Calling a plugin that is not the chain's head (StreamExecutor::GetPlugin
// (kind, "onednn")) chooses it for that call: the call starts there and can
// only fall back to plugins after it. A convolution with kBestAlgorithm
// lands where the algorithm selector's timing says (dnn/algorithm_selector.h);
// that is a choice, not a hand-on: it is logged at INFO when tuned and
// named to stream listeners, not counted.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "rill/plugins/plugin.h"

namespace rill {

// The first plugin of the chain from `first` that supports `op` (asked
// through `Interface::Supports(op)`); Unimplemented with every plugin's
// reason when none does. `op.ToString()` names the operation in logs and
// errors. The common case -- `first` supports it -- costs one virtual call.
template <typename Interface, typename Operation>
absl::StatusOr<Interface*> RouteCall(Interface* first, const Operation& op) {
  absl::Status why = first->Supports(op);
  if (why.ok()) return first;
  std::string reasons = std::string(why.message());
  for (PluginInterface* next = first->fallback(); next != nullptr; next = next->fallback()) {
    auto* candidate = static_cast<Interface*>(next);
    absl::Status status = candidate->Supports(op);
    if (status.ok()) {
      internal::RecordHandOff(*first, *candidate, Interface::kKind, op.ToString(), why);
      return candidate;
    }
    absl::StrAppend(&reasons, "; ", status.message());
  }
  return absl::UnimplementedError(absl::StrCat("no ", PluginKindName(Interface::kKind),
                                               " plugin of the chain from \"", first->Name(),
                                               "\" supports ", op.ToString(), ": ", reasons));
}

}  // namespace rill

#endif  // RILL_PLUGINS_PLUGIN_CHAIN_H_
