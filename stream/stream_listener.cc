#include "rill/stream/stream_listener.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "absl/base/call_once.h"
#include "absl/strings/str_cat.h"
#include "rill/base/env_settings.h"
#include "rill/base/logging.h"
#include "rill/base/mutex.h"
#include "rill/base/trace_clock.h"
#include "rill/stream/trace_recorder.h"
#include "rill/stream/verbose.h"

namespace rill {
namespace {

struct Registry {
  Mutex mu;
  std::vector<std::shared_ptr<StreamListener>> listeners ABSL_GUARDED_BY(mu);
  std::map<std::string, int> streams_per_device ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* registry = new Registry;  // Never destroyed: used at exit.
  return *registry;
}

}  // namespace

void AddStreamListener(std::shared_ptr<StreamListener> listener) {
  if (listener == nullptr) return;
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  r.listeners.push_back(std::move(listener));
  internal::stream_listener_count.store(static_cast<int>(r.listeners.size()),
                                        std::memory_order_relaxed);
}

void RemoveStreamListener(const StreamListener* listener) {
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  auto& ls = r.listeners;
  ls.erase(std::remove_if(ls.begin(), ls.end(), [&](const auto& l) { return l.get() == listener; }),
           ls.end());
  internal::stream_listener_count.store(static_cast<int>(ls.size()), std::memory_order_relaxed);
}

namespace internal {

std::vector<std::shared_ptr<StreamListener>> StreamListeners() {
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  return r.listeners;
}

std::string NextStreamLane(const std::string& device) {
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  return absl::StrCat(device, " stream ", ++r.streams_per_device[device]);
}

void ReportAllocation(AllocationEvent event) {
  event.time_ns = TraceClockNs();
  for (const auto& l : StreamListeners()) l->OnAllocation(event);
}

// The settings are parsed and checked by the table (base/env_settings.h):
// a bad one, or a trace path that cannot be written (a missing folder,
// /dev/full), is reported here, when the first executor or engine is made,
// not at exit. The tools and Engine::Default() stop on it
// (rill::ValidateEnvironment); a program that only makes executors runs on
// without that listener.
void InstallEnvironmentListeners() {
  static absl::once_flag once;
  absl::call_once(once, [] {
    absl::StatusOr<std::optional<int64_t>> verbose = EnvInt("RILL_VERBOSE");
    if (!verbose.ok()) {
      RILL_LOG(ERROR) << verbose.status().message() << "; no verbose output";
    } else if (verbose->has_value()) {
      SetVerbose(static_cast<int>(**verbose));
    }
    absl::StatusOr<std::optional<std::string>> trace = EnvString("RILL_TRACE");
    absl::Status status = trace.status();
    if (status.ok() && trace->has_value()) status = StartTracing(PerRankPath(**trace));
    if (!status.ok()) RILL_LOG(ERROR) << status.message() << "; no trace is written";
  });
}

}  // namespace internal
}  // namespace rill
