#ifndef RILL_ENGINE_PROFILER_H_
#define RILL_ENGINE_PROFILER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/mutex.h"

namespace rill::engine::internal {

// Records one span per engine function and writes them as Chrome trace
// JSON ("traceEvents" with complete "X" events; Perfetto and
// chrome://tracing open it). Off until Start(). Thread-safe.
class Profiler {
 public:
  struct Span {
    std::string name;
    std::string context;  // "cpu", "host:1"
    std::string lane;     // "worker 3", "host:1 stream 0x..."
    int64_t start_ns;
    int64_t end_ns;
  };

  void Start() { enabled_.store(true, std::memory_order_release); }
  bool enabled() const { return enabled_.load(std::memory_order_acquire); }
  void Record(Span span);
  // Writes everything recorded so far. On failure the status names the path
  // and the system's reason, with the code errno gives (a missing folder:
  // NotFound; no permission: PermissionDenied).
  absl::Status Write(const std::string& path) const;
  static int64_t NowNs();

 private:
  std::atomic<bool> enabled_{false};
  mutable Mutex mu_;
  std::vector<Span> spans_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_PROFILER_H_
