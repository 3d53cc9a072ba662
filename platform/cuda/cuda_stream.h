#ifndef RILL_PLATFORM_CUDA_CUDA_STREAM_H_
#define RILL_PLATFORM_CUDA_CUDA_STREAM_H_

// rill:internal -- not installed: the CUDA backend's implementation; users include cuda_platform.h.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor_interface.h"

namespace rill {

class CudaExecutor;

// A CUDA stream: one non-blocking cudaStream_t (with the priority mapped
// from StreamOptions onto the device's range), plus one host thread for
// callbacks.
//
// Copies, fills, kernels, event records and waits go straight onto the
// cudaStream_t from the calling thread: nothing sits between Rill and the
// device queue, so launches cost what cudaLaunchKernel costs. Waits on an
// event of the same platform become cudaStreamWaitEvent (no host round trip).
//
// Host callbacks: CUDA forbids CUDA calls inside a cudaLaunchHostFunc
// function, but Rill callbacks may make them (the engine pushes new work
// from completions). So the host function only hands the callback to the
// stream's callback thread; for DoHostCallback it then waits there until
// the callback has returned, which keeps later device work behind it; for
// Notify it returns at once. A callback that fails puts the stream in the
// error state: later calls are refused by the front and later callbacks are
// skipped, but device work already enqueued behind the failing callback
// still runs (CUDA cannot withdraw it) -- the one place this backend is
// weaker than the host's "skip everything after a failure".
//
// Thread-safe.
class CudaStream : public StreamInterface {
 public:
  static absl::StatusOr<std::unique_ptr<CudaStream>> Create(CudaExecutor* executor,
                                                            const StreamOptions& options,
                                                            StreamStatus* status);
  ~CudaStream() override;

  absl::Status MemcpyHostToDevice(DeviceMemoryBase dst, const void* src, uint64_t size) override;
  absl::Status MemcpyDeviceToHost(void* dst, DeviceMemoryBase src, uint64_t size) override;
  absl::Status MemcpyDeviceToDevice(DeviceMemoryBase dst, DeviceMemoryBase src,
                                    uint64_t size) override;
  absl::Status Memset32(DeviceMemoryBase dst, uint32_t pattern, uint64_t size) override;
  absl::Status RecordEvent(EventInterface* event) override;
  absl::Status WaitForEvent(EventInterface* event) override;
  absl::Status DoHostCallback(absl::AnyInvocable<absl::Status() &&> callback) override;
  absl::Status Notify(absl::AnyInvocable<void() &&> callback) override;
  absl::Status Launch(const ThreadDim& threads, const BlockDim& blocks,
                      const KernelInterface& kernel, KernelArgs args) override;
  absl::Status BlockHostUntilDone() override;
  void* native_handle() override { return stream_; }

  cudaStream_t stream() const { return stream_; }
  int cuda_priority() const { return cuda_priority_; }

 private:
  struct Callback;
  CudaStream(CudaExecutor* executor, cudaStream_t stream, int cuda_priority, StreamStatus* status);
  static void RunHostFunction(void* data);  // The cudaHostFn_t.
  absl::Status EnqueueCallback(std::unique_ptr<Callback> callback);
  void CallbackLoop();

  CudaExecutor* const executor_;
  const int ordinal_;
  const cudaStream_t stream_;
  const int cuda_priority_;
  StreamStatus* const status_;

  Mutex mu_;
  CondVar work_cv_;
  CondVar done_cv_;
  std::deque<Callback*> ready_ ABSL_GUARDED_BY(mu_);  // Handed over by host functions.
  uint64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;        // Callbacks put on the device queue.
  uint64_t finished_ ABSL_GUARDED_BY(mu_) = 0;        // Callbacks run (or skipped).
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread callback_thread_;
};

}  // namespace rill

#endif  // RILL_PLATFORM_CUDA_CUDA_STREAM_H_
