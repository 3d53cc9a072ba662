#ifndef RILL_PLUGINS_DNN_XNNPACK_XNNPACK_COMMON_H_
#define RILL_PLUGINS_DNN_XNNPACK_XNNPACK_COMMON_H_

// rill:internal -- not installed: the XNNPACK plugin's implementation.

// Private to the XNNPACK plugin: the one place where an xnn_status becomes
// a status, library initialization, the process-wide thread pool and its
// lease, the guard against XNNPACK's input over-read, and the operator
// cache.

#include <xnnpack.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rill/base/mutex.h"
#include "rill/platform/host/host_thread_budget.h"

namespace rill::xnnpack {

// --- Errors and initialization.

// "xnn_status_invalid_parameter", ...
const char* StatusName(xnn_status status);

// OK for xnn_status_success; else "<context>: XNNPACK <name> (<code>)" with
// invalid_parameter -> InvalidArgument, unsupported_parameter and
// unsupported_hardware -> Unimplemented, out_of_memory ->
// ResourceExhausted, uninitialized and invalid_state -> FailedPrecondition.
absl::Status FromXnn(xnn_status status, absl::string_view context);

// xnn_initialize(NULL), once per process (std::call_once); every later
// call returns the first call's result.
absl::Status Initialize();

// --- Threads.

// The size of the shared pool, the calling thread included: RILL_DNN_THREADS
// when set to n >= 1, else std::thread::hardware_concurrency(); read once.
int PoolThreads();

// The process-wide pthreadpool (PoolThreads() threads, created on first
// use, never destroyed), for one XNNPACK call at a time: a lease takes it
// when no other host library call runs (the HostComputeScope it holds,
// platform/host/host_thread_budget.h, counts OpenBLAS, BLIS, oneDNN and
// XNNPACK calls alike) and no other call holds it (an atomic flag, never
// waited for); else get() is null and XNNPACK runs on the calling thread
// alone. So concurrent streams neither oversubscribe the cores nor queue on
// pthreadpool's internal mutex. Take the lease after any per-operator lock, so a call
// waiting for its operator does not idle the pool. Thread-compatible (one
// lease per call); the pool itself is shared safely.
class PoolLease {
 public:
  PoolLease();
  ~PoolLease();
  PoolLease(const PoolLease&) = delete;
  PoolLease& operator=(const PoolLease&) = delete;

  pthreadpool_t get() const { return held_ ? pool_ : nullptr; }

 private:
  HostComputeScope scope_;
  pthreadpool_t pool_ = nullptr;
  bool held_ = false;
};

// --- Input over-read (XNN_EXTRA_BYTES).

// Whether reading XNN_EXTRA_BYTES past the end of [data, data + bytes) could
// touch another page than the one holding the last byte, i.e. could fault.
bool OverReadLeavesPage(const void* data, uint64_t bytes);

// An input of `count` floats as XNNPACK may read it: `data` itself, or,
// when an over-read past its end could leave its last page, a copy with
// XNN_EXTRA_BYTES of slack (made on the calling thread; kept while the
// object lives). XNNPACK reads up to 16 bytes past an input and never writes
// past an output; which kernels do depends on the CPU (on x86, pooling and
// softmax do for channel counts that are not multiples of 4: SSE
// remainders), so every input of every op goes through this. A read within
// the last byte's page cannot fault and only feeds lanes XNNPACK discards.
class ReadableInput {
 public:
  ReadableInput(const float* data, uint64_t count);
  const float* get() const { return data_; }
  bool staged() const { return copy_ != nullptr; }

 private:
  const float* data_;
  std::unique_ptr<float[]> copy_;
};

// --- Operators.

struct OperatorDeleter {
  void operator()(xnn_operator_t op) const { xnn_delete_operator(op); }
};
// An owned XNNPACK operator, deleted with xnn_delete_operator.
using Operator = std::unique_ptr<xnn_operator, OperatorDeleter>;

// Runs `create` (an xnn_create_* call writing its operator to the argument)
// and owns the result, or the status naming `context`.
absl::StatusOr<Operator> MakeOperator(absl::string_view context,
                                      const std::function<xnn_status(xnn_operator_t*)>& create);

// One cached operator. An operator holds the pointers and sizes of its last
// setup, so setup + run are one critical section under `mu` (two streams
// may use it). A convolution's operator is created on the stream's worker
// from the weights of the moment, which it packs: `weights` and `bias` are
// copies of what it packed, compared with the buffers on every run.
struct CachedOperator {
  Mutex mu;
  Operator op ABSL_GUARDED_BY(mu);
  std::vector<float> weights ABSL_GUARDED_BY(mu), bias ABSL_GUARDED_BY(mu);
  std::atomic<uint64_t> last_use{0};  // Cache tick, for eviction.
};

// Under entry.mu: calls `setup(op, pool)` (an xnn_setup_* call) and
// xnn_run_operator with the shared pool when it is free (PoolLease), else
// on the calling thread alone. `context` names the op in errors.
absl::Status SetupAndRunLocked(
    CachedOperator& entry, absl::string_view context,
    const std::function<xnn_status(xnn_operator_t, pthreadpool_t)>& setup)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);

// Cached operators by key (an op tag, every shape parameter and, for
// convolutions, the filter and bias addresses), at most kCapacity: past
// that, inserting evicts the least recently used (a run in flight keeps its
// entry alive through its shared_ptr). Thread-safe.
class OperatorCache {
 public:
  using Key = std::vector<int64_t>;
  static constexpr size_t kCapacity = 256;

  // The entry for `key`; on a miss, a new one whose operator `create` makes
  // (on the calling thread; an error is returned and nothing is cached), or
  // with no operator when `create` is null (made later, under its lock).
  absl::StatusOr<std::shared_ptr<CachedOperator>> GetOrCreate(
      const Key& key, const std::function<absl::StatusOr<Operator>()>& create);
  size_t size();

 private:
  void EvictOneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<CachedOperator>> entries_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> tick_{0};
};

// A pointer or a float's bits as a key field.
int64_t KeyOf(const void* pointer);
int64_t KeyOf(float value);

}  // namespace rill::xnnpack

#endif  // RILL_PLUGINS_DNN_XNNPACK_XNNPACK_COMMON_H_
