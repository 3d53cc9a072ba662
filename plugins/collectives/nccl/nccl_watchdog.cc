// NcclCommunicator's monitor: completions reported by host functions and
// events, NCCL's asynchronous errors, stall warnings and timeouts (then
// ncclCommAbort), and shutdown.

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "rill/base/logging.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/plugins/collectives/nccl/nccl_communicator_impl.h"

namespace rill::nccl_collectives {

void NcclCommunicator::Impl::MonitorLoop() {
  // A few times per timeout, at most every second; host functions wake it
  // at once to report completions.
  // While collectives are in flight it also polls their events every 2 ms:
  // CUDA may run host functions of different streams one at a time, so a
  // host function can wait behind another stream's blocking one (a Run
  // waiting for a collective of the side stream).
  const std::chrono::milliseconds period =
      std::clamp<std::chrono::milliseconds>(std::min(options.timeout, options.stall_warning) / 4,
                                            std::chrono::milliseconds(5), std::chrono::seconds(1));
  const std::chrono::milliseconds busy = std::min(period, std::chrono::milliseconds(2));
  std::unique_lock<std::mutex> l(mu);
  while (!monitor_stop) {
    const uint64_t seen = completions;
    l.unlock();
    Tick();
    l.lock();
    cv.wait_for(l, in_flight.empty() ? period : busy,
                [&] { return monitor_stop || completions != seen; });
  }
}

void NcclCommunicator::Impl::Tick() {
  std::optional<absl::Status> failure;
  // 1. An error NCCL found on its own (a peer lost, a network error).
  {
    std::unique_lock<std::mutex> nl(nccl_mu, std::try_to_lock);  // Busy: the caller checks it.
    if (nl.owns_lock() && comm != nullptr) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t q = api->CommGetAsyncError(comm, &state);
      if (q != ncclSuccess) {
        failure = NcclStatus(*api, q, "ncclCommGetAsyncError", comm);
      } else if (state != ncclSuccess && state != ncclInProgress) {
        failure = NcclStatus(*api, state, "a collective (ncclCommGetAsyncError)", comm);
      }
    }
  }
  // 2. The events of the collectives in flight, queried without the lock
  // (only this thread erases entries and recycles their events).
  struct Probe {
    uint64_t seq = 0;
    cudaEvent_t start = nullptr, end = nullptr;
    bool started = false, device_done = false;
    std::optional<Clock::time_point> start_seen;
    bool complete = false;
    float ms = 0;
    absl::Status error;
  };
  std::vector<Probe> probes;
  {
    std::lock_guard<std::mutex> l(mu);
    for (const auto& [seq, f] : in_flight) {
      Probe p;
      p.seq = seq;
      p.start = f.start;
      p.end = f.end;
      p.started = f.started.has_value();
      p.device_done = f.device_done;
      probes.push_back(std::move(p));
    }
  }
  if (!probes.empty()) {
    CudaDeviceScope scope(ordinal);
    for (Probe& p : probes) {
      if (!p.started) {
        const cudaError_t e = cudaEventQuery(p.start);
        if (e == cudaSuccess) {
          p.start_seen = Clock::now();
        } else if (e != cudaErrorNotReady) {
          p.error = CudaStatus(e, "cudaEventQuery (collective start)");
          continue;
        }
      }
      const cudaError_t e = p.device_done ? cudaSuccess : cudaEventQuery(p.end);
      if (e == cudaSuccess) {
        p.complete = true;
        if (cudaEventElapsedTime(&p.ms, p.start, p.end) != cudaSuccess) p.ms = 0;
      } else if (e != cudaErrorNotReady) {
        p.error = CudaStatus(e, "cudaEventQuery (collective end)");
      }
    }
    (void)cudaGetLastError();
  }
  // 3. Completions, stalls and timeouts.
  Dones dones;
  {
    std::lock_guard<std::mutex> l(mu);
    const Clock::time_point now = Clock::now();
    for (Probe& p : probes) {
      auto it = in_flight.find(p.seq);
      if (it == in_flight.end()) continue;  // Failed meanwhile.
      InFlight& f = it->second;
      if (!p.error.ok()) {
        if (!failure)
          failure =
              absl::Status(p.error.code(), absl::StrCat(p.error.message(), " [", f.what, "]"));
        continue;
      }
      if (p.complete) {
        ++stats.collectives;
        stats.bytes += f.bytes;
        stats.transfer_seconds += p.ms / 1000.0;
        dones.emplace_back(std::move(f.done), absl::OkStatus());
        free_events.push_back(f.start);
        free_events.push_back(f.end);
        in_flight.erase(it);
        continue;
      }
      if (!f.started && p.start_seen) f.started = p.start_seen;
      if (!f.started) continue;  // Still behind earlier work on its stream.
      const Clock::duration waited = now - *f.started;
      if (!f.warned && waited >= options.stall_warning) {
        f.warned = true;
        RILL_LOG(WARNING) << "collectives (nccl): rank " << rank << " of " << size << " has run "
                          << f.what << " on cuda:" << ordinal << " for "
                          << static_cast<int64_t>(Seconds(waited))
                          << " s: a rank has not joined (timeout after " << Seconds(options.timeout)
                          << " s)";
      }
      if (waited >= options.timeout && !failure) {
        failure = absl::DeadlineExceededError(absl::StrCat(
            "collectives (nccl): rank ", rank, " of ", size, ": ", f.what,
            " did not finish within ", Seconds(options.timeout), " s on cuda:", ordinal,
            " (a rank was lost -- it died or was killed -- or is stuck before this collective, "
            "or the ranks issued different collectives); the NCCL communicator was aborted"));
      }
    }
    if (!pending.empty() && !failure) {
      Clock::time_point oldest = now;
      for (const auto& [seq, op] : pending) oldest = std::min(oldest, op.issued);
      if (now - oldest >= options.timeout) {
        failure = absl::DeadlineExceededError(absl::StrCat(
            "collectives (nccl): rank ", rank, " of ", size, ": collective #", next_issue,
            " was numbered (NextSequence) but not issued within ", Seconds(options.timeout),
            " s, so ", pending.size(), " later collective(s) could not run"));
      }
    }
    if (failure) FailAllLocked(*failure, &dones);
    cv.notify_all();  // Shutdown waits for in_flight to empty.
  }
  if (failure) {
    std::lock_guard<std::mutex> nl(nccl_mu);
    AbortLocked();
  }
  Deliver(dones);
}

