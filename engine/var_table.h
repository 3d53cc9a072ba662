#ifndef RILL_ENGINE_VAR_TABLE_H_
#define RILL_ENGINE_VAR_TABLE_H_

// rill:internal -- not installed: the engine's implementation; users include engine.h.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rill/base/mutex.h"
#include "rill/base/spin_lock.h"
#include "rill/engine/engine.h"
#include "rill/engine/prefetch.h"

namespace rill::engine::internal {

struct OprBlock;
struct Fence;

// Functions granted a dependency, or made ready, by a completion (few at a
// time: no allocation).
using ReadyList = absl::InlinedVector<OprBlock*, 8>;

// One dependency of a function on a var; lives inside the OprBlock.
struct VarDep {
  struct Var* var = nullptr;
  bool write = false;
};

// The dependency state of one var (MXNet's ThreadedVar): readers between two
// writes run together, a write waits for the readers before it, and every
// dependency behind a waiting write waits too (FIFO at write boundaries, so
// writers never starve). Thread-safe through `mu`, except the pending buffer.
//
// Waiting dependencies sit in a ring of (function, kind) entries owned by
// the var, not in a list linked through the waiting blocks: appending and
// granting then never write or read another function's block (another
// thread's cache lines), and consecutive entries share lines. What every
// completion touches fits the first cache line.
//
// A var with a long queue is busy: whatever arrives waits behind the ring.
// The pushing thread then does not take `mu`; it writes the new entry into
// a small pending buffer and publishes it with one CAS on `pending` (second
// line), and the holder that empties the ring moves the buffer into it. The
// pusher and the workers then meet on the var's lines once per batch rather
// than at every push and every completion. Pushes are serialized by the
// engine's push lock, so the buffer has one writer at a time.
struct alignas(64) Var {
  struct Waiter {
    OprBlock* op;
    bool write;
  };

  SpinLock mu;
  bool write_running ABSL_GUARDED_BY(mu) = false;
  // True when `error` or a fence may be set: lets the common case (host work,
  // no error) skip the lock when a function starts. Written under `mu`.
  std::atomic<bool> has_state{false};
  int running_reads ABSL_GUARDED_BY(mu) = 0;
  // Capacity ring_mask + 1 (a power of two).
  std::unique_ptr<Waiter[]> ring ABSL_GUARDED_BY(mu);
  uint32_t ring_mask ABSL_GUARDED_BY(mu) = 0;
  uint32_t head ABSL_GUARDED_BY(mu) = 0;     // Oldest waiting entry.
  uint32_t waiting ABSL_GUARDED_BY(mu) = 0;  // Entries in the ring.
  // The function at the head, written under `mu`; read without it only as
  // a hint for prefetching the block that the next grant will touch.
  std::atomic<OprBlock*> head_op{nullptr};
  // Granted, not completed: for DescribePending. Of many readers running
  // together only the first kNamedHolders are kept (running_reads counts
  // them all): each completion searches this list under the lock, and a
  // fan-out of 64 readers made that search the lock's hold time.
  static constexpr size_t kNamedHolders = 4;
  absl::InlinedVector<OprBlock*, 2> holders ABSL_GUARDED_BY(mu);

  // -- Second line: the pusher's. kBusy | (entries in `pend`) << 1. The
  // pusher fills pend[count] and then raises the count; a holder of `mu`
  // copies pend[0, count) into the ring and then resets the count, so the
  // two never touch one entry at once.
  static constexpr uint32_t kBusy = 1;
  static constexpr uint32_t kPendCapacity = 128;
  std::atomic<uint32_t> pending{0};
  // Table bookkeeping, guarded by the table's mutex (read at every push).
  uint32_t index = 0;
  // Allocated when the var first becomes busy; kept for the var's life
  // (the pusher may still be writing an entry when the var stops being busy).
  std::unique_ptr<Waiter[]> pend;
  uint32_t generation = 1;  // 1..VarTable's max_generation (see there).
  bool live = false;
  bool delete_pushed = false;
  // Device work that touched the var and may still be running: the last
  // writer's, and the readers' since that write.
  std::shared_ptr<Fence> write_fence ABSL_GUARDED_BY(mu);
  std::vector<std::shared_ptr<Fence>> read_fences ABSL_GUARDED_BY(mu);
  // -- Third line.
  absl::Status error ABSL_GUARDED_BY(mu);  // The poison.

