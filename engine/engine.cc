#include "engine/engine.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "engine/engine_base.h"
#include "engine/engine_kinds.h"
#include "engine/opr_block.h"
#include "platform/platform.h"
#include "platform/platform_manager.h"

namespace rill::engine {

absl::StatusOr<Context> Context::Device(std::string_view platform_name, int ordinal) {
  RILL_ASSIGN_OR_RETURN(Platform * platform, PlatformManager::Default().PlatformWithName(platform_name));
  return Context{platform->id(), ordinal};
}

absl::StatusOr<Context> Context::Parse(std::string_view s) {
  if (s == "cpu") return Host();
  const size_t colon = s.rfind(':');
  int ordinal = -1;
  if (colon == std::string_view::npos || colon == 0 || !absl::SimpleAtoi(absl::string_view(s.data() + colon + 1, s.size() - colon - 1), &ordinal) ||
      ordinal < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("context '", std::string(s), "' is not cpu or <platform>:<ordinal> (host:0, opencl:0, cuda:0)"));
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
  op_->engine->Complete(op_, seq_, std::move(status));
}

// --- Options and creation ------------------------------------------------------

namespace {

absl::Status ParseInt(const char* variable, int64_t min, int64_t* out) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return absl::OkStatus();
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed) || parsed < min) {
    return absl::InvalidArgumentError(
        absl::StrCat(variable, "='", value, "' is not an integer >= ", min));
  }
  *out = parsed;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EngineOptions> EngineOptions::FromEnv(EngineOptions base) {
  if (const char* kind = std::getenv("RILL_ENGINE"); kind != nullptr && *kind != '\0') {
    const std::string k = kind;
    if (k == "naive") {
      base.kind = Kind::kNaive;
    } else if (k == "threaded") {
      base.kind = Kind::kThreaded;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("RILL_ENGINE='", k, "' is not an engine kind (naive, threaded)"));
    }
  }
  int64_t cpu = base.cpu_workers, in_flight = base.max_in_flight, watchdog_ms = -1;
  RILL_RETURN_IF_ERROR(ParseInt("RILL_ENGINE_CPU_WORKERS", 1, &cpu));
  RILL_RETURN_IF_ERROR(ParseInt("RILL_ENGINE_MAX_IN_FLIGHT", 1, &in_flight));
  RILL_RETURN_IF_ERROR(ParseInt("RILL_ENGINE_WATCHDOG_MS", 0, &watchdog_ms));
  base.cpu_workers = static_cast<int>(cpu);
  base.max_in_flight = in_flight;
  if (watchdog_ms >= 0) base.watchdog_period = absl::Milliseconds(watchdog_ms);
  if (const char* trace = std::getenv("RILL_ENGINE_TRACE"); trace != nullptr && *trace != '\0') {
    base.trace_path = trace;
  }
  return base;
}

absl::StatusOr<EngineOptions> EngineOptions::FromEnv() { return FromEnv(EngineOptions{}); }

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& requested) {
  RILL_ASSIGN_OR_RETURN(EngineOptions options, EngineOptions::FromEnv(requested));
  if (options.cpu_workers < 0 || options.workers_per_device < 1 ||
      options.copy_workers_per_device < 1 || options.streams_per_device < 1 ||
      options.max_in_flight < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "EngineOptions out of range: cpu_workers=", options.cpu_workers,
        " workers_per_device=", options.workers_per_device,
        " copy_workers_per_device=", options.copy_workers_per_device,
        " streams_per_device=", options.streams_per_device,
        " max_in_flight=", options.max_in_flight, " (counts must be >= 1, cpu_workers >= 0)"));
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
    absl::StatusOr<std::unique_ptr<Engine>> engine = Create(EngineOptions{});
    if (!engine.ok()) {
      RILL_LOG(ERROR) << "default engine: " << engine.status().ToString()
                      << "; using default options";
      EngineOptions plain;
      engine = plain.kind == EngineOptions::Kind::kNaive ? internal::NewNaiveEngine(plain)
                                                         : internal::NewThreadedEngine(plain);
    }
    slot = engine->release();
  }
  return *slot;
}

void Engine::ShutdownDefault() {
  Engine* engine = DefaultSlot();
  if (engine != nullptr) engine->Shutdown(false);
}

}  // namespace rill::engine
