#include "rill/stream/stream.h"

#include <exception>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/base/trace_clock.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"
#include "rill/stream/device_span.h"
#include "rill/stream/event.h"
#include "rill/stream/stream_trace_state.h"
#include "rill/stream/timer.h"

namespace rill {

Stream::Stream(StreamExecutor* parent, std::shared_ptr<AttachedStreams> attached_streams)
    : parent_(parent), attached_streams_(std::move(attached_streams)) {}

absl::Status Stream::Init(const StreamOptions& options) {
  absl::StatusOr<std::unique_ptr<StreamInterface>> impl =
      parent_.load()->implementation()->CreateStream(options, &status_);
  if (!impl.ok()) return impl.status();
  impl_ = std::move(*impl);
  trace_ = std::make_shared<internal::StreamTraceState>();
  trace_->device = parent_.load()->DebugName();
  {
    MutexLock lock(&trace_->mu);
    trace_->lane = internal::NextStreamLane(trace_->device);
  }
  return absl::OkStatus();
}

Stream::~Stream() {
  // Leaves the executor's AttachedStreams first: from then on the executor never
  // touches this stream, and its destructor waits for EndRemove, so the
  // backend outlives the backend stream. A stream detached meanwhile was
  // drained by the executor.
  const AttachedStreams::Leave leave = attached_streams_->BeginRemove(this);
  if (leave.attached && impl_ != nullptr) {
    // Fails only on the stream's own thread (a host callback of this
    // stream destroying it): the work queued after the callback could be
    // neither drained nor abandoned safely, so this is a checked
    // precondition (stream.h).
    absl::Status drained = impl_->BlockHostUntilDone();
    RILL_CHECK(drained.ok()) << "a Stream was destroyed from a host callback of its own stream; "
                                "destroy it from another thread: "
                             << drained;
  }
  impl_.reset();
  if (leave.counted) attached_streams_->EndRemove();
}

void Stream::Detach() {
  if (impl_ != nullptr) {
    // Fails only on the stream's own thread: the executor is being
    // destroyed from one of this stream's callbacks, and the work queued
    // after it (which may use the executor's memory) cannot be drained.
    absl::Status drained = impl_->BlockHostUntilDone();
    RILL_CHECK(drained.ok()) << "an executor destroyed from a host callback of its own stream "
                                "cannot drain that stream: "
                             << drained;
  }
  parent_.store(nullptr);
}

StreamExecutor* Stream::parent() const { return parent_.load(); }

void* Stream::native_handle() const { return impl_ ? impl_->native_handle() : nullptr; }

bool Stream::Usable() {
  if (parent_.load(std::memory_order_acquire) == nullptr) {
    status_.Update(absl::FailedPreconditionError(
        "stream used after its executor was destroyed (the stream is detached)"));
    return false;
  }
  return status_.ok();
}

Stream& Stream::Check(const absl::Status& status, const std::string& call) {
  if (!status.ok()) FailHere(Annotate(status, call));
  return *this;
}

Stream& Stream::Check(const absl::Status& status, absl::FunctionRef<std::string()> call) {
  if (!status.ok()) FailHere(Annotate(status, call()));
  return *this;
}

namespace {
// The traced call of the calling thread, for NoteAlgorithm.
thread_local StreamOp* tls_traced_op = nullptr;
std::atomic<uint64_t> next_op_id{1};

// Splits "Name(args) [plugin]" into its name and args.
void SplitCall(const std::string& call, StreamOp* op) {
  const size_t open = call.find('(');
  const size_t close = call.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    op->name = call.substr(0, call.find(' '));
    return;
  }
  op->name = call.substr(0, open);
  op->args = call.substr(open + 1, close - open - 1);
}
}  // namespace

void NoteAlgorithm(std::string_view algorithm) {
  if (tls_traced_op != nullptr) tls_traced_op->algorithm = std::string(algorithm);
}

void NotePlugin(std::string_view plugin) {
  if (tls_traced_op != nullptr) tls_traced_op->plugin = std::string(plugin);
}

bool Stream::StartTracedOp() {
  auto op = std::make_unique<internal::TracedOp>();
  op->info.enqueue_start_ns = TraceClockNs();
  op->span = DeviceSpan::Begin(this);
  op->outer = tls_traced_op;
  op_ = std::move(op);
  tls_traced_op = &op_->info;
  return true;
}

