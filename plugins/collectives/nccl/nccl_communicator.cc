#include "rill/plugins/collectives/nccl/nccl_communicator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/logging.h"
#include "rill/executor/stream_executor.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/platform/platform.h"
#include "rill/plugins/collectives/nccl/nccl_library.h"
#include "rill/stream/stream.h"

namespace rill::nccl_collectives {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Seconds(std::chrono::milliseconds d) { return d.count() / 1000.0; }

// Calls made after the communicator failed, or refused at once: `done` runs
// outside every lock.
using Dones = std::vector<std::pair<CollectiveDone, absl::Status>>;

void Deliver(Dones& dones) {
  for (auto& [done, status] : dones) std::move(done)(status);
  dones.clear();
}

ncclDataType_t NcclType(DataType t) { return t == DataType::kFloat ? ncclFloat32 : ncclFloat64; }

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAverage:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;
}

// The cudaStream_t of `stream` if it is a stream of CUDA device `ordinal`.
absl::StatusOr<cudaStream_t> DeviceStream(Stream* stream, int ordinal) {
  if (stream == nullptr) {
    return absl::InvalidArgumentError(
        "collectives (nccl): a device communicator needs a stream (of cuda:" +
        std::to_string(ordinal) + ")");
  }
  StreamExecutor* parent = stream->parent();
  if (parent == nullptr) {
    return absl::FailedPreconditionError("the stream is detached: its executor was destroyed");
  }
  if (parent->platform()->id() != kCudaPlatformId || parent->device_ordinal() != ordinal) {
    return absl::InvalidArgumentError(
        absl::StrCat("collectives (nccl): the stream belongs to ", parent->DebugName(),
                     ", but the communicator's device is cuda:", ordinal));
  }
  if (stream->native_handle() == nullptr)
    return absl::FailedPreconditionError("collectives (nccl): the stream has no cudaStream_t");
  return static_cast<cudaStream_t>(stream->native_handle());
}

}  // namespace

absl::Status ExchangeUniqueId(Communicator* bootstrap, const absl::Status& root_status,
                              std::chrono::milliseconds timeout, void* id, size_t id_bytes) {
  // The id's bytes and, last, a float flag: 1 when rank 0 made an id.
  const int64_t count = static_cast<int64_t>((id_bytes + sizeof(float) - 1) / sizeof(float)) + 1;
  // Shared with `done`: a bootstrap that answers after the timeout writes
  // into memory that is still there.
  auto buffer = std::make_shared<std::vector<float>>(count, 0.0f);
  const bool root = bootstrap->rank() == 0;
  if (root && root_status.ok()) {
    std::memcpy(buffer->data(), id, id_bytes);
    buffer->back() = 1.0f;
  }
  CollectiveArgs args;
  args.kind = CollectiveKind::kBroadcast;
  args.type = DataType::kFloat;
  args.count = count;
  args.root = 0;
  args.send = args.recv = DeviceMemoryBase(buffer->data(), count * sizeof(float));
  args.name = "nccl unique id";
  auto result = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> f = result->get_future();
  const uint64_t seq = bootstrap->NextSequence();
  bootstrap->Issue(seq, std::move(args), nullptr,
                   [result, buffer](absl::Status s) { result->set_value(std::move(s)); });
  if (f.wait_for(timeout) != std::future_status::ready) {
    return absl::DeadlineExceededError(absl::StrCat(
        "collectives (nccl): the NCCL unique id did not arrive over the bootstrap communicator (",
        bootstrap->Name(), ", rank ", bootstrap->rank(), " of ", bootstrap->size(), ") within ",
        Seconds(timeout), " s"));
  }
  absl::Status s = f.get();
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("collectives (nccl): broadcasting the NCCL unique id "
                                     "over the bootstrap communicator (",
                                     bootstrap->Name(), ") failed: ", s.message()));
  }
  if (root) return root_status;
  if (buffer->back() != 1.0f) {
    return absl::FailedPreconditionError(
        "collectives (nccl): rank 0 could not make the NCCL unique id (its error says why)");
  }
  std::memcpy(id, buffer->data(), id_bytes);
  return absl::OkStatus();
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

