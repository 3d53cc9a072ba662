// How an engine runs a function it has dispatched: gathering what it
// depends on (poison, device fences), running the body inline or on a
// device stream, and completing it (errors, fences, releasing its vars).
// Pushing is in engine_push.cc, retiring in engine_base.cc, waiting in
// engine_wait.cc, shutdown in engine_shutdown.cc.

#include <exception>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/engine/engine_base.h"
#include "rill/engine/prefetch.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/device_span.h"
#include "rill/stream/event.h"
#include "rill/stream/stream.h"

namespace rill::engine::internal {
namespace {

thread_local const EngineBase* tls_running_engine = nullptr;
// The number Run was given for the function this thread runs (profiles).
thread_local int tls_run_worker = -1;
// The asynchronous body this thread runs, and whether its completion was
// called inline (on this thread, before the body returned): then only this
// thread touches the block's completion state, and the return completes
// the function without a second atomic step.
struct InlineCompletion {
  OprBlock* op = nullptr;
  uint64_t seq = 0;
  bool called = false;
};
thread_local InlineCompletion tls_async;

// Marks the calling thread as running an engine function for its scope.
class RunningScope {
 public:
  explicit RunningScope(const EngineBase* engine) : saved_(tls_running_engine) {
    tls_running_engine = engine;
  }
  ~RunningScope() { tls_running_engine = saved_; }

