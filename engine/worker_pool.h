#ifndef RILL_ENGINE_WORKER_POOL_H_
#define RILL_ENGINE_WORKER_POOL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/spin_lock.h"

namespace rill::engine::internal {

struct OprBlock;

// A ready queue and the threads that drain it. Ready functions are taken by
// priority (higher first), then by push order. Workers spin briefly before
// sleeping, and a producer signals only when a worker sleeps. Thread-safe.
class WorkerPool {
 public:
  // How long an idle worker polls for work before it sleeps.
  static constexpr std::chrono::microseconds kSpinTime{500};
  // It first polls kYieldPolls times yielding the core, then naps kNapTime
  // between polls, leaving the core to the pushing thread.
  static constexpr int kYieldPolls = 32;
  static constexpr std::chrono::microseconds kNapTime{20};

  using RunFn = std::function<void(OprBlock* op, int worker)>;

  // `first_worker_id` numbers the threads for profiles.
  WorkerPool(std::string name, int threads, int first_worker_id, RunFn run);
  ~WorkerPool();  // Stop() if not yet stopped.

  // Queues `op`. With `may_continue`, a worker of this pool pushing it (a
  // completion made it ready, and it alone) runs it next itself when
  // nothing else is queued, which keeps priority and push order.
  void Push(OprBlock* op, bool may_continue = false);
  // Lets the workers finish what is queued, then joins them.
  void Stop();
  int QueuedForDescribe(std::vector<OprBlock*>* out);
  const std::string& name() const { return name_; }

 private:
  struct Entry {
    int priority;
    uint64_t seq;
    OprBlock* op;
    bool operator<(const Entry& o) const {  // Max-heap: higher priority, then older.
      return priority != o.priority ? priority < o.priority : seq > o.seq;
    }
  };
  void Work(int worker);

  // Most functions a worker takes from the queue at once.
  static constexpr int kMaxTaken = 16;
  // Takes the best ready entries -- one, or a share of a long queue, up to
  // kMaxTaken -- into `out`; returns how many (0: the queue is empty).
  // Taking several per lock keeps workers off the lock the pusher needs.
  int TryPop(OprBlock** out);

  const std::string name_;
  const RunFn run_;
  // The queue is guarded by a spin lock (held for a heap operation only);
  // sleeping and waking use the mutex and condition variable.
  SpinLock queue_mu_;
  std::priority_queue<Entry> queue_ ABSL_GUARDED_BY(queue_mu_);
  alignas(64) std::atomic<int64_t> queued_{0};
  alignas(64) std::atomic<int> sleeping_{0};
  Mutex sleep_mu_;
  CondVar cv_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_WORKER_POOL_H_
