#ifndef RILL_ENGINE_WORKER_POOL_H_
#define RILL_ENGINE_WORKER_POOL_H_

// rill:internal -- not installed: the engine's implementation; users include engine.h.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "rill/base/mutex.h"
#include "rill/base/spin_lock.h"
#include "rill/engine/ready_queue.h"

namespace rill::engine::internal {

struct OprBlock;

// A ready queue and the threads that drain it. Ready functions are taken by
// priority (higher first), then by push order. A producer never takes the
// queue's lock: it links the function onto a lock-free inbox, which a worker
// moves into the ordered queue whole when it takes work. Workers spin
// briefly before sleeping, and a producer signals only when a worker sleeps.
// Thread-safe.
class WorkerPool {
 public:
  // How long an idle worker polls for work before it sleeps.
  static constexpr std::chrono::microseconds kSpinTime{500};
  // It first polls yielding the core for kYieldTime, then naps kNapTime
  // between polls, leaving the core to the pushing thread. The yield phase
  // is bounded in time, not in polls: a yield is a system call, 1.1-1.5 us
  // on a paravirtualized guest (a few polls) and far less on bare metal.
  static constexpr std::chrono::microseconds kYieldTime{5};
  static constexpr std::chrono::microseconds kNapTime{20};

  using RunFn = std::function<void(OprBlock* op, int worker)>;
  // Called on a worker thread when it starts, each time it finds no work,
  // and before it exits: the place to hand back what it batches.
  using IdleFn = std::function<void()>;
  // Called on a worker thread with the function it will run after the one
  // it is about to run: the place to start cache misses early.
  using LookAheadFn = void (*)(const OprBlock* op);

  // `first_worker_id` numbers the threads for profiles.
  WorkerPool(std::string name, int threads, int first_worker_id, RunFn run, IdleFn idle = nullptr,
             LookAheadFn look_ahead = nullptr);
  ~WorkerPool();  // Stop() if not yet stopped.

  // Queues `op`. With `may_continue`, a worker of this pool pushing it (a
  // completion made it ready, and it alone) runs it next itself when
  // nothing else is queued, which keeps priority and push order.
  void Push(OprBlock* op, bool may_continue = false);
  // Lets the workers finish what is queued, then joins them.
  void Stop();
  // Runs ready functions on the calling thread, which is none of the
  // pool's, as one more worker (numbered `worker`), until `done()` holds --
  // checked between functions and, while nothing is ready, whenever
  // WakeHelpers is called. Returns true then, false when the pool was
  // stopped first.
  bool Help(int worker, absl::FunctionRef<bool()> done);
  // Makes the threads in Help check their `done` again: call it after
  // making one true.
  void WakeHelpers();
  // Calls `describe` on each queued function, best first, under the
  // queue's lock (so no worker takes and recycles one meanwhile); returns
  // how many there are.
  int DescribeQueued(absl::FunctionRef<void(const OprBlock*)> describe);
  const std::string& name() const { return name_; }

 private:
  void Work(int worker);
  // The loop of Work and Help: runs what is ready, sleeping when nothing
  // is, until the pool is stopped and drained (false) or `*done` holds
  // (true; never, without `done`).
  bool RunUntil(int worker, const absl::FunctionRef<bool()>* done);

  // Most functions a worker takes from the queue at once.
  static constexpr int kMaxTaken = 16;
  // Takes the best ready entries -- one, or a share of a long queue, up to
  // kMaxTaken -- into `out`; returns how many (0: the queue is empty).
  // Taking several per lock keeps the workers off each other's lock.
  int TryPop(OprBlock** out);
  // Moves the inbox into the ordered queue. Caller holds queue_mu_.
  void DrainInboxLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue_mu_);
  // Whether anything is ready, exactly: takes queue_mu_, so that an inbox
  // being moved into the queue is seen in one place or the other.
  bool AnyReady();
  // The same without the lock: may miss entries being moved (a hint).
  bool HasWork() const {
    return inbox_.load(std::memory_order_seq_cst) != nullptr ||
           queued_.load(std::memory_order_seq_cst) > 0;
  }

  const std::string name_;
  const RunFn run_;
  const IdleFn idle_;
  const LookAheadFn look_ahead_;
  // Ready functions not yet in the queue, newest first, linked through
  // OprBlock::next_ready: producers push with a CAS, a worker takes all.
  alignas(64) std::atomic<OprBlock*> inbox_{nullptr};
  // The queue is guarded by a spin lock that only workers (and
  // QueuedForDescribe) take; queued_ is its size, written under the lock.
  // Sleeping and waking use the mutex and condition variable.
  alignas(64) SpinLock queue_mu_;
  ReadyQueue<OprBlock*> queue_ ABSL_GUARDED_BY(queue_mu_);
  std::vector<OprBlock*> drained_ ABSL_GUARDED_BY(queue_mu_);  // DrainInboxLocked's scratch.
  std::atomic<int64_t> queued_{0};
  alignas(64) std::atomic<int> sleeping_{0};
  Mutex sleep_mu_;
  CondVar cv_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_WORKER_POOL_H_
