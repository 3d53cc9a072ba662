#ifndef RILL_PLUGINS_DNN_CUDNN_CUDNN_CONTEXT_H_
#define RILL_PLUGINS_DNN_CUDNN_CUDNN_CONTEXT_H_

// rill:internal -- not installed: the cuDNN plugin's implementation.

// Private to the cudnn plugin: the cuDNN handle of one executor and its
// cached convolution workspace.

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/executor/device_memory.h"

namespace rill {

class StreamExecutor;

namespace cudnn {

class Session;

// One cudnnHandle_t for one executor (device `ordinal`), created on first
// use under a CudaDeviceScope (Unavailable, with cuDNN's reason, when there
// is no usable device; the next call tries again), and the executor's
// cached workspace. Run() holds the handle's mutex, makes the device
// current and binds the handle to the caller's cudaStream_t: cuDNN
// enqueues asynchronously on that stream, so the lock covers only the
// enqueueing, not the device work.
//
// The workspace serves convolutions called without one. It is allocated
// through the executor (StreamExecutor::Allocate, in its memory stats),
// grown to the largest request and kept for the executor's life. Because
// it is shared by every stream of the executor, each use is ordered after
// the previous one on the device: a CUDA event recorded after each use,
// waited for (cudaStreamWaitEvent) by the next; growing waits on the host
// for the last use, then frees the old buffer.
//
//   cudnn::Context context(executor, ordinal);
//   RILL_RETURN_IF_ERROR(context.Run(cuda_stream, [&](cudnn::Session& s) -> absl::Status {
//     RILL_CUDNN_RETURN_IF_ERROR(cudnnSoftmaxForward(s.handle(), ...));
//     return absl::OkStatus();
//   }));
//
// The destructor waits for the workspace's last use, frees it and destroys
// the handle. Thread-safe.
class Context {
 public:
  // `executor` is borrowed and must outlive the context.
  Context(StreamExecutor* executor, int ordinal) : executor_(executor), ordinal_(ordinal) {}
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Runs `work` with the handle bound to `stream` (nullptr: the legacy
  // default stream) on the executor's device, holding the handle's mutex.
  // Returns `work`'s status, or the error that kept it from running.
  absl::Status Run(cudaStream_t stream, absl::FunctionRef<absl::Status(Session&)> work);

  // Bytes of the cached workspace (0 before the first use), for tests.
  uint64_t WorkspaceBytes();

 private:
  friend class Session;
  absl::StatusOr<cudnnHandle_t> HandleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<void*> WorkspaceLocked(cudaStream_t stream, uint64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the workspace event on `stream` after the work just enqueued.
  absl::Status WorkspaceUsedLocked(cudaStream_t stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  StreamExecutor* const executor_;
  const int ordinal_;
  Mutex mu_;
  cudnnHandle_t handle_ ABSL_GUARDED_BY(mu_) = nullptr;
  DeviceMemoryBase workspace_ ABSL_GUARDED_BY(mu_);
  cudaEvent_t workspace_done_ ABSL_GUARDED_BY(mu_) = nullptr;  // Recorded after each use.
  bool workspace_recorded_ ABSL_GUARDED_BY(mu_) = false;
};

// What Run() hands its work: the handle, bound to the caller's stream, and
// the workspace. Valid only during that call. Thread-hostile.
class Session {
 public:
  cudnnHandle_t handle() const { return handle_; }
  cudaStream_t stream() const { return stream_; }

  // A device pointer to at least `bytes` of the executor's workspace
  // (nullptr for 0 bytes), for work this session enqueues on stream(): that
  // work runs after every earlier user's, and later users wait for it.
  absl::StatusOr<void*> Workspace(uint64_t bytes) ABSL_NO_THREAD_SAFETY_ANALYSIS;

 private:
  friend class Context;
  Session(Context* context, cudnnHandle_t handle, cudaStream_t stream)
      : context_(context), handle_(handle), stream_(stream) {}

  Context* const context_;
  const cudnnHandle_t handle_;
  const cudaStream_t stream_;
  bool used_workspace_ = false;
};

}  // namespace cudnn
}  // namespace rill

#endif  // RILL_PLUGINS_DNN_CUDNN_CUDNN_CONTEXT_H_
