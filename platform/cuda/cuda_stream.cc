#include "rill/platform/cuda/cuda_stream.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "rill/base/status_macros.h"
#include "rill/platform/cuda/cuda_event.h"
#include "rill/platform/cuda/cuda_executor.h"
#include "rill/platform/cuda/cuda_kernel.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/stream/stream_status.h"

namespace rill {

// One host callback on its way: created by the enqueueing thread, handed
// to the callback thread by the host function, freed by whoever finishes
// last (the host function for blocking callbacks, the callback thread for
// notifications).
struct CudaStream::Callback {
  CudaStream* stream = nullptr;
  bool blocking = false;  // DoHostCallback (device waits) vs Notify.
  absl::AnyInvocable<absl::Status() &&> with_status;
  absl::AnyInvocable<void() &&> notify;
  absl::Notification done;
};

absl::StatusOr<std::unique_ptr<CudaStream>> CudaStream::Create(CudaExecutor* executor,
                                                               const StreamOptions& options,
                                                               StreamStatus* status) {
  CudaDeviceScope scope(executor->ordinal());
  RILL_RETURN_IF_ERROR(scope.status());
  // CUDA: numerically lower is more urgent, in [greatest, least] (e.g. [-5, 0]).
  int least = 0, greatest = 0;
  RILL_CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  const int priority = std::clamp(-options.priority, greatest, least);
  cudaStream_t stream = nullptr;
  RILL_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority));
  return std::unique_ptr<CudaStream>(new CudaStream(executor, stream, priority, status));
}

CudaStream::CudaStream(CudaExecutor* executor, cudaStream_t stream, int cuda_priority,
                       StreamStatus* status)
    : executor_(executor),
      ordinal_(executor->ordinal()),
      stream_(stream),
      cuda_priority_(cuda_priority),
      status_(status),
      callback_thread_([this] { CallbackLoop(); }) {}

CudaStream::~CudaStream() {
  (void)BlockHostUntilDone();
  {
    MutexLock lock(&mu_);
    stop_ = true;
    work_cv_.SignalAll();
  }
  callback_thread_.join();
  CudaDeviceScope scope(ordinal_);
  cudaStreamDestroy(stream_);
}

absl::Status CudaStream::MemcpyHostToDevice(DeviceMemoryBase dst, const void* src, uint64_t size) {
  CudaDeviceScope scope(ordinal_);
  return CudaStatus(cudaMemcpyAsync(CudaAddress(dst), src, size, cudaMemcpyHostToDevice, stream_),
                    "cudaMemcpyAsync(host to device)");
}

absl::Status CudaStream::MemcpyDeviceToHost(void* dst, DeviceMemoryBase src, uint64_t size) {
  CudaDeviceScope scope(ordinal_);
  return CudaStatus(cudaMemcpyAsync(dst, CudaAddress(src), size, cudaMemcpyDeviceToHost, stream_),
                    "cudaMemcpyAsync(device to host)");
}

absl::Status CudaStream::MemcpyDeviceToDevice(DeviceMemoryBase dst, DeviceMemoryBase src,
                                              uint64_t size) {
  CudaDeviceScope scope(ordinal_);
  // cudaMemcpyDefault: with unified addressing this is also a peer copy when
  // the views live on two devices.
  return CudaStatus(
      cudaMemcpyAsync(CudaAddress(dst), CudaAddress(src), size, cudaMemcpyDefault, stream_),
      "cudaMemcpyAsync(device to device)");
}

absl::Status CudaStream::Memset32(DeviceMemoryBase dst, uint32_t pattern, uint64_t size) {
  CudaDeviceScope scope(ordinal_);
  const uint8_t byte = pattern & 0xff;
  if (pattern == byte * 0x01010101u) {
    return CudaStatus(cudaMemsetAsync(CudaAddress(dst), byte, size, stream_), "cudaMemsetAsync");
  }
  RILL_ASSIGN_OR_RETURN(const CudaKernel* kernel, executor_->Memset32Kernel());
  const uint64_t words = size / 4;
  const int64_t threads = 256;
  const int64_t blocks = std::min<int64_t>((words + threads - 1) / threads, 65535);
  KernelArgs args = {PackKernelArg(dst), PackKernelArg(pattern), PackKernelArg(words)};
  return kernel->Launch(stream_, ThreadDim(threads), BlockDim(blocks), args);
}

