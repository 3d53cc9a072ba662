// EngineBase's waits: WaitForAll, WaitForVar and a push's wait for room
// under the in-flight bound, each of which lends its thread to the CPU
// workers while it waits (HelpWhileWaiting). Pushing is in engine_push.cc;
// retiring and diagnostics in engine_base.cc; running a function in
// engine_run.cc; shutdown in engine_shutdown.cc.

#include <atomic>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "rill/base/mutex.h"
#include "rill/base/spin_lock.h"
#include "rill/base/status_macros.h"
#include "rill/engine/engine_base.h"
#include "rill/engine/worker_batch.h"

namespace rill::engine::internal {

bool EngineBase::HelpWhileWaiting(absl::FunctionRef<bool()> done) {
  WorkerBatch& batch = tls_worker;
  // A thread is a worker of at most one engine, and a worker never waits.
  if (batch.engine != nullptr && batch.engine != this) return false;
  // Counted before the check, which StopOnce makes the other way round:
  // either it waits for this thread to leave, or this does not start.
  helping_.fetch_add(1, std::memory_order_seq_cst);
  if (no_helping_.load(std::memory_order_seq_cst)) {
    helping_.fetch_sub(1, std::memory_order_seq_cst);
    return false;
  }
  batch.engine = this;
  // Hands back what it batched, and leaves no trace of this engine on the
  // thread, which may outlive it (also when a function's bookkeeping throws).
  struct Leave {
    EngineBase* engine;
    WorkerBatch& batch;
    ~Leave() {
      engine->FlushRecycled();
      batch.engine = nullptr;
      batch.retired_unchecked = 0;
      engine->helping_.fetch_sub(1, std::memory_order_seq_cst);  // The last touch of the engine.
    }
  } leave{this, batch};
  return HelpUntil(done);
}

bool EngineBase::HelpUntilWoken(absl::FunctionRef<bool()> done) {
  // Read before the first check: a wake-up after it moves the epoch.
  uint64_t seen = wake_epoch_.load(std::memory_order_seq_cst);
  if (done()) return true;
  bool met = false;  // Once seen to hold, it holds for the caller (who checks again).
  return HelpWhileWaiting([&] {
    if (met) return true;
    const uint64_t now = wake_epoch_.load(std::memory_order_seq_cst);
    if (now == seen) return false;
    seen = now;
    met = done();
    return met;
  });
}

void EngineBase::WaitForRoom() {
  if (InsideEngineFunction()) return;
  // retired_seen_ lags retired_, so this overestimates: no read of the
  // workers' line while the bound is far.
  if (pushed_.load(std::memory_order_relaxed) + holds_.load(std::memory_order_relaxed) -
          retired_seen_.load(std::memory_order_relaxed) <
      options_.max_in_flight) {
    return;
  }
  retired_seen_.store(retired_.Sum(std::memory_order_acquire), std::memory_order_relaxed);
  if (InFlight() < options_.max_in_flight) return;
  // Resume at a low-water mark, not at the first free slot: otherwise every
  // completion would wake the pusher for one push (a wake-up per function).
  // Meanwhile the pusher runs ready host functions, as WaitForAll does.
  room_waiters_.fetch_add(1, std::memory_order_seq_cst);
  HelpUntilWoken([this] { return InFlight() <= LowWater(); });
  MutexLock lock(&wait_mu_);
  wait_cv_.Wait(&wait_mu_, [&] { return InFlight() <= LowWater(); });
  room_waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

absl::Status EngineBase::WaitForVar(VarHandle var) {
  if (InsideEngineFunction()) {
    return absl::FailedPreconditionError(
        "WaitForVar called from inside a running engine function: it would wait on itself; "
        "push a dependent function instead");
  }
  Var* v;
  {
    SpinLockHolder lock(&push_mu_);
    absl::StatusOr<Var*> resolved = vars_.Resolve(var, false);
    if (!resolved.ok()) return Annotate(resolved.status(), "WaitForVar");
    v = *resolved;
  }
  // The waiter's state outlives this call: the function holding it is
  // destroyed when its block is recycled, later. If the function is dropped
  // without running (Shutdown cancelled it), its destructor still wakes the
  // waiter, with an error.
  struct WaitState {
    Mutex mu;
    CondVar cv;
    bool done ABSL_GUARDED_BY(mu) = false;
    std::atomic<bool> finished{false};  // `done`, for a helping waiter to poll.
    absl::Status result ABSL_GUARDED_BY(mu);
    void Set(absl::Status status) {
      MutexLock lock(&mu);
      if (done) return;
      result = std::move(status);
      done = true;
      finished.store(true, std::memory_order_seq_cst);  // Before WakeHelpers reads helpers.
      cv.SignalAll();
    }
  };
  struct WakeOnDrop {
    EngineBase* engine;  // Alive: blocks are reset (and this destroyed) while it lives.
    std::shared_ptr<WaitState> state;
    WakeOnDrop(EngineBase* e, std::shared_ptr<WaitState> s) : engine(e), state(std::move(s)) {}
    WakeOnDrop(WakeOnDrop&&) = default;
    ~WakeOnDrop() {
      if (state != nullptr) {
        state->Set(
            absl::CancelledError("WaitForVar: the engine was shut down (cancelling pending work) "
                                 "before the var was ready"));
        engine->WakeHelpers();  // The waiter may be helping, asleep in the pool.
      }
    }
  };
  auto state = std::make_shared<WaitState>();
  absl::Status pushed = PushSync(
      [this, v, wake = WakeOnDrop(this, state)](RunContext) {
        absl::Status error;
        {
          SpinLockHolder lock(&v->mu);
          error = v->error;
        }
        wake.state->Set(std::move(error));
        WakeHelpers();  // The waiter may be helping (it is in WaitForVar: the engine lives).
        return absl::OkStatus();
      },
      // A write, so that it also waits for earlier readers of the var.
      Context::Host(), {}, {var}, FnProperty::kNoSkip, 0, "WaitForVar");
  RILL_RETURN_IF_ERROR(pushed);
  HelpWhileWaiting([&state] { return state->finished.load(std::memory_order_seq_cst); });
  MutexLock lock(&state->mu);
  state->cv.Wait(&state->mu, [&] { return state->done; });
  return state->result;
}

absl::Status EngineBase::WaitForAll() {
  if (InsideEngineFunction()) {
    return absl::FailedPreconditionError(
        "WaitForAll called from inside a running engine function: it would wait on itself");
  }
  // Counted as a waiter first, so that the retirement that ends the wait
  // also wakes a helping thread (WakeHelpers).
  idle_waiters_.fetch_add(1, std::memory_order_seq_cst);
  HelpUntilWoken([this] { return InFlight() == 0; });
  MutexLock lock(&wait_mu_);
  wait_cv_.Wait(&wait_mu_, [&] { return InFlight() == 0; });
  idle_waiters_.fetch_sub(1, std::memory_order_seq_cst);
  absl::Status error = first_error_;
  first_error_ = absl::OkStatus();
  return error;
}

}  // namespace rill::engine::internal
