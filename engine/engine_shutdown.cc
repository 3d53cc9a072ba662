// EngineBase's shutdown: BeginShutdown, the idle wait with a deadline, the
// abandoning of asynchronous functions whose completion never comes, the
// once-only stop of threads and pools, and the watchdog that reports a
// stuck shutdown. The rest of EngineBase is in engine_base.cc,
// engine_blocks.cc, engine_push.cc, engine_wait.cc and engine_run.cc.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/logging.h"
#include "rill/engine/engine_base.h"

namespace rill::engine::internal {

void EngineBase::BeginShutdown(bool cancel) {
  if (cancel) cancel_.store(true);
  shutdown_.store(true);
  // A push that saw the engine running before the flag was set holds the
  // push lock until it is counted: passing through the lock makes every
  // such push visible to the waits that follow (later ones are refused).
  { SpinLockHolder lock(&push_mu_); }
}

namespace {

// wait_mu_ as the BasicLockable that std::condition_variable_any takes.
struct LockableMutex {
  Mutex* mu;
  void lock() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu->Lock(); }
  void unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu->Unlock(); }
};

}  // namespace

bool EngineBase::WaitIdleFor(absl::Duration timeout) {
  MutexLock lock(&wait_mu_);
  idle_waiters_.fetch_add(1, std::memory_order_seq_cst);
  if (timeout == absl::InfiniteDuration()) {
    wait_cv_.Wait(&wait_mu_, [&] { return InFlight() == 0; });
  } else {
    // Waited for in slices of at most an hour, so that the steady clock's
    // arithmetic cannot overflow for a huge timeout.
    LockableMutex lockable{&wait_mu_};
    absl::Duration left = timeout;
    auto start = std::chrono::steady_clock::now();
    while (InFlight() != 0 && left > absl::ZeroDuration()) {
      const absl::Duration slice = std::min(left, absl::Hours(1));
      idle_cv_.wait_until(lockable, start + absl::ToChronoNanoseconds(slice));
      const auto now = std::chrono::steady_clock::now();
      left -= absl::FromChrono(now - start);
      start = now;
    }
  }
  idle_waiters_.fetch_sub(1, std::memory_order_seq_cst);
  return InFlight() == 0;
}

