#ifndef RILL_BASE_ENV_SETTINGS_H_
#define RILL_BASE_ENV_SETTINGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

// The one table of the RILL_* environment variables Rill reads: for each,
// what it accepts and how its value is parsed. A bad setting stops a
// program at start: the tools call ValidateEnvironment first thing and exit
// with status 2, and Engine::Default() refuses every push with the same
// status. The readers below parse a variable by its table entry, so a rule
// lives in one place.
//
//   if (absl::Status env = rill::ValidateEnvironment(); !env.ok()) {
//     std::fprintf(stderr, "rill-demo: %s\n", std::string(env.message()).c_str());
//     return 2;
//   }
//   RILL_ASSIGN_OR_RETURN(std::optional<int64_t> workers,
//                         rill::EnvInt("RILL_ENGINE_CPU_WORKERS"));
//
// An unset or empty variable counts as unset. Thread-compatible: the
// environment is global, so nothing may set it while these read it.

namespace rill {

// How a variable's value is checked.
enum class EnvKind {
  kInt,           // An integer in [min, max] (or `word`, e.g. "auto").
  kChoice,        // One of the comma-separated `accepted`.
  kBytes,         // A positive byte count, optionally with a K, M, G or T suffix.
  kSeconds,       // A number of seconds in (0, max].
  kWritableFile,  // A file that can be created or written now.
  kPluginList,    // Plugin names separated by commas (RILL_BLAS=openblas,blis).
  kText,          // Any text (a folder list, a path read later).
  kExternal,      // Read by scripts, tests or benchmarks, not by the library.
};

struct EnvSetting {
  std::string_view name;
  EnvKind kind;
  int64_t min = 0;  // kInt.
  int64_t max = 0;  // kInt; kSeconds.
  // kChoice: the values, "a, b, c". kInt: what the values mean (may be
  // empty). Otherwise: the accepted form, for messages and docs.
  std::string_view accepted;
  std::string_view word;  // kInt: a word also accepted ("auto"), or empty.
  std::string_view what;  // What it does, one line.
};

// Every variable Rill knows, in a fixed order (by area).
absl::Span<const EnvSetting> EnvSettings();

// The entry of `name`, or nullptr.
const EnvSetting* FindEnvSetting(std::string_view name);

// Checks `value` by `setting`'s rule: InvalidArgument naming the variable,
// the value and what is accepted, e.g. "RILL_ENGINE='turbo' is not one of:
// threaded, naive". For kWritableFile it tries the path: a missing folder,
// a folder it may not write or a device that refuses writes (/dev/full)
// gives the system's reason, with its code.
absl::Status CheckEnvValue(const EnvSetting& setting, std::string_view value);

// Checks every set RILL_* variable the table knows. OK, or the status of
// the first bad one with the others' messages appended. Logs once per
// process a warning for each set RILL_* variable the table does not know,
// naming the closest known one (a typo such as RILL_VERBSE).
absl::Status ValidateEnvironment();

// The warnings ValidateEnvironment logs: "RILL_VERBSE is not a variable
// Rill reads (did you mean RILL_VERBOSE?)", one per unknown RILL_* variable.
std::vector<std::string> UnknownEnvWarnings();

// Readers: the variable's value parsed by its entry (which must exist and
// be of the reader's kind), std::nullopt when unset or empty, or
// CheckEnvValue's error. EnvInt returns std::nullopt also for `word`.
absl::StatusOr<std::optional<int64_t>> EnvInt(std::string_view name);
absl::StatusOr<std::optional<std::string>> EnvString(std::string_view name);
absl::StatusOr<std::optional<bool>> EnvBool(std::string_view name);  // A "0, 1" choice.
absl::StatusOr<std::optional<double>> EnvSeconds(std::string_view name);
absl::StatusOr<std::optional<int64_t>> EnvBytes(std::string_view name);

// Parses "1048576", "64K", "512M", "2G", "1T" (powers of 1024, either case)
// into a byte count in [1, INT64_MAX]; nullopt otherwise.
std::optional<int64_t> ParseByteCount(std::string_view text);

// A trace path under an MPI launcher: one file per rank. "%r" becomes the
// rank (OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK); without it
// ".rank<r>" goes before the extension (trace.json -> trace.rank1.json).
// Outside a launcher, `path` unchanged.
std::string PerRankPath(std::string path);

// Whether `path` can be written now, without leaving anything behind: an
// existing file is opened for writing (not truncated) and a device is
// written zero bytes (/dev/full refuses); a new file is created and
// removed. The code errno gives and "<what> <path>: <reason>" otherwise.
absl::Status CheckWritablePath(std::string_view what, const std::string& path);

}  // namespace rill

#endif  // RILL_BASE_ENV_SETTINGS_H_