 private:
  const EngineBase* saved_;
};

}  // namespace

bool InsideEngineFunction() { return tls_running_engine != nullptr; }
const EngineBase* RunningEngine() { return tls_running_engine; }

absl::Status EngineBase::GatherDependencies(OprBlock* op,
                                            std::vector<std::shared_ptr<Fence>>* fences) {
  absl::Status poison;
  auto take = [&](Var* v, const std::shared_ptr<Fence>& f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(v->mu) {
    if (f == nullptr) return;
    if (!f->done()) {
      fences->push_back(f);
    } else if (absl::Status s = f->status(); !s.ok() && v->error.ok()) {
      v->error = s;  // Device work that wrote or read it failed: the poison sticks.
    }
  };
  for (VarDep& dep : op->deps) {
    Var* v = dep.var;
    if (!v->has_state.load(std::memory_order_acquire)) continue;
    SpinLockHolder lock(&v->mu);
    take(v, v->write_fence);
    if (dep.write) {
      for (const auto& f : v->read_fences) take(v, f);
    }
    if (!v->error.ok() && poison.ok()) poison = v->error;
  }
  return poison;
}

void EngineBase::LookAhead(const OprBlock* op) {
  for (const VarDep& dep : op->deps) PrefetchForWrite(dep.var);
}

bool EngineBase::OutsideFunctions() { return tls_running_engine == nullptr; }

void EngineBase::Run(OprBlock* op, int worker) {
  const Opr& opr = *op->opr;
  tls_run_worker = worker;
  if (cancel_.load(std::memory_order_acquire)) {
    op->status = absl::CancelledError(absl::StrCat(DescribeOp(op), " was cancelled by Shutdown"));
    skipped_.fetch_add(1, std::memory_order_relaxed);
    Finish(op, /*ran=*/false);
    return;
  }
  // What Finish will touch (the vars, and the functions waiting at their
  // heads) was last written by other threads: start those misses now, so
  // that they overlap each other and the body.
  for (const VarDep& dep : op->deps) dep.var->Prefetch();
  std::vector<std::shared_ptr<Fence>> fences;
  absl::Status poison = GatherDependencies(op, &fences);
  const bool no_skip = opr.prop == FnProperty::kNoSkip || opr.prop == FnProperty::kDeleteVar;
  if (!poison.ok() && !no_skip) {
    op->status = poison;
    skipped_.fetch_add(1, std::memory_order_relaxed);
    Finish(op, /*ran=*/false);
    return;
  }
  // Host work after device work comes back once the device is done (no
  // thread waits meanwhile); so does device work after device work that
  // has no event to wait on (its backend could not create one).
  const bool wait_on_host =
      op->ctx.is_host() ||
      std::any_of(fences.begin(), fences.end(), [](const auto& f) { return f->event == nullptr; });
  if (wait_on_host && !fences.empty()) {
    op->pending_fences.store(static_cast<int>(fences.size()) + 1);
    for (auto& f : fences) {
      f->OnDone([this, op](absl::Status) {
        if (op->pending_fences.fetch_sub(1) == 1) Dispatch(op);
      });
    }
    if (op->pending_fences.fetch_sub(1) == 1) Dispatch(op);
    return;
  }
  if (op->ctx.is_host()) {
    RunBody(op, RunContext{op->ctx, nullptr});
  } else {
    RunOnDevice(op, fences);
  }
}

absl::StatusOr<StreamPool*> EngineBase::PoolFor(const Context& ctx, bool copy) {
  MutexLock lock(&pools_mu_);
  auto key = std::make_tuple(ctx.platform, ctx.ordinal, copy);
  auto it = stream_pools_.find(key);
  if (it != stream_pools_.end()) return it->second.get();
  PlatformManager& manager = options_.platforms ? *options_.platforms : PlatformManager::Default();
  RILL_ASSIGN_OR_RETURN(Platform * platform, manager.PlatformWithId(ctx.platform));
  RILL_ASSIGN_OR_RETURN(StreamExecutor * executor, platform->ExecutorForDevice(ctx.ordinal));
  auto pool = std::make_unique<StreamPool>(executor, copy ? 1 : options_.streams_per_device, copy);
  StreamPool* raw = pool.get();
  stream_pools_.emplace(key, std::move(pool));
  return raw;
}

void EngineBase::RunOnDevice(OprBlock* op, std::vector<std::shared_ptr<Fence>>& fences) {
  const FnProperty prop = op->opr->prop;
  const bool copy = prop == FnProperty::kCopyToDevice || prop == FnProperty::kCopyFromDevice;
  absl::StatusOr<StreamPool*> pool = PoolFor(op->ctx, copy);
  absl::StatusOr<Stream*> stream =
      pool.ok() ? (*pool)->Acquire(fences.size() == 1 ? fences[0].get() : nullptr) : pool.status();
  if (!stream.ok()) {
    op->status =
        Annotate(stream.status(), absl::StrCat(DescribeOp(op), " on ", op->ctx.ToString()));
    failed_.fetch_add(1, std::memory_order_relaxed);
    Finish(op, /*ran=*/false);
    return;
  }
  // Device work this function depends on: an event wait on the device, or
  // nothing when it ran on this very stream.
  for (auto& f : fences) {
    if (f->stream != *stream && f->event != nullptr) (*stream)->ThenWaitFor(f->event.get());
  }
  op->stream = *stream;
  op->pool = *pool;
  // The device span starts once the waits above are over.
  if (profiler_.enabled()) op->device_span = DeviceSpan::Begin(*stream);
  RunBody(op, RunContext{op->ctx, *stream});
}

void EngineBase::RunBody(OprBlock* op, RunContext rc) {
  Opr& opr = *op->opr;
  if (profiler_.enabled()) {
    // Set together, so that a span never lacks its worker, even when
    // profiling started while the function was on its way here.
    op->start_ns = Profiler::NowNs();
    op->worker = tls_run_worker;
  }
  RunningScope scope(this);
  if (opr.sync_fn) {
    absl::Status status;
    try {
      status = opr.sync_fn(rc);
    } catch (...) {
      status = CurrentExceptionStatus("");
    }
    // A synchronous body completes exactly once, here: no need for the
    // double-completion flag (whose line the pusher last wrote).
    CompleteOnce(op, std::move(status));
    return;
  }
  // The function completes once both its body has returned and its
  // Completion has been called, whichever comes second: a completion
  // called before the body returns (inline, or by another thread) only
  // leaves its status in the block, and the return completes it, as for a
  // synchronous body. So the block and the push stay in place while the
  // body runs, with no reference or hold to take, and an inline completion
  // costs a synchronous return and one atomic step (the first-call check).
  op->async_state.store(0, std::memory_order_relaxed);
  bool called_inline;
  {
    // Restored however the scope is left (a nested body saves the outer one).
    struct Scope {
      InlineCompletion outer = tls_async;
      ~Scope() { tls_async = outer; }
    } scope;
    tls_async = InlineCompletion{op, op->seq, false};
    Completion completion = op->MakeCompletion();
    try {
      opr.async_fn(rc, completion);
    } catch (...) {
      completion(CurrentExceptionStatus(""));
    }
    called_inline = tls_async.called;
  }
  if (!called_inline &&
      (op->async_state.load(std::memory_order_acquire) & OprBlock::kCompleted) == 0) {
    // Listed from the body's return until its first completion, for
    // Shutdown to name and abandon: never while the body runs, so that
    // abandoning it (which enqueues on its stream) cannot race the body.
    // The return is marked under awaiting_mu_, so a completion that sees
    // it finds the entry to erase.
    SpinLockHolder lock(&awaiting_mu_);
    const uint32_t prev = op->async_state.fetch_or(OprBlock::kReturned, std::memory_order_acq_rel);
    if ((prev & OprBlock::kCompleted) == 0) {
      awaiting_.emplace(op, op->seq);
      return;  // The completion completes it; the block may be gone already.
    }
  }
  CompleteOnce(op, std::move(op->async_status));
}

void EngineBase::Complete(OprBlock* op, uint64_t seq, absl::Status status) {
  // The first call for push `seq` raises done_seq past it; a late call (the
  // block may hold a later push by now) finds it there or beyond.
  uint64_t done = op->done_seq.load(std::memory_order_acquire);
  bool first = false;
  while (done < seq + 1) {
    if (op->done_seq.compare_exchange_weak(done, seq + 1, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
      first = true;
      break;
    }
  }
  if (!first && (done & OprBlock::kAbandoned) != 0) {
    // Shutdown gave up on this function and completed it; the engine may be
    // gone, so only the block (kept for good) and the log are touched.
    RILL_LOG(ERROR) << "engine: the completion of function #" << seq
                    << " was called after Shutdown abandoned it (its deadline had passed); ignored"
                    << (status.ok() ? std::string()
                                    : absl::StrCat(" (status: ", status.ToString(), ")"));
    return;
  }
  EngineBase* engine = op->engine;
  if (!first) {
    engine->double_completions_.fetch_add(1, std::memory_order_relaxed);
    // Not named: the block may hold another function by now.
    absl::Status report = absl::FailedPreconditionError(
        absl::StrCat("the completion of function #", seq,
                     " was called again (or it threw after completing); ignored"));
    RILL_LOG(ERROR) << report.message();
    engine->RecordError(report);
    return;
  }
  op->async_status = std::move(status);
  if (tls_async.op == op && tls_async.seq == seq) {
    tls_async.called = true;  // Inline: the return, on this thread, completes it.
    return;
  }
  // Published by the release below to the body's return, which completes
  // the function if it has not returned yet (see RunBody).
  const uint32_t prev = op->async_state.fetch_or(OprBlock::kCompleted, std::memory_order_acq_rel);
  if ((prev & OprBlock::kReturned) == 0) return;
  {
    SpinLockHolder lock(&engine->awaiting_mu_);
    engine->awaiting_.erase(op);
  }
  engine->CompleteOnce(op, std::move(op->async_status));
}

void EngineBase::CompleteOnce(OprBlock* op, absl::Status status) {
  if (profiler_.enabled()) op->end_ns = Profiler::NowNs();
  if (!status.ok()) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    op->status =
        Annotate(status, absl::StrCat("function ", DescribeOp(op), " on ", op->ctx.ToString()));
  }
  if (op->stream != nullptr) {
    // Device work: an event owned by this record, and a notification that
    // observes completion without blocking any thread.
    auto fence = std::make_shared<Fence>();
    fence->stream = op->stream;
    absl::StatusOr<std::unique_ptr<Event>> event = op->pool->executor()->CreateEvent();
    if (event.ok()) {
      op->stream->ThenRecordEvent(event->get());
      fence->event = std::move(*event);
    }
    op->fence = fence;
    StreamPool* pool = op->pool;
    Stream* stream = op->stream;
    // The notification retires the push and may run before Finish below:
    // hold the function in flight until Finish (which retires the hold) has
    // recorded its error, counted it and released its vars.
    holds_.fetch_add(1, std::memory_order_relaxed);
    // An error of the device work names the function, as a body's error does.
    const bool profiling = profiler_.enabled();
    DeviceSpan::End(std::move(op->device_span), stream,
                    [this, fence, pool, stream, name = op->name(), ctx = op->ctx, seq = op->seq,
                     profiling](absl::Status s, int64_t start_ns, int64_t end_ns) {
                      if (profiling && end_ns != 0)
                        RecordDeviceSpan(name, ctx, stream, seq, start_ns, end_ns, s);
                      pool->WorkDone(stream);
                      if (!s.ok()) {
                        s = Annotate(s, absl::StrCat("function ",
                                                     name.empty() ? std::string("(unnamed)")
                                                                  : absl::StrCat("'", name, "'"),
                                                     " on ", ctx.ToString()));
                      }
                      fence->Complete(s);
                      Retire(s);
                    });
    pool->Release(stream, fence.get());
    AfterDeviceEnqueue(op);
  }
  Finish(op, /*ran=*/true);
}

void EngineBase::Finish(OprBlock* op, bool ran) {
  const absl::Status& error = op->status;
  if (!error.ok()) RecordError(error);
  ReadyList granted;
  for (VarDep& dep : op->deps) {
    Var* v = dep.var;
    SpinLockHolder lock(&v->mu);
    if (dep.write) {
      // A var with no state (no poison, no fence) written by host work
      // that succeeded keeps none: its fences (on the line the pusher
      // appends to) and its poison (third line) are then not touched.
      const bool had_state = v->has_state.load(std::memory_order_relaxed);
      if (had_state || !error.ok() || op->fence != nullptr) {
        if (!error.ok() && v->error.ok()) v->error = error;
        if (ran) {
          // Null for host work, which waited for the rest. Written only
          // when it changes.
          if (v->write_fence != op->fence) v->write_fence = op->fence;
          if (!v->read_fences.empty()) v->read_fences.clear();
        }
        // A function that did not run (skipped, cancelled, no stream)
        // waited for no device work: what still runs on the var stays its
        // fences, for the next user, WaitForVar and DeleteVariable to wait on.
        v->has_state.store(!v->error.ok() || v->write_fence != nullptr || !v->read_fences.empty(),
                           std::memory_order_release);
      }
    } else if (op->fence != nullptr) {
      v->has_state.store(true, std::memory_order_release);
      if (v->read_fences.size() >= 16) {
        // Drop the finished ones; a failed one poisons the var first, as it
        // would have when the next writer gathered it.
        auto& fs = v->read_fences;
        fs.erase(std::remove_if(fs.begin(), fs.end(),
                                [v](const auto& f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(v->mu) {
                                  if (!f->done()) return false;
                                  if (absl::Status s = f->status(); !s.ok() && v->error.ok()) {
                                    v->error = s;
                                  }
                                  return true;
                                }),
                 fs.end());
      }
      v->read_fences.push_back(op->fence);
    }
    v->CompleteLocked(op, dep.write, &granted);
  }
  // Ready when this took the last of its dependencies (in place: the
  // granted list shrinks to the ready ones).
  size_t n_ready = 0;
  for (OprBlock* g : granted) {
    if (g->wait.fetch_sub(1, std::memory_order_acq_rel) == 1) granted[n_ready++] = g;
  }
  granted.resize(n_ready);
  const ReadyList& ready = granted;
  if (op->opr->prop == FnProperty::kDeleteVar) {
    SpinLockHolder lock(&push_mu_);
    for (VarDep& dep : op->deps) vars_.Free(dep.var);
  }
  if (profiler_.enabled() && op->start_ns != 0) RecordHostSpan(op);
  completed_.Add(1);
  op->Release();
  // The push, or for device work the hold CompleteOnce took (the stream's
  // notification retires the push).
  Retire(absl::OkStatus());
  for (OprBlock* r : ready) Dispatch(r, ready.size() == 1);
}

void EngineBase::RecordHostSpan(const OprBlock* op) {
  std::string lane = op->worker == kWaitingThread   ? std::string("engine waiting thread")
                     : op->worker == kPushingThread ? std::string("engine pushing thread")
                                                    : absl::StrCat("engine worker ", op->worker);
  TraceRecorder::Span span{std::move(lane),
                           op->name(),
                           "engine",
                           op->start_ns,
                           op->end_ns != 0 ? op->end_ns : Profiler::NowNs(),
                           0,
                           0,
                           {}};
  span.key = profiler_.Key(op->seq);
  span.args = {{"context", op->ctx.ToString()}, {"push", absl::StrCat(op->seq)}};
  if (op->stream != nullptr) span.args.emplace_back("enqueued on", StreamLane(op->stream));
  if (!op->status.ok()) span.args.emplace_back("status", op->status.ToString());
  profiler_.Record(span);
}

void EngineBase::RecordDeviceSpan(const std::string& name, const Context& ctx, const Stream* stream,
                                  uint64_t seq, int64_t start_ns, int64_t end_ns,
                                  const absl::Status& status) {
  TraceRecorder::Span span{StreamLane(stream), name, "engine.device", start_ns, end_ns, 0, 0, {}};
  span.key = profiler_.Key(seq);
  span.flow_rank = 1;
  span.args = {{"context", ctx.ToString()}, {"push", absl::StrCat(seq)}, {"time", "device"}};
  if (!status.ok()) span.args.emplace_back("status", status.ToString());
  profiler_.Record(span);
}

}  // namespace rill::engine::internal
