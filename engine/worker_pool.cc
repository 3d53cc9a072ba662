#include "engine/worker_pool.h"

#include <algorithm>
#include <chrono>

#include "engine/opr_block.h"

namespace rill::engine::internal {

WorkerPool::WorkerPool(std::string name, int threads, int first_worker_id, RunFn run)
    : name_(std::move(name)), run_(std::move(run)) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, id = first_worker_id + i] { Work(id); });
  }
}

WorkerPool::~WorkerPool() { Stop(); }

namespace {

// The pool a thread works for, and the function it runs next: a function
// made ready by the one it just ran, taken without a queue round trip when
// nothing else is queued (so priority and push order still hold).
thread_local WorkerPool* tls_pool = nullptr;
thread_local OprBlock* tls_next = nullptr;
// Functions this worker took from the queue and has not started yet: while
// there are any, a new ready function goes through the queue behind them.
thread_local int tls_taken = 0;

}  // namespace

void WorkerPool::Push(OprBlock* op, bool may_continue) {
  if (may_continue && tls_pool == this && tls_next == nullptr && tls_taken == 0 &&
      queued_.load(std::memory_order_acquire) == 0) {
    tls_next = op;
    return;
  }
  {
    SpinLockHolder lock(&queue_mu_);
    queue_.push(Entry{op->priority, op->seq, op});
  }
  queued_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst) > 0) {
    MutexLock lock(&sleep_mu_);
    cv_.Signal();
  }
}

void WorkerPool::Stop() {
  if (stop_.exchange(true)) return;
  {
    MutexLock lock(&sleep_mu_);
    cv_.SignalAll();
  }
  for (std::thread& t : threads_) t.join();
}

int WorkerPool::QueuedForDescribe(std::vector<OprBlock*>* out) {
  SpinLockHolder lock(&queue_mu_);
  std::priority_queue<Entry> copy = queue_;
  int n = 0;
  while (!copy.empty()) {
    out->push_back(copy.top().op);
    copy.pop();
    ++n;
  }
  return n;
}

int WorkerPool::TryPop(OprBlock** out) {
  const int64_t queued = queued_.load(std::memory_order_acquire);
  if (queued == 0) return 0;
  // A share of the backlog, so the other workers find work too.
  const int64_t want = std::clamp<int64_t>(queued / static_cast<int64_t>(threads_.size() + 1), 1,
                                           kMaxTaken);
  SpinLockHolder lock(&queue_mu_);
  int n = 0;
  while (n < want && !queue_.empty()) {
    out[n++] = queue_.top().op;
    queue_.pop();
  }
  if (n > 0) queued_.fetch_sub(n, std::memory_order_relaxed);
  return n;
}

void WorkerPool::Work(int worker) {
  tls_pool = this;
  OprBlock* taken[kMaxTaken];
  for (;;) {
    int n = TryPop(taken);
    // Poll (yielding the core) before sleeping: waking a sleeping thread
    // costs far more than a push, above all on virtual machines whose idle
    // vCPUs halt, so a producer that pushes back to back must find the
    // workers awake.
    if (n == 0) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 1; n == 0; ++i) {
        if (i <= kYieldPolls) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(kNapTime);
          if (std::chrono::steady_clock::now() - start > kSpinTime) break;
        }
        n = TryPop(taken);
      }
    }
    if (n == 0) {
      MutexLock lock(&sleep_mu_);
      sleeping_.fetch_add(1, std::memory_order_seq_cst);
      // Push increments queued_ before it reads sleeping_, so either it sees
      // this sleeper and signals under sleep_mu_, or this sees its entry.
      while (queued_.load(std::memory_order_seq_cst) == 0 && !stop_.load()) cv_.Wait(&sleep_mu_);
      sleeping_.fetch_sub(1, std::memory_order_seq_cst);
      if (queued_.load() == 0 && stop_.load()) return;  // Stopped and drained.
      continue;
    }
    for (int i = 0; i < n; ++i) {
      tls_taken = n - i - 1;
      run_(taken[i], worker);
      while (tls_next != nullptr) {
        OprBlock* next = tls_next;
        tls_next = nullptr;
        run_(next, worker);
      }
    }
  }
}

}  // namespace rill::engine::internal