bool NcclCommunicator::Impl::Shutdown() {
  {
    std::lock_guard<std::mutex> l(mu);
    stop = true;  // Later Issue calls are refused.
  }
  // The collectives in flight finish, or fail at their timeout (the monitor
  // aborts the communicator then). Those never issued fail now.
  Dones dones;
  {
    std::unique_lock<std::mutex> l(mu);
    const auto limit = options.timeout + std::chrono::seconds(10);
    cv.wait_for(l, limit, [&] { return in_flight.empty() && !draining; });
    for (auto& [seq, op] : pending) {
      if (op.ready != nullptr) retired_events.push_back(op.ready);
      dones.emplace_back(std::move(op.done),
                         absl::CancelledError(absl::StrCat(
                             "collectives (nccl): communicator shut down before collective #", seq,
                             " was issued (a lower number never was)")));
    }
    pending.clear();
    if (!in_flight.empty()) {
      FailAllLocked(absl::DeadlineExceededError(
                        "collectives (nccl): communicator shut down with collectives still "
                        "running on the device"),
                    &dones);
    }
  }
  Deliver(dones);
  {
    std::lock_guard<std::mutex> l(mu);
    monitor_stop = true;
  }
  cv.notify_all();
  if (monitor.joinable()) monitor.join();

  // Finalize (waits for the peers to be done with us) or abort.
  bool healthy;
  {
    std::lock_guard<std::mutex> l(mu);
    healthy = health.ok();
  }
  {
    std::lock_guard<std::mutex> nl(nccl_mu);
    if (comm != nullptr) {
      CudaDeviceScope scope(ordinal);
      bool destroyed = false;
      if (healthy) {
        absl::Status s = Call("ncclCommFinalize", api->CommFinalize(comm));
        if (s.ok()) {
          api->CommDestroy(comm);
          comm = nullptr;
          destroyed = true;
        } else {
          RILL_LOG(WARNING) << "collectives (nccl): " << s.message() << "; aborting";
        }
      }
      if (!destroyed) AbortLocked();
    }
  }
  // Host functions still to run reference this object: wait for them.
  {
    std::unique_lock<std::mutex> l(mu);
    if (!cv.wait_for(l, std::chrono::seconds(30), [&] { return host_functions == 0; })) {
      RILL_LOG(WARNING) << "collectives (nccl): cuda:" << ordinal
                        << " did not finish the communicator's work; its memory is left behind";
      return false;
    }
  }
  CudaDeviceScope scope(ordinal);
  for (cudaEvent_t e : free_events) cudaEventDestroy(e);
  for (cudaEvent_t e : retired_events) cudaEventDestroy(e);
  free_events.clear();
  retired_events.clear();
  if (side != nullptr) {
    cudaStreamSynchronize(side);
    cudaStreamDestroy(side);
    side = nullptr;
  }
  if (scratch != nullptr) {
    cudaFree(scratch);
    scratch = nullptr;
  }
  (void)cudaGetLastError();
  return true;
}

}  // namespace rill::nccl_collectives
