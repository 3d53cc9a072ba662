#include "tools/tool_flags.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "rill/base/env_settings.h"

#ifndef RILL_VERSION
#error "RILL_VERSION must be defined by the build (tools/CMakeLists.txt)"
#endif

namespace rill::tools {
namespace {

bool IsHelp(absl::string_view arg) {
  return arg == "-h" || arg == "--help" || arg == "-help" || arg == "--helpfull" ||
         arg == "-helpfull" || arg == "--helpshort" || arg == "-helpshort" ||
         absl::StartsWith(arg, "--help=");
}

bool Owns(const ToolCommand& command, const absl::CommandLineFlag& flag) {
  const std::string file = flag.Filename();
  return std::any_of(command.flag_files.begin(), command.flag_files.end(),
                     [&](const std::string& suffix) { return absl::EndsWith(file, suffix); });
}

// A flag defined in tools/ for another command of this binary.
bool Foreign(const ToolCommand& command, const absl::CommandLineFlag& flag) {
  return absl::StrContains(flag.Filename(), "tools/") && !Owns(command, flag);
}

std::string TypeHint(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<bool>()) return "";
  if (flag.IsOfType<int32_t>() || flag.IsOfType<int64_t>()) return "=<int>";
  if (flag.IsOfType<uint64_t>()) return "=<uint>";
  if (flag.IsOfType<double>()) return "=<number>";
  return "=<text>";
}

[[noreturn]] void PrintHelp(const ToolCommand& command) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (Owns(command, *flag)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(), [](auto* a, auto* b) { return a->Name() < b->Name(); });
  std::string out = absl::StrCat(command.usage, "\n\nFlags:\n");
  for (const absl::CommandLineFlag* flag : flags) {
    const std::string def = flag->DefaultValue();
    absl::StrAppend(&out, "  --", flag->Name(), TypeHint(*flag), "\n      ", flag->Help(),
                    def.empty() ? "" : absl::StrCat(" (default: ", def, ")"), "\n");
  }
  absl::StrAppend(&out, "  --help\n      print this help and exit\n",
                  "  --version\n      print the Rill version and exit\n");
  std::fputs(out.c_str(), stdout);
  std::exit(0);
}

// While absl::ParseCommandLine runs for a command with a usage_error_status:
// that status. Abseil reports a bad flag with exit(1) (--help and --version
// never reach it); an atexit handler turns that exit into this status.
int g_usage_status_while_parsing = 0;

void ExitWithUsageStatus() {
  if (g_usage_status_while_parsing == 0) return;
  std::fflush(nullptr);
  _exit(g_usage_status_while_parsing);
}

// Refuses a flag of another command before Abseil would accept it.
void CheckNotForeign(const ToolCommand& command, absl::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-') return;
  arg.remove_prefix(arg[1] == '-' ? 2 : 1);
  std::string name(arg.substr(0, arg.find('=')));
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  if (flag == nullptr && absl::StartsWith(name, "no"))
    flag = absl::FindCommandLineFlag(name.substr(2));
  if (flag == nullptr || !Foreign(command, *flag)) return;
  std::fprintf(stderr, "ERROR: Unknown command line flag '%s' for %s%s\n",
               std::string(flag->Name()).c_str(), command.name.c_str(),
               command.other_modes_hint.empty() ? "" : command.other_modes_hint.c_str());
  std::exit(command.usage_error_status ? command.usage_error_status : 1);
}

}  // namespace

const char* RillVersion() { return RILL_VERSION; }

void CheckEnvironmentOrExit(std::string_view tool) {
  const absl::Status env = ValidateEnvironment();
  if (env.ok()) return;
  std::fprintf(stderr, "%.*s: %.*s\n", static_cast<int>(tool.size()), tool.data(),
               static_cast<int>(env.message().size()), env.message().data());
  std::exit(2);
}

absl::Status CheckFlagRange(std::string_view flag, int64_t value, int64_t min, int64_t max,
                            std::string_view what) {
  if (value >= min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--", absl::string_view(flag.data(), flag.size()), "=", value, " is out of range [", min,
      ", ", max, "] (", absl::string_view(what.data(), what.size()), ")"));
}

std::vector<char*> ParseToolFlags(int argc, char** argv, const ToolCommand& command) {
  absl::SetProgramUsageMessage(command.usage);
  absl::FlagsUsageConfig config;
  config.version_string = [name = command.name] {
    return absl::StrCat(name, " (Rill ", RILL_VERSION, ")\n");
  };
  absl::SetFlagsUsageConfig(config);
  for (int i = 1; i < argc && absl::string_view(argv[i]) != "--"; ++i) {
    if (IsHelp(argv[i])) PrintHelp(command);
    if (command.usage_error_status != 0 &&
        (absl::string_view(argv[i]) == "--version" || absl::string_view(argv[i]) == "-version")) {
      std::fputs(config.version_string().c_str(), stdout);
      std::exit(0);
    }
    CheckNotForeign(command, argv[i]);
  }
  if (command.usage_error_status != 0) {
    static const bool registered = std::atexit(ExitWithUsageStatus) == 0;
    (void)registered;
    g_usage_status_while_parsing = command.usage_error_status;
  }
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  g_usage_status_while_parsing = 0;
  if (!command.allow_positional && positional.size() > 1) {
    std::fprintf(stderr, "ERROR: %s: unexpected argument '%s' (see --help)\n", command.name.c_str(),
                 positional[1]);
    std::exit(command.usage_error_status ? command.usage_error_status : 2);
  }
  return positional;
}

}  // namespace rill::tools
