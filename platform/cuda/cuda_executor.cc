#include "rill/platform/cuda/cuda_executor.h"

#include <cstddef>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/platform/cuda/cuda_event.h"
#include "rill/platform/cuda/cuda_kernel.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/platform/cuda/cuda_stream.h"
#include "rill/stream/kernel_spec.h"

// The fatbin of cuda_builtin_kernels.cu (rill_cuda_embed_kernels).
extern const unsigned char rill_cuda_builtin_fatbin[];

namespace rill {

absl::StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::Create(
    int ordinal, const DeviceDescription& description) {
  CudaDeviceScope scope(ordinal);
  RILL_RETURN_IF_ERROR(scope.status());
  // Creates the primary context now, so the first stream or allocation
  // does not pay for it (and a broken device fails here, clearly).
  RILL_CUDA_RETURN_IF_ERROR(cudaFree(nullptr));
  return std::unique_ptr<CudaExecutor>(new CudaExecutor(ordinal, description));
}

CudaExecutor::~CudaExecutor() {
  CudaDeviceScope scope(ordinal_);
  cudaDeviceSynchronize();
  MutexLock lock(&mu_);
  memset32_.reset();
  for (auto& [ptr, size] : allocations_) cudaFree(ptr);
  for (void* ptr : host_allocations_) cudaFreeHost(ptr);
}

absl::Status CudaExecutor::Supports(Feature feature) const {
  if (feature == Feature::kHostAddressableMemory) {
    return absl::UnimplementedError(
        "CUDA device memory is not host memory: its handle is a device pointer the host cannot "
        "dereference");
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceMemoryBase> CudaExecutor::Allocate(uint64_t size) {
  if (size > static_cast<uint64_t>(description_.memory_bytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", size, " bytes on cuda device ", ordinal_, ": it has ",
                     description_.memory_bytes, " bytes of memory"));
  }
  CudaDeviceScope scope(ordinal_);
  RILL_RETURN_IF_ERROR(scope.status());
  void* ptr = nullptr;
  const cudaError_t error = cudaMalloc(&ptr, size);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();  // Out of memory is not sticky; clear it.
    return CudaStatus(error,
                      absl::StrCat("cudaMalloc(", size, " bytes) on cuda device ", ordinal_));
  }
  MutexLock lock(&mu_);
  allocations_.emplace(ptr, size);
  bytes_in_use_ += static_cast<int64_t>(size);
  peak_bytes_in_use_ = std::max(peak_bytes_in_use_, bytes_in_use_);
  return DeviceMemoryBase(ptr, size);
}

absl::Status CudaExecutor::Deallocate(DeviceMemoryBase memory) {
  {
    MutexLock lock(&mu_);
    auto it = allocations_.find(memory.opaque());
    if (it == allocations_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(memory.ToString(), " is not an allocation of cuda device ", ordinal_));
    }
    bytes_in_use_ -= static_cast<int64_t>(it->second);
    allocations_.erase(it);
  }
  CudaDeviceScope scope(ordinal_);
  return CudaStatus(cudaFree(memory.opaque()), "cudaFree");
}

absl::StatusOr<void*> CudaExecutor::HostMemoryAllocate(uint64_t size) {
  CudaDeviceScope scope(ordinal_);
  void* ptr = nullptr;
  const cudaError_t error = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return CudaStatus(error, absl::StrCat("cudaHostAlloc(", size, " bytes)"));
  }
  MutexLock lock(&mu_);
  host_allocations_.insert(ptr);
  return ptr;
}

absl::Status CudaExecutor::HostMemoryDeallocate(void* ptr) {
  {
    MutexLock lock(&mu_);
    if (host_allocations_.erase(ptr) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("host pointer ", absl::Hex(reinterpret_cast<uintptr_t>(ptr)),
                       " was not allocated by cuda device ", ordinal_, "'s HostMemoryAllocate"));
    }
  }
  CudaDeviceScope scope(ordinal_);
  return CudaStatus(cudaFreeHost(ptr), "cudaFreeHost");
}

MemoryStats CudaExecutor::GetMemoryStats() const {
  MutexLock lock(&mu_);
  MemoryStats stats;
  stats.bytes_in_use = bytes_in_use_;
  stats.peak_bytes_in_use = peak_bytes_in_use_;
  stats.num_allocs = static_cast<int64_t>(allocations_.size());
  stats.bytes_limit = description_.memory_bytes;
  return stats;
}

bool CudaExecutor::Owns(const DeviceMemoryBase& memory) const {
  MutexLock lock(&mu_);
  auto it = allocations_.find(memory.opaque());
  return it != allocations_.end() && memory.LiesWithin(it->second);
}

absl::Status CudaExecutor::SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                                         uint64_t size) {
  CudaDeviceScope scope(ordinal_);
  return CudaStatus(cudaMemcpy(CudaAddress(dst), src, size, cudaMemcpyHostToDevice),
                    "cudaMemcpy(host to device)");
}

absl::Status CudaExecutor::SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                                         uint64_t size) {
  CudaDeviceScope scope(ordinal_);
  return CudaStatus(cudaMemcpy(dst, CudaAddress(src), size, cudaMemcpyDeviceToHost),
                    "cudaMemcpy(device to host)");
}

absl::Status CudaExecutor::SynchronizeAllActivity() {
  CudaDeviceScope scope(ordinal_);
  return CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

absl::StatusOr<std::unique_ptr<StreamInterface>> CudaExecutor::CreateStream(
    const StreamOptions& options, StreamStatus* status) {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<CudaStream> stream,
                        CudaStream::Create(this, options, status));
  return std::unique_ptr<StreamInterface>(std::move(stream));
}

absl::StatusOr<std::unique_ptr<EventInterface>> CudaExecutor::CreateEvent() {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<CudaEvent> event, CudaEvent::Create(ordinal_));
  return std::unique_ptr<EventInterface>(std::move(event));
}

absl::StatusOr<std::unique_ptr<KernelInterface>> CudaExecutor::LoadKernel(const KernelSpec& spec) {
  const void* image = nullptr;
  std::string what;
  if (!spec.cuda_fatbin().empty()) {
    image = spec.cuda_fatbin().data();
    what = absl::StrCat("the fatbin of kernel spec \"", spec.name(), "\"");
  } else if (!spec.cuda_ptx().empty()) {
    image = spec.cuda_ptx().c_str();
    what = absl::StrCat("the PTX of kernel spec \"", spec.name(), "\"");
  } else {
    return absl::UnimplementedError(
        absl::StrCat("kernel spec \"", spec.name(),
                     "\" has no CUDA variant (add one with AddCudaFatbin or AddCudaPtx)"));
  }
  CudaDeviceScope scope(ordinal_);
  RILL_RETURN_IF_ERROR(scope.status());
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<CudaKernel> kernel,
                        CudaKernel::Load(image, spec.name(), what));
  return std::unique_ptr<KernelInterface>(std::move(kernel));
}

absl::StatusOr<const CudaKernel*> CudaExecutor::Memset32Kernel() {
  MutexLock lock(&mu_);
  if (memset32_ == nullptr) {
    RILL_ASSIGN_OR_RETURN(memset32_, CudaKernel::Load(rill_cuda_builtin_fatbin, "rill_memset32",
                                                      "Rill's built-in CUDA kernels"));
  }
  return memset32_.get();
}

}  // namespace rill
