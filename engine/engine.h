#ifndef RILL_ENGINE_ENGINE_H_
#define RILL_ENGINE_ENGINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "rill/base/attachments.h"
#include "rill/platform/platform_id.h"

namespace rill {
class PlatformManager;
class Stream;
}  // namespace rill

namespace rill::engine {

// Where a function runs. Cpu() (the same as Host(), printed "cpu"): on an
// engine CPU worker, with no stream. Device(platform, ordinal): on a device
// (a host virtual device, a GPU, an OpenCL device); the function gets a
// stream of that device and enqueues its device work there.
//
// "cpu" and "host:0" are two contexts over the same memory: tensors on cpu
// are allocated from host:0's allocator, but cpu functions run inline on
// the engine's workers while host:0 functions run on host:0's streams. An
// op never mixes them implicitly; Tensor::CopyTo moves a tensor between
// them (a memcpy).
struct Context {
  PlatformId platform = nullptr;  // nullptr: the host CPU.
  int ordinal = 0;

  static Context Cpu() { return Context{}; }
  static Context Host() { return Context{}; }  // Cpu(): "cpu", not host:0.
  static Context Device(PlatformId platform, int ordinal) { return Context{platform, ordinal}; }
  // Device `ordinal` of the platform named `platform_name` in
  // PlatformManager::Default(); NotFound when there is no such platform.
  static absl::StatusOr<Context> Device(std::string_view platform_name, int ordinal);
  // The inverse of ToString: "cpu" or "<platform>:<ordinal>" ("host:1",
  // "opencl:0"). InvalidArgument naming `s` for another form; NotFound for
  // an unknown platform.
  static absl::StatusOr<Context> Parse(std::string_view s);

  bool is_host() const { return platform == nullptr; }
  std::string ToString() const;  // "cpu", "host:1", "cuda:0"
  friend bool operator==(const Context&, const Context&) = default;
};

// What a running function gets: its context and, for a device context, the
// stream it must enqueue its device work on (nullptr for Host()).
struct RunContext {
  Context ctx;
  Stream* stream = nullptr;
};

// How the engine treats a function (MXNet's FnProperty).
enum class FnProperty {
  kNormal,
  kCopyToDevice,    // Runs on the device's copy workers and copy streams.
  kCopyFromDevice,  // Likewise.
  kPrioritized,     // Ahead of every normal function in its queue.
  kAsync,           // Hint: the function completes asynchronously.
  kDeleteVar,       // Internal: a var deletion.
  kNoSkip,          // Runs even when its vars are poisoned (cleanup).
};

// A token for a resource (a buffer, a parameter). Cheap to copy; checked on
// use: a deleted var or a var of another engine is rejected with an error.
class VarHandle {
 public:
  VarHandle() = default;
  bool is_null() const { return bits_ == 0; }
  uint64_t bits() const { return bits_; }
  friend bool operator==(VarHandle a, VarHandle b) { return a.bits_ == b.bits_; }
  friend bool operator<(VarHandle a, VarHandle b) { return a.bits_ < b.bits_; }
  static VarHandle FromBits(uint64_t bits) {
    VarHandle v;
    v.bits_ = bits;
    return v;
  }

 private:
  uint64_t bits_ = 0;
};

namespace internal {
struct OprBlock;
}

// Completes an asynchronous function. Call it exactly once, from any
// thread, with the function's result: before the body returns (then the
// function completes when it returns, at the cost of a synchronous one) or
// after. The function counts as finished -- its dependents may start --
// once both the call and the body's return have happened. A second call does nothing to the
// engine's state: it is reported (logged, and returned by WaitForAll as
// FailedPrecondition) while the engine lives. Copyable; copies share one
// completion. A copy may outlive the engine (destroying it touches nothing).
// Calling it after the engine is destroyed is undefined, except for a
// function that Shutdown abandoned (it gave up waiting for this call, see
// Engine::Shutdown): that call is logged and ignored, at any time, also
// after the engine is gone (the function's block is kept for the process's
// life).
class Completion {
 public:
  Completion() = default;

  void operator()(absl::Status status = absl::OkStatus()) const;

 private:
  friend struct internal::OprBlock;
  Completion(internal::OprBlock* op, uint64_t seq) : op_(op), seq_(seq) {}
  internal::OprBlock* op_ = nullptr;
  uint64_t seq_ = 0;  // Which push of the (recycled) block this completes.
};

using SyncFn = absl::AnyInvocable<absl::Status(RunContext)>;
using AsyncFn = absl::AnyInvocable<void(RunContext, Completion)>;

// A reusable function with fixed vars (NewOperator), pushed many times.
class OperatorHandle {
 public:
  OperatorHandle() = default;
  bool is_null() const { return id_ == 0; }
  uint64_t id() const { return id_; }
  static OperatorHandle FromId(uint64_t id) {
    OperatorHandle h;
    h.id_ = id;
    return h;
  }

