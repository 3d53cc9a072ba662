#ifndef RILL_PLATFORM_HOST_HOST_EXECUTOR_H_
#define RILL_PLATFORM_HOST_HOST_EXECUTOR_H_

// rill:internal -- not installed: the host backend's implementation; users include host_platform.h.

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/platform/host/host_stream.h"

namespace rill {

// One virtual host device. Memory comes from 64-byte-aligned host
// allocations counted against `memory_limit` bytes: device memory is host
// memory (Feature::kHostAddressableMemory), the handle is the allocation's
// address and HostPointer() adds the view's offset. Its streams also enter
// `platform_streams` (the streams of every device of the platform, which
// may copy from this device's memory), past whose queued work a free is
// deferred; null: this device's streams alone. Thread-safe.
class HostExecutor : public StreamExecutorInterface {
 public:
  HostExecutor(DeviceDescription description, int64_t memory_limit,
               std::shared_ptr<HostStreamRegistry> platform_streams = nullptr);
  ~HostExecutor() override;

  const DeviceDescription& Description() const override { return description_; }
  // Every feature, kHostAddressableMemory included.
  absl::Status Supports(Feature feature) const override { return absl::OkStatus(); }

  absl::StatusOr<DeviceMemoryBase> Allocate(uint64_t size) override;
  absl::Status Deallocate(DeviceMemoryBase memory) override;
  absl::StatusOr<void*> HostMemoryAllocate(uint64_t size) override;
  absl::Status HostMemoryDeallocate(void* ptr) override;
  MemoryStats GetMemoryStats() const override;
  bool Owns(const DeviceMemoryBase& memory) const override;
  absl::StatusOr<void*> HostAddress(const DeviceMemoryBase& memory) const override;

  absl::Status SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                             uint64_t size) override;
  absl::Status SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                             uint64_t size) override;
  absl::Status SynchronizeAllActivity() override;

  absl::StatusOr<std::unique_ptr<StreamInterface>> CreateStream(const StreamOptions& options,
                                                                StreamStatus* status) override;
  absl::StatusOr<std::unique_ptr<EventInterface>> CreateEvent() override;
  absl::StatusOr<std::unique_ptr<KernelInterface>> LoadKernel(const KernelSpec& spec) override;
  bool CanLoad(const KernelSpec& spec) const override { return spec.has_host_function(); }

 private:
  const DeviceDescription description_;
  const int64_t memory_limit_;
  const std::shared_ptr<HostStreamRegistry> streams_;

  mutable Mutex mu_;
  absl::flat_hash_map<void*, uint64_t> allocations_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<void*> host_allocations_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_bytes_in_use_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rill

#endif  // RILL_PLATFORM_HOST_HOST_EXECUTOR_H_
