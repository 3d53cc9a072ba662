#ifndef RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_COMMUNICATOR_IMPL_H_
#define RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_COMMUNICATOR_IMPL_H_

// rill:internal -- NcclCommunicator's state, shared by
// nccl_communicator.cc (issuing) and nccl_watchdog.cc (completions,
// timeouts, shutdown).

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "rill/plugins/collectives/nccl/nccl_communicator.h"
#include "rill/plugins/collectives/nccl/nccl_library.h"

namespace rill::nccl_collectives {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
inline double Seconds(std::chrono::milliseconds d) { return d.count() / 1000.0; }

// Calls made after the communicator failed, or refused at once: `done` runs
// outside every lock.
using Dones = std::vector<std::pair<CollectiveDone, absl::Status>>;

inline void Deliver(Dones& dones) {
  for (auto& [done, status] : dones) std::move(done)(status);
  dones.clear();
}

struct NcclCommunicator::Impl {
  // An issued collective waiting for its number to come up.
  struct Op {
    uint64_t seq = 0;
    CollectiveArgs args;
    cudaStream_t target = nullptr;
    cudaEvent_t ready = nullptr;  // Run's deferred case: `target` waits for it first (owned).
    absl::Status refused;
    CollectiveDone done;
    Clock::time_point issued;
  };
  // An enqueued collective, until the device has run it.
  struct InFlight {
    std::string what;
    uint64_t bytes = 0;
    cudaEvent_t start = nullptr, end = nullptr;
    CollectiveDone done;
    std::optional<Clock::time_point> started;  // When the monitor saw `start` complete.
    bool device_done = false;                  // Its host function has run.
    bool warned = false;
  };
  // What the host function after a collective gets.
  struct HostArg {
    Impl* impl;
    uint64_t seq;
  };

  const NcclApi* api = nullptr;
  int rank = 0, size = 1, ordinal = 0;
  CommunicatorOptions options;

  // Calls on `comm` are serialized by nccl_mu (a nonblocking communicator
  // must see no other call while one is in progress). Lock order: nccl_mu,
  // then mu.
  std::mutex nccl_mu;
  ncclComm_t comm = nullptr;  // Null once aborted or destroyed.
  bool aborted = false;
  void* scratch = nullptr;  // One float on the device, for barriers.

  mutable std::mutex mu;
  std::condition_variable cv;  // Host functions, the monitor, shutdown.
  std::map<uint64_t, Op> pending;
  uint64_t next_issue = 0;
  bool draining = false;  // A caller is enqueueing the prefix.
  std::map<uint64_t, InFlight> in_flight;
  int host_functions = 0;    // Launched and not yet run.
  uint64_t completions = 0;  // Host functions run, for the monitor's wake-up.
  std::vector<cudaEvent_t> free_events, retired_events;
  cudaStream_t side = nullptr;  // Run's deferred collectives.
  absl::Status health;
  CommunicatorStats stats;
  bool stop = false, monitor_stop = false;
  std::thread monitor;

  std::string What(uint64_t seq, const CollectiveArgs& a) const {
    return absl::StrCat("collective #", seq, " ", a.ToString());
  }
  void Fail(const absl::Status& s) {
    if (health.ok()) health = s;
  }
  // Fails every collective in flight and waiting with `s` (mu held).
  void FailAllLocked(const absl::Status& s, Dones* out);
  // ncclCommAbort once (nccl_mu held).
  void AbortLocked();

  // Takes `op` in and enqueues the collectives it makes contiguous; true
  // when `op` was deferred to the side stream (gate_if_deferred: Run's
  // case, whose caller's stream then waits for it in a host callback).
  bool Submit(Op op, bool gate_if_deferred);
  void DrainLocked(std::unique_lock<std::mutex>& l);
  // Enqueues `op` (mu not held); when that aborts the communicator, the
  // collectives it fails go to `dones`.
  absl::Status Enqueue(Op& op, Dones* dones);
  absl::Status EnqueueNccl(const CollectiveArgs& a, cudaStream_t s);
  absl::Status Call(const char* call, ncclResult_t r);
  absl::StatusOr<cudaEvent_t> TakeEvent();
  static void HostDone(void* data);

  void MonitorLoop();
  void Tick();
  // Stops the monitor, finishes or fails everything, frees the device
  // resources; false when the device never finished (then nothing may be
  // freed: the caller leaks the Impl).
  bool Shutdown();
};

}  // namespace rill::nccl_collectives

#endif  // RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_COMMUNICATOR_IMPL_H_
