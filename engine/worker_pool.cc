#include "engine/worker_pool.h"

#include "engine/opr_block.h"

namespace rill::engine::internal {

WorkerPool::WorkerPool(std::string name, int threads, int first_worker_id, RunFn run)
    : name_(std::move(name)), run_(std::move(run)) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, id = first_worker_id + i] { Work(id); });
  }
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Push(OprBlock* op) {
  MutexLock lock(&mu_);
  queue_.push(Entry{op->priority, op->seq, op});
  queued_.fetch_add(1, std::memory_order_release);
  if (sleeping_ > 0) cv_.Signal();
}

void WorkerPool::Stop() {
  {
    MutexLock lock(&mu_);
    if (stop_) return;
    stop_ = true;
    cv_.SignalAll();
  }
  for (std::thread& t : threads_) t.join();
}

int WorkerPool::QueuedForDescribe(std::vector<OprBlock*>* out) {
  MutexLock lock(&mu_);
  std::priority_queue<Entry> copy = queue_;
  int n = 0;
  while (!copy.empty()) {
    out->push_back(copy.top().op);
    copy.pop();
    ++n;
  }
  return n;
}

void WorkerPool::Work(int worker) {
  for (;;) {
    // A short spin catches work pushed back to back without a sleep.
    for (int i = 0; i < 200 && queued_.load(std::memory_order_acquire) == 0; ++i) {
      std::this_thread::yield();
    }
    OprBlock* op;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !stop_) {
        ++sleeping_;
        cv_.Wait(&mu_);
        --sleeping_;
      }
      if (queue_.empty()) return;  // Stopped and drained.
      op = queue_.top().op;
      queue_.pop();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    run_(op, worker);
  }
}

}  // namespace rill::engine::internal
