#ifndef RILL_ENGINE_ENGINE_BASE_H_
#define RILL_ENGINE_ENGINE_BASE_H_

// rill:internal -- not installed: the engine's implementation; users include engine.h.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "rill/engine/engine.h"
#include "rill/engine/opr_block.h"
#include "rill/engine/profiler.h"
#include "rill/engine/sharded_counter.h"
#include "rill/engine/stream_pool.h"
#include "rill/engine/var_table.h"
#include "rill/executor/stream_executor.h"
#include "rill/stream/stream.h"

namespace rill::engine::internal {

// Everything the two engine kinds share: vars and their dependency queues,
// push, completion, errors and poisoning, device fences, waits, profiling.
// A kind decides only how a function whose dependencies are granted gets to
// run (Dispatch): at once in the calling thread (naive) or on a worker pool
// (threaded).
class EngineBase : public Engine {
 public:
  explicit EngineBase(const EngineOptions& options);
  ~EngineBase() override;

  VarHandle NewVariable() override;
  PlatformManager& platforms() const override;
  absl::Status PushSync(SyncFn fn, Context ctx, absl::Span<const VarHandle> const_vars,
                        absl::Span<const VarHandle> mutate_vars, FnProperty prop, int priority,
                        std::string_view name) override;
  absl::Status PushAsync(AsyncFn fn, Context ctx, absl::Span<const VarHandle> const_vars,
                         absl::Span<const VarHandle> mutate_vars, FnProperty prop, int priority,
                         std::string_view name) override;
  absl::Status PushSyncInline(SyncFn fn, Context ctx, absl::Span<const VarHandle> const_vars,
                              absl::Span<const VarHandle> mutate_vars, FnProperty prop,
                              int priority, std::string_view name) override;
  absl::StatusOr<OperatorHandle> NewOperator(AsyncFn fn, absl::Span<const VarHandle> const_vars,
                                             absl::Span<const VarHandle> mutate_vars,
                                             FnProperty prop, std::string_view name) override;
  absl::Status Push(OperatorHandle op, Context ctx, int priority) override;
  absl::Status DeleteOperator(OperatorHandle op) override;
  absl::Status DeleteVariable(SyncFn fn, Context ctx, VarHandle var) override;
  absl::Status WaitForVar(VarHandle var) override;
  absl::Status WaitForAll() override;
  absl::Status ClearError(VarHandle var) override;
  std::string DescribePending() override;
  EngineStats Stats() const override;
  void StartProfiling() override { profiler_.Start(); }
  absl::Status WriteTrace(const std::string& path) override { return profiler_.Write(path); }
  void Shutdown(bool cancel) override;
  absl::Status Shutdown(bool cancel, absl::Duration timeout) override;

  // Starts the background threads (the watchdog); called once the engine
  // is fully constructed, so they never see a half-built object.
  void StartBackground();

  // A block from the pool of spare blocks (or a new one), owned by this
  // engine; Recycle gives it back. Blocks are reused because a push and the
  // completion that frees its block run on different threads, and the
  // allocator's cross-thread frees were a bottleneck.
  OprBlock* NewBlock();
  void Recycle(OprBlock* op);
  // For the kind's worker threads, at start, when idle and at exit: from its
  // first call on a thread, Recycle batches that thread's blocks (one
  // hand-back per batch instead of one contended CAS per function), and
  // each call hands the batch back and makes the room check that Retire
  // may have deferred.
  void WorkerIdle();

  // Called by Completion: push `seq` of `op` has finished with `status`
  // (a late or second call is reported and otherwise ignored). Static: for
  // a function that Shutdown abandoned it touches only the block, which is
  // kept for the process's life, so it is safe after the engine is gone.
  static void Complete(OprBlock* op, uint64_t seq, absl::Status status);

