#ifndef RILL_PLATFORM_SKELETON_SKELETON_EXECUTOR_H_
#define RILL_PLATFORM_SKELETON_SKELETON_EXECUTOR_H_

// >>> template only (scripts/new_backend.sh leaves this out of copies)
// rill:internal -- the skeleton's headers are not installed with Rill's package.
// <<< template only

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/executor/stream_executor_interface.h"

namespace rill {

// One skeleton device: it describes itself, reports no memory in use, and
// answers every operation with Unimplemented ("skeleton: <what> is not
// implemented"), so the front and the conformance suite see a backend that
// lacks everything rather than one that misbehaves. Owned by its
// StreamExecutor front (SkeletonPlatform creates it). Thread-safe (it has no
// state but its description).
//
//   SkeletonExecutor executor(description);
//   executor.Allocate(64).status();  // Unimplemented
class SkeletonExecutor : public StreamExecutorInterface {
 public:
  explicit SkeletonExecutor(DeviceDescription description);
  ~SkeletonExecutor() override;

  const DeviceDescription& Description() const override { return description_; }
  absl::Status Supports(Feature feature) const override;

  absl::StatusOr<DeviceMemoryBase> Allocate(uint64_t size) override;
  absl::Status Deallocate(DeviceMemoryBase memory) override;
  absl::StatusOr<void*> HostMemoryAllocate(uint64_t size) override;
  absl::Status HostMemoryDeallocate(void* ptr) override;
  MemoryStats GetMemoryStats() const override;

  absl::Status SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                             uint64_t size) override;
  absl::Status SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                             uint64_t size) override;
  absl::Status SynchronizeAllActivity() override;

  absl::StatusOr<std::unique_ptr<StreamInterface>> CreateStream(const StreamOptions& options,
                                                                StreamStatus* status) override;
  absl::StatusOr<std::unique_ptr<EventInterface>> CreateEvent() override;
  absl::StatusOr<std::unique_ptr<KernelInterface>> LoadKernel(const KernelSpec& spec) override;

 private:
  const DeviceDescription description_;
  // SKELETON: the device's handles (context, queue) and, once Allocate is
  // real, a Mutex-guarded table of live allocations for GetMemoryStats.
};

}  // namespace rill

#endif  // RILL_PLATFORM_SKELETON_SKELETON_EXECUTOR_H_