absl::Status CudaStream::RecordEvent(EventInterface* event) {
  auto* cuda_event = static_cast<CudaEvent*>(event);
  if (cuda_event->ordinal() != ordinal_) {
    return absl::InvalidArgumentError(
        absl::StrCat("an event of cuda device ", cuda_event->ordinal(),
                     " cannot be recorded on a stream of device ", ordinal_));
  }
  RILL_ASSIGN_OR_RETURN(std::shared_ptr<CudaEventRecord> record, cuda_event->NextRecord());
  record->set_error(status_->Get());
  CudaDeviceScope scope(ordinal_);
  return CudaStatus(cudaEventRecord(record->event(), stream_), "cudaEventRecord");
}

absl::Status CudaStream::WaitForEvent(EventInterface* event) {
  std::shared_ptr<CudaEventRecord> record = static_cast<CudaEvent*>(event)->current();
  RILL_RETURN_IF_ERROR(
      Annotate(record->error(), "the stream that recorded the awaited event had failed"));
  CudaDeviceScope scope(ordinal_);
  // Works across devices too: the wait is on the event's device-side state,
  // captured now (a later record does not move it).
  return CudaStatus(cudaStreamWaitEvent(stream_, record->event(), 0), "cudaStreamWaitEvent");
}

absl::Status CudaStream::DoHostCallback(absl::AnyInvocable<absl::Status() &&> callback) {
  auto item = std::make_unique<Callback>();
  item->blocking = true;
  item->with_status = std::move(callback);
  return EnqueueCallback(std::move(item));
}

absl::Status CudaStream::Notify(absl::AnyInvocable<void() &&> callback) {
  auto item = std::make_unique<Callback>();
  item->notify = std::move(callback);
  return EnqueueCallback(std::move(item));
}

absl::Status CudaStream::EnqueueCallback(std::unique_ptr<Callback> callback) {
  callback->stream = this;
  CudaDeviceScope scope(ordinal_);
  {
    MutexLock lock(&mu_);
    ++enqueued_;
  }
  Callback* raw = callback.release();
  const cudaError_t error = cudaLaunchHostFunc(stream_, &CudaStream::RunHostFunction, raw);
  if (error != cudaSuccess) {
    delete raw;
    MutexLock lock(&mu_);
    ++finished_;
    done_cv_.SignalAll();
    return CudaStatus(error, "cudaLaunchHostFunc");
  }
  return absl::OkStatus();
}

void CudaStream::RunHostFunction(void* data) {
  auto* callback = static_cast<Callback*>(data);
  CudaStream* stream = callback->stream;
  const bool blocking = callback->blocking;
  {
    MutexLock lock(&stream->mu_);
    stream->ready_.push_back(callback);
    stream->work_cv_.Signal();
  }
  if (blocking) {
    // Hold the device queue until the callback has run on the callback thread.
    callback->done.WaitForNotification();
    delete callback;
  }
}

void CudaStream::CallbackLoop() {
  for (;;) {
    Callback* callback = nullptr;
    {
      MutexLock lock(&mu_);
      work_cv_.Wait(&mu_,
                    [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !ready_.empty(); });
      if (ready_.empty()) return;  // Stopping with nothing left.
      callback = ready_.front();
      ready_.pop_front();
    }
    const bool blocking = callback->blocking;
    if (blocking) {
      // A failed stream skips later callbacks, as the host backend does.
      if (status_->queue_ok()) status_->Update(std::move(callback->with_status)());
    } else {
      std::move(callback->notify)();
    }
    {
      MutexLock lock(&mu_);
      ++finished_;
      done_cv_.SignalAll();
    }
    if (blocking) {
      callback->done.Notify();  // The host function frees it.
    } else {
      delete callback;
    }
  }
}

absl::Status CudaStream::BlockHostUntilDone() {
  // A callback or notification would wait for itself: a blocking callback
  // holds up the stream until it returns, and a notification holds up the
  // callback thread that later blocking callbacks (as the marker of an
  // error found in a later call) wait for.
  if (std::this_thread::get_id() == callback_thread_.get_id()) {
    return absl::FailedPreconditionError(
        "BlockHostUntilDone called from a host callback of the same stream would deadlock");
  }
  uint64_t target = 0;
  {
    MutexLock lock(&mu_);
    target = enqueued_;
  }
  absl::Status status;
  {
    CudaDeviceScope scope(ordinal_);
    status = CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  // Notifications may still be running on the callback thread: wait for them too.
  MutexLock lock(&mu_);
  done_cv_.Wait(&mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return finished_ >= target; });
  return status;
}

absl::Status CudaStream::Launch(const ThreadDim& threads, const BlockDim& blocks,
                                const KernelInterface& kernel, KernelArgs args) {
  CudaDeviceScope scope(ordinal_);
  return static_cast<const CudaKernel&>(kernel).Launch(stream_, threads, blocks, args);
}

}  // namespace rill
