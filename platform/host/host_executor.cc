#include "rill/platform/host/host_executor.h"

#include <cstdint>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/base/status_macros.h"
#include "rill/platform/host/host_event.h"
#include "rill/platform/host/host_stream.h"
#include "rill/platform/utils/host_function_kernel.h"

namespace rill {
namespace {

constexpr std::align_val_t kAlignment{64};

// nullptr when the system refuses, or when rounding `size` up to the
// alignment would wrap (the aligned operator new rounds without checking).
void* AlignedAlloc(uint64_t size) {
  if (size > PTRDIFF_MAX - static_cast<uint64_t>(kAlignment)) return nullptr;
  return ::operator new(size, kAlignment, std::nothrow);
}
void AlignedFree(void* ptr) { ::operator delete(ptr, kAlignment); }

}  // namespace

HostExecutor::HostExecutor(DeviceDescription description, int64_t memory_limit,
                           std::shared_ptr<HostStreamRegistry> platform_streams)
    : description_(std::move(description)),
      memory_limit_(memory_limit),
      streams_(std::make_shared<HostStreamRegistry>(std::move(platform_streams))) {}

HostExecutor::~HostExecutor() {
  MutexLock lock(&mu_);
  for (auto& [ptr, size] : allocations_) AlignedFree(ptr);
  for (void* ptr : host_allocations_) AlignedFree(ptr);
}

absl::StatusOr<DeviceMemoryBase> HostExecutor::Allocate(uint64_t size) {
  {
    MutexLock lock(&mu_);
    if (size > static_cast<uint64_t>(memory_limit_ - bytes_in_use_)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "out of device memory: ", size, " bytes requested, ", memory_limit_ - bytes_in_use_,
          " of the ", memory_limit_, "-byte limit free (", bytes_in_use_, " in use)"));
    }
    bytes_in_use_ += size;  // Reserve before allocating outside the lock.
    peak_bytes_in_use_ = std::max(peak_bytes_in_use_, bytes_in_use_);
  }
  void* ptr = AlignedAlloc(size);
  MutexLock lock(&mu_);
  if (ptr == nullptr) {
    bytes_in_use_ -= size;
    return absl::ResourceExhaustedError(
        absl::StrCat("out of host memory: the system refused ", size, " bytes"));
  }
  allocations_.emplace(ptr, size);
  return DeviceMemoryBase(ptr, size);
}

absl::Status HostExecutor::Deallocate(DeviceMemoryBase memory) {
  void* ptr = nullptr;
  {
    MutexLock lock(&mu_);
    auto it = allocations_.find(memory.opaque());
    if (it == allocations_.end()) {
      return absl::InvalidArgumentError("not an allocation of this device (or already freed)");
    }
    if (memory.size() != it->second) {
      return absl::InvalidArgumentError(
          absl::StrCat("a ", memory.size(), "-byte view of a ", it->second,
                       "-byte allocation is a sub-range, not an allocation"));
    }
    bytes_in_use_ -= it->second;
    ptr = it->first;
    allocations_.erase(it);
  }
  // Work already queued on the platform's streams may still use the block (a
  // copy a stream has not reached yet, also a peer device's copy): each live
  // stream holds it until its queued work has run, and the last holder frees
  // it -- at once when there is no stream. Never blocks, so it also works
  // from a host callback.
  std::shared_ptr<void> block(ptr, [](void* p) { AlignedFree(p); });
  streams_->ForEachLiveOnPlatform(
      [&](HostStream* stream) { stream->HoldUntilQueuedWorkDone(block); });
  return absl::OkStatus();
}

absl::StatusOr<void*> HostExecutor::HostMemoryAllocate(uint64_t size) {
  void* ptr = AlignedAlloc(size);
  if (ptr == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of host memory: the system refused ", size, " bytes"));
  }
  MutexLock lock(&mu_);
  host_allocations_.insert(ptr);
  return ptr;
}

absl::Status HostExecutor::HostMemoryDeallocate(void* ptr) {
  MutexLock lock(&mu_);
  if (host_allocations_.erase(ptr) == 0) {
    return absl::InvalidArgumentError("not pinned host memory of this device (or already freed)");
  }
  AlignedFree(ptr);
  return absl::OkStatus();
}

MemoryStats HostExecutor::GetMemoryStats() const {
  MutexLock lock(&mu_);
  MemoryStats stats;
  stats.bytes_in_use = bytes_in_use_;
  stats.peak_bytes_in_use = peak_bytes_in_use_;
  stats.num_allocs = static_cast<int64_t>(allocations_.size());
  stats.bytes_limit = memory_limit_;
  return stats;
}

bool HostExecutor::Owns(const DeviceMemoryBase& memory) const {
  MutexLock lock(&mu_);
  auto it = allocations_.find(memory.opaque());
  return it != allocations_.end() && memory.LiesWithin(it->second);
}

absl::StatusOr<void*> HostExecutor::HostAddress(const DeviceMemoryBase& memory) const {
  if (!Owns(memory)) {
    return absl::InvalidArgumentError(memory.ToString() + " is not memory of this host device");
  }
  return HostPointer(memory);
}

absl::Status HostExecutor::SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                                         uint64_t size) {
  std::memcpy(HostPointer(dst), src, size);
  return absl::OkStatus();
}

absl::Status HostExecutor::SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                                         uint64_t size) {
  std::memcpy(dst, HostPointer(src), size);
  return absl::OkStatus();
}

absl::Status HostExecutor::SynchronizeAllActivity() {
  return Annotate(streams_->SynchronizeAll(), "SynchronizeAllActivity");
}

absl::StatusOr<std::unique_ptr<StreamInterface>> HostExecutor::CreateStream(
    const StreamOptions& options, StreamStatus* status) {
  // Host streams have no priorities: each has its own thread.
  return std::make_unique<HostStream>(status, streams_);
}

absl::StatusOr<std::unique_ptr<EventInterface>> HostExecutor::CreateEvent() {
  return std::make_unique<HostEvent>();
}

absl::StatusOr<std::unique_ptr<KernelInterface>> HostExecutor::LoadKernel(const KernelSpec& spec) {
  if (!spec.has_host_function()) {
    return absl::UnimplementedError(
        absl::StrCat("kernel spec \"", spec.name(), "\" has no host variant (AddHostFunction)"));
  }
  return std::make_unique<HostKernel>(spec.host_function());
}

}  // namespace rill
