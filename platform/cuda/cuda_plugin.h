#ifndef RILL_PLATFORM_CUDA_CUDA_PLUGIN_H_
#define RILL_PLATFORM_CUDA_CUDA_PLUGIN_H_

// Interop with the CUDA backend, for library plugins (cuBLAS, cuRAND,
// cuDNN, cuFFT) and for programs that call CUDA directly:
//   device ordinal   CudaDeviceOrdinal(executor)
//   cudaStream_t     CudaPluginStream(...) or stream->native_handle()
//   device pointer   CudaAddress(memory)  (opaque() + offset())
//
// Streams of the CUDA backend enqueue straight onto their cudaStream_t from
// the calling thread, so a plugin keeps stream order by enqueueing its
// library calls on the stream's cudaStream_t (cublasSetStream, ...) under
// a CudaDeviceScope for the executor's device.

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rill/executor/device_memory.h"

namespace rill {

class Stream;
class StreamExecutor;

// The device pointer behind a view of CUDA device memory.
inline void* CudaAddress(const DeviceMemoryBase& memory) {
  return memory.is_null() ? nullptr : static_cast<char*>(memory.opaque()) + memory.offset();
}

// The CUDA device ordinal of `executor`; InvalidArgument when it is not a
// CUDA executor.
absl::StatusOr<int> CudaDeviceOrdinal(StreamExecutor* executor);

// `stream`'s cudaStream_t, if `stream` belongs to `owner` (the executor the
// plugin instance serves); else InvalidArgument naming both executors and
// `accessor` ("use that executor's AsBlas()"), or FailedPrecondition for a
// detached stream.
absl::StatusOr<cudaStream_t> CudaPluginStream(StreamExecutor* owner, Stream* stream,
                                              absl::string_view plugin, absl::string_view accessor);

// Makes device `ordinal` current on the calling thread for the scope and
// restores the previous one after (cudaGetDevice/cudaSetDevice). Check
// status() before relying on it.
class CudaDeviceScope {
 public:
  explicit CudaDeviceScope(int ordinal);
  ~CudaDeviceScope();
  CudaDeviceScope(const CudaDeviceScope&) = delete;
  CudaDeviceScope& operator=(const CudaDeviceScope&) = delete;
  const absl::Status& status() const { return status_; }

 private:
  int previous_ = -1;
  absl::Status status_;
};

}  // namespace rill

#endif  // RILL_PLATFORM_CUDA_CUDA_PLUGIN_H_