  // Appends a dependency of `op` without `mu` when the var is busy and its
  // buffer has room; false otherwise, and the caller appends under `mu`
  // instead. Only the pushing thread (under the engine's push lock) calls it.
  bool TryAppendPending(OprBlock* op, bool write) {
    uint32_t p = pending.load(std::memory_order_acquire);
    while ((p & kBusy) != 0 && (p >> 1) < kPendCapacity) {
      pend[p >> 1] = Waiter{op, write};
      if (pending.compare_exchange_weak(p, p + 2, std::memory_order_release,
                                        std::memory_order_acquire)) {
        return true;
      }
    }
    return false;
  }
  // Appends a dependency of `op`; true when it is granted at once. Caller
  // holds `mu`, and TryAppendPending just failed.
  bool AppendLocked(OprBlock* op, bool write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Moves the pending buffer into the ring (DescribePending's view).
  void TakePendingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The i-th waiting entry, oldest first (i < waiting).
  const Waiter& WaiterLocked(uint32_t i) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return ring[(head + i) & ring_mask];
  }
  // Starts loading what completing a dependency on this var will touch:
  // the var's line and the block of the function waiting at its head.
  void Prefetch() const {
    PrefetchForWrite(this);
    if (const OprBlock* next = head_op.load(std::memory_order_relaxed)) {
      // Its first line holds the dependency count; the next three, the
      // deps and the function that running it reads (all written by the
      // pusher), so that a chain's misses overlap rather than follow one
      // another.
      const char* line = reinterpret_cast<const char*>(next);
      PrefetchForWrite(line);
      for (int i = 1; i < 4; ++i) PrefetchForRead(line + 64 * i);
    }
  }
  // Completes a granted dependency of `op`; appends to `granted` every op
  // this grants a dependency to. The caller counts those grants down
  // (OprBlock::wait) after letting go of `mu`, so that the misses on their
  // blocks are not taken while the pusher waits for the lock. Caller holds
  // `mu`.
  void CompleteLocked(OprBlock* op, bool write, ReadyList* granted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

 private:
  void GrantFrontLocked(ReadyList* granted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The ring just emptied: moves the pending buffer into it, or, when it
  // is empty, marks the var not busy. True when it moved entries.
  bool RefillLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Moves the buffer's entries into the ring; leaves the var busy.
  void DrainPendLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void PushWaiterLocked(OprBlock* op, bool write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Doubles the ring (at least 8 entries), keeping the order.
  void GrowLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // A ring that a burst grew past kKeptRing entries is given back once it
  // empties, so that a var does not pin a burst's memory for its life.
  static constexpr uint32_t kKeptRing = 64;
  // A var becomes busy when this many wait in its ring. Short queues stay
  // on the lock: moving them through the buffer costs the workers more
  // than it saves the pusher.
  static constexpr uint32_t kBusyAt = 64;
};
static_assert(sizeof(Var) == 192, "a var is three lines: holders', pusher's, cold");

// The vars of one engine, with generation-checked handles:
// bits = engine tag (12) | generation (24) | index (28). A handle of a freed
// slot, of another engine, or of a var whose deletion was pushed does not
// resolve. A slot's generation rises at every free; a slot freed at its
// last generation is retired (never reused) instead of wrapping around, so
// no handle, however old, names a later var: a handle deleted 2^24 reuses
// ago is refused like one deleted a moment ago, for the process's life
// (a retired slot keeps its 192 bytes: one per 16.7 million deletions).
// Var addresses are stable. Thread-hostile: the engine calls every method
// under its push lock, which also makes each push atomic.
//
//   VarTable table(/*engine_tag=*/1);
//   VarHandle h = table.New();
//   Var* v = *table.Resolve(h, /*for_delete=*/true);
//   table.Free(v);  // h no longer resolves, whatever reuses the slot.
class VarTable {
 public:
  static constexpr int kTagBits = 12;
  static constexpr int kGenerationBits = 24;
  static constexpr int kIndexBits = 28;
  static constexpr uint32_t kMaxGeneration = (uint32_t{1} << kGenerationBits) - 1;
  static constexpr uint32_t kMaxVars = uint32_t{1} << kIndexBits;
  static constexpr uint32_t kMaxTag = (uint32_t{1} << kTagBits) - 1;

  // `engine_tag` in 1..kMaxTag. `max_generation` (tests only) retires a
  // slot sooner.
  explicit VarTable(uint16_t engine_tag, uint32_t max_generation = kMaxGeneration)
      : tag_(engine_tag), max_generation_(max_generation) {}

  // A new var; null (refused by every push, with an error logged) once
  // kMaxVars slots are live or retired.
  VarHandle New();
  // Resolves a handle for a push; InvalidArgument naming the handle when it
  // is not a live var of this engine. `for_delete` marks it as being deleted.
  absl::StatusOr<Var*> Resolve(VarHandle handle, bool for_delete);
  // Frees a var whose deletion completed; its handles stop resolving.
  void Free(Var* var);
  // Vars that are live, for DescribePending.
  std::vector<Var*> Live();
  VarHandle HandleOf(const Var* var) const;

 private:
  const uint16_t tag_;
  const uint32_t max_generation_;
  std::vector<std::unique_ptr<Var>> vars_;
  std::vector<uint32_t> free_;
};

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_VAR_TABLE_H_
