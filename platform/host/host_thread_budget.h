#ifndef RILL_PLATFORM_HOST_HOST_THREAD_BUDGET_H_
#define RILL_PLATFORM_HOST_HOST_THREAD_BUDGET_H_

// How the host platform's library plugins share the cores. Each library
// call that may run several threads (OpenBLAS, BLIS, oneDNN, XNNPACK) holds
// a HostComputeScope while it runs on its stream's worker thread, and takes
// Share(cores) threads: cores divided by the scopes held now, at least one.
// The count spans every library, stream and device of the process, so one
// busy stream gets every core, and N calls at once -- in one library or in
// several -- get about cores / N each: OpenBLAS's pool, oneDNN's OpenMP
// team and XNNPACK's pthreadpool do not add up to more threads than cores.
// A call that starts while others run keeps the share it started with.
// RILL_BLAS_THREADS / RILL_DNN_THREADS fix a library's count instead.
//
//   HostComputeScope scope;
//   const int threads = scope.Share(HostCores());
//
// Thread-safe.

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "rill/base/env_settings.h"
#include "rill/base/logging.h"

namespace rill {

// The cores this process may use (at least 1): RILL_HOST_CORES if set, else
// the CPUs of its affinity mask (an MPI launcher binds each rank to its
// own), else the hardware's. A RILL_HOST_CORES the table of settings
// refuses (base/env_settings.cc) is logged and ignored.
inline int HostCores() {
  static const int cores = [] {
    const absl::StatusOr<std::optional<int64_t>> env = EnvInt("RILL_HOST_CORES");
    if (env.ok() && env->has_value()) return static_cast<int>(**env);
    int detected = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
      detected = CPU_COUNT(&set);
    }
    if (!env.ok()) {
      RILL_LOG(WARNING) << env.status().message() << "; using " << detected
                        << " (the CPUs this process may run on)";
    }
    return detected;
  }();
  return cores;
}

class HostComputeScope {
 public:
  HostComputeScope() : active_(Count().fetch_add(1, std::memory_order_relaxed) + 1) {}
  ~HostComputeScope() { Count().fetch_sub(1, std::memory_order_relaxed); }
  HostComputeScope(const HostComputeScope&) = delete;
  HostComputeScope& operator=(const HostComputeScope&) = delete;

  // Library calls running when this one started, itself included.
  int active() const { return active_; }
  // This call's threads out of `cores`: max(1, cores / active()).
  int Share(int cores) const { return std::max(1, cores / active_); }
  // Library calls running now, all libraries.
  static int Running() { return Count().load(std::memory_order_relaxed); }

 private:
  static std::atomic<int>& Count() {
    static std::atomic<int> count{0};
    return count;
  }
  const int active_;
};

}  // namespace rill

#endif  // RILL_PLATFORM_HOST_HOST_THREAD_BUDGET_H_
