#include "rill/platform/cuda/cuda_plugin.h"

#include "absl/strings/str_cat.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/platform/platform.h"
#include "rill/stream/stream.h"

namespace rill {

absl::StatusOr<int> CudaDeviceOrdinal(StreamExecutor* executor) {
  if (executor == nullptr) return absl::InvalidArgumentError("executor is null");
  if (executor->platform()->id() != kCudaPlatformId) {
    return absl::InvalidArgumentError(
        absl::StrCat(executor->DebugName(), " is not a CUDA executor"));
  }
  return executor->device_ordinal();
}

absl::StatusOr<cudaStream_t> CudaPluginStream(StreamExecutor* owner, Stream* stream,
                                              absl::string_view plugin,
                                              absl::string_view accessor) {
  if (stream == nullptr) return absl::InvalidArgumentError("stream is null");
  StreamExecutor* parent = stream->parent();
  if (parent == nullptr) {
    return absl::FailedPreconditionError("the stream is detached: its executor was destroyed");
  }
  if (parent != owner) {
    return absl::InvalidArgumentError(
        absl::StrCat("the stream belongs to ", parent->DebugName(), ", but this ", plugin,
                     " plugin serves ", owner->DebugName(), ": use that executor's ", accessor));
  }
  if (parent->platform()->id() != kCudaPlatformId) {
    return absl::InvalidArgumentError(
        absl::StrCat("the stream of ", parent->DebugName(), " is not a CUDA stream"));
  }
  return static_cast<cudaStream_t>(stream->native_handle());
}

CudaDeviceScope::CudaDeviceScope(int ordinal) {
  if (cudaGetDevice(&previous_) != cudaSuccess) {
    (void)cudaGetLastError();
    previous_ = -1;
  }
  if (previous_ == ordinal) return;
  status_ = CudaStatus(cudaSetDevice(ordinal), absl::StrCat("cudaSetDevice(", ordinal, ")"));
  if (!status_.ok()) previous_ = -1;
}

CudaDeviceScope::~CudaDeviceScope() {
  if (previous_ >= 0) {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current != previous_) cudaSetDevice(previous_);
  }
}

}  // namespace rill
