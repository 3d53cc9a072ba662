#include "rill/engine/worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "rill/engine/opr_block.h"
#include "rill/engine/prefetch.h"

namespace rill::engine::internal {

WorkerPool::WorkerPool(std::string name, int threads, int first_worker_id, RunFn run, IdleFn idle,
                       LookAheadFn look_ahead)
    : name_(std::move(name)),
      run_(std::move(run)),
      idle_(std::move(idle)),
      look_ahead_(look_ahead) {
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

// The blocks this thread linked into an inbox most recently, for
// OprBlock::inbox_hint: a block points at the one linked kHintDistance
// links before it, which a walk of the inbox (newest first) meets
// kHintDistance steps later.
constexpr int kHintDistance = 4;
thread_local OprBlock* tls_linked[kHintDistance] = {};
thread_local unsigned tls_linked_count = 0;

}  // namespace

void WorkerPool::Push(OprBlock* op, bool may_continue) {
  if (may_continue && tls_pool == this && tls_next == nullptr && tls_taken == 0 && !HasWork()) {
    tls_next = op;
    return;
  }
  OprBlock*& earlier = tls_linked[tls_linked_count++ % kHintDistance];
  op->inbox_hint = earlier;
  earlier = op;
  OprBlock* head = inbox_.load(std::memory_order_relaxed);
  do {
    op->next_ready = head;
  } while (!inbox_.compare_exchange_weak(head, op, std::memory_order_seq_cst,
                                         std::memory_order_relaxed));
  // Dekker with Work's sleep: the CAS is ordered before this load, and the
  // sleeper's increment before its HasWork check.
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

int WorkerPool::DescribeQueued(absl::FunctionRef<void(const OprBlock*)> describe) {
  SpinLockHolder lock(&queue_mu_);
  DrainInboxLocked();
  const std::vector<OprBlock*> ordered = queue_.InOrder();
  for (const OprBlock* op : ordered) describe(op);
  return static_cast<int>(ordered.size());
}

void WorkerPool::DrainInboxLocked() {
  OprBlock* list = inbox_.exchange(nullptr, std::memory_order_acquire);
  if (list == nullptr) return;
  // Each link is a miss on a block that another thread just wrote; the
  // hints keep several of them in flight. The walk only reads the blocks
  // (their lines stay shared with the thread that wrote them).
  drained_.clear();
  for (OprBlock* op = list; op != nullptr; op = op->next_ready) {
    PrefetchForRead(op->inbox_hint);
    drained_.push_back(op);
  }
  // Newest first: queue them oldest first, so the queue mostly appends in
  // push order.
  for (auto it = drained_.rbegin(); it != drained_.rend(); ++it) {
    OprBlock* op = *it;
    queue_.Push({op->priority, op->seq, op});
  }
  queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_seq_cst);
}

bool WorkerPool::AnyReady() {
  SpinLockHolder lock(&queue_mu_);
  return inbox_.load(std::memory_order_seq_cst) != nullptr || !queue_.empty();
}

int WorkerPool::TryPop(OprBlock** out) {
  if (inbox_.load(std::memory_order_relaxed) == nullptr &&
      queued_.load(std::memory_order_relaxed) == 0) {
    return 0;
  }
  SpinLockHolder lock(&queue_mu_);
  DrainInboxLocked();
  // A share of the backlog, so the other workers find work too.
  const int64_t want = std::clamp<int64_t>(
      static_cast<int64_t>(queue_.size()) / static_cast<int64_t>(threads_.size() + 1), 1,
      kMaxTaken);
  int n = 0;
  while (n < want && !queue_.empty()) out[n++] = queue_.Pop();
  queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_seq_cst);
  return n;
}

void WorkerPool::Work(int worker) {
  tls_pool = this;
  // "rill-<pool>-<n>" (the kernel keeps 15 characters), for debuggers and profilers.
  const std::string thread_name = absl::StrCat("rill-", name_, "-", worker).substr(0, 15);
  pthread_setname_np(pthread_self(), thread_name.c_str());
  if (idle_) idle_();
  RunUntil(worker, nullptr);
  if (idle_) idle_();
}

bool WorkerPool::Help(int worker, absl::FunctionRef<bool()> done) {
  // The thread works for this pool for the call (continuations included),
  // and for no pool after it, however it leaves.
  struct Scope {
    WorkerPool* pool;
    WorkerPool* saved_pool = tls_pool;
    int saved_taken = tls_taken;
    explicit Scope(WorkerPool* p) : pool(p) {
      tls_pool = p;
      tls_taken = 0;
    }
    ~Scope() {
      tls_pool = saved_pool;
      tls_taken = saved_taken;
    }
  } scope(this);
  return RunUntil(worker, &done);
}

void WorkerPool::WakeHelpers() {
  MutexLock lock(&sleep_mu_);
  cv_.SignalAll();
}

bool WorkerPool::RunUntil(int worker, const absl::FunctionRef<bool()>* done) {
  auto finished = [done] { return done != nullptr && (*done)(); };
  OprBlock* taken[kMaxTaken];
  for (;;) {
    if (finished()) return true;
    int n = TryPop(taken);
    if (n == 0 && idle_) idle_();
    // Poll (yielding the core) before sleeping: waking a sleeping thread
    // costs far more than a push, above all on virtual machines whose idle
    // vCPUs halt, so a producer that pushes back to back must find the
    // workers awake.
    if (n == 0) {
      const auto start = std::chrono::steady_clock::now();
      while (n == 0) {
        if (std::chrono::steady_clock::now() - start < kYieldTime) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(kNapTime);
          if (std::chrono::steady_clock::now() - start > kSpinTime) break;
        }
        if (finished()) return true;
        n = TryPop(taken);
      }
    }
    if (n == 0) {
      MutexLock lock(&sleep_mu_);
      sleeping_.fetch_add(1, std::memory_order_seq_cst);
      // Push links into the inbox before it reads sleeping_, so either it
      // sees this sleeper and signals under sleep_mu_, or this sees its entry
      // (AnyReady looks under queue_mu_, so it also sees entries that another
      // worker is moving from the inbox into the queue). A helper's `done`
      // is made true before WakeHelpers takes sleep_mu_.
      while (!AnyReady() && !stop_.load() && !finished()) cv_.Wait(&sleep_mu_);
      sleeping_.fetch_sub(1, std::memory_order_seq_cst);
      if (!AnyReady() && stop_.load()) return finished();  // Stopped and drained.
      continue;
    }
    if (look_ahead_ != nullptr) {
      // The look-ahead reads each block's deps, which the pusher wrote.
      for (int i = 1; i < n; ++i) PrefetchForRead(&taken[i]->deps);
    }
    for (int i = 0; i < n; ++i) {
      tls_taken = n - i - 1;
      if (i + 1 < n && look_ahead_ != nullptr) look_ahead_(taken[i + 1]);
      run_(taken[i], worker);
      while (tls_next != nullptr) {
        OprBlock* next = tls_next;
        tls_next = nullptr;
        if (done != nullptr && finished()) {
          // A helper whose wait is over leaves a chain to the workers
          // (it could be endless: a function that pushes its successor).
          Push(next);
          break;
        }
        run_(next, worker);
      }
    }
  }
}

}  // namespace rill::engine::internal
