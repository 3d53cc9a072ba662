#include "rill/base/env_settings.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/base/call_once.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/base/untrusted_file.h"

extern char** environ;

namespace rill {
namespace {

constexpr int64_t kMaxThreads = 1024;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kYearMs = int64_t{365} * 24 * 3600 * 1000;
constexpr int64_t kYearSeconds = int64_t{365} * 24 * 3600;
// plugins/collectives/collectives.cc refuses more (about a year).
constexpr int64_t kMaxCollectiveSeconds = 31000000;

using K = EnvKind;

// Kept in step with the readers (grep the tree for getenv) and with the
// table of variables in README.md.
constexpr char kPluginNames[] = "plugin names separated by commas";

constexpr EnvSetting kSettings[] = {
    // base/
    {"RILL_LOG_LEVEL", K::kInt, 0, 3,
     "0: INFO and up, 1: WARNING and up (the default), 2: ERROR and up, 3: FATAL only", "",
     "the least severity RILL_LOG prints"},
    {"RILL_MAX_FILE_BYTES", K::kBytes, 0, 0,
     "a positive byte count, optionally with a K, M, G or T suffix (powers of 1024), e.g. 8G", "",
     "the cap on bytes one file a user hands Rill may make it allocate (default 4G)"},
    // stream/
    {"RILL_VERBOSE", K::kInt, 0, 2,
     "0: off, 1: one line per stream operation and plugin call, 2: also allocations and engine "
     "pushes",
     "", "log stream operations to stderr"},
    {"RILL_TRACE", K::kWritableFile, 0, 0, "a file path that can be written (\"%r\": the rank)", "",
     "write a Chrome trace of every stream operation and engine function at exit"},
    // engine/
    {"RILL_ENGINE", K::kChoice, 0, 0, "threaded, naive", "", "the default engine's kind"},
    {"RILL_ENGINE_CPU_WORKERS", K::kInt, 1, kMaxThreads, "", "", "host worker threads"},
    {"RILL_ENGINE_STREAMS_PER_DEVICE", K::kInt, 1, kMaxThreads, "", "",
     "compute streams per device"},
    {"RILL_ENGINE_MAX_IN_FLIGHT", K::kInt, 1, kInt64Max, "", "",
     "pushed but unfinished functions before a push waits"},
    {"RILL_ENGINE_WATCHDOG_MS", K::kInt, 0, kYearMs, "0: no watchdog", "",
     "period of the report of what is pending"},
    {"RILL_ENGINE_WAITING_THREAD_HELPS", K::kInt, 0, 1, "", "",
     "whether a waiting thread runs ready host functions"},
    {"RILL_ENGINE_TRACE", K::kWritableFile, 0, 0, "a file path that can be written", "",
     "write the engine's Chrome trace at shutdown"},
    // platform/
    {"RILL_HOST_DEVICES", K::kInt, 1, 1024, "", "", "virtual host devices"},
    {"RILL_HOST_MEMORY_LIMIT", K::kBytes, 0, 0,
     "a positive byte count, optionally with a K, M, G or T suffix, e.g. 512M", "",
     "memory the host platform hands out"},
    {"RILL_HOST_CORES", K::kInt, 1, 65536, "", "", "cores the host backend and plugins use"},
    {"RILL_PLUGIN_PATH", K::kText, 0, 0, "folders separated by ':'", "",
     "where to look for plugin modules first"},
    {"RILL_PLUGIN_NO_DLCLOSE", K::kText, 0, 0, "any value", "",
     "keep plugin modules loaded (for leak checkers)"},
    // ops/
    {"RILL_OPS_HOST_FALLBACK", K::kChoice, 0, 0, "0, 1", "", "run ops a device lacks on the host"},
    {"RILL_OPS_RUN_HERE_BYTES", K::kInt, 0, int64_t{1} << 40, "0: never", "",
     "small CPU ops up to this many bytes run on the pushing thread"},
    // plugins/
    {"RILL_BLAS", K::kPluginList, 0, 0, kPluginNames, "", "the BLAS plugins to use, in order"},
    {"RILL_DNN", K::kPluginList, 0, 0, kPluginNames, "", "the DNN plugins to use, in order"},
    {"RILL_RNG", K::kPluginList, 0, 0, kPluginNames, "", "the RNG plugins to use, in order"},
    {"RILL_FFT", K::kPluginList, 0, 0, kPluginNames, "", "the FFT plugins to use, in order"},
    {"RILL_COLLECTIVES", K::kPluginList, 0, 0, kPluginNames, "",
     "the collectives plugins to use, in order"},
    {"RILL_BLAS_THREADS", K::kInt, 1, kMaxThreads, "", "auto", "threads of one BLAS call"},
    {"RILL_BLIS_DEEPBIND", K::kChoice, 0, 0, "0, 1", "", "load BLIS with RTLD_DEEPBIND"},
    {"RILL_DNN_THREADS", K::kInt, 1, kMaxThreads, "", "auto", "threads of the DNN plugins"},
    {"RILL_DNN_CACHE", K::kText, 0, 0, "a file path", "", "the algorithm choice cache"},
    {"RILL_DNN_TUNE_BUDGET_MS", K::kInt, 0, kYearMs, "", "",
     "time the algorithm selector may spend measuring"},
    {"RILL_DNN_DETERMINISTIC", K::kChoice, 0, 0, "0, 1", "", "only deterministic DNN algorithms"},
    {"RILL_FFTW_PLANNER", K::kChoice, 0, 0, "estimate, measure, patient, exhaustive", "",
     "FFTW's planner effort (default measure)"},
    {"RILL_COLLECTIVE_TIMEOUT", K::kSeconds, 0, kMaxCollectiveSeconds, "", "",
     "seconds a collective waits for the other ranks (default 120)"},
    {"RILL_COLLECTIVE_STALL", K::kSeconds, 0, kMaxCollectiveSeconds, "", "",
     "seconds before a stalled collective is reported (default 30)"},
    {"RILL_MPI_MALLOC_TUNING", K::kChoice, 0, 0, "0, 1", "",
     "set malloc's thresholds for MPI transfers"},
    // Test and benchmark programs.
    {"RILL_CONFORMANCE_CASE_TIMEOUT_S", K::kInt, 1, kYearSeconds, "", "",
     "seconds one conformance case may run"},
    {"RILL_CUDA_MODULE_PATH", K::kExternal, 0, 0, "", "", "tests: the CUDA module's copy"},
    {"RILL_ENGINE_STRESS_OPS", K::kExternal, 0, 0, "", "", "tests: engine stress length"},
    {"RILL_DIST_TEST_TAG", K::kExternal, 0, 0, "", "", "tests: marks distributed test ranks"},
    {"RILL_TEST_KEEP", K::kExternal, 0, 0, "", "", "tests: keep distributed test files"},
    {"RILL_TEST_FASHION_MNIST", K::kExternal, 0, 0, "", "", "tests: the dataset folder"},
    {"RILL_BENCH_SCALE", K::kExternal, 0, 0, "", "", "benchmarks"},
    {"RILL_BENCH_ITERS", K::kExternal, 0, 0, "", "", "benchmarks"},
    {"RILL_BENCH_CPU_WORKERS", K::kExternal, 0, 0, "", "", "benchmarks"},
    {"RILL_BENCH_PLUGIN_DIR", K::kExternal, 0, 0, "", "", "benchmarks"},
    {"RILL_GRAPH_BENCH_PLAN", K::kExternal, 0, 0, "", "", "benchmarks"},
    {"RILL_RUN", K::kExternal, 0, 0, "", "", "bench/onnx_bench.sh: the rill-run binary"},
    {"RILL_RUN_FLAGS", K::kExternal, 0, 0, "", "", "bench/onnx_bench.sh: rill-run flags"},
    {"RILL_JOBS", K::kExternal, 0, 0, "", "", "scripts: build parallelism"},
    {"RILL_BUILD_DIR", K::kExternal, 0, 0, "", "", "scripts: the build folder"},
    {"RILL_DEMO_TRAIN_LIMIT", K::kExternal, 0, 0, "", "", "scripts/demo.sh: training images"},
    {"RILL_DEMO_OUT", K::kExternal, 0, 0, "", "", "scripts/demo.sh: the output folder"},
    {"RILL_FUZZ_SECONDS", K::kExternal, 0, 0, "", "", "scripts/test.sh: fuzzing time"},
    {"RILL_FUZZ_BUILD_DIR", K::kExternal, 0, 0, "", "", "scripts/test.sh: fuzz build folder"},
};

absl::Status Bad(const EnvSetting& s, std::string_view value, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(AsAbsl(s.name), "='", AsAbsl(value), "' ", AsAbsl(why)));
}

absl::Status CheckInt(const EnvSetting& s, std::string_view value, int64_t* out) {
  if (!s.word.empty() && value == s.word) return absl::OkStatus();
  int64_t parsed = 0;
  if (absl::SimpleAtoi(AsAbsl(value), &parsed) && parsed >= s.min && parsed <= s.max) {
    if (out != nullptr) *out = parsed;
    return absl::OkStatus();
  }
  std::string why = absl::StrCat("is not an integer in [", s.min, ", ", s.max, "]");
  if (!s.word.empty()) absl::StrAppend(&why, " or ", AsAbsl(s.word));
  if (!s.accepted.empty()) absl::StrAppend(&why, " (", AsAbsl(s.accepted), ")");
  return Bad(s, value, why);
}

absl::Status CheckChoice(const EnvSetting& s, std::string_view value) {
  for (absl::string_view choice : absl::StrSplit(AsAbsl(s.accepted), ", ")) {
    if (choice == AsAbsl(value)) return absl::OkStatus();
  }
  return Bad(s, value, absl::StrCat("is not one of: ", AsAbsl(s.accepted)));
}

absl::Status CheckSeconds(const EnvSetting& s, std::string_view value, double* out) {
  double seconds = 0;
  if (absl::SimpleAtod(AsAbsl(value), &seconds) && seconds > 0 &&
      seconds <= static_cast<double>(s.max)) {
    if (out != nullptr) *out = seconds;
    return absl::OkStatus();
  }
  return Bad(s, value, absl::StrCat("is not a number of seconds in (0, ", s.max, "]"));
}

absl::Status CheckPluginList(const EnvSetting& s, std::string_view value) {
  for (absl::string_view part : absl::StrSplit(AsAbsl(value), ',')) {
    const absl::string_view name = absl::StripAsciiWhitespace(part);
    const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
    if (!ok) {
      return Bad(s, value,
                 absl::StrCat("is not a list of plugin names separated by commas (\"", part,
                              "\" is not a name; e.g. openblas,blis)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckValue(const EnvSetting& s, std::string_view value, int64_t* int_out,
                        double* seconds_out) {
  switch (s.kind) {
    case K::kInt:
      return CheckInt(s, value, int_out);
    case K::kChoice:
      return CheckChoice(s, value);
    case K::kBytes: {
      const std::optional<int64_t> bytes = ParseByteCount(value);
      if (!bytes.has_value()) return Bad(s, value, absl::StrCat("is not ", AsAbsl(s.accepted)));
      if (int_out != nullptr) *int_out = *bytes;
      return absl::OkStatus();
    }
    case K::kSeconds:
      return CheckSeconds(s, value, seconds_out);
    case K::kWritableFile: {
      absl::Status st = CheckWritablePath(
          absl::StrCat(AsAbsl(s.name), "='", AsAbsl(value), "': cannot write"),
          s.name == "RILL_TRACE" ? PerRankPath(std::string(value)) : std::string(value));
      return st;
    }
    case K::kPluginList:
      return CheckPluginList(s, value);
    case K::kText:
    case K::kExternal:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

// The value of a known variable, nullopt when unset or empty.
std::optional<std::string_view> Value(const EnvSetting& s) {
  const char* v = std::getenv(std::string(s.name).c_str());
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string_view(v);
}

const EnvSetting& Entry(std::string_view name) {
  const EnvSetting* s = FindEnvSetting(name);
  RILL_CHECK(s != nullptr) << "no environment setting named " << name;
  return *s;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

absl::Span<const EnvSetting> EnvSettings() { return kSettings; }

const EnvSetting* FindEnvSetting(std::string_view name) {
  for (const EnvSetting& s : kSettings) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

absl::Status CheckEnvValue(const EnvSetting& setting, std::string_view value) {
  return CheckValue(setting, value, nullptr, nullptr);
}

absl::Status ValidateEnvironment() {
  static absl::once_flag warned;
  absl::call_once(warned, [] {
    for (const std::string& w : UnknownEnvWarnings()) RILL_LOG(WARNING) << w;
  });
  absl::Status first;
  std::string others;
  for (const EnvSetting& s : kSettings) {
    const std::optional<std::string_view> value = Value(s);
    if (!value.has_value()) continue;
    absl::Status st = CheckEnvValue(s, *value);
    if (st.ok()) continue;
    if (first.ok()) {
      first = st;
    } else {
      absl::StrAppend(&others, "; ", st.message());
    }
  }
  if (first.ok() || others.empty()) return first;
  return absl::Status(first.code(), absl::StrCat(first.message(), others));
}

std::vector<std::string> UnknownEnvWarnings() {
  std::vector<std::string> warnings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!absl::StartsWith(AsAbsl(entry), "RILL_")) continue;
    const std::string_view name = entry.substr(0, entry.find('='));
    if (FindEnvSetting(name) != nullptr) continue;
    const EnvSetting* closest = nullptr;
    size_t best = std::numeric_limits<size_t>::max();
    for (const EnvSetting& s : kSettings) {
      if (const size_t d = EditDistance(name, s.name); d < best) {
        best = d;
        closest = &s;
      }
    }
    std::string w = absl::StrCat(AsAbsl(name), " is not a variable Rill reads");
    if (closest != nullptr && best <= std::max<size_t>(2, name.size() / 4)) {
      absl::StrAppend(&w, " (did you mean ", AsAbsl(closest->name), "?)");
    } else {
      absl::StrAppend(&w, "; it is ignored");
    }
    warnings.push_back(std::move(w));
  }
  return warnings;
}

absl::StatusOr<std::optional<int64_t>> EnvInt(std::string_view name) {
  const EnvSetting& s = Entry(name);
  RILL_CHECK(s.kind == K::kInt) << name << " is not an integer setting";
  const std::optional<std::string_view> value = Value(s);
  if (!value.has_value() || (!s.word.empty() && *value == s.word)) return std::nullopt;
  int64_t parsed = 0;
  RILL_RETURN_IF_ERROR(CheckInt(s, *value, &parsed));
  return parsed;
}

absl::StatusOr<std::optional<std::string>> EnvString(std::string_view name) {
  const EnvSetting& s = Entry(name);
  const std::optional<std::string_view> value = Value(s);
  if (!value.has_value()) return std::nullopt;
  RILL_RETURN_IF_ERROR(CheckEnvValue(s, *value));
  return std::string(*value);
}

absl::StatusOr<std::optional<bool>> EnvBool(std::string_view name) {
  const EnvSetting& s = Entry(name);
  RILL_CHECK(s.kind == K::kChoice && s.accepted == "0, 1") << name << " is not a 0/1 setting";
  RILL_ASSIGN_OR_RETURN(std::optional<std::string> value, EnvString(name));
  if (!value.has_value()) return std::nullopt;
  return *value == "1";
}

absl::StatusOr<std::optional<double>> EnvSeconds(std::string_view name) {
  const EnvSetting& s = Entry(name);
  RILL_CHECK(s.kind == K::kSeconds) << name << " is not a seconds setting";
  const std::optional<std::string_view> value = Value(s);
  if (!value.has_value()) return std::nullopt;
  double seconds = 0;
  RILL_RETURN_IF_ERROR(CheckSeconds(s, *value, &seconds));
  return seconds;
}

absl::StatusOr<std::optional<int64_t>> EnvBytes(std::string_view name) {
  const EnvSetting& s = Entry(name);
  RILL_CHECK(s.kind == K::kBytes) << name << " is not a byte-count setting";
  const std::optional<std::string_view> value = Value(s);
  if (!value.has_value()) return std::nullopt;
  int64_t bytes = 0;
  RILL_RETURN_IF_ERROR(CheckValue(s, *value, &bytes, nullptr));
  return bytes;
}

std::optional<int64_t> ParseByteCount(std::string_view text) {
  int shift = 0;
  if (!text.empty()) {
    switch (absl::ascii_toupper(static_cast<unsigned char>(text.back()))) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      default:
        break;
    }
    if (shift != 0) text.remove_suffix(1);
  }
  int64_t n = 0;
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos ||
      !absl::SimpleAtoi(AsAbsl(text), &n) || n <= 0 || n > (kInt64Max >> shift)) {
    return std::nullopt;
  }
  return n << shift;
}

std::string PerRankPath(std::string path) {
  const char* rank = nullptr;
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if ((rank = std::getenv(v)) != nullptr) break;
  }
  if (rank == nullptr) return path;
  if (size_t at = path.find("%r"); at != std::string::npos) return path.replace(at, 2, rank);
  const size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) dot = path.size();
  return path.insert(dot, absl::StrCat(".rank", rank));
}

absl::Status CheckWritablePath(std::string_view what, const std::string& path) {
  const auto error = [&](int err) {
    return absl::ErrnoToStatus(err, absl::StrCat(AsAbsl(what), " ", path));
  };
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(AsAbsl(what), ": empty path"));
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return error(EISDIR);
    if (S_ISFIFO(st.st_mode)) {  // Opening it would wait for a reader.
      return ::access(path.c_str(), W_OK) == 0 ? absl::OkStatus() : error(errno);
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return error(errno);
    // Zero bytes change no file; a device that refuses writes says so.
    const int err = S_ISREG(st.st_mode) || ::write(fd, "", 0) == 0 ? 0 : errno;
    ::close(fd);
    return err == 0 ? absl::OkStatus() : error(err);
  }
  if (errno != ENOENT) return error(errno);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return error(errno);
  ::close(fd);
  ::unlink(path.c_str());
  return absl::OkStatus();
}

}  // namespace rill