 private:
  uint64_t id_ = 0;
};

struct EngineOptions {
  // The most threads of one kind (cpu_workers, workers_per_device,
  // copy_workers_per_device) and streams per device an engine accepts.
  static constexpr int kMaxWorkers = 1024;

  enum class Kind { kThreaded, kNaive };
  Kind kind = Kind::kThreaded;
  // 0: one per core but one (at least 1, at most kMaxWorkers), since the
  // thread that pushes uses a core too -- and lends it to the workers while
  // it waits (waiting_thread_helps); else 1..kMaxWorkers.
  int cpu_workers = 0;
  // WaitForAll, WaitForVar and a push held at max_in_flight, called from a
  // thread that is no engine worker, run ready host functions on that thread
  // while they wait (as TBB's task_group::wait does), so that a pusher
  // waiting on one worker keeps two cores busy. Such a thread must not hold
  // a lock that a function takes, and no function may wait for something
  // the waiting thread does only after its wait. Off: they sleep until the
  // wait is over (RILL_ENGINE_WAITING_THREAD_HELPS=0).
  bool waiting_thread_helps = true;
  int workers_per_device = 1;       // Threads that run device functions (they only enqueue).
  int copy_workers_per_device = 1;  // Threads for kCopyToDevice / kCopyFromDevice.
  // Compute streams in each device's pool (copy streams: 1). More are made
  // only while every one is held by a worker enqueuing (more workers than
  // streams); past the bound, a function may share a stream with unrelated
  // work, whose failure then skips it too.
  int streams_per_device = 2;
  // Pushed but unfinished; past it, Push waits -- running ready host
  // functions meanwhile when waiting_thread_helps (so do not push while
  // holding a lock that a function takes).
  int64_t max_in_flight = 4096;
  absl::Duration watchdog_period = absl::ZeroDuration();  // 0: no watchdog.
  // How long Shutdown(bool) and the destructor wait while no function
  // finishes before they give up on what is stuck (see Engine::Shutdown);
  // InfiniteDuration(): wait forever.
  absl::Duration shutdown_timeout = absl::Seconds(60);
  // Non-empty: profile and write a Chrome trace at shutdown. Engine::Create
  // checks that it can be written (errno's code and reason otherwise).
  std::string trace_path;
  PlatformManager* platforms = nullptr;  // nullptr: PlatformManager::Default().

