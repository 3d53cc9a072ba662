#include "rill/plugins/dnn/cudnn/cudnn_context.h"

#include "absl/strings/str_cat.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/plugins/dnn/cudnn/cudnn_status.h"

namespace rill::cudnn {

namespace {

// Workspaces grow in steps of 1 MiB, so a run of slightly larger requests
// does not reallocate each time.
constexpr uint64_t kWorkspaceGranule = uint64_t{1} << 20;

}  // namespace

Context::~Context() {
  MutexLock lock(&mu_);
  if (handle_ == nullptr && workspace_.is_null() && workspace_done_ == nullptr) return;
  CudaDeviceScope scope(ordinal_);
  if (workspace_recorded_) cudaEventSynchronize(workspace_done_);
  if (!workspace_.is_null()) {
    absl::Status freed = executor_->Deallocate(&workspace_);
    if (!freed.ok()) RILL_LOG(WARNING) << "cudnn: freeing the workspace failed: " << freed;
  }
  if (workspace_done_ != nullptr) cudaEventDestroy(workspace_done_);
  if (handle_ != nullptr) cudnnDestroy(handle_);
}

absl::StatusOr<cudnnHandle_t> Context::HandleLocked() {
  if (handle_ != nullptr) return handle_;
  cudnnHandle_t handle = nullptr;
  RILL_CUDNN_RETURN_IF_ERROR(cudnnCreate(&handle));
  handle_ = handle;
  return handle_;
}

absl::Status Context::Run(cudaStream_t stream, absl::FunctionRef<absl::Status(Session&)> work) {
  MutexLock lock(&mu_);
  CudaDeviceScope scope(ordinal_);
  RILL_RETURN_IF_ERROR(scope.status());
  RILL_ASSIGN_OR_RETURN(cudnnHandle_t handle, HandleLocked());
  RILL_CUDNN_RETURN_IF_ERROR(cudnnSetStream(handle, stream));
  Session session(this, handle, stream);
  absl::Status status = work(session);
  if (session.used_workspace_) {
    // Even after a failure: part of the work may have been enqueued.
    absl::Status recorded = WorkspaceUsedLocked(stream);
    if (status.ok()) status = recorded;
  }
  return status;
}

uint64_t Context::WorkspaceBytes() {
  MutexLock lock(&mu_);
  return workspace_.size();
}

absl::StatusOr<void*> Context::WorkspaceLocked(cudaStream_t stream, uint64_t bytes) {
  if (workspace_done_ == nullptr) {
    RILL_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&workspace_done_, cudaEventDisableTiming));
  }
  if (bytes > workspace_.size()) {
    // The old buffer may still be in use on another stream.
    if (workspace_recorded_) RILL_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(workspace_done_));
    workspace_recorded_ = false;
    if (!workspace_.is_null()) RILL_RETURN_IF_ERROR(executor_->Deallocate(&workspace_));
    const uint64_t size = (bytes + kWorkspaceGranule - 1) / kWorkspaceGranule * kWorkspaceGranule;
    absl::StatusOr<DeviceMemoryBase> memory = executor_->Allocate(size);
    if (!memory.ok()) {
      return absl::Status(memory.status().code(),
                          absl::StrCat("cudnn: allocating a ", size,
                                       "-byte convolution workspace: ", memory.status().message()));
    }
    workspace_ = *memory;
  } else if (workspace_recorded_) {
    RILL_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, workspace_done_, 0));
  }
  return CudaAddress(workspace_);
}

absl::Status Context::WorkspaceUsedLocked(cudaStream_t stream) {
  RILL_CUDA_RETURN_IF_ERROR(cudaEventRecord(workspace_done_, stream));
  workspace_recorded_ = true;
  return absl::OkStatus();
}

absl::StatusOr<void*> Session::Workspace(uint64_t bytes) {
  // Only reachable from inside Context::Run, which holds the mutex.
  if (bytes == 0) return nullptr;
  RILL_ASSIGN_OR_RETURN(void* memory, context_->WorkspaceLocked(stream_, bytes));
  used_workspace_ = true;
  return memory;
}

}  // namespace rill::cudnn
