#ifndef RILL_PLATFORM_OPENCL_OPENCL_EXECUTOR_H_
#define RILL_PLATFORM_OPENCL_OPENCL_EXECUTOR_H_

#include <CL/cl.h>

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/platform/opencl/opencl_kernel.h"
#include "rill/platform/opencl/opencl_stream.h"

namespace rill {

// What the platform found out about one OpenCL device.
struct OpenClDeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  DeviceDescription description;
  uint64_t max_alloc_bytes = 0;  // CL_DEVICE_MAX_MEM_ALLOC_SIZE.
  uint64_t base_align = 0;       // CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes.
  bool profiling = false;        // CL_QUEUE_PROFILING_ENABLE supported.
};

// One OpenCL device: its own cl_context, device memory as cl_mem, streams
// as in-order command queues (OpenClStream), kernels built from OpenCL C
// source at run time and cached per executor (OpenClProgramCache).
//
// Memory: DeviceMemoryBase::opaque() is the cl_mem; sub-ranges keep it and
// carry a byte offset, which copies and fills pass to OpenCL as buffer
// offsets (kernels get sub-buffers, see OpenClKernel). Allocations count
// against CL_DEVICE_GLOBAL_MEM_SIZE (the description's memory_bytes); a
// request past it, or past CL_DEVICE_MAX_MEM_ALLOC_SIZE, is
// ResourceExhausted. Pinned host memory is a CL_MEM_ALLOC_HOST_PTR buffer
// mapped for the allocation's life.
//
// Thread-safe.
class OpenClExecutor : public StreamExecutorInterface {
 public:
  // `platform_streams`: the streams of every device of the platform (a peer
  // stream may copy from this device's buffers), past whose queued work a
  // release is deferred; null: this device's streams alone.
  static absl::StatusOr<std::unique_ptr<OpenClExecutor>> Create(
      const OpenClDeviceInfo& info,
      std::shared_ptr<OpenClStreamRegistry> platform_streams = nullptr);
  ~OpenClExecutor() override;

  const DeviceDescription& Description() const override { return info_.description; }
  absl::Status Supports(Feature feature) const override;

  absl::StatusOr<DeviceMemoryBase> Allocate(uint64_t size) override;
  absl::Status Deallocate(DeviceMemoryBase memory) override;
  absl::StatusOr<void*> HostMemoryAllocate(uint64_t size) override;
  absl::Status HostMemoryDeallocate(void* ptr) override;
  MemoryStats GetMemoryStats() const override;
  bool Owns(const DeviceMemoryBase& memory) const override;

  absl::Status SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                             uint64_t size) override;
  absl::Status SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                             uint64_t size) override;
  absl::Status SynchronizeAllActivity() override;

  absl::StatusOr<std::unique_ptr<StreamInterface>> CreateStream(const StreamOptions& options,
                                                                StreamStatus* status) override;
  absl::StatusOr<std::unique_ptr<EventInterface>> CreateEvent() override;
  // Builds the spec's OpenCL C source (AddOpenClSource) with "-cl-std=CL1.2
  // -cl-kernel-arg-info" (cached per executor) and creates the kernel named
  // spec.name(), whose launches are checked against its parameters.
  absl::StatusOr<std::unique_ptr<KernelInterface>> LoadKernel(const KernelSpec& spec) override;
  bool CanLoad(const KernelSpec& spec) const override { return !spec.opencl_source().empty(); }

  // Native handles, valid for the executor's life.
  cl_context context() const { return context_; }
  cl_device_id device() const { return info_.device; }
  const OpenClDeviceInfo& info() const { return info_; }
  OpenClProgramCache& programs() { return programs_; }

 private:
  OpenClExecutor(const OpenClDeviceInfo& info, cl_context context, cl_command_queue sync_queue,
                 std::shared_ptr<OpenClStreamRegistry> platform_streams)
      : info_(info),
        context_(context),
        sync_queue_(sync_queue),
        programs_(context, info.device),
        streams_(std::make_shared<OpenClStreamRegistry>(std::move(platform_streams))) {}

  const OpenClDeviceInfo info_;
  const cl_context context_;
  const cl_command_queue sync_queue_;  // For the synchronous copies and pinned maps.
  OpenClProgramCache programs_;
  const std::shared_ptr<OpenClStreamRegistry> streams_;

  mutable Mutex mu_;
  absl::flat_hash_map<cl_mem, uint64_t> allocations_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<void*, cl_mem> host_allocations_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_bytes_in_use_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rill

#endif  // RILL_PLATFORM_OPENCL_OPENCL_EXECUTOR_H_