  // `base` overridden by the environment: RILL_ENGINE=naive|threaded,
  // RILL_ENGINE_CPU_WORKERS (1..kMaxWorkers), RILL_ENGINE_STREAMS_PER_DEVICE
  // (1..kMaxWorkers), RILL_ENGINE_WAITING_THREAD_HELPS (0|1), RILL_ENGINE_MAX_IN_FLIGHT,
  // RILL_ENGINE_WATCHDOG_MS, RILL_ENGINE_TRACE=path, parsed by the table of
  // settings (base/env_settings.h). InvalidArgument naming the variable, its
  // value and what is accepted when a value is bad; a trace path that cannot
  // be written now fails with the system's reason and errno's code.
  static absl::StatusOr<EngineOptions> FromEnv(EngineOptions base);
  static absl::StatusOr<EngineOptions> FromEnv();
};

// Counters, for tests and tools.
struct EngineStats {
  int64_t pushed = 0;
  int64_t completed = 0;
  int64_t skipped = 0;  // Not run because a var was poisoned, or cancelled.
  int64_t failed = 0;   // Ran and failed.
  int64_t double_completions = 0;
  int64_t in_flight = 0;
};

// The dependency engine of DESIGN.md. Functions are pushed with the vars they
// read (const_vars) and write (mutate_vars); two functions that share a var,
// one of them writing it, run in push order; readers of a var run together;
// functions with no common written var are unordered. Var lists are
// normalized (duplicates count once; a var in both lists is a write). Push
// is thread-safe and takes effect atomically in one global order.
//
// Errors: a function that returns an error, throws, or completes with an
// error poisons the vars it writes; a later function touching a poisoned var
// is skipped (unless kNoSkip) and its written vars inherit the error.
// WaitForVar(v) returns v's error every time until ClearError(v) or the var
// is deleted; WaitForAll() returns the first error since the previous call.
//
// Device functions: the body runs on an engine worker and enqueues device
// work on RunContext::stream; the function counts as finished for its
// dependents once that work is enqueued, and dependents on the same device
// are chained to it on the device (same stream, or an event wait), never by
// a host wait. Host functions and WaitForVar wait (without blocking a
// thread) until the device work they depend on has finished. A failure of
// device work is therefore found on the device: a dependent device function
// already issued has its device work skipped (its stream fails on the
// event), and every var it writes is poisoned just the same.
//
//   auto engine = *Engine::Create({});
//   VarHandle w = engine->NewVariable();
//   engine->PushSync([&](RunContext) { ... return absl::OkStatus(); },
//                    Context::Host(), {}, {w}, FnProperty::kNormal, 0, "init_w");
//   RILL_RETURN_IF_ERROR(engine->WaitForVar(w));
//
// Bad input is refused with a status, never a crash: a push to a device
// context is checked against its platform before anything is created for
// it (InvalidArgument for a negative ordinal or an unknown platform,
// NotFound past the platform's last device, Unavailable when it has none).
// `priority` may be any int: kPrioritized functions go ahead of every
// normal function in their queue, then by priority, then push order.
//
// The program owns the engine; destroying it drains pending work (or cancels
// what has not started, see Shutdown) and joins its threads. Thread-safe.
class Engine {
 public:
  // An engine with exactly `options`: the environment is not read (use
  // CreateFromEnv, or EngineOptions::FromEnv, for that).
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineOptions& options);
  // An engine with `base` overridden by the RILL_ENGINE* variables
  // (EngineOptions::FromEnv): what tools and examples use, so that a user
  // can pick the engine from the shell.
  static absl::StatusOr<std::unique_ptr<Engine>> CreateFromEnv(const EngineOptions& base = {});
  // A process-wide engine with the environment's options, created on first
  // use. Shut it down explicitly (ShutdownDefault) before exit if it ran
  // device work; it is otherwise never destroyed. Creating it checks every
  // RILL_* setting (rill::ValidateEnvironment): when one is bad, or the
  // RILL_ENGINE* options are, it logs the error once and every push, wait
  // and operator of the default engine fails with that status ("the default
  // engine was not created: RILL_ENGINE='turbo' is not one of: threaded,
  // naive"); DefaultStatus() returns it.
  static Engine& Default();
  // OK, or why the default engine refuses all work (creating it if needed).
  static absl::Status DefaultStatus();
  static void ShutdownDefault();

  virtual ~Engine() = default;

  // Per-engine state of the layers above (the op layer's random vars), made
  // on first use and destroyed with the engine.
  Attachments& attachments() { return attachments_; }
  // The platforms its contexts name (EngineOptions::platforms, else
  // PlatformManager::Default()): where tensors and ops on this engine find
  // their executors (ExecutorFor(ctx, engine)).
  virtual PlatformManager& platforms() const = 0;

  virtual VarHandle NewVariable() = 0;

  virtual absl::Status PushSync(SyncFn fn, Context ctx, absl::Span<const VarHandle> const_vars,
                                absl::Span<const VarHandle> mutate_vars,
                                FnProperty prop = FnProperty::kNormal, int priority = 0,
                                std::string_view name = "") = 0;
  virtual absl::Status PushAsync(AsyncFn fn, Context ctx, absl::Span<const VarHandle> const_vars,
                                 absl::Span<const VarHandle> mutate_vars,
                                 FnProperty prop = FnProperty::kNormal, int priority = 0,
                                 std::string_view name = "") = 0;

  // PushSync, except that a function that can start at once runs on the
  // calling thread before this returns instead of on a worker: a function
  // on Context::Host() whose vars no earlier function is using or waiting
  // for, pushed from outside any engine function. It takes its place in its
  // vars' queues exactly as PushSync's would (the pusher does the worker's
  // job), so the ordering, error and poisoning rules are PushSync's; a
  // function that must wait is pushed as usual. For short host functions
  // whose hand-off to a worker costs more than they do (the op layer's
  // small CPU ops). The default pushes.
  virtual absl::Status PushSyncInline(SyncFn fn, Context ctx,
                                      absl::Span<const VarHandle> const_vars,
                                      absl::Span<const VarHandle> mutate_vars,
                                      FnProperty prop = FnProperty::kNormal, int priority = 0,
                                      std::string_view name = "") {
    return PushSync(std::move(fn), ctx, const_vars, mutate_vars, prop, priority, name);
  }

