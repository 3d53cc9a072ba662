#ifndef RILL_PLATFORM_UTILS_STREAM_WORKER_H_
#define RILL_PLATFORM_UTILS_STREAM_WORKER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "rill/base/cpu_relax.h"
#include "rill/base/mutex.h"
#include "rill/stream/stream_status.h"

namespace rill {

// Polls `done` for up to 50 us -- first with a CPU pause, which leaves the
// cache line to the other core, then yielding the core in case the thread
// we wait for needs it -- and returns whether it became true. The clock is
// read after every yield: on a busy machine one yield can last a scheduler
// slice, and a spinner that checked it only now and then would keep a core
// from the threads doing the work (it once held the caller of a
// multithreaded oneDNN convolution at 100% of a core).
template <typename Done>
bool SpinUntil(Done done) {
  constexpr auto kSpinTime = std::chrono::microseconds(50);
  constexpr int kPauses = 256;
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (int i = 0;; ++i) {
    if (done()) return true;
    if (i < kPauses) {
      if ((i & 15) == 15 && std::chrono::steady_clock::now() > deadline) return false;
      CpuRelax();
    } else {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
  }
}

// The thread behind a backend stream whose work runs on the host in order
// (the host backend's streams; the OpenCL backend's enqueue thread): an
// in-order queue of tasks (`Task() &&` returns absl::Status) and the thread
// that drains it.
//
// After a task fails, `status` holds the error and later tasks are skipped,
// except those queued with `run_after_error` (event records, notifications,
// drains). Hand-off cost: the thread takes every queued task at once and runs
// them without touching the lock again; before sleeping it spins briefly,
// and a producer signals only a sleeping thread, so work queued back to back
// costs one lock and no wake-up per task. At most `max_queued` tasks wait;
// a producer that runs further ahead blocks until the thread takes the
// queue, except the thread itself (a task that enqueues never blocks).
// Destruction (or Stop) runs what is queued and joins the thread.
// Thread-safe.
template <typename Task>
class StreamWorker {
 public:
  explicit StreamWorker(StreamStatus* status,
                        size_t max_queued = std::numeric_limits<size_t>::max())
      : status_(status), max_queued_(max_queued) {
    thread_ = std::thread([this] { Loop(); });
    thread_id_ = thread_.get_id();
  }
  ~StreamWorker() { Stop(); }
  StreamWorker(const StreamWorker&) = delete;
  StreamWorker& operator=(const StreamWorker&) = delete;

  // Queues `task` after the work before it; returns its number (1, 2, ...),
  // which completed() reaches once it has run or been skipped.
  uint64_t Enqueue(Task task, bool run_after_error = false) {
    MutexLock lock(&mu_);
    if (queue_.size() >= max_queued_ && !OnThread()) {
      ++blocked_producers_;
      space_cv_.Wait(
          &mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.size() < max_queued_; });
      --blocked_producers_;
    }
    queue_.push_back(Entry{std::move(task), run_after_error});
    pending_.fetch_add(1, std::memory_order_release);
    if (sleeping_) work_cv_.Signal();
    return ++enqueued_;
  }

  // The number of the latest task queued (0: none yet).
  uint64_t enqueued() const {
    MutexLock lock(&mu_);
    return enqueued_;
  }

  // Returns once task number `target` has run or been skipped: polls
  // briefly (short work is usually done within microseconds), then sleeps.
  void WaitFor(uint64_t target) {
    if (SpinUntil([&] { return completed_.load(std::memory_order_acquire) >= target; })) return;
    MutexLock lock(&mu_);
    wait_targets_.insert(target);
    wake_at_.store(*wait_targets_.begin(), std::memory_order_seq_cst);
    done_cv_.Wait(&mu_, [&] { return completed_.load(std::memory_order_seq_cst) >= target; });
    wait_targets_.erase(wait_targets_.find(target));
    wake_at_.store(wait_targets_.empty() ? UINT64_MAX : *wait_targets_.begin(),
                   std::memory_order_seq_cst);
  }

  // Whether the caller is this worker's thread (a task running).
  bool OnThread() const { return std::this_thread::get_id() == thread_id_; }

  // Runs what is queued, then joins the thread. Idempotent; not from a task.
  void Stop() {
    {
      MutexLock lock(&mu_);
      if (stop_) return;
      stop_ = true;
      work_cv_.Signal();
    }
    thread_.join();
  }

 private:
  struct Entry {
    Task task;
    bool run_after_error;
  };
  // Batches larger than this give their memory back after running.
  static constexpr size_t kKeepCapacity = 4096;

  void Loop() {
    std::vector<Entry>& batch = batch_;
    for (;;) {
      // Poll for more work a little before sleeping, so a producer that
      // queues back to back never pays for a wake-up.
      SpinUntil([this] { return pending_.load(std::memory_order_acquire) != 0; });
      {
        MutexLock lock(&mu_);
        while (queue_.empty() && !stop_) {
          sleeping_ = true;
          work_cv_.Wait(&mu_);
          sleeping_ = false;
        }
        if (queue_.empty()) return;  // Stopped and drained.
        batch.swap(queue_);
        pending_.fetch_sub(batch.size(), std::memory_order_relaxed);
        if (blocked_producers_ > 0) space_cv_.SignalAll();
      }
      for (Entry& entry : batch) {
        if (status_->queue_ok() || entry.run_after_error) status_->Update(std::move(entry.task)());
        entry.task = Task();  // Release captures before signalling completion.
        const uint64_t done = completed_.fetch_add(1, std::memory_order_seq_cst) + 1;
        if (done >= wake_at_.load(std::memory_order_seq_cst)) {
          MutexLock lock(&mu_);
          done_cv_.SignalAll();
        }
      }
      // A burst must not pin its memory for the stream's life.
      if (batch.capacity() > kKeepCapacity) {
        std::vector<Entry>().swap(batch);
      } else {
        batch.clear();
      }
    }
  }

  StreamStatus* const status_;
  const size_t max_queued_;

  mutable Mutex mu_;
  CondVar work_cv_;   // Signalled only while the thread sleeps.
  CondVar done_cv_;   // Signalled only when completed_ reaches wake_at_.
  CondVar space_cv_;  // Signalled when the thread takes a full queue.
  // Swapped with the thread's batch, so both keep their capacity: no
  // allocation per task in steady state.
  std::vector<Entry> queue_ ABSL_GUARDED_BY(mu_);
  // The tasks the thread is running; only the thread touches it. A member,
  // not a local of Loop, so that its storage is owned by this object (a
  // leak checker that scans the heap finds it while the thread sleeps).
  std::vector<Entry> batch_;
  bool sleeping_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int blocked_producers_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> pending_{0};    // Queued, not yet taken by the thread.
  std::atomic<uint64_t> completed_{0};  // Tasks finished (run or skipped).
  // Targets of the threads asleep in WaitFor, and the smallest of them
  // (UINT64_MAX when none): the thread signals only when it reaches one.
  std::multiset<uint64_t> wait_targets_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> wake_at_{UINT64_MAX};
  std::thread thread_;
  std::thread::id thread_id_;  // Set before any task can run.
};

}  // namespace rill

#endif  // RILL_PLATFORM_UTILS_STREAM_WORKER_H_
