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
#include "rill/plugins/collectives/nccl/nccl_communicator_impl.h"
#include "rill/plugins/collectives/nccl/nccl_library.h"
#include "rill/stream/stream.h"

namespace rill::nccl_collectives {

namespace {

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
