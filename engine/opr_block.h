#ifndef RILL_ENGINE_OPR_BLOCK_H_
#define RILL_ENGINE_OPR_BLOCK_H_

// rill:internal -- not installed: the engine's implementation; users include engine.h.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "rill/base/mutex.h"
#include "rill/engine/engine.h"
#include "rill/engine/var_table.h"
#include "rill/stream/device_span.h"

namespace rill {
class Event;
}

namespace rill::engine::internal {

class EngineBase;

// The vars of a function, normalized: sorted, unique, none both read and
// written.
struct VarLists {
  absl::InlinedVector<Var*, 4> reads;
  absl::InlinedVector<Var*, 2> writes;
};

// What a function is: its body, and for NewOperator its vars. Pushed once
// (PushSync/PushAsync, whose vars go straight into the block's deps) or
// many times (NewOperator + Push).
struct Opr {
  SyncFn sync_fn;  // One of the two is set.
  AsyncFn async_fn;
  FnProperty prop = FnProperty::kNormal;
  std::string name;
  // NewOperator only: the vars, and the handles they were named by (in the
  // same order, reads then writes), which each Push checks again -- a var
  // deleted since, whose slot a new var may now use, must not resolve.
  VarLists vars;
  absl::InlinedVector<VarHandle, 6> handles;
};

// The end of a device function's work on its stream: an event recorded
// right after it (owned by this record alone) and a completion flag set by a
// stream notification, with continuations for host work that waits on it.
// Thread-safe.
struct Fence {
  std::unique_ptr<Event> event;
  Stream* stream = nullptr;  // Where the work ran.

  // Runs `fn(status)` once the work has finished; at once if it has.
  void OnDone(absl::AnyInvocable<void(absl::Status) &&> fn);
  void Complete(absl::Status status);
  // OK while running or when it succeeded; the error once it failed.
  bool done() const { return done_.load(std::memory_order_acquire); }
  absl::Status status() const;

 private:
  mutable Mutex mu_;
  std::atomic<bool> done_{false};
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::AnyInvocable<void(absl::Status) &&>> waiters_ ABSL_GUARDED_BY(mu_);
};

// One push of an Opr (MXNet's OprBlock). Owned by the engine until the
// function has completed (an asynchronous function completes only once its
// body has returned too). Blocks are
// recycled, never freed while the engine lives; a Completion names its
// function by (block, seq), and `done_seq` (the latest completed seq + 1,
// only rising) tells a first call from a late or second one, also after the
// block was reused. A Completion holds no reference, so destroying one
// never touches the engine.
//
// Laid out for the hand-off between the pushing thread and a worker: the
// first cache line holds what queueing and dependency counting touch, the
// deps and the function follow, and what only device work, errors and
// profiling use comes last (Reset leaves those lines alone when unused).
struct alignas(64) OprBlock {
  std::atomic<int> wait{0};  // Ungranted dependencies (+1 while pushing).
  // The push's priority, widened: kPrioritized adds 2^32, which puts every
  // such function ahead of every normal one whatever the int priorities.
  int64_t priority = 0;
  uint64_t seq = 0;  // Push order.
  Context ctx;
  Opr* opr = nullptr;              // &own, or shared.get() for NewOperator.
  OprBlock* next_ready = nullptr;  // In a worker pool's inbox.
  // A hint for the worker that walks the inbox: the block the dispatching
  // thread queued a few dispatches earlier, most likely a few links further
  // along, prefetched so that the walk's misses overlap instead of following
  // one another. Only ever prefetched, never read through: it may be stale.
  OprBlock* inbox_hint = nullptr;
  // -- 64 bytes --
  EngineBase* engine = nullptr;   // Set once, when the engine allocates the block.
  OprBlock* next_free = nullptr;  // In the engine's pool of spare blocks.
  // See above; asynchronous bodies only. kAbandoned is set (for good: the
  // block is then never reused) when Shutdown gave up waiting for the
  // completion and completed the function itself.
  static constexpr uint64_t kAbandoned = uint64_t{1} << 63;
  std::atomic<uint64_t> done_seq{0};
  // Asynchronous bodies: which of the two events that complete the
  // function has happened (the second one completes it), and the status
  // a completion called before the body returned left for the return.
  static constexpr uint32_t kReturned = 1, kCompleted = 2;
  std::atomic<uint32_t> async_state{0};
  std::atomic<int> pending_fences{0};  // Host work waiting on device fences.
  int worker = -1;                     // Profiling: the worker that ran it.

  absl::InlinedVector<VarDep, 4> deps;  // Const vars first, then mutate vars.
  Opr own;
  std::shared_ptr<Opr> shared;

  absl::Status status;               // The function's result, or the error it inherited.
  absl::Status async_status;         // See async_state.
  Stream* stream = nullptr;          // Device functions: the stream they were given,
  class StreamPool* pool = nullptr;  // and the pool it goes back to.
  std::shared_ptr<Fence> fence;
  int64_t start_ns = 0;  // Profiling.
  int64_t end_ns = 0;
  std::unique_ptr<DeviceSpan> device_span;  // Profiling device functions.

  // The function has completed: the block goes back to its engine's pool.
  void Release();
  // Back to the state of a fresh block (destroys the function and its
  // captures), writing only the fields that changed; `deps` and `seq` are
  // left for the next push to write (the worker keeps off those lines).
  void Reset();
  Completion MakeCompletion() { return Completion(this, seq); }
  const std::string& name() const { return opr->name; }
};

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_OPR_BLOCK_H_