std::vector<std::string> EngineBase::AbandonAwaiting(const absl::Status& why) {
  std::vector<std::pair<OprBlock*, uint64_t>> stuck;
  std::vector<std::string> names;
  {
    // Named under the lock: a first completion erases its entry (under it)
    // before it completes the function, so these blocks stay in place.
    SpinLockHolder lock(&awaiting_mu_);
    for (const auto& [op, seq] : awaiting_) {
      stuck.emplace_back(op, seq);
      names.push_back(absl::StrCat(DescribeOp(op), " on ", op->ctx.ToString()));
    }
    awaiting_.clear();
  }
  std::vector<std::string> abandoned;
  for (size_t i = 0; i < stuck.size(); ++i) {
    auto [op, seq] = stuck[i];
    // Claim the completion as a first call would; a call that got there
    // first completes the function itself.
    uint64_t done = op->done_seq.load(std::memory_order_acquire);
    bool claimed = false;
    while (done < seq + 1) {
      if (op->done_seq.compare_exchange_weak(done, (seq + 1) | OprBlock::kAbandoned,
                                             std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
        claimed = true;
        break;
      }
    }
    if (!claimed) continue;
    abandoned.push_back(names[i]);
    CompleteOnce(op, why);
  }
  return abandoned;
}

void EngineBase::StopOnce() {
  {
    MutexLock lock(&stopped_mu_);
    if (stop_claimed_) {
      stopped_cv_.Wait(&stopped_mu_, [&] { return stopped_; });
      return;
    }
    stop_claimed_ = true;
  }
  StopThreads();
  // Threads helping in a wait leave once the pools are stopped; later ones
  // do not start. A WaitForVar may still be waiting (for its Cancelled) when
  // the engine is destroyed, so none may touch the engine after this.
  no_helping_.store(true, std::memory_order_seq_cst);
  while (helping_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  {
    MutexLock lock(&watchdog_mu_);
    watchdog_stop_ = true;
    watchdog_cv_.SignalAll();
  }
  if (watchdog_.joinable()) watchdog_.join();
  if (!options_.trace_path.empty()) {
    absl::Status written = profiler_.Write(options_.trace_path);
    if (!written.ok()) RILL_LOG(ERROR) << written.ToString();
  }
  {
    MutexLock lock(&pools_mu_);
    stream_pools_.clear();
  }
  MutexLock lock(&stopped_mu_);
  stopped_ = true;
  stopped_cv_.SignalAll();
}

namespace {

absl::Status AbandonStatus(absl::Duration waited) {
  return absl::DeadlineExceededError(
      absl::StrCat("abandoned by Shutdown: its completion was not called within ",
                   absl::FormatDuration(waited)));
}

}  // namespace

void EngineBase::Shutdown(bool cancel) {
  if (RunningEngine() == this) {
    // It would wait for the calling function itself, then join its thread.
    RILL_LOG(ERROR) << "engine: Shutdown called from inside one of the engine's own functions; "
                       "ignored (it would wait on itself): call it from outside";
    return;
  }
  BeginShutdown(cancel);
  // Wait while functions finish; give up on what is stuck only once none
  // has finished for a whole shutdown_timeout.
  const absl::Duration timeout = options_.shutdown_timeout;
  int64_t retired_before = retired_.Sum();
  while (!WaitIdleFor(timeout)) {
    const int64_t retired = retired_.Sum();
    if (retired != retired_before) {
      retired_before = retired;
      continue;
    }
    const std::string pending = DescribePending();
    bool awaiting;
    {
      SpinLockHolder lock(&awaiting_mu_);
      awaiting = !awaiting_.empty();
    }
    std::vector<std::string> abandoned;
    if (awaiting) {
      // Cancelled first, so that what the abandoned functions release is
      // skipped rather than run.
      cancel_.store(true);
      abandoned = AbandonAwaiting(AbandonStatus(timeout));
    }
    if (abandoned.empty()) {
      // Nothing to give up on: running bodies cannot be interrupted.
      RILL_LOG(WARNING) << "engine: Shutdown: no function finished for "
                        << absl::FormatDuration(timeout) << "; still waiting for:\n"
                        << pending;
    } else {
      RILL_LOG(ERROR) << "engine: Shutdown: no function finished for "
                      << absl::FormatDuration(timeout)
                      << "; abandoned the asynchronous function(s) that never called their "
                         "completion: "
                      << absl::StrJoin(abandoned, ", ")
                      << "; what had not started is cancelled. Pending was:\n"
                      << pending;
    }
  }
  StopOnce();
}

absl::Status EngineBase::Shutdown(bool cancel, absl::Duration timeout) {
  if (RunningEngine() == this) {
    return absl::FailedPreconditionError(
        "engine Shutdown called from inside one of the engine's own functions: it would wait on "
        "itself; call it from outside");
  }
  BeginShutdown(cancel);
  if (WaitIdleFor(timeout)) {
    StopOnce();
    return absl::OkStatus();
  }
  const std::string pending = DescribePending();
  cancel_.store(true);
  std::vector<std::string> abandoned = AbandonAwaiting(AbandonStatus(timeout));
  // What is left was cancelled (a worker only skips it) or is a body still
  // running.
  const bool drained = WaitIdleFor(timeout);
  if (drained) StopOnce();
  std::string report = absl::StrCat("engine Shutdown: work still in flight after ",
                                    absl::FormatDuration(timeout), "; ");
  if (!abandoned.empty()) {
    absl::StrAppend(&report,
                    "abandoned the asynchronous function(s) that never called their completion: ",
                    absl::StrJoin(abandoned, ", "), "; ");
  }
  absl::StrAppend(&report, "cancelled what had not started; ",
                  drained
                      ? "the threads are stopped"
                      : absl::StrCat("still running after another ", absl::FormatDuration(timeout),
                                     " (a later Shutdown or the destructor waits for it):\n",
                                     DescribePending()),
                  "\npending at the deadline:\n", pending);
  RILL_LOG(ERROR) << report;
  return absl::DeadlineExceededError(report);
}

void EngineBase::Watchdog() {
  int64_t last_completed = -1;
  MutexLock lock(&watchdog_mu_);
  while (!watchdog_stop_) {
    const absl::Time deadline = absl::Now() + options_.watchdog_period;
    while (!watchdog_stop_ && absl::Now() < deadline) {
      watchdog_mu_.Unlock();
      absl::SleepFor(std::min(absl::Milliseconds(20), options_.watchdog_period));
      watchdog_mu_.Lock();
    }
    if (watchdog_stop_) break;
    const int64_t done = completed_.Sum();
    if (InFlight() > 0 && done == last_completed) {
      RILL_LOG(WARNING) << "engine: no function finished for "
                        << absl::FormatDuration(options_.watchdog_period) << "; pending:\n"
                        << DescribePending();
    }
    last_completed = done;
  }
}

}  // namespace rill::engine::internal