  // A reusable operator: its vars are checked and normalized once.
  virtual absl::StatusOr<OperatorHandle> NewOperator(AsyncFn fn,
                                                     absl::Span<const VarHandle> const_vars,
                                                     absl::Span<const VarHandle> mutate_vars,
                                                     FnProperty prop = FnProperty::kNormal,
                                                     std::string_view name = "") = 0;
  virtual absl::Status Push(OperatorHandle op, Context ctx, int priority = 0) = 0;
  // Frees the operator once its pushed runs have finished; it does not wait
  // on or write its vars. Pushing it afterwards is an error.
  virtual absl::Status DeleteOperator(OperatorHandle op) = 0;

  // Deletes `var` after every function pushed before that touches it; `fn`
  // (may be null) runs then, e.g. to free the memory behind it. Later pushes
  // naming `var` are rejected.
  virtual absl::Status DeleteVariable(SyncFn fn, Context ctx, VarHandle var) = 0;

  // Returns once every function pushed before this call that touches `var`
  // has completed, with `var`'s error. From inside a running function it
  // fails fast with FailedPrecondition instead of deadlocking; Cancelled
  // when Shutdown(true) skips it. Meanwhile the calling thread may run
  // ready host functions (EngineOptions::waiting_thread_helps), any of
  // them, not only those the var waits for.
  virtual absl::Status WaitForVar(VarHandle var) = 0;
  // Returns once everything pushed before has completed (with concurrent
  // pushers it may also wait for their work), with the first error since the
  // previous WaitForAll. From inside a running function: FailedPrecondition.
  // Meanwhile the calling thread may run ready host functions, as above.
  virtual absl::Status WaitForAll() = 0;
  // Clears `var`'s poison, in push order (an ordered write).
  virtual absl::Status ClearError(VarHandle var) = 0;

  // What is pending: which functions wait on which vars, and who holds them,
  // and which are ready and wait for a worker. Safe to call at any time, from
  // any thread (the watchdog calls it); pushes wait only while it lists the
  // vars.
  virtual std::string DescribePending() = 0;
  virtual EngineStats Stats() const = 0;

  // Profiling: record every function -- a span on the worker that ran (or
  // enqueued) it, and for a device function a span of its work's device
  // time on its stream's lane -- with arrows to the functions that waited
  // for it through a var; write them as Chrome trace JSON (Perfetto,
  // chrome://tracing) with absolute timestamps (docs/verbose.md). While the
  // process-wide trace is on (RILL_TRACE, StartTracing) the same spans go
  // there too, without StartProfiling.
  virtual void StartProfiling() = 0;
  virtual absl::Status WriteTrace(const std::string& path) = 0;

  // Stops the engine: with `cancel`, functions not yet started are skipped
  // (their vars get a Cancelled error); otherwise everything pending runs.
  // Joins the threads. A push racing it is either run first or refused;
  // later pushes fail with FailedPrecondition. Idempotent: a concurrent
  // caller returns once the first has finished (and with `cancel`, asks it
  // to cancel). Called from inside one of the engine's own functions it
  // would wait on itself: it logs an error and returns.
  //
  // It waits while functions finish. Once none has finished for
  // EngineOptions::shutdown_timeout it logs what is pending; if
  // asynchronous functions are then waiting for their Completion, it gives
  // up on them as the overload below does at its deadline (cancels what has
  // not started, abandons them). Bodies still running cannot be
  // interrupted: they are waited for, the report logged again every
  // shutdown_timeout. The destructor calls Shutdown(false).
  virtual void Shutdown(bool cancel) = 0;
  // Shutdown with a deadline: OK once everything has finished and the
  // threads are joined. At `timeout` from now it gives up: it cancels what
  // has not started (also without `cancel`), and abandons each
  // asynchronous function that has not called its Completion -- the
  // function counts as failed with DeadlineExceeded (its written vars are
  // poisoned, what waits on them is cancelled) and its Completion, called
  // later, is logged and ignored. It then waits up to `timeout` more for
  // the cancelled work to drain and joins the threads, and returns
  // DeadlineExceeded naming the functions it abandoned and what was pending
  // (DescribePending). A body that is still running cannot be cancelled:
  // the threads are then left running, and a later Shutdown or the
  // destructor joins them. FailedPrecondition from inside one of the
  // engine's own functions.
  [[nodiscard]] virtual absl::Status Shutdown(bool cancel, absl::Duration timeout) = 0;

 private:
  Attachments attachments_;
};

}  // namespace rill::engine

#endif  // RILL_ENGINE_ENGINE_H_