Stream& Stream::Done(bool traced, const absl::Status& status,
                     absl::FunctionRef<std::string()> call) {
  if (traced && op_ != nullptr) {
    std::unique_ptr<internal::TracedOp> op = std::move(op_);
    tls_traced_op = op->outer;
    StreamOp& info = op->info;
    info.id = next_op_id.fetch_add(1, std::memory_order_relaxed);
    info.enqueue_end_ns = TraceClockNs();
    info.device = trace_->device;
    info.lane = trace_->Lane();
    SplitCall(call(), &info);
    info.status = status;
    auto listeners = internal::StreamListeners();
    for (const auto& l : listeners) l->OnEnqueued(info);
    if (status.ok()) {
      DeviceSpan::End(std::move(op->span), this,
                      [info = std::move(info), listeners = std::move(listeners)](
                          absl::Status outcome, int64_t start_ns, int64_t end_ns) mutable {
                        info.status = std::move(outcome);
                        info.has_device_time = end_ns != 0;
                        info.device_start_ns = start_ns;
                        info.device_end_ns = end_ns;
                        for (const auto& l : listeners) l->OnCompleted(info);
                      });
    }
  }
  return Check(status, call);
}

void SetStreamLabel(Stream* stream, std::string label) {
  if (stream == nullptr || stream->trace_ == nullptr) return;
  MutexLock lock(&stream->trace_->mu);
  stream->trace_->lane = std::move(label);
}

std::string StreamLane(const Stream* stream) {
  if (stream == nullptr || stream->trace_ == nullptr) return "(no stream)";
  return stream->trace_->Lane();
}

void Stream::FailHere(const absl::Status& error) {
  if (!status_.UpdateAtFront(error)) return;  // An earlier error already stops what follows.
  // The marker: work already queued runs first, then the queue fails.
  StreamExecutor* parent = parent_.load(std::memory_order_acquire);
  if (parent != nullptr && impl_ != nullptr &&
      parent->implementation()->Supports(Feature::kHostCallbacks).ok() &&
      impl_->DoHostCallback([error] { return error; }).ok()) {
    return;
  }
  status_.Update(error);  // No marker could be queued: the queue fails at once.
}

namespace {

// Checks a device-side operand of a copy or fill.
absl::Status CheckDevice(const char* role, const DeviceMemoryBase* memory, uint64_t size) {
  if (memory == nullptr || memory->is_null()) {
    return absl::InvalidArgumentError(absl::StrCat(role, " device memory is null"));
  }
  if (size > memory->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(size, " bytes overrun the ", role, " ", memory->ToString()));
  }
  return absl::OkStatus();
}

absl::Status CheckHost(const char* role, const void* ptr) {
  if (ptr == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(role, " host pointer is null"));
  return absl::OkStatus();
}

}  // namespace

Stream& Stream::ThenMemcpy(DeviceMemoryBase* device_dst, const void* host_src, uint64_t size) {
  if (!Usable() || size == 0) return *this;
  const bool traced = TraceBegin();
  absl::Status status = CheckDevice("destination", device_dst, size);
  if (status.ok()) status = parent()->CheckOwner("destination", *device_dst, false);
  if (status.ok()) status = CheckHost("source", host_src);
  if (status.ok() && size > 0) status = impl_->MemcpyHostToDevice(*device_dst, host_src, size);
  return Done(traced, status,
              [&] { return absl::StrCat("ThenMemcpy(host->device, ", size, " bytes)"); });
}

Stream& Stream::ThenMemcpy(void* host_dst, const DeviceMemoryBase& device_src, uint64_t size) {
  if (!Usable() || size == 0) return *this;
  const bool traced = TraceBegin();
  absl::Status status = CheckDevice("source", &device_src, size);
  if (status.ok()) status = parent()->CheckOwner("source", device_src, false);
  if (status.ok()) status = CheckHost("destination", host_dst);
  if (status.ok() && size > 0) status = impl_->MemcpyDeviceToHost(host_dst, device_src, size);
  return Done(traced, status,
              [&] { return absl::StrCat("ThenMemcpy(device->host, ", size, " bytes)"); });
}

