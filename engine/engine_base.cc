// EngineBase's construction and destruction, the in-flight count, retiring
// a finished function (waking the waiters whose condition holds), errors,
// and the diagnostics (DescribePending, Stats). The block pool is in
// engine_blocks.cc, pushing in engine_push.cc, waiting in engine_wait.cc,
// running a function in engine_run.cc, shutdown in engine_shutdown.cc.

#include "rill/engine/engine_base.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/base/mutex.h"
#include "rill/base/spin_lock.h"
#include "rill/base/status_macros.h"
#include "rill/engine/worker_batch.h"
#include "rill/stream/stream_listener.h"

namespace rill::engine::internal {
namespace {

std::atomic<uint32_t> next_engine_tag{0};

// 1..VarTable::kMaxTag, in turn (0 is never a tag: no handle is all zeros).
uint16_t NewTag() {
  return static_cast<uint16_t>(1 + next_engine_tag.fetch_add(1) % VarTable::kMaxTag);
}

std::string OpName(const OprBlock* op) {
  return op->name().empty() ? absl::StrCat("(unnamed #", op->seq, ")")
                            : absl::StrCat("'", op->name(), "'");
}

}  // namespace

// --- EngineBase --------------------------------------------------------------

EngineBase::EngineBase(const EngineOptions& options)
    : options_(options),
      // A fraction of the bound's slack, so a small bound still resumes
      // its pusher as soon as there is room.
      room_check_every_(
          static_cast<int>(std::clamp<int64_t>((options.max_in_flight - LowWater()) / 8, 1, 16))),
      tag_(NewTag()),
      vars_(tag_) {
  if (!options_.trace_path.empty()) profiler_.Start();
  // RILL_TRACE and RILL_VERBOSE also for a program whose functions all run
  // on the host (no executor made yet).
  rill::internal::InstallEnvironmentListeners();
}

void EngineBase::StartBackground() {
  if (options_.watchdog_period > absl::ZeroDuration() && !watchdog_.joinable()) {
    watchdog_ = std::thread([this] { Watchdog(); });
  }
}

EngineBase::~EngineBase() {  // Subclasses call Shutdown(false) first.
  SpinLockHolder lock(&spare_mu_);
  for (OprBlock* list : {spare_, returned_.exchange(nullptr)}) {
    while (list != nullptr) {
      OprBlock* next = list->next_free;
      delete list;
      list = next;
    }
  }
}

int64_t EngineBase::InFlight() const {
  // Retirements first: every push and hold a seen retirement follows is then
  // seen too, so the result is never below the true count.
  const int64_t retired = retired_.Sum(std::memory_order_seq_cst);
  const int64_t holds = holds_.load(std::memory_order_seq_cst);
  return pushed_.load(std::memory_order_seq_cst) + holds - retired;
}

absl::Status EngineBase::ClearError(VarHandle var) {
  Var* v;
  {
    SpinLockHolder lock(&push_mu_);
    RILL_ASSIGN_OR_RETURN(v, vars_.Resolve(var, false));
  }
  return PushSync(
      [v](RunContext) {
        SpinLockHolder lock(&v->mu);
        v->error = absl::OkStatus();
        v->write_fence.reset();  // Finished (this ran after it), maybe failed.
        v->read_fences.clear();
        v->has_state.store(false, std::memory_order_release);
        return absl::OkStatus();
      },
      Context::Host(), {}, {var}, FnProperty::kNoSkip, 0, "ClearError");
}

void EngineBase::Retire(const absl::Status& status) {
  if (!status.ok()) RecordError(status);
  WorkerBatch& batch = tls_worker;
  if (batch.engine != this) {
    // Another thread (an async completion, a device callback, the naive
    // engine's pusher): once this retirement is seen, WaitForAll may return
    // and the engine be destroyed. Retire and wake under the waiters' mutex,
    // and touch nothing after letting go of it.
    MutexLock lock(&wait_mu_);
    retired_.Add(1, std::memory_order_seq_cst);
    const int64_t in_flight = InFlight();
    const bool idle = idle_waiters_.load(std::memory_order_seq_cst) > 0;
    if (ShouldWake(in_flight, idle, room_waiters_.load(std::memory_order_seq_cst) > 0)) {
      SignalWaiters(idle && in_flight == 0);
    }
    return;
  }
  retired_.Add(1, std::memory_order_seq_cst);
  // A waiter counts itself before it checks InFlight(), and this counted
  // its retirement before it looks for waiters: one of the two sees the other.
  const bool idle = idle_waiters_.load(std::memory_order_seq_cst) > 0;
  const bool room = room_waiters_.load(std::memory_order_seq_cst) > 0;
  if (!idle && !room) return;
  // A pusher waiting for room resumes only hundreds of retirements later,
  // and InFlight() reads every worker's shard (a miss on each other's line):
  // a worker of this engine looks every room_check_every_ retirements, and
  // when it runs out of work (WorkerIdle), not at each.
  if (!idle) {
    if (++batch.retired_unchecked < room_check_every_) return;
    batch.retired_unchecked = 0;
  }
  WakeWaiters(idle, room);
}

bool EngineBase::ShouldWake(int64_t in_flight, bool idle, bool room) const {
  // Only a waiter whose condition now holds (see WaitForRoom).
  return (in_flight == 0 && idle) || (in_flight <= LowWater() && room);
}

void EngineBase::WakeWaiters(bool idle, bool room) {
  if (const int64_t in_flight = InFlight(); ShouldWake(in_flight, idle, room)) {
    MutexLock lock(&wait_mu_);
    SignalWaiters(idle && in_flight == 0);
  }
}

void EngineBase::SignalWaiters(bool idle_now) {
  wait_cv_.SignalAll();
  if (idle_now) idle_cv_.notify_all();
  wake_epoch_.fetch_add(1, std::memory_order_seq_cst);
  WakeHelpers();
}

void EngineBase::RecordError(const absl::Status& status) {
  MutexLock lock(&wait_mu_);
  if (first_error_.ok()) first_error_ = status;
}

std::string EngineBase::DescribePending() {
  std::string out = absl::StrCat("in flight: ", InFlight(), "\n");
  // The push lock only for the list of vars (pushes wait while it is held);
  // each var is then described under its own lock, which keeps its holders
  // and waiters (and so their blocks and names) in place. Vars are never
  // freed while the engine lives, so a var deleted meanwhile is safe to
  // read: it has nothing held or waiting.
  std::vector<std::pair<Var*, uint64_t>> vars;
  {
    SpinLockHolder lock(&push_mu_);
    for (Var* v : vars_.Live()) vars.emplace_back(v, vars_.HandleOf(v).bits());
  }
  for (const auto& [v, bits] : vars) {
    SpinLockHolder var_lock(&v->mu);
    v->TakePendingLocked();
    const bool held = v->write_running || v->running_reads > 0;
    if (!held && v->waiting == 0) continue;
    absl::StrAppend(&out, absl::StrFormat("var %#x:", bits));
    if (held) {
      absl::StrAppend(&out, " held by");
      for (OprBlock* h : v->holders) {
        absl::StrAppend(&out, " ", OpName(h), v->write_running ? " (write)" : " (read)");
      }
      // Readers past the first few are counted, not named (Var::holders).
      const int unnamed =
          v->write_running ? 0 : v->running_reads - static_cast<int>(v->holders.size());
      if (unnamed > 0) {
        absl::StrAppend(&out, v->holders.empty() ? " " : " and ", unnamed,
                        v->holders.empty() ? " reader(s)" : " more reader(s)");
      }
    }
    if (v->waiting > 0) {
      absl::StrAppend(&out, "; waiting:");
      for (uint32_t i = 0; i < v->waiting; ++i) {
        const Var::Waiter& w = v->WaiterLocked(i);
        absl::StrAppend(&out, " ", OpName(w.op), w.write ? " (write)" : " (read)");
      }
    }
    if (!v->error.ok()) absl::StrAppend(&out, "; poisoned: ", v->error.message());
    out += "\n";
  }
  DescribeQueued(&out);
  {
    // Asynchronous functions whose body has run and whose Completion has not
    // been called (also those with no vars, which no var lists): named under
    // awaiting_mu_, which keeps their blocks in place.
    std::string awaiting;
    SpinLockHolder lock(&awaiting_mu_);
    for (const auto& [op, seq] : awaiting_) absl::StrAppend(&awaiting, " ", OpName(op));
    if (!awaiting.empty()) absl::StrAppend(&out, "waiting for their completion:", awaiting, "\n");
  }
  return out;
}

std::string EngineBase::DescribeOp(const OprBlock* op) { return OpName(op); }

EngineStats EngineBase::Stats() const {
  EngineStats s;
  s.pushed = pushed_.load();
  s.completed = completed_.Sum();
  s.skipped = skipped_.load();
  s.failed = failed_.load();
  s.double_completions = double_completions_.load();
  s.in_flight = InFlight();
  return s;
}

}  // namespace rill::engine::internal