 protected:
  // Runs `op` (its dependencies are granted) now or later on some thread.
  // `sole` says it is the only function a completion made ready, so a
  // worker may run it next without a queue round trip.
  virtual void Dispatch(OprBlock* op, bool sole = false) = 0;
  // Trace spans (profiler_): the host span of a function that ran, and
  // the device span of a device function's work.
  void RecordHostSpan(const OprBlock* op);
  void RecordDeviceSpan(const std::string& name, const Context& ctx, const Stream* stream,
                        uint64_t seq, int64_t start_ns, int64_t end_ns, const absl::Status& status);
  // Runs `op` on the calling thread (`worker` numbers it for profiles).
  void Run(OprBlock* op, int worker);
  // `op` runs on this thread after the function about to run: starts the
  // misses on what Run will touch first (its vars' lines), so that they
  // overlap the function before it.
  static void LookAhead(const OprBlock* op);
  // Runs ready host functions on the calling thread, which waits and is no
  // worker, until `done()` holds (true), or returns false, at once or
  // later, when the kind has none to give or is stopping: the caller then
  // blocks as usual. WakeHelpers makes such threads check `done` again.
  virtual bool HelpUntil(absl::FunctionRef<bool()> done) { return false; }
  virtual void WakeHelpers() {}
  // Whether a thread is in HelpWhileWaiting. It counts itself before it
  // first checks its condition, and WakeHelpers is called after making one
  // true: either the waker sees it here or it sees the condition.
  bool AnyoneHelping() const { return helping_.load(std::memory_order_seq_cst) > 0; }
  // The worker number a helping waiter runs functions under (profiles).
  static constexpr int kWaitingThread = -2;
  // Stops the kind's threads once nothing is pending.
  virtual void StopThreads() {}
  // Device work of `op` was enqueued; the naive engine waits for it here.
  virtual void AfterDeviceEnqueue(OprBlock* op) {}
  // Appends the functions that are ready and wait for a worker. Their
  // blocks may be taken and recycled as soon as the queue's lock is let go,
  // so names are read under it (DescribeOp).
  virtual void DescribeQueued(std::string* out) {}
  // How DescribePending names a function: 'name', or (unnamed #seq).
  static std::string DescribeOp(const OprBlock* op);

  const EngineOptions options_;