Stream& Stream::ThenMemcpy(DeviceMemoryBase* device_dst, const DeviceMemoryBase& device_src,
                           uint64_t size) {
  if (!Usable()) return *this;
  const bool traced = TraceBegin();
  absl::Status status = CheckDevice("destination", device_dst, size);
  if (status.ok()) status = CheckDevice("source", &device_src, size);
  if (status.ok()) status = parent()->CheckOwner("destination", *device_dst, true);
  if (status.ok()) status = parent()->CheckOwner("source", device_src, true);
  if (status.ok() && size > 0) status = parent()->Supports(Feature::kDeviceToDeviceCopy);
  if (status.ok() && size > 0) status = impl_->MemcpyDeviceToDevice(*device_dst, device_src, size);
  return Done(traced, status,
              [&] { return absl::StrCat("ThenMemcpy(device->device, ", size, " bytes)"); });
}

Stream& Stream::ThenMemset32(DeviceMemoryBase* device_dst, uint32_t pattern, uint64_t size) {
  if (!Usable()) return *this;
  const bool traced = TraceBegin();
  absl::Status status = CheckDevice("destination", device_dst, size);
  if (status.ok()) status = parent()->CheckOwner("destination", *device_dst, false);
  if (status.ok() && size % 4 != 0) {
    status = absl::InvalidArgumentError(absl::StrCat("size ", size, " is not a multiple of 4"));
  }
  if (status.ok() && size > 0) status = impl_->Memset32(*device_dst, pattern, size);
  return Done(traced, status, [&] { return absl::StrCat("ThenMemset32(", size, " bytes)"); });
}

Stream& Stream::ThenMemZero(DeviceMemoryBase* device_dst, uint64_t size) {
  if (!Usable()) return *this;
  const bool traced = TraceBegin();
  absl::Status status = CheckDevice("destination", device_dst, size);
  if (status.ok()) status = parent()->CheckOwner("destination", *device_dst, false);
  if (status.ok() && size % 4 != 0) {
    // Bytes past the last whole word: zero the words, then the tail from host.
    static constexpr uint8_t kZeros[4] = {0, 0, 0, 0};
    const uint64_t words = size / 4 * 4;
    if (words > 0) status = impl_->Memset32(*device_dst, 0, words);
    if (status.ok()) {
      absl::StatusOr<DeviceMemoryBase> tail = device_dst->GetByteSlice(words, size - words);
      status = tail.ok() ? impl_->MemcpyHostToDevice(*tail, kZeros, size - words) : tail.status();
    }
  } else if (status.ok() && size > 0) {
    status = impl_->Memset32(*device_dst, 0, size);
  }
  return Done(traced, status, [&] { return absl::StrCat("ThenMemZero(", size, " bytes)"); });
}

Stream& Stream::ThenRecordEvent(Event* event) {
  // Recorded even when the stream is in error, so that waiters see the error
  // instead of a stale record; only a detached stream skips it.
  if (parent_.load() == nullptr) {
    Usable();  // Records the detached error.
    return *this;
  }
  StreamExecutor* owner = event == nullptr ? nullptr : event->parent();  // Read once.
  absl::Status status = event == nullptr   ? absl::InvalidArgumentError("event is null")
                        : owner == nullptr ? event->CheckAlive()
                                           : absl::OkStatus();
  if (status.ok() && owner->platform()->id() != parent()->platform()->id()) {
    status = absl::InvalidArgumentError(absl::StrCat("event of ", owner->DebugName(),
                                                     " cannot be recorded on a stream of ",
                                                     parent()->DebugName()));
  }
  if (status.ok()) {
    status = impl_->RecordEvent(event->implementation());
    if (status.ok()) event->MarkRecorded();
  }
  return Check(status, "ThenRecordEvent");
}

Stream& Stream::ThenWaitFor(Event* event) {
  if (!Usable()) return *this;
  const bool traced = TraceBegin();
  StreamExecutor* owner = event == nullptr ? nullptr : event->parent();  // Read once.
  absl::Status status = event == nullptr   ? absl::InvalidArgumentError("event is null")
                        : owner == nullptr ? event->CheckAlive()
                                           : absl::OkStatus();
  if (status.ok() && !event->recorded()) {
    status = absl::FailedPreconditionError(
        "the event was never recorded: record it on a stream before waiting for it");
  }
  if (status.ok()) {
    status = owner->platform()->id() == parent()->platform()->id()
                 ? impl_->WaitForEvent(event->implementation())
                 : WaitThroughHost(event, nullptr);
  }
  return Done(traced, status, [] { return std::string("ThenWaitFor(event)"); });
}

