#include "rill/engine/engine.h"

#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "rill/base/env_settings.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/engine/engine_base.h"
#include "rill/engine/engine_kinds.h"
#include "rill/engine/opr_block.h"
#include "rill/engine/refusing_engine.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"

namespace rill::engine {

absl::StatusOr<Context> Context::Device(std::string_view platform_name, int ordinal) {
  RILL_ASSIGN_OR_RETURN(Platform * platform,
                        PlatformManager::Default().PlatformWithName(platform_name));
  return Context{platform->id(), ordinal};
}

absl::StatusOr<Context> Context::Parse(std::string_view s) {
  if (s == "cpu") return Host();
  const size_t colon = s.rfind(':');
  int ordinal = -1;
  if (colon == std::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(s.data() + colon + 1, s.size() - colon - 1), &ordinal) ||
      ordinal < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("context '", std::string(s),
                     "' is not cpu or <platform>:<ordinal> (host:0, opencl:0, cuda:0)"));
  }
  return Device(s.substr(0, colon), ordinal);
}

std::string Context::ToString() const {
  if (is_host()) return "cpu";
  return absl::StrCat(platform->name, ":", ordinal);
}

// --- Completion ----------------------------------------------------------------

void Completion::operator()(absl::Status status) const {
  if (op_ == nullptr) {
    RILL_LOG(ERROR) << "an empty engine Completion was called";
    return;
  }
  internal::EngineBase::Complete(op_, seq_, std::move(status));
}

// --- Options and creation ------------------------------------------------------

namespace {

// Reads `variable` through the table of settings (base/env_settings.h) into
// `out`, left alone when unset. The table bounds each count to what the
// option it sets holds, so nothing is narrowed.
absl::Status ReadInt(const char* variable, int64_t* out) {
  RILL_ASSIGN_OR_RETURN(std::optional<int64_t> value, EnvInt(variable));
  if (value.has_value()) *out = *value;
  return absl::OkStatus();
}

// InvalidArgument naming the option and its value unless min <= value <= max.
absl::Status CheckRange(const char* option, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("EngineOptions::", option, "=", value,
                                                 " is out of range [", min, ", ", max, "]"));
}

}  // namespace

absl::StatusOr<EngineOptions> EngineOptions::FromEnv(EngineOptions base) {
  RILL_ASSIGN_OR_RETURN(std::optional<std::string> kind, EnvString("RILL_ENGINE"));
  if (kind.has_value()) base.kind = *kind == "naive" ? Kind::kNaive : Kind::kThreaded;
  int64_t cpu = base.cpu_workers, in_flight = base.max_in_flight, watchdog_ms = -1;
  int64_t streams = base.streams_per_device;
  int64_t helps = base.waiting_thread_helps ? 1 : 0;
  RILL_RETURN_IF_ERROR(ReadInt("RILL_ENGINE_CPU_WORKERS", &cpu));
  RILL_RETURN_IF_ERROR(ReadInt("RILL_ENGINE_MAX_IN_FLIGHT", &in_flight));
  RILL_RETURN_IF_ERROR(ReadInt("RILL_ENGINE_WATCHDOG_MS", &watchdog_ms));
  RILL_RETURN_IF_ERROR(ReadInt("RILL_ENGINE_STREAMS_PER_DEVICE", &streams));
  RILL_RETURN_IF_ERROR(ReadInt("RILL_ENGINE_WAITING_THREAD_HELPS", &helps));
  base.waiting_thread_helps = helps != 0;
  base.cpu_workers = static_cast<int>(cpu);
  base.streams_per_device = static_cast<int>(streams);
  base.max_in_flight = in_flight;
  if (watchdog_ms >= 0) base.watchdog_period = absl::Milliseconds(watchdog_ms);
  // Checked now (the folder exists, the file or device takes writes), not
  // when the trace is written at shutdown after the whole run.
  RILL_ASSIGN_OR_RETURN(std::optional<std::string> trace, EnvString("RILL_ENGINE_TRACE"));
  if (trace.has_value()) base.trace_path = *trace;
  return base;
}

absl::StatusOr<EngineOptions> EngineOptions::FromEnv() { return FromEnv(EngineOptions{}); }

absl::StatusOr<std::unique_ptr<Engine>> Engine::CreateFromEnv(const EngineOptions& base) {
  RILL_ASSIGN_OR_RETURN(EngineOptions options, EngineOptions::FromEnv(base));
  return Create(options);
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options) {
  // Every count that becomes a number of threads or streams is bounded.
  constexpr int kMaxWorkers = EngineOptions::kMaxWorkers;
  RILL_RETURN_IF_ERROR(CheckRange("cpu_workers", options.cpu_workers, 0, kMaxWorkers));
  RILL_RETURN_IF_ERROR(
      CheckRange("workers_per_device", options.workers_per_device, 1, kMaxWorkers));
  RILL_RETURN_IF_ERROR(
      CheckRange("copy_workers_per_device", options.copy_workers_per_device, 1, kMaxWorkers));
  RILL_RETURN_IF_ERROR(
      CheckRange("streams_per_device", options.streams_per_device, 1, kMaxWorkers));
  RILL_RETURN_IF_ERROR(
      CheckRange("max_in_flight", options.max_in_flight, 1, std::numeric_limits<int64_t>::max()));
  if (options.watchdog_period < absl::ZeroDuration() ||
      options.shutdown_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "EngineOptions: watchdog_period=", absl::FormatDuration(options.watchdog_period),
        " must be >= 0 and shutdown_timeout=", absl::FormatDuration(options.shutdown_timeout),
        " > 0"));
  }
  if (!options.trace_path.empty()) {
    RILL_RETURN_IF_ERROR(
        CheckWritablePath("EngineOptions::trace_path: cannot write", options.trace_path));
  }
  if (options.kind == EngineOptions::Kind::kNaive) return internal::NewNaiveEngine(options);
  return internal::NewThreadedEngine(options);
}

namespace {

Engine*& DefaultSlot() {
  static Engine* engine = nullptr;
  return engine;
}

}  // namespace

Engine& Engine::Default() {
  static Mutex* mu = new Mutex();
  MutexLock lock(mu);
  Engine*& slot = DefaultSlot();
  if (slot == nullptr) {
    // Every RILL_* setting is checked here, where the library starts: a bad
    // one makes the default engine refuse all work with its status rather
    // than run on with defaults.
    absl::Status env = ValidateEnvironment();
    absl::StatusOr<std::unique_ptr<Engine>> engine =
        env.ok() ? CreateFromEnv() : absl::StatusOr<std::unique_ptr<Engine>>(env);
    if (!engine.ok()) {
      const absl::Status why(
          engine.status().code(),
          absl::StrCat("the default engine was not created: ", engine.status().message()));
      RILL_LOG(ERROR) << why.message() << "; every push to it fails";
      engine = internal::NewRefusingEngine(why);
    }
    slot = engine->release();
  }
  return *slot;
}

absl::Status Engine::DefaultStatus() {
  if (auto* refusing = dynamic_cast<internal::RefusingEngine*>(&Default())) return refusing->why();
  return absl::OkStatus();
}

void Engine::ShutdownDefault() {
  Engine* engine = DefaultSlot();
  if (engine != nullptr) engine->Shutdown(false);
}

}  // namespace rill::engine
