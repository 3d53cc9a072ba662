#ifndef RILL_PLATFORM_HOST_HOST_STREAM_H_
#define RILL_PLATFORM_HOST_HOST_STREAM_H_

#include <atomic>
#include <cstdint>
#include <vector>
#include <memory>
#include <set>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "base/mutex.h"
#include "executor/stream_executor_interface.h"
#include "platform/host/host_task.h"

namespace rill {

class HostStreamRegistry;

// A host stream: an in-order queue drained by its own worker thread.
//
// Hand-off cost: the worker takes every queued task at once and runs them
// without touching the lock again; before sleeping it spins briefly, and
// the producer signals only a sleeping worker. So work queued back to back
// costs one lock and no wake-up per operation.
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

  // Runs `task` on this stream's worker after the work before it; its error
  // puts the stream in the error state. DoHostCallback without the
  // AnyInvocable: host library plugins enqueue through this, so a call's
  // captures (up to HostTask::kInlineSize bytes) are never heap-allocated.
  void EnqueueTask(HostTask task) { Enqueue(std::move(task)); }

 private:
  struct Entry {
    HostTask task;
    bool run_after_error;  // Event records still run on a failed stream.
  };
  // Batches larger than this give their memory back after running.
  static constexpr size_t kKeepCapacity = 4096;

  void Enqueue(HostTask task, bool run_after_error = false);
  void WorkLoop();

  StreamStatus* const status_;
  const std::shared_ptr<HostStreamRegistry> registry_;

  Mutex mu_;
  CondVar work_cv_;
  CondVar done_cv_;
  CondVar space_cv_;
  // Swapped with the worker's batch, so both keep their capacity: no
  // allocation per operation in steady state.
  std::vector<Entry> queue_ ABSL_GUARDED_BY(mu_);
  bool sleeping_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int blocked_producers_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> pending_{0};    // Enqueued, not yet taken by the worker.
  std::atomic<uint64_t> completed_{0};  // Tasks finished (run or skipped).
  // Targets of the threads asleep in BlockHostUntilDone, and the smallest
  // of them: the worker signals only when it reaches one, not per task.
  std::multiset<uint64_t> wait_targets_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> wake_at_{UINT64_MAX};
  std::thread worker_;
  std::thread::id worker_id_;
};

}  // namespace rill

#endif  // RILL_PLATFORM_HOST_HOST_STREAM_H_
