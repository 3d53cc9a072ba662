#ifndef RILL_PLATFORM_HOST_HOST_STREAM_H_
#define RILL_PLATFORM_HOST_HOST_STREAM_H_

#include <cstdint>
#include <memory>

#include "absl/functional/any_invocable.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/platform/host/host_task.h"
#include "rill/platform/utils/backend_stream_set.h"
#include "rill/platform/utils/stream_worker.h"

namespace rill {

class HostStream;
// The live streams of one host executor (for SynchronizeAllActivity).
using HostStreamRegistry = BackendStreamSet<HostStream>;

// A host stream: an in-order queue drained by its own worker thread (a
// StreamWorker, which says what a hand-off costs).
//
// After a task fails, the stream's StreamStatus holds the error and later
// tasks are skipped, except event records, which complete carrying the
// error. Destruction drains the queue and joins the worker.
//
// Backpressure: at most kMaxQueued tasks wait in the queue; a producer that
// runs further ahead blocks until the worker takes the queue (as a CUDA
// stream's launch queue does), so run-ahead cannot eat memory. Work enqueued
// from the worker itself (a callback that enqueues) never blocks.
// Thread-safe.
class HostStream : public StreamInterface {
 public:
  static constexpr size_t kMaxQueued = 1 << 16;

  HostStream(StreamStatus* status, std::shared_ptr<HostStreamRegistry> registry);
  ~HostStream() override;

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

  // Holds `held` until the work queued before this call has run (also on a
  // failed stream). Deallocate defers frees through it.
  void HoldUntilQueuedWorkDone(std::shared_ptr<void> held) {
    Enqueue([held = std::move(held)] { return absl::OkStatus(); }, /*run_after_error=*/true);
  }

 private:
  void Enqueue(HostTask task, bool run_after_error = false) {
    worker_.Enqueue(std::move(task), run_after_error);
  }

  StreamStatus* const status_;
  const std::shared_ptr<HostStreamRegistry> registry_;
  StreamWorker<HostTask> worker_;  // Last: its thread runs tasks that use the rest.
};

}  // namespace rill

#endif  // RILL_PLATFORM_HOST_HOST_STREAM_H_
