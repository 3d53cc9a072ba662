#ifndef RILL_PLATFORM_CUDA_CUDA_EXECUTOR_H_
#define RILL_PLATFORM_CUDA_CUDA_EXECUTOR_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/platform/cuda/cuda_kernel.h"

namespace rill {

// One CUDA device (the runtime's primary context of `ordinal`).
//
// Memory: DeviceMemoryBase::opaque() is the cudaMalloc pointer of the
// allocation; sub-ranges keep it and carry a byte offset (CudaAddress adds
// them). A request past the device's memory, or one cudaMalloc refuses, is
// ResourceExhausted. Pinned host memory comes from cudaHostAlloc (portable).
// Streams are cudaStreams with priorities (CudaStream); events are timing
// cudaEvents; kernels come from a KernelSpec's fatbin (preferred) or PTX
// through the runtime's library API (cudaLibraryLoadData), so no driver
// symbol is linked and binaries start where there is no driver.
//
// Every call first makes the device current on the calling thread.
// Thread-safe.
class CudaExecutor : public StreamExecutorInterface {
 public:
  static absl::StatusOr<std::unique_ptr<CudaExecutor>> Create(int ordinal,
                                                              const DeviceDescription& description);
  ~CudaExecutor() override;

  const DeviceDescription& Description() const override { return description_; }
  // Every feature but kHostAddressableMemory.
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
  // Loads the spec's CUDA fatbin (AddCudaFatbin) or else its PTX
  // (AddCudaPtx); Unimplemented when it has neither, NotFound when the
  // image has no kernel named spec.name().
  absl::StatusOr<std::unique_ptr<KernelInterface>> LoadKernel(const KernelSpec& spec) override;
  bool CanLoad(const KernelSpec& spec) const override {
    return !spec.cuda_fatbin().empty() || !spec.cuda_ptx().empty();
  }

  int ordinal() const { return ordinal_; }
  // The built-in memset32 kernel, loaded on first use.
  absl::StatusOr<const CudaKernel*> Memset32Kernel();

 private:
  CudaExecutor(int ordinal, const DeviceDescription& description)
      : ordinal_(ordinal), description_(description) {}

  const int ordinal_;
  const DeviceDescription description_;

  mutable Mutex mu_;
  absl::flat_hash_map<void*, uint64_t> allocations_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<void*> host_allocations_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_bytes_in_use_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<CudaKernel> memset32_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_PLATFORM_CUDA_CUDA_EXECUTOR_H_
