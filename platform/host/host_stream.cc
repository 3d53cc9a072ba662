#include "rill/platform/host/host_stream.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/platform/host/host_event.h"
#include "rill/platform/host/host_executor.h"
#include "rill/platform/utils/host_function_kernel.h"

namespace rill {

HostStream::HostStream(StreamStatus* status, std::shared_ptr<HostStreamRegistry> registry)
    : status_(status), registry_(std::move(registry)), worker_(status, kMaxQueued) {
  registry_->Add(this);
}

HostStream::~HostStream() {
  registry_->Remove(this);  // First: a SynchronizeAll waiting for this stream needs the worker.
  worker_.Stop();
}

absl::Status HostStream::BlockHostUntilDone() {
  if (worker_.OnThread()) {
    return absl::FailedPreconditionError(
        "BlockHostUntilDone called from a host callback of the same stream would deadlock");
  }
  worker_.WaitFor(worker_.enqueued());
  return absl::OkStatus();
}

absl::Status HostStream::MemcpyHostToDevice(DeviceMemoryBase dst, const void* src, uint64_t size) {
  Enqueue([dst, src, size] {
    std::memcpy(HostPointer(dst), src, size);
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status HostStream::MemcpyDeviceToHost(void* dst, DeviceMemoryBase src, uint64_t size) {
  Enqueue([dst, src, size] {
    std::memcpy(dst, HostPointer(src), size);
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status HostStream::MemcpyDeviceToDevice(DeviceMemoryBase dst, DeviceMemoryBase src,
                                              uint64_t size) {
  Enqueue([dst, src, size] {
    std::memmove(HostPointer(dst), HostPointer(src), size);
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status HostStream::Memset32(DeviceMemoryBase dst, uint32_t pattern, uint64_t size) {
  Enqueue([dst, pattern, size] {
    auto* out = static_cast<char*>(HostPointer(dst));
    for (uint64_t i = 0; i < size; i += 4) std::memcpy(out + i, &pattern, 4);
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status HostStream::RecordEvent(EventInterface* event) {
  std::shared_ptr<HostEventState> state = static_cast<HostEvent*>(event)->state();
  const uint64_t generation = state->BeginRecord();
  Enqueue(
      [this, state, generation] {
        state->Complete(generation, status_->QueueGet());
        return absl::OkStatus();
      },
      /*run_after_error=*/true);
  return absl::OkStatus();
}

absl::Status HostStream::WaitForEvent(EventInterface* event) {
  Enqueue(HostEventState::WaiterForLatest(static_cast<HostEvent*>(event)->state()));
  return absl::OkStatus();
}

absl::Status HostStream::DoHostCallback(absl::AnyInvocable<absl::Status() &&> callback) {
  Enqueue(std::move(callback));
  return absl::OkStatus();
}

absl::Status HostStream::Notify(absl::AnyInvocable<void() &&> callback) {
  Enqueue(
      [cb = std::move(callback)]() mutable {
        std::move(cb)();
        return absl::OkStatus();
      },
      /*run_after_error=*/true);
  return absl::OkStatus();
}

absl::Status HostStream::Launch(const ThreadDim& threads, const BlockDim& blocks,
                                const KernelInterface& kernel, KernelArgs args) {
  // Holds the function, not the kernel, so the kernel may go before this runs.
  std::shared_ptr<const HostBlockFn> fn = static_cast<const HostKernel&>(kernel).fn();
  Enqueue([fn = std::move(fn), threads, blocks, args = std::move(args)] {
    return RunHostKernel(*fn, threads, blocks, args);
  });
  return absl::OkStatus();
}

}  // namespace rill
