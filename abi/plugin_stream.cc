// PluginStream and PluginEvent: a plugin's queues and events.

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/abi/plugin_objects.h"
#include "rill/base/status_macros.h"
#include "rill/platform/utils/host_function_kernel.h"
#include "rill/stream/stream_status.h"

namespace rill::abi {
namespace {

// The stream whose host callback this thread is running, if any: a
// BlockHostUntilDone on it from there would wait for itself.
thread_local const PluginStream* current_stream = nullptr;

}  // namespace

// A host callback in flight: owned by the plugin's queue from a successful
// host_callback call until RunCallback runs it (exactly once), which gives
// it back to its stream's pool.
struct PluginStream::Callback {
  PluginStream* stream = nullptr;
  absl::AnyInvocable<absl::Status() &&> work;  // DoHostCallback: skipped after a failure.
  absl::AnyInvocable<void() &&> notify;        // Notify: runs whatever happened.
};

namespace {
constexpr size_t kKeepCallbacks = 1024;
}  // namespace

PluginStream::PluginStream(std::shared_ptr<LoadedPlugin> plugin,
                           std::shared_ptr<RillExecutor> device, RillStream* handle,
                           StreamStatus* status)
    : plugin_(std::move(plugin)),
      device_(std::move(device)),
      fns_(plugin_->stream()),
      handle_(handle),
      status_(status) {}

PluginStream::~PluginStream() {
  absl::Status drained = TakeError(fns_.block_until_done(handle_));
  (void)drained;  // The front reported the stream's errors already.
  plugin_->executor().stream_destroy(handle_);
  SpinLockHolder lock(&pool_mu_);
  for (Callback* callback : pool_) delete callback;
}

PluginStream::Callback* PluginStream::TakeCallback() {
  {
    SpinLockHolder lock(&pool_mu_);
    if (!pool_.empty()) {
      Callback* callback = pool_.back();
      pool_.pop_back();
      return callback;
    }
  }
  auto* callback = new Callback;
  callback->stream = this;
  return callback;
}

void PluginStream::Recycle(Callback* callback) {
  callback->work = nullptr;  // Their captures go now, outside the lock.
  callback->notify = nullptr;
  {
    SpinLockHolder lock(&pool_mu_);
    if (pool_.size() < kKeepCallbacks) {
      pool_.push_back(callback);
      return;
    }
  }
  delete callback;
}

void PluginStream::RunCallback(void* user_data) {
  auto* callback = static_cast<Callback*>(user_data);
  PluginStream* stream = callback->stream;
  const PluginStream* outer = current_stream;
  current_stream = stream;
  if (callback->notify) {
    try {
      std::move(callback->notify)();
    } catch (...) {
      stream->status_->Update(CurrentExceptionStatus("stream notification"));
    }
  } else if (stream->status_->queue_ok()) {
    absl::Status status;
    try {
      status = std::move(callback->work)();
    } catch (...) {
      status = CurrentExceptionStatus("host callback");
    }
    stream->status_->Update(status);
  }
  current_stream = outer;
  stream->Recycle(callback);
}

absl::Status PluginStream::Enqueue(Callback* callback) {
  absl::Status status = TakeError(fns_.host_callback(handle_, &RunCallback, callback));
  if (!status.ok()) Recycle(callback);  // Not enqueued: still ours.
  return status;
}

absl::Status PluginStream::MemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                              uint64_t size) {
  return TakeError(fns_.memcpy_host_to_device(handle_, ToC(dst), src, size));
}

absl::Status PluginStream::MemcpyDeviceToHost(void* dst, DeviceMemoryBase src, uint64_t size) {
  return TakeError(fns_.memcpy_device_to_host(handle_, dst, ToC(src), size));
}

absl::Status PluginStream::MemcpyDeviceToDevice(DeviceMemoryBase dst, DeviceMemoryBase src,
                                                uint64_t size) {
  if (fns_.memcpy_device_to_device == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat(plugin_->platform_name(), ": the plugin has no device-to-device copy"));
  }
  return TakeError(fns_.memcpy_device_to_device(handle_, ToC(dst), ToC(src), size));
}

