#include "rill/platform/opencl/opencl_executor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/platform/opencl/opencl_event.h"
#include "rill/platform/opencl/opencl_status.h"

namespace rill {
namespace {

// OpenCL C 1.2, with the parameter info that OpenClKernelCore checks
// launch arguments against.
constexpr char kBuildOptions[] = "-cl-std=CL1.2 -cl-kernel-arg-info";

}  // namespace

absl::StatusOr<std::unique_ptr<OpenClExecutor>> OpenClExecutor::Create(
    const OpenClDeviceInfo& info, std::shared_ptr<OpenClStreamRegistry> platform_streams) {
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(info.platform), 0};
  cl_int error = CL_SUCCESS;
  cl_context context = clCreateContext(properties, 1, &info.device, nullptr, nullptr, &error);
  RILL_RETURN_IF_ERROR(ClStatus(error, "clCreateContext"));
  cl_command_queue queue = clCreateCommandQueue(context, info.device, 0, &error);
  if (error != CL_SUCCESS) {
    clReleaseContext(context);
    return ClStatus(error, "clCreateCommandQueue");
  }
  return std::unique_ptr<OpenClExecutor>(
      new OpenClExecutor(info, context, queue, std::move(platform_streams)));
}

OpenClExecutor::~OpenClExecutor() {
  clFinish(sync_queue_);
  {
    MutexLock lock(&mu_);
    for (auto& [ptr, buffer] : host_allocations_) {
      cl_event unmapped = nullptr;
      if (clEnqueueUnmapMemObject(sync_queue_, buffer, ptr, 0, nullptr, &unmapped) == CL_SUCCESS) {
        clWaitForEvents(1, &unmapped);
        clReleaseEvent(unmapped);
      }
      clReleaseMemObject(buffer);
    }
    for (auto& [buffer, size] : allocations_) clReleaseMemObject(buffer);
  }
  clReleaseCommandQueue(sync_queue_);
  clReleaseContext(context_);
}

absl::Status OpenClExecutor::Supports(Feature feature) const {
  if (feature == Feature::kTimers && !info_.profiling) {
    return absl::UnimplementedError(
        "timers: this OpenCL device has no profiling queues (CL_QUEUE_PROFILING_ENABLE)");
  }
  if (feature == Feature::kHostAddressableMemory) {
    return absl::UnimplementedError(
        "an OpenCL buffer (cl_mem) is not host memory: the host reaches it through the queue "
        "(copies, maps), even on a CPU device");
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceMemoryBase> OpenClExecutor::Allocate(uint64_t size) {
  const int64_t limit = info_.description.memory_bytes;
  if (size > info_.max_alloc_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of device memory: ", size, " bytes requested, more than one OpenCL buffer may hold ",
        "(CL_DEVICE_MAX_MEM_ALLOC_SIZE = ", info_.max_alloc_bytes, ")"));
  }
  {
    MutexLock lock(&mu_);
    if (size > static_cast<uint64_t>(limit - bytes_in_use_)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "out of device memory: ", size, " bytes requested, ", limit - bytes_in_use_, " of the ",
          limit, "-byte CL_DEVICE_GLOBAL_MEM_SIZE free (", bytes_in_use_, " in use)"));
    }
    bytes_in_use_ += size;  // Reserve before allocating outside the lock.
    peak_bytes_in_use_ = std::max(peak_bytes_in_use_, bytes_in_use_);
  }
  cl_int error = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(context_, CL_MEM_READ_WRITE, size, nullptr, &error);
  MutexLock lock(&mu_);
  if (error != CL_SUCCESS) {
    bytes_in_use_ -= size;
    absl::Status status = ClStatus(error, absl::StrCat("clCreateBuffer(", size, " bytes)"));
    if (error == CL_INVALID_BUFFER_SIZE) return absl::ResourceExhaustedError(status.message());
    return status;
  }
  allocations_.emplace(buffer, size);
  return DeviceMemoryBase(buffer, size);
}

absl::Status OpenClExecutor::Deallocate(DeviceMemoryBase memory) {
  cl_mem buffer = nullptr;
  {
    MutexLock lock(&mu_);
    auto it = allocations_.find(ClMem(memory));
    if (it == allocations_.end()) {
      return absl::InvalidArgumentError("not a cl_mem allocated by this device (or already freed)");
    }
    if (memory.offset() != 0 || memory.size() != it->second) {
      return absl::InvalidArgumentError(
          absl::StrCat("a ", memory.size(), "-byte view at offset ", memory.offset(), " of a ",
                       it->second, "-byte allocation is a sub-range, not an allocation"));
    }
    bytes_in_use_ -= static_cast<int64_t>(it->second);
    buffer = it->first;
    allocations_.erase(it);
  }
  // OpenCL frees the buffer once the commands using it have finished, but a
  // stream's enqueue thread may not have submitted them yet: each live
  // stream of the platform (a peer may copy from it) holds our reference
  // until the work queued before now has reached its command queue (which
  // retains what it uses); the last holder releases it. Never blocks.
  std::shared_ptr<_cl_mem> held(buffer, [](cl_mem m) { clReleaseMemObject(m); });
  streams_->ForEachLiveOnPlatform(
      [&](OpenClStream* stream) { stream->HoldUntilQueuedWorkDone(held); });
  return absl::OkStatus();
}

