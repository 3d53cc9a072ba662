#include "rill/stream/stream_listener.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "absl/base/call_once.h"
#include "absl/strings/str_cat.h"
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

namespace {

// RILL_TRACE under an MPI launcher: one file per rank. "%r" in the path
// becomes the rank; without it ".rank<r>" goes before the extension
// (trace.json -> trace.rank1.json). tools/merge_traces.py joins them.
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

}  // namespace

void InstallEnvironmentListeners() {
  static absl::once_flag once;
  absl::call_once(once, [] {
    if (const char* v = std::getenv("RILL_VERBOSE"); v != nullptr && *v != '\0') {
      absl::Status status = SetVerboseFromString(v);
      if (!status.ok()) RILL_LOG(WARNING) << "RILL_VERBOSE ignored: " << status.message();
    }
    if (const char* path = std::getenv("RILL_TRACE"); path != nullptr && *path != '\0') {
      absl::Status status = StartTracing(PerRankPath(path));
      if (!status.ok()) RILL_LOG(WARNING) << "RILL_TRACE ignored: " << status.message();
    }
  });
}

}  // namespace internal
}  // namespace rill