void NcclCommunicator::Impl::FailAllLocked(const absl::Status& s, Dones* out) {
  Fail(s);
  for (auto& [seq, f] : in_flight) {
    out->emplace_back(std::move(f.done), health);
    retired_events.push_back(f.start);  // The device may still record them.
    retired_events.push_back(f.end);
  }
  in_flight.clear();
  for (auto& [seq, op] : pending) {
    if (op.ready != nullptr) retired_events.push_back(op.ready);
    out->emplace_back(std::move(op.done), health);
  }
  pending.clear();
}

void NcclCommunicator::Impl::AbortLocked() {
  if (comm == nullptr || aborted) return;
  CudaDeviceScope scope(ordinal);
  api->CommAbort(comm);  // Frees it, whatever it returns.
  comm = nullptr;
  aborted = true;
}

absl::StatusOr<cudaEvent_t> NcclCommunicator::Impl::TakeEvent() {
  {
    std::lock_guard<std::mutex> l(mu);
    if (!free_events.empty()) {
      cudaEvent_t e = free_events.back();
      free_events.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  RILL_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));  // Timed: stats().transfer_seconds.
  return e;
}

// A nonblocking communicator's call may return ncclInProgress: then it is
// done when ncclCommGetAsyncError says so (nccl_mu held).
absl::Status NcclCommunicator::Impl::Call(const char* call, ncclResult_t r) {
  if (r == ncclInProgress) {
    const Clock::time_point start = Clock::now();
    for (int spins = 0;; ++spins) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t q = api->CommGetAsyncError(comm, &state);
      if (q != ncclSuccess) return NcclStatus(*api, q, "ncclCommGetAsyncError", comm);
      r = state;
      if (r != ncclInProgress) break;
      if (Clock::now() - start >= options.timeout) {
        return absl::DeadlineExceededError(absl::StrCat(
            "collectives (nccl): rank ", rank, " of ", size, ": ", call,
            " was still in progress after ", Seconds(options.timeout), " s (a rank did not join)"));
      }
      std::this_thread::sleep_for(spins < 100 ? std::chrono::microseconds(20)
                                              : std::chrono::microseconds(1000));
    }
  }
  return NcclStatus(*api, r, call, comm);
}

absl::Status NcclCommunicator::Impl::EnqueueNccl(const CollectiveArgs& a, cudaStream_t s) {
  const size_t n = static_cast<size_t>(a.count);
  const ncclDataType_t t = NcclType(a.type);
  void* send = CudaAddress(a.send);
  void* recv = CudaAddress(a.recv);
  switch (a.kind) {
    case CollectiveKind::kAllReduce:
      if (n == 0) return absl::OkStatus();
      return Call("ncclAllReduce", api->AllReduce(send, recv, n, t, NcclOp(a.op), comm, s));
    case CollectiveKind::kBroadcast:
      if (n == 0) return absl::OkStatus();
      // Only the root's send is read; an empty one means the root's recv.
      if (send == nullptr || rank != a.root) send = recv;
      return Call("ncclBroadcast", api->Broadcast(send, recv, n, t, a.root, comm, s));
    case CollectiveKind::kAllGather:
      if (n == 0) return absl::OkStatus();
      return Call("ncclAllGather", api->AllGather(send, recv, n, t, comm, s));
    case CollectiveKind::kReduceScatter:
      if (n == 0) return absl::OkStatus();
      return Call("ncclReduceScatter", api->ReduceScatter(send, recv, n, t, NcclOp(a.op), comm, s));
    case CollectiveKind::kBarrier:
      return Call("ncclAllReduce (barrier)",
                  api->AllReduce(scratch, scratch, 1, ncclFloat32, ncclSum, comm, s));
  }
  return absl::InvalidArgumentError("collectives (nccl): unknown collective kind");
}

