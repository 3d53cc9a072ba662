// How a function enters EngineBase: resolving and normalizing its vars,
// checking its context, appending it to its vars' queues (PushBlock), the
// one-shot pushes (PushSync, PushAsync, DeleteVariable) and operators
// (NewOperator, Push, DeleteOperator). Blocks come from engine_blocks.cc;
// waiting for room is in engine_wait.cc; retiring and diagnostics in
// engine_base.cc.

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/spin_lock.h"
#include "rill/base/status_macros.h"
#include "rill/engine/engine_base.h"
#include "rill/engine/prefetch.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/stream_listener.h"
#include "rill/stream/verbose.h"

namespace rill::engine::internal {
namespace {

// A kPrioritized function's priority is its int priority plus 2^32 (in 64
// bits): ahead of every normal function's, whatever the two int priorities,
// and never an overflow (the boost used to be 2^20 added in int, so
// priority=INT_MAX wrapped around to the back of the queue).
int64_t EffectivePriority(int priority, FnProperty prop) {
  constexpr int64_t kPrioritizedBoost = int64_t{1} << 32;
  return int64_t{priority} + (prop == FnProperty::kPrioritized ? kPrioritizedBoost : 0);
}

}  // namespace

PlatformManager& EngineBase::platforms() const {
  return options_.platforms != nullptr ? *options_.platforms : PlatformManager::Default();
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

absl::Status EngineBase::PushOne(BlockPtr op, absl::Span<const VarHandle> const_vars,
                                 absl::Span<const VarHandle> mutate_vars, bool here) {
  if (shutdown_.load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError(
        absl::StrCat("push of ", DescribeOp(op.get()), ": the engine is shut down"));
  }
  if (!op->ctx.is_host()) {
    // Annotated only on error: the text costs allocations on every device push.
    if (absl::Status checked = CheckContext(op->ctx); !checked.ok()) {
      return Annotate(checked, absl::StrCat("push of ", DescribeOp(op.get())));
    }
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
          absl::StrCat("push of ", DescribeOp(op.get()), ": the engine is shut down"));
    }
    // Annotated only on error: building the text costs two allocations.
    VarLists lists;
    if (absl::Status normalized = Normalize(const_vars, mutate_vars, op->own.prop, &lists);
        !normalized.ok()) {
      return Annotate(normalized, absl::StrCat("push of ", DescribeOp(op.get())));
    }
    ready = PushBlock(op.get(), lists);
  }
  OprBlock* raw = op.release();
  if (!ready) return absl::OkStatus();
  if (here && OutsideFunctions()) {
    // Granted in push order like any other: running it now is what a
    // worker taking it at once would do. Run may hand it back to Dispatch
    // (host work after unfinished device work).
    Run(raw, kPushingThread);
  } else {
    Dispatch(raw);
  }
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
  // Into the recycled block's string (Reset clears it and keeps its
  // capacity): a long name (a graph segment's) allocates only the first time.
  if (!name.empty()) op->own.name.assign(name.data(), name.size());
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

absl::Status EngineBase::PushSyncInline(SyncFn fn, Context ctx,
                                        absl::Span<const VarHandle> const_vars,
                                        absl::Span<const VarHandle> mutate_vars, FnProperty prop,
                                        int priority, std::string_view name) {
  if (!fn) {
    return absl::InvalidArgumentError(
        absl::StrCat("PushSyncInline('", AsAbsl(name), "'): fn is empty"));
  }
  BlockPtr op = NewOneShot(ctx, prop, priority, name);
  op->own.sync_fn = std::move(fn);
  return PushOne(std::move(op), const_vars, mutate_vars, /*here=*/ctx.is_host());
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
    if (absl::Status checked = CheckContext(ctx); !checked.ok()) {
      return Annotate(checked, absl::StrCat("Push of operator ", handle.id()));
    }
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

}  // namespace rill::engine::internal
