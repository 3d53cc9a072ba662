#include "skeleton_executor.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rill {

namespace {

absl::Status NotImplemented(const char* what) {
  return absl::UnimplementedError(absl::StrCat("skeleton: ", what, " is not implemented"));
}

}  // namespace

SkeletonExecutor::SkeletonExecutor(DeviceDescription description)
    : description_(std::move(description)) {}

SkeletonExecutor::~SkeletonExecutor() {
  // SKELETON: wait for the device's work, free what is still allocated and
  // release the device's handles.
}

absl::Status SkeletonExecutor::Supports(Feature feature) const {
  // SKELETON: OkStatus() for each feature the backend implements; keep
  // Unimplemented, with the reason, for the ones it lacks.
  return NotImplemented(FeatureName(feature));
}

absl::StatusOr<DeviceMemoryBase> SkeletonExecutor::Allocate(uint64_t size) {
  // SKELETON: allocate `size` bytes on the device; ResourceExhausted when it
  // cannot. The handle goes into DeviceMemoryBase's opaque pointer.
  return NotImplemented("Allocate");
}

absl::Status SkeletonExecutor::Deallocate(DeviceMemoryBase memory) {
  // SKELETON: free `memory` once the work already enqueued on this device's
  // streams is done (defer it, as host and OpenCL do); never block a callback.
  return NotImplemented("Deallocate");
}

absl::StatusOr<void*> SkeletonExecutor::HostMemoryAllocate(uint64_t size) {
  // SKELETON: page-locked host memory from the driver (or aligned host memory).
  return NotImplemented("HostMemoryAllocate");
}

absl::Status SkeletonExecutor::HostMemoryDeallocate(void* ptr) {
  // SKELETON: free what HostMemoryAllocate returned.
  return NotImplemented("HostMemoryDeallocate");
}

MemoryStats SkeletonExecutor::GetMemoryStats() const {
  // SKELETON: the allocation table's figures, and the device's limit.
  return MemoryStats{};
}

absl::Status SkeletonExecutor::SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                                             uint64_t size) {
  // SKELETON: a blocking copy of `size` bytes from host `src` to `dst`.
  return NotImplemented("SynchronousMemcpyHostToDevice");
}

absl::Status SkeletonExecutor::SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                                             uint64_t size) {
  // SKELETON: a blocking copy of `size` bytes from `src` to host `dst`.
  return NotImplemented("SynchronousMemcpyDeviceToHost");
}

absl::Status SkeletonExecutor::SynchronizeAllActivity() {
  // SKELETON: wait for the work of every stream of this device.
  return NotImplemented("SynchronizeAllActivity");
}

absl::StatusOr<std::unique_ptr<StreamInterface>> SkeletonExecutor::CreateStream(
    const StreamOptions& options, StreamStatus* status) {
  // SKELETON: return a SkeletonStream: an asynchronous in-order queue (one
  // StreamWorker thread, or the driver's queue) that records errors in `status`.
  return NotImplemented("CreateStream");
}

absl::StatusOr<std::unique_ptr<EventInterface>> SkeletonExecutor::CreateEvent() {
  // SKELETON: return a SkeletonEvent (the driver's event, or a generation
  // counter completed by the recording stream, as host_event does).
  return NotImplemented("CreateEvent");
}

absl::StatusOr<std::unique_ptr<KernelInterface>> SkeletonExecutor::LoadKernel(
    const KernelSpec& spec) {
  // SKELETON: build spec.variant(kSkeletonPlatformId) (or spec's host
  // function) into a SkeletonKernel; Unimplemented when the spec has neither.
  return NotImplemented("LoadKernel");
}

}  // namespace rill