absl::Status NcclCommunicator::Impl::Enqueue(Op& op, Dones* dones) {
  std::lock_guard<std::mutex> nl(nccl_mu);
  if (comm == nullptr) {
    std::lock_guard<std::mutex> l(mu);
    return health.ok() ? absl::FailedPreconditionError("collectives (nccl): communicator aborted")
                       : health;
  }
  CudaDeviceScope scope(ordinal);
  if (!scope.status().ok()) return scope.status();
  if (op.ready != nullptr) {
    cudaError_t e = cudaStreamWaitEvent(op.target, op.ready, 0);
    cudaEventDestroy(op.ready);  // Released once recorded work completes.
    op.ready = nullptr;
    if (e != cudaSuccess) return CudaStatus(e, "cudaStreamWaitEvent (collective's input)");
  }
  absl::StatusOr<cudaEvent_t> start = TakeEvent();
  if (!start.ok()) return start.status();
  absl::StatusOr<cudaEvent_t> end = TakeEvent();
  if (!end.ok()) {
    std::lock_guard<std::mutex> l(mu);
    free_events.push_back(*start);
    return end.status();
  }
  auto give_back = [&] {
    std::lock_guard<std::mutex> l(mu);
    retired_events.push_back(*start);
    retired_events.push_back(*end);
  };
  cudaError_t e = cudaEventRecord(*start, op.target);
  if (e != cudaSuccess) {
    give_back();
    return CudaStatus(e, "cudaEventRecord (collective start)");
  }
  absl::Status s = EnqueueNccl(op.args, op.target);
  if (!s.ok()) {
    give_back();
    s = absl::Status(s.code(), absl::StrCat(s.message(), " [", What(op.seq, op.args), "]"));
    if (absl::IsDeadlineExceeded(s)) {
      // Stuck joining its peers: the communicator is aborted, as on a
      // timeout on the device.
      AbortLocked();
      std::lock_guard<std::mutex> l(mu);
      FailAllLocked(s, dones);
    }
    return s;
  }
  e = cudaEventRecord(*end, op.target);
  if (e != cudaSuccess) {
    give_back();
    return CudaStatus(e, "cudaEventRecord (collective end)");
  }
  {
    std::lock_guard<std::mutex> l(mu);
    if (!health.ok()) {  // Failed meanwhile (the monitor): this one fails too.
      retired_events.push_back(*start);
      retired_events.push_back(*end);
      return health;
    }
    InFlight f;
    f.what = What(op.seq, op.args);
    f.bytes = op.args.bytes();
    f.start = *start;
    f.end = *end;
    f.done = std::move(op.done);
    in_flight.emplace(op.seq, std::move(f));
    stats.wait_seconds += Seconds(Clock::now() - op.issued);
    ++host_functions;
  }
  auto* arg = new HostArg{this, op.seq};
  e = cudaLaunchHostFunc(op.target, &Impl::HostDone, arg);
  if (e != cudaSuccess) {
    // The monitor still sees the end event complete, later.
    delete arg;
    (void)cudaGetLastError();
    std::lock_guard<std::mutex> l(mu);
    --host_functions;
  }
  return absl::OkStatus();
}

// On CUDA's callback thread: no CUDA calls here; the monitor takes over.
void NcclCommunicator::Impl::HostDone(void* data) {
  auto* arg = static_cast<HostArg*>(data);
  Impl* impl = arg->impl;
  const uint64_t seq = arg->seq;
  delete arg;
  std::lock_guard<std::mutex> l(impl->mu);
  auto it = impl->in_flight.find(seq);
  if (it != impl->in_flight.end()) it->second.device_done = true;
  --impl->host_functions;
  ++impl->completions;
  impl->cv.notify_all();  // Under the lock: Shutdown may free `impl` once it is released.
}

