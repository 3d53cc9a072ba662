#include "rill/engine/engine_base.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/engine/prefetch.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/event.h"
#include "rill/stream/stream.h"
#include "rill/stream/stream_listener.h"
#include "rill/stream/verbose.h"

namespace rill::engine::internal {
namespace {

std::atomic<uint32_t> next_engine_tag{0};

// 1..VarTable::kMaxTag, in turn (0 is never a tag: no handle is all zeros).
uint16_t NewTag() {
  return static_cast<uint16_t>(1 + next_engine_tag.fetch_add(1) % VarTable::kMaxTag);
}

// A kPrioritized function's priority is its int priority plus 2^32 (in 64
// bits): ahead of every normal function's, whatever the two int priorities,
// and never an overflow (the boost used to be 2^20 added in int, so
// priority=INT_MAX wrapped around to the back of the queue).
int64_t EffectivePriority(int priority, FnProperty prop) {
  constexpr int64_t kPrioritizedBoost = int64_t{1} << 32;
  return int64_t{priority} + (prop == FnProperty::kPrioritized ? kPrioritizedBoost : 0);
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

namespace {

// What a worker thread batches: the blocks it freed and has not handed back
// yet, and how many functions it retired since it last looked for a pusher
// waiting for room.
struct WorkerBatch {
  static constexpr int kSize = 32;
  const EngineBase* engine = nullptr;  // Set: this thread is one of its workers.
  OprBlock* first = nullptr;
  OprBlock* last = nullptr;
  int size = 0;
  int retired_unchecked = 0;
};
thread_local WorkerBatch tls_worker;

}  // namespace

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

VarHandle EngineBase::NewVariable() {
  SpinLockHolder lock(&push_mu_);
  return vars_.New();
}

absl::Status EngineBase::Normalize(absl::Span<const VarHandle> const_vars,
                                   absl::Span<const VarHandle> mutate_vars, FnProperty prop,
                                   VarLists* lists) {
  auto& reads = lists->reads;
  auto& writes = lists->writes;
  writes.clear();
  reads.clear();
  for (size_t i = 0; i < mutate_vars.size(); ++i) {
    auto var = vars_.Resolve(mutate_vars[i], prop == FnProperty::kDeleteVar);
    if (!var.ok()) return Annotate(var.status(), absl::StrCat("mutate_vars[", i, "]"));
    writes.push_back(*var);
  }
  for (size_t i = 0; i < const_vars.size(); ++i) {
    auto var = vars_.Resolve(const_vars[i], false);
    if (!var.ok()) return Annotate(var.status(), absl::StrCat("const_vars[", i, "]"));
    reads.push_back(*var);
  }
  // A var listed twice counts once; a var in both lists is a write.
  auto sort_unique = [](auto& v) {
    if (v.size() < 2) return;
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  sort_unique(writes);
  sort_unique(reads);
  if (!reads.empty() && !writes.empty()) {
    reads.erase(
        std::remove_if(reads.begin(), reads.end(),
                       [&](Var* v) { return std::binary_search(writes.begin(), writes.end(), v); }),
        reads.end());
  }
  return absl::OkStatus();
}

int64_t EngineBase::InFlight() const {
  // Retirements first: every push and hold a seen retirement follows is then
  // seen too, so the result is never below the true count.
  const int64_t retired = retired_.Sum(std::memory_order_seq_cst);
  const int64_t holds = holds_.load(std::memory_order_seq_cst);
  return pushed_.load(std::memory_order_seq_cst) + holds - retired;
}

absl::Status EngineBase::PushOne(BlockPtr op, absl::Span<const VarHandle> const_vars,
                                 absl::Span<const VarHandle> mutate_vars) {
  if (shutdown_.load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError(
        absl::StrCat("push of ", OpName(op.get()), ": the engine is shut down"));
  }
  if (!op->ctx.is_host()) {
    RILL_RETURN_IF_ERROR(
        Annotate(CheckContext(op->ctx), absl::StrCat("push of ", OpName(op.get()))));
  }
  WaitForRoom();
  bool ready;
  {
    SpinLockHolder lock(&push_mu_);
    // Checked again under the lock: Shutdown passes through it after
    // setting the flag, so a push either is counted before Shutdown waits
    // for what is in flight, or is refused.
    if (shutdown_.load(std::memory_order_acquire)) {
      return absl::FailedPreconditionError(
          absl::StrCat("push of ", OpName(op.get()), ": the engine is shut down"));
    }
    // Annotated only on error: building the text costs two allocations.
    VarLists lists;
    if (absl::Status normalized = Normalize(const_vars, mutate_vars, op->own.prop, &lists);
        !normalized.ok()) {
      return Annotate(normalized, absl::StrCat("push of ", OpName(op.get())));
    }
    ready = PushBlock(op.get(), lists);
  }
  OprBlock* raw = op.release();
  if (ready) Dispatch(raw);
  return absl::OkStatus();
}

bool EngineBase::PushBlock(OprBlock* op, const VarLists& vars) {
  op->seq = next_seq_++;
  op->deps.clear();  // Left by the block's last use (Reset leaves the line alone).
  // A var that is not busy is appended to under its lock, whose line the
  // worker that last released the var holds: start those misses together
  // rather than one per lock. A busy var's first line, which its holders
  // use, is left alone (its appends go through `pending`, on the line
  // Normalize just read).
  auto prefetch = [](Var* v) {
    if ((v->pending.load(std::memory_order_relaxed) & Var::kBusy) == 0) PrefetchForWrite(v);
  };
  for (Var* v : vars.reads) prefetch(v);
  for (Var* v : vars.writes) prefetch(v);
  const size_t n_deps = vars.reads.size() + vars.writes.size();
  if (n_deps > op->deps.capacity()) op->deps.reserve(n_deps);
  for (Var* v : vars.reads) op->deps.push_back(VarDep{v, false});
  for (Var* v : vars.writes) op->deps.push_back(VarDep{v, true});
  if (profiler_.enabled()) {
    profiler_.NoteDeps(op->seq, vars.reads, vars.writes);
  }
  if (VerboseLevel() >= 2) {
    StreamOp line;
    line.device = op->ctx.ToString();
    line.lane = "engine";
    line.name = op->name().empty() ? "(unnamed)" : op->name();
    line.args = absl::StrCat("push ", op->seq, ", reads ", vars.reads.size(), ", writes ",
                             vars.writes.size());
    EmitVerboseLine(FormatVerboseLine("push", line));
  }
  const int n = static_cast<int>(op->deps.size());
  op->wait.store(n + 1, std::memory_order_relaxed);
  // Only pushers write pushed_, under push_mu_: no read-modify-write.
  pushed_.store(pushed_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  int granted = 0;
  for (VarDep& dep : op->deps) {
    if (dep.var->TryAppendPending(op, dep.write)) continue;
    SpinLockHolder lock(&dep.var->mu);
    if (dep.var->AppendLocked(op, dep.write)) ++granted;
  }
  // All granted here: no completion can grant it, so nobody else touches wait.
  if (granted == n) {
    op->wait.store(0, std::memory_order_relaxed);
    return true;
  }
  // Ready when every dependency is granted (the +1 kept it from being
  // dispatched by a completion while the appends were under way).
  return op->wait.fetch_sub(granted + 1, std::memory_order_acq_rel) == granted + 1;
}

EngineBase::BlockPtr EngineBase::NewOneShot(Context ctx, FnProperty prop, int priority,
                                            std::string_view name) {
  BlockPtr op(NewBlock());
  // A fresh block's fields are already the defaults: writing them anyway
  // would take the line from the worker that reset the block.
  if (prop != FnProperty::kNormal) op->own.prop = prop;
  if (!name.empty()) op->own.name = std::string(name);
  if (!(ctx == Context())) op->ctx = ctx;
  op->priority = EffectivePriority(priority, prop);
  return op;
}

absl::Status EngineBase::PushSync(SyncFn fn, Context ctx, absl::Span<const VarHandle> const_vars,
                                  absl::Span<const VarHandle> mutate_vars, FnProperty prop,
                                  int priority, std::string_view name) {
  if (!fn)
    return absl::InvalidArgumentError(absl::StrCat("PushSync('", AsAbsl(name), "'): fn is empty"));
  BlockPtr op = NewOneShot(ctx, prop, priority, name);
  op->own.sync_fn = std::move(fn);
  return PushOne(std::move(op), const_vars, mutate_vars);
}

absl::Status EngineBase::PushAsync(AsyncFn fn, Context ctx, absl::Span<const VarHandle> const_vars,
                                   absl::Span<const VarHandle> mutate_vars, FnProperty prop,
                                   int priority, std::string_view name) {
  if (!fn)
    return absl::InvalidArgumentError(absl::StrCat("PushAsync('", AsAbsl(name), "'): fn is empty"));
  BlockPtr op = NewOneShot(ctx, prop, priority, name);
  op->own.async_fn = std::move(fn);
  return PushOne(std::move(op), const_vars, mutate_vars);
}

absl::StatusOr<OperatorHandle> EngineBase::NewOperator(AsyncFn fn,
                                                       absl::Span<const VarHandle> const_vars,
                                                       absl::Span<const VarHandle> mutate_vars,
                                                       FnProperty prop, std::string_view name) {
  if (!fn) return absl::InvalidArgumentError("NewOperator: fn is empty");
  if (prop == FnProperty::kDeleteVar) {
    return absl::InvalidArgumentError("NewOperator: kDeleteVar is for DeleteVariable");
  }
  auto opr = std::make_shared<Opr>();
  opr->async_fn = std::move(fn);
  opr->prop = prop;
  opr->name = std::string(name);
  SpinLockHolder lock(&push_mu_);
  RILL_RETURN_IF_ERROR(Annotate(Normalize(const_vars, mutate_vars, prop, &opr->vars),
                                absl::StrCat("NewOperator('", AsAbsl(name), "')")));
  for (Var* v : opr->vars.reads) opr->handles.push_back(vars_.HandleOf(v));
  for (Var* v : opr->vars.writes) opr->handles.push_back(vars_.HandleOf(v));
  const uint64_t id = next_operator_++;
  operators_[id] = OperatorEntry{std::move(opr)};
  return OperatorHandle::FromId(id);
}

absl::Status EngineBase::CheckContext(const Context& ctx) {
  if (ctx.is_host()) return absl::OkStatus();
  {
    MutexLock lock(&contexts_mu_);
    if (checked_contexts_.contains(std::make_pair(ctx.platform, ctx.ordinal))) {
      return absl::OkStatus();
    }
  }
  PlatformManager& manager = options_.platforms ? *options_.platforms : PlatformManager::Default();
  absl::StatusOr<Platform*> platform = manager.PlatformWithId(ctx.platform);
  if (!platform.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("context ", ctx.ToString(), " names no registered platform"));
  }
  if (ctx.ordinal < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("context ", ctx.ToString(), ": device ordinal ", ctx.ordinal, " is negative"));
  }
  if (absl::Status available = (*platform)->Availability(); !available.ok()) {
    return absl::UnavailableError(absl::StrCat("context ", ctx.ToString(), ": platform ",
                                               (*platform)->Name(), " has no usable device (",
                                               available.message(), ")"));
  }
  if (const int count = (*platform)->VisibleDeviceCount(); ctx.ordinal >= count) {
    return absl::NotFoundError(
        absl::StrCat("context ", ctx.ToString(), ": device ordinal ", ctx.ordinal,
                     " is out of range: platform ", (*platform)->Name(), " has ", count,
                     " device(s)", count > 0 ? absl::StrCat(", 0..", count - 1) : std::string()));
  }
  MutexLock lock(&contexts_mu_);
  checked_contexts_.insert(std::make_pair(ctx.platform, ctx.ordinal));
  return absl::OkStatus();
}

absl::Status EngineBase::Push(OperatorHandle handle, Context ctx, int priority) {
  if (shutdown_.load()) return absl::FailedPreconditionError("Push: the engine is shut down");
  if (!ctx.is_host()) {
    RILL_RETURN_IF_ERROR(
        Annotate(CheckContext(ctx), absl::StrCat("Push of operator ", handle.id())));
  }
  WaitForRoom();
  BlockPtr op(NewBlock());
  op->ctx = ctx;
  bool ready;
  {
    SpinLockHolder lock(&push_mu_);
    if (shutdown_.load(std::memory_order_acquire)) {
      return absl::FailedPreconditionError("Push: the engine is shut down");
    }
    auto it = operators_.find(handle.id());
    if (it == operators_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Push: operator ", handle.id(), " does not exist or was deleted"));
    }
    op->shared = it->second.opr;
    op->opr = op->shared.get();
    // The operator's vars may have been deleted since NewOperator (and
    // their slots reused): check the handles it was given, not the slots.
    const VarLists& vars = op->opr->vars;
    for (VarHandle h : op->opr->handles) {
      RILL_RETURN_IF_ERROR(
          Annotate(vars_.Resolve(h, false).status(),
                   absl::StrCat("Push of operator ", handle.id(), " ('", op->opr->name, "')")));
    }
    op->priority = EffectivePriority(priority, op->opr->prop);
    ready = PushBlock(op.get(), vars);
  }
  OprBlock* raw = op.release();
  if (ready) Dispatch(raw);
  return absl::OkStatus();
}

absl::Status EngineBase::DeleteOperator(OperatorHandle handle) {
  SpinLockHolder lock(&push_mu_);
  // Runs already pushed hold the Opr; it goes with the last of them.
  if (operators_.erase(handle.id()) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeleteOperator: operator ", handle.id(), " does not exist or was deleted"));
  }
  return absl::OkStatus();
}

absl::Status EngineBase::DeleteVariable(SyncFn fn, Context ctx, VarHandle var) {
  BlockPtr op = NewOneShot(ctx, FnProperty::kDeleteVar, 0, "DeleteVariable");
  op->own.sync_fn = fn ? std::move(fn) : SyncFn([](RunContext) { return absl::OkStatus(); });
  return PushOne(std::move(op), {}, {var});
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
