#ifndef RILL_PLATFORM_OPENCL_OPENCL_STREAM_H_
#define RILL_PLATFORM_OPENCL_OPENCL_STREAM_H_

#include <CL/cl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/platform/utils/backend_stream_set.h"
#include "rill/platform/utils/stream_worker.h"

namespace rill {

class OpenClStream;

// The cl_mem behind a view (DeviceMemoryBase::opaque() on this backend).
inline cl_mem ClMem(const DeviceMemoryBase& memory) { return static_cast<cl_mem>(memory.opaque()); }

// The live streams of one OpenCL executor (for SynchronizeAllActivity).
using OpenClStreamRegistry = BackendStreamSet<OpenClStream>;

// An OpenCL stream: one in-order cl_command_queue (profiling enabled), fed
// by one host worker thread.
//
// Why a worker thread: the stream contract orders host callbacks with
// device work and skips everything after a failure. Every call is queued to
// the worker, which enqueues device commands on the cl_command_queue without
// waiting for them (copies, fills and kernels pipeline on the device), and
// before a host callback (or Notify, or BlockHostUntilDone) drains the
// queue with clFinish, checks the last command's status, and runs the
// callback on the worker thread itself. When the stream has failed, the
// worker skips later work, so no command behind a failing callback reaches
// the device. Event records enqueue a marker (clEnqueueMarkerWithWaitList);
// waits on an event of the same context become
// clEnqueueBarrierWithWaitList on its marker, so cross-stream order is kept
// on the device without a host round trip; an event of another context is
// waited for on the worker (clWaitForEvents).
//
// Hand-off: the worker takes every queued entry per lock and polls for up
// to 50 us before it sleeps, so a producer that queues back to back never
// pays for a wake-up (producers signal only a sleeping worker); a thread in
// BlockHostUntilDone is woken only once its own drain has run.
//
// Host memory passed to asynchronous copies must stay valid until the copy
// has run (as with CUDA's async copies). The queue is unbounded. Destruction
// drains the work and joins the worker. Thread-safe.
class OpenClStream : public StreamInterface {
 public:
  // Device work for plugins: enqueues OpenCL commands on the given queue and
  // returns the last command's event (its reference passes to the stream;
  // nullptr when none), or an error, which fails the stream.
  using DeviceWork = absl::AnyInvocable<absl::StatusOr<cl_event>(cl_command_queue) &&>;

  // `context` and `device` outlive the stream.
  static absl::StatusOr<std::unique_ptr<OpenClStream>> Create(
      cl_context context, cl_device_id device, uint64_t base_align, StreamStatus* status,
      std::shared_ptr<OpenClStreamRegistry> registry);
  ~OpenClStream() override;

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
  // The cl_command_queue. Commands a caller enqueues on it directly are
  // ordered with this stream's device work only once everything enqueued
  // before has reached the queue: call BlockHostUntilDone first.
  void* native_handle() override { return queue_; }

  // Runs `work` in stream order (see DeviceWork); skipped when the stream
  // has failed. Library plugins (CLBlast, Philox) enqueue through this.
  void EnqueueDeviceWork(DeviceWork work);
  // Holds `held` until the work queued before this call has been submitted
  // to the command queue (also on a failed stream). Deallocate defers its
  // release through it.
  void HoldUntilQueuedWorkDone(std::shared_ptr<void> held) {
    Enqueue([held = std::move(held)] { return absl::OkStatus(); }, /*run_after_error=*/true);
  }

  cl_command_queue queue() const { return queue_; }
  cl_context context() const { return context_; }

 private:
  using Task = absl::AnyInvocable<absl::Status() &&>;

  OpenClStream(cl_context context, cl_command_queue queue, uint64_t base_align,
               StreamStatus* status, std::shared_ptr<OpenClStreamRegistry> registry);

  // Queues `task` for the worker (run_after_error: event records, Notify and
  // drains still run on a failed stream); returns its number.
  uint64_t Enqueue(Task task, bool run_after_error = false) {
    return worker_.Enqueue(std::move(task), run_after_error);
  }
  // Worker only: keeps `event` (its reference passes to the stream) as the
  // latest command, or returns ClStatus(error, what()) for a failed enqueue;
  // `what` names the call with its offsets and sizes.
  absl::Status Track(cl_int error, cl_event event, absl::FunctionRef<std::string()> what);
  void Track(cl_event event);
  // Worker only: waits for the queue and reports the last command's failure.
  absl::Status DrainDevice();

  const cl_context context_;
  const cl_command_queue queue_;
  const uint64_t base_align_;  // CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes.
  StreamStatus* const status_;
  const std::shared_ptr<OpenClStreamRegistry> registry_;

  // Worker-only state.
  cl_event last_event_ = nullptr;  // Retained; the latest command since the last drain.
  bool dirty_ = false;             // Commands enqueued since the last drain.
  std::vector<std::shared_ptr<const void>> keep_alive_;  // Host data of pending commands.

  StreamWorker<Task> worker_;  // Last: its thread runs tasks that use the rest.
};

}  // namespace rill

#endif  // RILL_PLATFORM_OPENCL_OPENCL_STREAM_H_