bool NcclCommunicator::Impl::Submit(Op op, bool gate_if_deferred) {
  std::unique_lock<std::mutex> l(mu);
  absl::Status refused;
  if (stop) {
    refused = absl::FailedPreconditionError(absl::StrCat(
        "collectives (nccl): collective #", op.seq, " issued after the communicator shut down"));
  } else if (!health.ok()) {
    refused = health;  // Failed for good: every later collective fails at once.
  } else if (op.seq < next_issue || pending.count(op.seq) > 0) {
    refused = absl::FailedPreconditionError(
        absl::StrCat("collectives (nccl): collective #", op.seq, " was issued twice"));
  }
  if (!refused.ok()) {
    l.unlock();
    std::move(op.done)(refused);
    return false;
  }
  op.issued = Clock::now();
  bool gated = false;
  if (gate_if_deferred && op.refused.ok() && (draining || op.seq != next_issue)) {
    // Not ours to enqueue now: run it later on the side stream, after the
    // caller's stream's work so far.
    CudaDeviceScope scope(ordinal);
    cudaError_t e = scope.status().ok() ? cudaSuccess : cudaErrorInvalidDevice;
    if (e == cudaSuccess && side == nullptr)
      e = cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&op.ready, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(op.ready, op.target);
    if (e == cudaSuccess) {
      op.target = side;
      gated = true;
    } else {
      op.refused = scope.status().ok() ? CudaStatus(e, "collectives (nccl): deferring a collective")
                                       : scope.status();
    }
  }
  pending.emplace(op.seq, std::move(op));
  if (!draining) DrainLocked(l);
  return gated;
}

void NcclCommunicator::Impl::DrainLocked(std::unique_lock<std::mutex>& l) {
  draining = true;
  Dones dones;
  while (true) {
    auto it = pending.find(next_issue);
    if (it == pending.end()) break;
    Op op = std::move(it->second);
    pending.erase(it);
    ++next_issue;
    if (!health.ok() || !op.refused.ok()) {
      // A refused collective fails the communicator: the other ranks run it.
      Fail(op.refused);
      if (op.ready != nullptr) retired_events.push_back(op.ready);
      dones.emplace_back(std::move(op.done), op.refused.ok() ? health : op.refused);
      continue;
    }
    l.unlock();
    absl::Status s = Enqueue(op, &dones);
    l.lock();
    if (!s.ok()) {
      Fail(s);
      dones.emplace_back(std::move(op.done), s);
    }
  }
  draining = false;
  cv.notify_all();  // Shutdown waits for it.
  l.unlock();
  Deliver(dones);
}

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

NcclCommunicator::NcclCommunicator(int rank, int size, int ordinal, std::unique_ptr<Impl> impl)
    : Communicator(rank, size),
      ordinal_(ordinal),
      options_(impl->options),
      impl_(std::move(impl)) {}

absl::StatusOr<std::shared_ptr<NcclCommunicator>> NcclCommunicator::Create(
    int ordinal, const CommunicatorOptions& options) {
  Communicator* bootstrap = options.bootstrap;
  if (bootstrap == nullptr) {
    return absl::InvalidArgumentError(
        "collectives (nccl): a NCCL communicator needs a bootstrap communicator "
        "(CommunicatorOptions::bootstrap: a host communicator, such as the host executor's "
        "\"mpi\" one, whose ranks exchange the NCCL unique id; one rank per process)");
  }
  if (!bootstrap->HostMemory()) {
    return absl::InvalidArgumentError(
        absl::StrCat("collectives (nccl): the bootstrap communicator must take host memory; '",
                     bootstrap->Name(), "' does not"));
  }
  absl::StatusOr<CommunicatorOptions> resolved = ResolveCommunicatorOptions(options);
  if (!resolved.ok()) return resolved.status();
  absl::StatusOr<const NcclApi*> api = LoadNccl();
  if (!api.ok()) return api.status();

  auto impl = std::make_unique<Impl>();
  impl->api = *api;
  impl->options = *resolved;
  impl->options.bootstrap = nullptr;  // Not kept: it may be destroyed after this call.
  impl->rank = bootstrap->rank();
  impl->size = bootstrap->size();
  impl->ordinal = ordinal;
  Impl& c = *impl;

  // Rank 0 makes the id (no device needed); every rank takes part in the
  // broadcast, even when that failed, so that no rank waits for it.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  absl::Status id_status;
  if (c.rank == 0) id_status = NcclStatus(*c.api, c.api->GetUniqueId(&id), "ncclGetUniqueId");
  absl::Status s = ExchangeUniqueId(bootstrap, id_status, c.options.timeout, &id, sizeof id);
  if (!s.ok()) return s;

  {
    CudaDeviceScope scope(ordinal);
    if (!scope.status().ok()) return scope.status();
    RILL_CUDA_RETURN_IF_ERROR(cudaMalloc(&c.scratch, sizeof(float)));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // So that joining, and every call, is bounded by the timeout.
    std::lock_guard<std::mutex> nl(c.nccl_mu);
    const ncclResult_t r = c.api->CommInitRankConfig(&c.comm, c.size, id, c.rank, &config);
    s = r == ncclInProgress || c.comm != nullptr
            ? c.Call("ncclCommInitRank", r)
            : NcclStatus(*c.api, r, "ncclCommInitRank", nullptr);
    if (!s.ok()) {
      c.AbortLocked();
      cudaFree(c.scratch);
      c.scratch = nullptr;
      return absl::Status(s.code(), absl::StrCat(s.message(), " (rank ", c.rank, " of ", c.size,
                                                 " on cuda:", ordinal, ")"));
    }
  }
  Impl* raw = impl.get();
  raw->monitor = std::thread([raw] { raw->MonitorLoop(); });
  const int rank = raw->rank, size = raw->size;
  return std::shared_ptr<NcclCommunicator>(
      new NcclCommunicator(rank, size, ordinal, std::move(impl)));
}

