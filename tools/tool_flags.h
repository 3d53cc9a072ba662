#ifndef RILL_TOOLS_TOOL_FLAGS_H_
#define RILL_TOOLS_TOOL_FLAGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace rill::tools {

// How one tool (or one mode of a tool, such as `rill-demo train`) parses its
// command line through Abseil's flags.
struct ToolCommand {
  std::string name;   // "rill-info", "rill-demo train": prefixes messages.
  std::string usage;  // What it does and a usage line, printed by --help.
  // Source files whose ABSL_FLAGs belong to this command, as path suffixes
  // ("tools/rill_info.cc"). Flags from other files under tools/ (another
  // mode of the same binary) are refused as unknown; --help lists these.
  std::vector<std::string> flag_files;
  // Where to look for the flags of the other modes, added to that refusal.
  std::string other_modes_hint;
  // Positional arguments are refused unless true.
  bool allow_positional = false;
  // The exit status for an unknown flag, a malformed value or a refused
  // positional argument (1 as Abseil exits, except the positional's 2).
  // A tool that must tell a bad command line from a failed run sets 2.
  int usage_error_status = 0;
};

// Parses argv[1..argc) with absl::ParseCommandLine after handling what Abseil
// 20220623 does not do the way a tool should:
//  - --help (also -h, --helpfull, --helpshort, --help=...) prints the usage
//    and this command's flags to stdout and exits 0;
//  - --version prints "<name> (Rill <version>)" and exits 0;
//  - a flag of another mode is "unknown", as in another binary.
// Malformed values and unknown flags end the process with status 1 and
// Abseil's message naming the flag ("Illegal value '12abc' specified for
// flag 'n'"); an unexpected positional argument with status 2; both with
// `usage_error_status` instead when it is set. Returns the positional
// arguments (argv[0] first). Call once per process.
std::vector<char*> ParseToolFlags(int argc, char** argv, const ToolCommand& command);

// Checks every RILL_* environment setting (rill::ValidateEnvironment) and,
// when one is bad, prints "<tool>: <the message>" to stderr and exits with
// status 2: "rill-demo: RILL_ENGINE='turbo' is not one of: threaded, naive".
// Unknown RILL_* variables only get a warning. Call first thing in main.
void CheckEnvironmentOrExit(std::string_view tool);

// InvalidArgument "--<flag>=<value> is out of range [<min>, <max>] (<what>)"
// unless min <= value <= max. Every size or count flag of the tools goes
// through it, so a huge value is refused before anything is allocated.
absl::Status CheckFlagRange(std::string_view flag, int64_t value, int64_t min, int64_t max,
                            std::string_view what);

// The Rill version the tools were built with (CMake's project version).
const char* RillVersion();

}  // namespace rill::tools

#endif  // RILL_TOOLS_TOOL_FLAGS_H_