Stream& Stream::ThenWaitFor(Stream* other) {
  if (!Usable() || other == this) return *this;
  const bool traced = TraceBegin();
  absl::Status status;
  if (other == nullptr) {
    status = absl::InvalidArgumentError("stream to wait for is null");
  } else if (other->parent() == nullptr) {
    status = absl::FailedPreconditionError("stream to wait for is detached from its executor");
  } else {
    absl::StatusOr<std::unique_ptr<Event>> event = other->parent()->CreateEvent();
    if (event.ok()) {
      other->ThenRecordEvent(event->get());
      status = (*event)->recorded() ? absl::OkStatus() : other->status();
    } else {
      status = event.status();
    }
    if (status.ok()) {
      if (other->parent()->platform()->id() == parent()->platform()->id()) {
        // The backend keeps the event alive until the wait has run.
        status = impl_->WaitForEvent((*event)->implementation());
      } else {
        Event* raw = event->get();
        status = WaitThroughHost(raw, std::move(*event));
      }
    }
  }
  return Done(traced, status, [&] {
    return absl::StrCat("ThenWaitFor(stream of ",
                        other && other->parent() ? other->parent()->DebugName() : "?", ")");
  });
}

absl::Status Stream::WaitThroughHost(Event* event, std::unique_ptr<Event> owned) {
  RILL_RETURN_IF_ERROR(parent()->Supports(Feature::kHostCallbacks));
  // The waiter is taken now, so the wait keeps the record it sees at enqueue.
  absl::AnyInvocable<absl::Status()&&> waiter = event->implementation()->WaiterForLatestRecord();
  return impl_->DoHostCallback(
      [waiter = std::move(waiter), owned = std::move(owned)]() mutable -> absl::Status {
        return Annotate(std::move(waiter)(),
                        "waiting through the host for an event of another platform");
      });
}

namespace {

// Runs a user callback, turning an exception into an Internal error
// ("<who> threw: ...").
template <typename Callback>
absl::Status RunGuarded(Callback& callback, std::string_view who = "host callback") {
  try {
    if constexpr (std::is_void_v<decltype(std::move(callback)())>) {
      std::move(callback)();
      return absl::OkStatus();
    } else {
      return Annotate(std::move(callback)(), "host callback failed");
    }
  } catch (...) {
    return CurrentExceptionStatus(who);
  }
}

}  // namespace

Stream& Stream::ThenDoHostCallback(absl::AnyInvocable<void() &&> callback) {
  if (!Usable()) return *this;
  const bool empty = !callback;
  return EnqueueHostCallback(empty,
                             [cb = std::move(callback)]() mutable { return RunGuarded(cb); });
}

Stream& Stream::ThenDoHostCallbackWithStatus(absl::AnyInvocable<absl::Status() &&> callback) {
  if (!Usable()) return *this;
  const bool empty = !callback;
  return EnqueueHostCallback(empty,
                             [cb = std::move(callback)]() mutable { return RunGuarded(cb); });
}

Stream& Stream::EnqueueHostCallback(bool empty, absl::AnyInvocable<absl::Status() &&> guarded) {
  const bool traced = TraceBegin();
  absl::Status status;
  if (empty) {
    status = absl::InvalidArgumentError("host callback is empty");
  } else {
    status = parent()->Supports(Feature::kHostCallbacks);
  }
  if (status.ok()) status = impl_->DoHostCallback(std::move(guarded));
  return Done(traced, status, [] { return std::string("ThenDoHostCallback"); });
}

Stream& Stream::ThenNotify(absl::AnyInvocable<void(absl::Status) &&> callback) {
  if (!callback) return Check(absl::InvalidArgumentError("callback is empty"), "ThenNotify");
  if (parent_.load() == nullptr) {
    Usable();  // Records the detached error.
    std::move(callback)(status());
    return *this;
  }
  // Shared so that the callback can still be called if the backend refuses it.
  auto holder = std::make_shared<absl::AnyInvocable<void(absl::Status) &&>>(std::move(callback));
  // A callback that throws fails the stream; the exception never reaches the
  // backend's thread (where it would end the process).
  auto notify = [this, holder](const absl::Status& outcome) {
    auto call = [&] { std::move (*holder)(outcome); };
    status_.Update(RunGuarded(call, "ThenNotify callback"));
  };
  // In the queue it is told the outcome of the work before it, not of calls
  // made after it.
  absl::Status status = impl_->Notify([this, notify] { notify(status_.QueueGet()); });
  if (!status.ok()) {
    Check(status, "ThenNotify");
    notify(status_.Get());
  }
  return *this;
}

