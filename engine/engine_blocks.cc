// EngineBase's pool of blocks (OprBlock): taking one for a push, giving it
// back when its function is done (in batches per worker thread, see
// worker_batch.h), resetting it for reuse, and keeping the blocks of
// abandoned functions for the process's life. Pushing is in engine_push.cc,
// retiring and diagnostics in engine_base.cc.

#include <atomic>
#include <vector>

#include "rill/base/mutex.h"
#include "rill/base/spin_lock.h"
#include "rill/engine/engine_base.h"
#include "rill/engine/opr_block.h"
#include "rill/engine/prefetch.h"
#include "rill/engine/worker_batch.h"

namespace rill::engine::internal {

constinit thread_local WorkerBatch tls_worker;

OprBlock* EngineBase::NewBlock() {
  OprBlock* op = nullptr;
  {
    SpinLockHolder lock(&spare_mu_);
    if (spare_ == nullptr) spare_ = returned_.exchange(nullptr, std::memory_order_acquire);
    if (spare_ != nullptr) {
      op = spare_;
      spare_ = op->next_free;
      // A worker reset the next block last: start the misses on the lines
      // a push writes (header, deps, function) now, for the next push.
      if (spare_ != nullptr) {
        const char* first = reinterpret_cast<const char*>(spare_);
        const char* end = reinterpret_cast<const char*>(&spare_->own.prop);
        for (const char* line = first; line < end; line += 64) PrefetchForWrite(line);
      }
    }
  }
  if (op == nullptr) {
    op = new OprBlock();
    op->engine = this;
  }
  op->opr = &op->own;
  return op;
}

void EngineBase::ReturnBlocks(OprBlock* first, OprBlock* last) {
  last->next_free = returned_.load(std::memory_order_relaxed);
  while (!returned_.compare_exchange_weak(last->next_free, first, std::memory_order_release,
                                          std::memory_order_relaxed)) {
  }
}

namespace {

// Blocks of functions that Shutdown abandoned: kept for the process's life,
// so that their Completion, called at any time (also after the engine is
// destroyed), finds done_seq and is ignored. Reachable from here, so leak
// checkers do not report them. One per abandoned function; they only arise
// when a Completion was never called.
struct AbandonedBlocks {
  Mutex mu;
  std::vector<OprBlock*> blocks ABSL_GUARDED_BY(mu);
};
AbandonedBlocks& Abandoned() {
  static AbandonedBlocks* const abandoned = new AbandonedBlocks();
  return *abandoned;
}

}  // namespace

void EngineBase::Recycle(OprBlock* op) {
  op->Reset();
  if ((op->done_seq.load(std::memory_order_relaxed) & OprBlock::kAbandoned) != 0) {
    AbandonedBlocks& abandoned = Abandoned();
    MutexLock lock(&abandoned.mu);
    abandoned.blocks.push_back(op);
    return;
  }
  WorkerBatch& batch = tls_worker;
  if (batch.engine != this) {
    ReturnBlocks(op, op);
    return;
  }
  op->next_free = batch.first;
  batch.first = op;
  if (batch.last == nullptr) batch.last = op;
  if (++batch.size == WorkerBatch::kSize) FlushRecycled();
}

void EngineBase::FlushRecycled() {
  WorkerBatch& batch = tls_worker;
  if (batch.first == nullptr) return;
  ReturnBlocks(batch.first, batch.last);
  batch.first = batch.last = nullptr;
  batch.size = 0;
}

void EngineBase::WorkerIdle() {
  WorkerBatch& batch = tls_worker;
  batch.engine = this;
  FlushRecycled();
  // Retire skips most checks for a pusher waiting for room; a worker that
  // runs out of work makes the one it may have skipped last.
  batch.retired_unchecked = 0;
  if (room_waiters_.load(std::memory_order_seq_cst) > 0) WakeWaiters(false, true);
}

void OprBlock::Release() { engine->Recycle(this); }

void OprBlock::Reset() {
  if (own.sync_fn) own.sync_fn = nullptr;
  if (own.async_fn) own.async_fn = nullptr;
  if (own.prop != FnProperty::kNormal) own.prop = FnProperty::kNormal;
  if (!own.name.empty()) own.name.clear();
  if (shared != nullptr) shared.reset();
  if (opr != &own) opr = &own;
  if (!(ctx == Context())) ctx = Context();
  if (priority != 0) priority = 0;
  if (pending_fences.load(std::memory_order_relaxed) != 0) {
    pending_fences.store(0, std::memory_order_relaxed);
  }
  if (worker != -1) worker = -1;
  if (!status.ok()) status = absl::OkStatus();
  if (!async_status.ok()) async_status = absl::OkStatus();  // Also when moved from.
  if (stream != nullptr) stream = nullptr;
  if (pool != nullptr) pool = nullptr;
  if (fence != nullptr) fence.reset();
  if (start_ns != 0 || end_ns != 0) start_ns = end_ns = 0;
  if (device_span != nullptr) device_span.reset();
}

}  // namespace rill::engine::internal