absl::StatusOr<void*> OpenClExecutor::HostMemoryAllocate(uint64_t size) {
  // Pinned host memory is an OpenCL buffer too: the same size limit, and
  // the same code as Allocate when a size is too large.
  if (size > info_.max_alloc_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of pinned host memory: ", size,
                     " bytes requested, more than one OpenCL buffer may hold ",
                     "(CL_DEVICE_MAX_MEM_ALLOC_SIZE = ", info_.max_alloc_bytes, ")"));
  }
  cl_int error = CL_SUCCESS;
  cl_mem buffer =
      clCreateBuffer(context_, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, nullptr, &error);
  if (error != CL_SUCCESS) {
    absl::Status status =
        ClStatus(error, absl::StrCat("clCreateBuffer(CL_MEM_ALLOC_HOST_PTR, ", size, " bytes)"));
    if (error == CL_INVALID_BUFFER_SIZE) return absl::ResourceExhaustedError(status.message());
    return status;
  }
  void* ptr = clEnqueueMapBuffer(sync_queue_, buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, size,
                                 0, nullptr, nullptr, &error);
  if (error != CL_SUCCESS) {
    clReleaseMemObject(buffer);
    return ClStatus(error, "clEnqueueMapBuffer(pinned host memory)");
  }
  MutexLock lock(&mu_);
  host_allocations_.emplace(ptr, buffer);
  return ptr;
}

absl::Status OpenClExecutor::HostMemoryDeallocate(void* ptr) {
  cl_mem buffer;
  {
    MutexLock lock(&mu_);
    auto it = host_allocations_.find(ptr);
    if (it == host_allocations_.end()) {
      return absl::InvalidArgumentError("not pinned host memory of this device (or already freed)");
    }
    buffer = it->second;
    host_allocations_.erase(it);
  }
  absl::Status status =
      ClStatus(clEnqueueUnmapMemObject(sync_queue_, buffer, ptr, 0, nullptr, nullptr),
               "clEnqueueUnmapMemObject(pinned host memory)");
  if (status.ok()) status = ClStatus(clFinish(sync_queue_), "clFinish");
  clReleaseMemObject(buffer);
  return status;
}

MemoryStats OpenClExecutor::GetMemoryStats() const {
  MutexLock lock(&mu_);
  MemoryStats stats;
  stats.bytes_in_use = bytes_in_use_;
  stats.peak_bytes_in_use = peak_bytes_in_use_;
  stats.num_allocs = static_cast<int64_t>(allocations_.size());
  stats.bytes_limit = info_.description.memory_bytes;
  return stats;
}

bool OpenClExecutor::Owns(const DeviceMemoryBase& memory) const {
  MutexLock lock(&mu_);
  auto it = allocations_.find(ClMem(memory));
  return it != allocations_.end() && memory.LiesWithin(it->second);
}

absl::Status OpenClExecutor::SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                                           uint64_t size) {
  return ClStatus(clEnqueueWriteBuffer(sync_queue_, ClMem(dst), CL_TRUE, dst.offset(), size, src, 0,
                                       nullptr, nullptr),
                  "clEnqueueWriteBuffer(blocking)");
}

absl::Status OpenClExecutor::SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                                           uint64_t size) {
  return ClStatus(clEnqueueReadBuffer(sync_queue_, ClMem(src), CL_TRUE, src.offset(), size, dst, 0,
                                      nullptr, nullptr),
                  "clEnqueueReadBuffer(blocking)");
}

absl::Status OpenClExecutor::SynchronizeAllActivity() {
  RILL_RETURN_IF_ERROR(Annotate(streams_->SynchronizeAll(), "SynchronizeAllActivity"));
  return ClStatus(clFinish(sync_queue_), "clFinish");
}

absl::StatusOr<std::unique_ptr<StreamInterface>> OpenClExecutor::CreateStream(
    const StreamOptions& options, StreamStatus* status) {
  // OpenCL 1.2 queues have no priorities; options.priority is ignored.
  RILL_ASSIGN_OR_RETURN(
      std::unique_ptr<OpenClStream> stream,
      OpenClStream::Create(context_, info_.device, info_.base_align, status, streams_));
  return std::unique_ptr<StreamInterface>(std::move(stream));
}

absl::StatusOr<std::unique_ptr<EventInterface>> OpenClExecutor::CreateEvent() {
  return std::make_unique<OpenClEvent>();
}

absl::StatusOr<std::unique_ptr<KernelInterface>> OpenClExecutor::LoadKernel(
    const KernelSpec& spec) {
  if (spec.opencl_source().empty()) {
    return absl::UnimplementedError(absl::StrCat("kernel spec \"", spec.name(),
                                                 "\" has no OpenCL C variant (AddOpenClSource)"));
  }
  RILL_ASSIGN_OR_RETURN(cl_program program,
                        programs_.GetOrBuild(spec.opencl_source(), kBuildOptions,
                                             absl::StrCat("kernel \"", spec.name(), "\"")));
  absl::StatusOr<std::shared_ptr<OpenClKernelCore>> core =
      OpenClKernelCore::Create(program, spec.name());
  clReleaseProgram(program);  // The kernel holds the program.
  if (!core.ok()) return core.status();
  return std::make_unique<OpenClKernel>(*std::move(core));
}

}  // namespace rill
