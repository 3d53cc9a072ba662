#ifndef RILL_STREAM_VERBOSE_H_
#define RILL_STREAM_VERBOSE_H_

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "rill/stream/stream_listener.h"

namespace rill {

// Verbose mode: one line per stream operation and library call, in the
// spirit of ONEDNN_VERBOSE. Set with RILL_VERBOSE=<level> or SetVerbose:
//   0  off (the default)
//   1  every stream operation when its work has run -- copies, fills,
//      kernel launches, host callbacks, waits and plugin calls -- and every
//      call refused at enqueue
//   2  also allocations and frees, and engine pushes
// Lines go to stderr (or the sink set below), one whole line per write, as
// comma-separated fields that never contain a comma themselves:
//   rill_verbose,<kind>,<device>,<lane>,<op>,<args>,<plugin>,<algorithm>,<status>,<device_ms>
// kind: exec (ran), refused (rejected at enqueue), alloc, free, push
// (engine). args: types and shapes, ';'-separated. plugin, algorithm:
// the library plugin and what it chose, or '-'. status: ok or the error's
// code and message. device_ms: device time measured with the backend's
// events, or '-' where the backend has no timers. Fields are added only at
// the end, so parsers may split on ',' and read by position. The first
// line, when the mode is turned on, names the fields:
//   rill_verbose,kind,device,lane,op,args,plugin,algorithm,status,device_ms
void SetVerbose(int level);
// Parses "0", "1" or "2"; InvalidArgument naming the value otherwise.
absl::Status SetVerboseFromString(std::string_view level);
int VerboseLevel();
// Where lines go (each without its newline); an empty function: stderr.
void SetVerboseSink(std::function<void(std::string_view line)> sink);

// Formats one line for `op` (the fields above), for kinds other than a
// stream's own, such as the engine's pushes.
std::string FormatVerboseLine(std::string_view kind, const StreamOp& op);
// Writes a line to the sink.
void EmitVerboseLine(std::string_view line);

}  // namespace rill

#endif  // RILL_STREAM_VERBOSE_H_