NcclCommunicator::~NcclCommunicator() {
  if (std::this_thread::get_id() == impl_->monitor.get_id()) {
    // Destroyed from a `done` the monitor is calling: it cannot join
    // itself, so another thread shuts down once the monitor returns.
    std::thread([impl = impl_.release()] {
      if (impl->Shutdown()) delete impl;
    }).detach();
    return;
  }
  if (!impl_->Shutdown()) (void)impl_.release();  // The device may still reach it.
}

std::string NcclCommunicator::Version() const { return LibraryVersion(); }

std::vector<std::string> NcclCommunicator::Devices() const {
  return {absl::StrCat("cuda:", ordinal_)};
}

std::string NcclCommunicator::Algorithm() const {
  return absl::StrCat("nccl (its own ring/tree choice; NCCL_ALGO), ordered issue, watchdog ",
                      Seconds(options_.timeout), " s");
}

absl::Status NcclCommunicator::health() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->health;
}

CommunicatorStats NcclCommunicator::stats() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->stats;
}

void NcclCommunicator::Issue(uint64_t seq, CollectiveArgs args, Stream* stream,
                             CollectiveDone done) {
  Impl::Op op;
  op.seq = seq;
  op.refused = CheckCollectiveArgs(args, size());
  absl::StatusOr<cudaStream_t> s = DeviceStream(stream, ordinal_);
  if (op.refused.ok() && !s.ok()) op.refused = s.status();
  if (s.ok()) op.target = *s;
  op.args = std::move(args);
  op.done = std::move(done);
  impl_->Submit(std::move(op), /*gate_if_deferred=*/false);
}

namespace {

// What Run's host callback on the caller's stream waits for.
struct RunState {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  absl::Status status;

  void Finish(absl::Status s) {
    std::lock_guard<std::mutex> l(mu);
    finished = true;
    status = std::move(s);
    cv.notify_all();
  }
  absl::Status Wait() {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return finished; });
    return status;
  }
};

}  // namespace

absl::Status NcclCommunicator::Run(Stream* stream, const CollectiveArgs& args) {
  absl::Status s = CheckCollectiveArgs(args, size());
  if (!s.ok()) return s;
  absl::StatusOr<cudaStream_t> target = DeviceStream(stream, ordinal_);
  if (!target.ok()) return target.status();
  auto state = std::make_shared<RunState>();
  Impl::Op op;
  op.seq = NextSequence();
  op.args = args;
  op.target = *target;
  op.done = [state](absl::Status s) { state->Finish(std::move(s)); };
  impl_->Submit(std::move(op), /*gate_if_deferred=*/true);
  // After the collective in stream order (enqueued on `stream`, or on the
  // side stream with `stream` held here until it is done): its outcome
  // becomes the stream's. The monitor reports it right after the device.
  return stream->implementation()->DoHostCallback(
      [state]() -> absl::Status { return state->Wait(); });
}

}  // namespace rill::nccl_collectives