 private:
  // Hands this worker thread's batch of freed blocks back.
  void FlushRecycled();
  // HelpUntil for a thread in WaitForAll or WaitForVar (not a worker, not
  // inside a function): it counts as a worker of this engine while it
  // helps. Returns whether `done()` holds.
  bool HelpWhileWaiting(absl::FunctionRef<bool()> done);
  // The same for a condition on the in-flight count (WaitForAll, a push at
  // the bound), which is costly to read (every worker's shard): checked at
  // the start and then only after a retirement signalled the waiters
  // (wake_epoch_ moved), not between every two functions the thread runs.
  bool HelpUntilWoken(absl::FunctionRef<bool()> done);
  // Wakes the waiters whose condition now holds (caller holds wait_mu_):
  // those blocked on wait_cv_ (and idle_cv_ when `idle_now`), and the
  // helping ones.
  void SignalWaiters(bool idle_now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(wait_mu_);
  // Complete once the double-completion check has passed (or, for a
  // synchronous body, cannot fail).
  void CompleteOnce(OprBlock* op, absl::Status status);
  struct OperatorEntry {
    std::shared_ptr<Opr> opr;
  };

  // Resolves and normalizes a push's vars into `lists`.
  absl::Status Normalize(absl::Span<const VarHandle> const_vars,
                         absl::Span<const VarHandle> mutate_vars, FnProperty prop, VarLists* lists)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(push_mu_);
  // Appends op's dependencies on `vars` to them; true when all are granted.
  bool PushBlock(OprBlock* op, const VarLists& vars) ABSL_EXCLUSIVE_LOCKS_REQUIRED(push_mu_);
  // Owns a block until it is pushed; gives it back to the pool otherwise.
  struct BlockRecycler {
    void operator()(OprBlock* op) const { op->engine->Recycle(op); }
  };
  using BlockPtr = std::unique_ptr<OprBlock, BlockRecycler>;
  // `here`: a ready host function runs on the calling thread (when it is
  // inside no engine function) instead of being dispatched.
  absl::Status PushOne(BlockPtr op, absl::Span<const VarHandle> const_vars,
                       absl::Span<const VarHandle> mutate_vars, bool here = false);
  // The worker number of a function run by its pusher (profiles).
  static constexpr int kPushingThread = -3;
  // Whether the calling thread runs no function of any engine.
  static bool OutsideFunctions();
  // A block for a one-shot push (PushSync, PushAsync, DeleteVariable).
  BlockPtr NewOneShot(Context ctx, FnProperty prop, int priority, std::string_view name);
  // OK when `ctx` is the host or a device of a registered platform; else
  // InvalidArgument (unknown platform, negative ordinal), Unavailable (no
  // usable device) or NotFound (past the last device), naming the context.
  // Checked at push, before a worker pool or stream is made for it; a good
  // device context is remembered.
  absl::Status CheckContext(const Context& ctx);
  void WaitForRoom();
  // Collects the poison and unfinished device fences of op's vars.
  absl::Status GatherDependencies(OprBlock* op, std::vector<std::shared_ptr<Fence>>* fences);
  void RunOnDevice(OprBlock* op, std::vector<std::shared_ptr<Fence>>& fences);
  void RunBody(OprBlock* op, RunContext rc);
  absl::StatusOr<StreamPool*> PoolFor(const Context& ctx, bool copy);
  // Releases op's vars, poisoning the written ones on error, and dispatches
  // what that makes ready. `ran`: its body ran (after the device work it
  // depended on), so its own fence replaces the written vars' fences;
  // false for a function skipped, cancelled or refused a stream.
  void Finish(OprBlock* op, bool ran);
  // One function is done (device work included): in-flight count, waiters.
  void Retire(const absl::Status& status);
  // Signals the waiters whose condition holds now (`idle`: WaitForAll and
  // Shutdown, at zero in flight; `room`: pushers, at LowWater()).
  void WakeWaiters(bool idle, bool room);
  // Whether a waiter of those kinds may proceed with `in_flight` functions.
  bool ShouldWake(int64_t in_flight, bool idle, bool room) const;
  void RecordError(const absl::Status& status);
  void Watchdog();

  // Shutdown's steps. Refuses later pushes (and with `cancel`, cancels what
  // has not started); a push under way is counted before it returns.
  void BeginShutdown(bool cancel);
  // Waits until nothing is in flight (true) or `timeout` passes (false).
  bool WaitIdleFor(absl::Duration timeout);
  // Gives up on the asynchronous functions waiting for their Completion:
  // each is completed here with `why` (DeadlineExceeded), and a later call
  // of its Completion is ignored. Returns their names and contexts.
  std::vector<std::string> AbandonAwaiting(const absl::Status& why);
  // Stops the threads, the watchdog and the stream pools once nothing is in
  // flight; a second caller waits until the first has done so.
  void StopOnce();

  // How many retirements a worker makes between looks for a pusher waiting
  // for room (see Retire).
  const int room_check_every_;
  const uint16_t tag_;
  // Spare blocks: any thread pushes onto `returned_` (a lock-free stack);
  // NewBlock takes the whole stack at once into `spare_`, so there is no ABA.
  // Each on its own cache line: workers push onto returned_ at every
  // completion, while the pusher takes spare_mu_ at every push.
  alignas(64) std::atomic<OprBlock*> returned_{nullptr};
  // Links the list first..last onto returned_.
  void ReturnBlocks(OprBlock* first, OprBlock* last);
  alignas(64) SpinLock spare_mu_;
  OprBlock* spare_ ABSL_GUARDED_BY(spare_mu_) = nullptr;
  // Serializes pushes (and guards the var table). A spin lock, not a
  // Mutex: every push takes it, and a spin lock's release is a plain store
  // where a mutex's is a second locked instruction (measured: W1 +35 % in
  // the VM's fast state, W2 up in its slow one). Held for a push's few
  // hundred nanoseconds (DescribePending holds it only to list the vars).
  alignas(64) SpinLock push_mu_;
  VarTable vars_ ABSL_GUARDED_BY(push_mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(push_mu_) = 0;
  absl::flat_hash_map<uint64_t, OperatorEntry> operators_ ABSL_GUARDED_BY(push_mu_);
  uint64_t next_operator_ ABSL_GUARDED_BY(push_mu_) = 1;

  // In flight: pushed and not finished (device work included), kept as
  // monotone counts on separate cache lines, so that the pushing thread and
  // the workers do not contend on one counter: pushed_ (pushers, under
  // push_mu_) + holds_ (device work between its enqueue and Finish) -
  // retired_ (workers).
  int64_t InFlight() const;
  Mutex wait_mu_;
  CondVar wait_cv_;
  ShardedCounter retired_;
  alignas(64) std::atomic<int64_t> holds_{0};
  // A recent value of retired_ (never above it) that pushers check the bound
  // against before they read retired_ itself.
  alignas(64) std::atomic<int64_t> retired_seen_{0};
  // Read by every retirement, written only when a thread starts or stops
  // waiting: a line of their own.
  alignas(64) std::atomic<int> idle_waiters_{0};  // In WaitForAll / Shutdown: wake at 0.
  std::atomic<int> room_waiters_{0};              // In WaitForRoom: wake at LowWater().
  // Raised at each SignalWaiters (HelpUntilWoken).
  std::atomic<uint64_t> wake_epoch_{0};
  // Threads in HelpWhileWaiting, and whether more may start (StopOnce).
  std::atomic<int> helping_{0};
  std::atomic<bool> no_helping_{false};
  int64_t LowWater() const {
    return options_.max_in_flight - std::max<int64_t>(1, options_.max_in_flight / 8);
  }
  // Shutdown's timed wait for zero in flight (CondVar has no timed wait):
  // used with wait_mu_, signalled with wait_cv_ when an idle waiter's
  // condition holds.
  std::condition_variable_any idle_cv_;
  absl::Status first_error_ ABSL_GUARDED_BY(wait_mu_);
  std::atomic<bool> shutdown_{false};
  // Shutdown has finished (later callers wait for it).
  Mutex stopped_mu_;
  CondVar stopped_cv_;
  bool stop_claimed_ ABSL_GUARDED_BY(stopped_mu_) = false;  // A caller is stopping.
  bool stopped_ ABSL_GUARDED_BY(stopped_mu_) = false;
  std::atomic<bool> cancel_{false};
  // Asynchronous functions whose body has returned and whose Completion has
  // not been called yet (block -> push seq), for Shutdown to name and
  // abandon. A first completion erases its entry before it completes the
  // function, so the blocks (and their names) listed here stay in place
  // while awaiting_mu_ is held.
  SpinLock awaiting_mu_;
  absl::flat_hash_map<OprBlock*, uint64_t> awaiting_ ABSL_GUARDED_BY(awaiting_mu_);

  // Counters: pushed_ is written by pushers (under push_mu_), completed_ by
  // workers at every function (sharded), the rest rarely.
  alignas(64) std::atomic<int64_t> pushed_{0};
  ShardedCounter completed_;
  alignas(64) std::atomic<int64_t> skipped_{0}, failed_{0}, double_completions_{0};

  Mutex contexts_mu_;
  absl::flat_hash_set<std::pair<PlatformId, int>> checked_contexts_ ABSL_GUARDED_BY(contexts_mu_);

  Mutex pools_mu_;
  std::map<std::tuple<PlatformId, int, bool>, std::unique_ptr<StreamPool>> stream_pools_
      ABSL_GUARDED_BY(pools_mu_);

  Profiler profiler_;
  Mutex watchdog_mu_;
  CondVar watchdog_cv_;
  bool watchdog_stop_ ABSL_GUARDED_BY(watchdog_mu_) = false;
  std::thread watchdog_;

  friend class rill::engine::Completion;
};

// The function running on this thread belongs to an engine (waits fail fast).
bool InsideEngineFunction();
// The engine whose function the calling thread runs, or null.
const EngineBase* RunningEngine();

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_ENGINE_BASE_H_