absl::Status PluginStream::Memset32(DeviceMemoryBase dst, uint32_t pattern, uint64_t size) {
  return TakeError(fns_.memset32(handle_, ToC(dst), pattern, size));
}

absl::Status PluginStream::RecordEvent(EventInterface* event) {
  return TakeError(fns_.record_event(handle_, static_cast<PluginEvent*>(event)->handle()));
}

absl::Status PluginStream::WaitForEvent(EventInterface* event) {
  return TakeError(fns_.wait_event(handle_, static_cast<PluginEvent*>(event)->handle()));
}

absl::Status PluginStream::DoHostCallback(absl::AnyInvocable<absl::Status() &&> callback) {
  Callback* c = TakeCallback();
  c->work = std::move(callback);
  return Enqueue(c);
}

absl::Status PluginStream::Notify(absl::AnyInvocable<void() &&> callback) {
  Callback* c = TakeCallback();
  c->notify = std::move(callback);
  return Enqueue(c);
}

absl::Status PluginStream::Launch(const ThreadDim& threads, const BlockDim& blocks,
                                  const KernelInterface& kernel, KernelArgs args) {
  const auto& k = static_cast<const PluginKernel&>(kernel);
  if (k.host_fn()) {
    return DoHostCallback([fn = k.host_fn(), threads, blocks, args = std::move(args)]() {
      return RunHostKernel(*fn, threads, blocks, args);
    });
  }
  if (fns_.launch == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat(plugin_->platform_name(), ": the plugin has no kernel launch"));
  }
  std::vector<RillKernelArg> c_args(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    c_args[i].is_memory = args[i].is_memory;
    if (args[i].is_memory) {
      c_args[i].memory = ToC(args[i].memory);
    } else {
      c_args[i].value = args[i].bytes.data();
      c_args[i].size = args[i].bytes.size();
    }
  }
  const RillDim3 t{threads.x, threads.y, threads.z}, b{blocks.x, blocks.y, blocks.z};
  return TakeError(fns_.launch(handle_, &t, &b, k.handle(), c_args.data(), c_args.size()));
}

absl::Status PluginStream::BlockHostUntilDone() {
  if (current_stream == this) {
    return absl::FailedPreconditionError(
        "BlockHostUntilDone called from a host callback of the same stream would deadlock");
  }
  return TakeError(fns_.block_until_done(handle_));
}

void* PluginStream::native_handle() {
  return fns_.native_handle ? fns_.native_handle(handle_) : nullptr;
}

// --- PluginEvent

PluginEvent::PluginEvent(std::shared_ptr<LoadedPlugin> plugin, std::shared_ptr<RillExecutor> device,
                         RillEvent* handle)
    : plugin_(std::move(plugin)), device_(std::move(device)), handle_(handle) {}

PluginEvent::~PluginEvent() { plugin_->executor().event_destroy(handle_); }

EventInterface::State PluginEvent::Poll() {
  switch (plugin_->event().poll(handle_)) {
    case RILL_EVENT_PENDING:
      return State::kPending;
    case RILL_EVENT_COMPLETE:
      return State::kComplete;
    default:
      return State::kError;
  }
}

absl::Status PluginEvent::Synchronize() { return TakeError(plugin_->event().synchronize(handle_)); }

absl::StatusOr<absl::Duration> PluginEvent::ElapsedSince(const EventInterface& start) {
  if (plugin_->event().elapsed_us == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat(plugin_->platform_name(), ": the plugin has no timers"));
  }
  double us = 0;
  RILL_RETURN_IF_ERROR(TakeError(
      plugin_->event().elapsed_us(static_cast<const PluginEvent&>(start).handle(), handle_, &us)));
  return absl::Microseconds(us);
}

}  // namespace rill::abi