Stream& Stream::ThenStartTimer(Timer* timer) {
  if (timer == nullptr) return Check(absl::InvalidArgumentError("timer is null"), "ThenStartTimer");
  return ThenRecordEvent(timer->start_event());
}

Stream& Stream::ThenStopTimer(Timer* timer) {
  if (timer == nullptr) return Check(absl::InvalidArgumentError("timer is null"), "ThenStopTimer");
  return ThenRecordEvent(timer->stop_event());
}

namespace {

// Checks a packed argument against the kernel's declared parameter: the
// same kind (device memory or value) and, for a value, the same byte size.
absl::Status CheckKernelArg(const Kernel& kernel, size_t i, const KernelParam& param,
                            const KernelArg& arg) {
  auto describe = [](bool is_memory, size_t size) {
    return is_memory ? std::string("device memory") : absl::StrCat("a ", size, "-byte value");
  };
  if (param.is_memory == arg.is_memory && (arg.is_memory || arg.bytes.size() == param.size)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("argument ", i, " of kernel \"", kernel.name(), "\" is ",
                   describe(arg.is_memory, arg.bytes.size()), " where the kernel declares ",
                   describe(param.is_memory, param.size)));
}

absl::Status CheckLaunch(const StreamExecutor& executor, const ThreadDim& threads,
                         const BlockDim& blocks, const Kernel& kernel, const KernelArgs& args) {
  if (kernel.parent() != &executor) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel \"", kernel.name(), "\" was loaded on ", kernel.parent()->DebugName(),
                     ", not on this stream's ", executor.DebugName()));
  }
  const DeviceDescription& d = executor.GetDeviceDescription();
  auto fits = [](const Dim3& dim, const Dim3& max) {
    return dim.x >= 1 && dim.y >= 1 && dim.z >= 1 && dim.x <= max.x && dim.y <= max.y &&
           dim.z <= max.z;
  };
  if (!fits(threads, d.max_block_dims) || threads.product() > d.max_threads_per_block) {
    return absl::InvalidArgumentError(absl::StrCat(
        "thread dims ", threads.ToString(), " are outside the device's limits (each >= 1, at most ",
        d.max_block_dims.ToString(), ", ", d.max_threads_per_block, " threads per block)"));
  }
  if (!fits(blocks, d.max_grid_dims)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block dims ", blocks.ToString(), " are outside the device's limits (each >= 1, at most ",
        d.max_grid_dims.ToString(), ")"));
  }
  if (kernel.arity() >= 0 && static_cast<size_t>(kernel.arity()) != args.size()) {
    return absl::InvalidArgumentError(absl::StrCat("kernel \"", kernel.name(), "\" takes ",
                                                   kernel.arity(), " argument(s), got ",
                                                   args.size()));
  }
  const std::vector<KernelParam>& params = kernel.params();
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < params.size()) RILL_RETURN_IF_ERROR(CheckKernelArg(kernel, i, params[i], args[i]));
    if (args[i].is_memory && args[i].memory.is_null()) {
      return absl::InvalidArgumentError(absl::StrCat("argument ", i, " is null device memory"));
    }
    if (args[i].is_memory) {
      RILL_RETURN_IF_ERROR(executor.CheckOwner(absl::StrCat("argument ", i), args[i].memory));
    }
  }
  return absl::OkStatus();
}

}  // namespace

Stream& Stream::ThenLaunch(const ThreadDim& threads, const BlockDim& blocks, const Kernel& kernel,
                           KernelArgs args) {
  if (!Usable()) return *this;
  const bool traced = TraceBegin();
  absl::Status status = CheckLaunch(*parent(), threads, blocks, kernel, args);
  if (status.ok()) status = parent()->Supports(Feature::kKernelLaunch);
  if (status.ok())
    status = impl_->Launch(threads, blocks, *kernel.implementation(), std::move(args));
  return Done(traced, status, [&] {
    return absl::StrCat("ThenLaunch(\"", kernel.name(), "\", threads=", threads.ToString(),
                        ", blocks=", blocks.ToString(), ")");
  });
}

absl::Status Stream::BlockHostUntilDone() {
  if (parent_.load() == nullptr) {
    Usable();  // Records the detached error.
    return status();
  }
  status_.Update(impl_->BlockHostUntilDone());
  return status();
}

}  // namespace rill
