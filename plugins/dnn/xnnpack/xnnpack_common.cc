#include "rill/plugins/dnn/xnnpack/xnnpack_common.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "rill/base/env_settings.h"
#include "rill/base/logging.h"

namespace rill::xnnpack {

const char* StatusName(xnn_status status) {
  switch (status) {
    case xnn_status_success:
      return "xnn_status_success";
    case xnn_status_uninitialized:
      return "xnn_status_uninitialized";
    case xnn_status_invalid_parameter:
      return "xnn_status_invalid_parameter";
    case xnn_status_invalid_state:
      return "xnn_status_invalid_state";
    case xnn_status_unsupported_parameter:
      return "xnn_status_unsupported_parameter";
    case xnn_status_unsupported_hardware:
      return "xnn_status_unsupported_hardware";
    case xnn_status_out_of_memory:
      return "xnn_status_out_of_memory";
  }
  return "xnn_status_unknown";
}

absl::Status FromXnn(xnn_status status, absl::string_view context) {
  if (status == xnn_status_success) return absl::OkStatus();
  const std::string message =
      absl::StrCat(context, ": XNNPACK ", StatusName(status), " (", static_cast<int>(status), ")");
  switch (status) {
    case xnn_status_invalid_parameter:
      return absl::InvalidArgumentError(message);
    case xnn_status_unsupported_parameter:
    case xnn_status_unsupported_hardware:
      return absl::UnimplementedError(message);
    case xnn_status_out_of_memory:
      return absl::ResourceExhaustedError(message);
    case xnn_status_uninitialized:
    case xnn_status_invalid_state:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status Initialize() {
  static std::once_flag once;
  static xnn_status status = xnn_status_uninitialized;
  std::call_once(once, [] { status = xnn_initialize(/*allocator=*/nullptr); });
  return FromXnn(status, "xnnpack: xnn_initialize");
}

// --- Threads.

int PoolThreads() {
  static const int threads = [] {
    // RILL_DNN_THREADS; a value the table of settings refuses
    // (base/env_settings.cc) is logged and counts as auto.
    const absl::StatusOr<std::optional<int64_t>> n = EnvInt("RILL_DNN_THREADS");
    if (n.ok() && n->has_value()) return static_cast<int>(**n);
    if (!n.ok()) RILL_LOG(WARNING) << "xnnpack: " << n.status().message() << "; using auto";
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return threads;
}

namespace {

// Null when the pool would have one thread (the caller: nothing to share)
// or pthreadpool could not start its workers.
pthreadpool_t SharedPool() {
  static const pthreadpool_t pool =
      PoolThreads() > 1 ? pthreadpool_create(static_cast<size_t>(PoolThreads())) : nullptr;
  return pool;  // Never destroyed: workers may still be parked at exit.
}

std::atomic<bool> pool_held{false};

}  // namespace

PoolLease::PoolLease() : pool_(SharedPool()) {
  held_ = pool_ != nullptr && scope_.active() == 1 &&
          !pool_held.exchange(true, std::memory_order_acquire);
}

PoolLease::~PoolLease() {
  if (held_) pool_held.store(false, std::memory_order_release);
}

// --- Over-read.

bool OverReadLeavesPage(const void* data, uint64_t bytes) {
  static const uintptr_t page =
      static_cast<uintptr_t>(sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096);
  const uintptr_t last = reinterpret_cast<uintptr_t>(data) + bytes - 1;
  return last / page != (last + XNN_EXTRA_BYTES) / page;
}

ReadableInput::ReadableInput(const float* data, uint64_t count) : data_(data) {
  if (count == 0 || !OverReadLeavesPage(data, count * sizeof(float))) return;
  const uint64_t padded = count + (XNN_EXTRA_BYTES + sizeof(float) - 1) / sizeof(float);
  copy_.reset(new float[padded]);
  std::memcpy(copy_.get(), data, count * sizeof(float));
  std::memset(copy_.get() + count, 0, (padded - count) * sizeof(float));
  data_ = copy_.get();
}

// --- Operators.

absl::StatusOr<Operator> MakeOperator(absl::string_view context,
                                      const std::function<xnn_status(xnn_operator_t*)>& create) {
  xnn_operator_t op = nullptr;
  const xnn_status status = create(&op);
  Operator owned(op);
  if (status != xnn_status_success) return FromXnn(status, context);
  return owned;
}

absl::Status SetupAndRunLocked(
    CachedOperator& entry, absl::string_view context,
    const std::function<xnn_status(xnn_operator_t, pthreadpool_t)>& setup) {
  if (entry.op == nullptr)
    return absl::InternalError(absl::StrCat(context, ": the operator was not created"));
  // Setup sizes the work split by the pool's thread count: the same pool
  // (or none) for both calls.
  PoolLease lease;
  xnn_status status = setup(entry.op.get(), lease.get());
  if (status != xnn_status_success) return FromXnn(status, absl::StrCat(context, " (setup)"));
  status = xnn_run_operator(entry.op.get(), lease.get());
  return FromXnn(status, absl::StrCat(context, " (run)"));
}

absl::StatusOr<std::shared_ptr<CachedOperator>> OperatorCache::GetOrCreate(
    const Key& key, const std::function<absl::StatusOr<Operator>()>& create) {
  const uint64_t now = tick_.fetch_add(1, std::memory_order_relaxed);
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      it->second->last_use.store(now, std::memory_order_relaxed);
      return it->second;
    }
  }
  // Created outside the lock; two threads racing on one key both create and
  // one entry wins.
  auto made = std::make_shared<CachedOperator>();
  if (create) {
    absl::StatusOr<Operator> op = create();
    if (!op.ok()) return op.status();
    MutexLock op_lock(&made->mu);
    made->op = std::move(*op);
  }
  made->last_use.store(now, std::memory_order_relaxed);
  MutexLock lock(&mu_);
  auto [it, inserted] = entries_.try_emplace(key, made);
  if (inserted && entries_.size() > kCapacity) EvictOneLocked();
  return it->second;
}

void OperatorCache::EvictOneLocked() {
  auto oldest = entries_.end();
  uint64_t oldest_use = std::numeric_limits<uint64_t>::max();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const uint64_t use = it->second->last_use.load(std::memory_order_relaxed);
    if (use < oldest_use) oldest_use = use, oldest = it;
  }
  if (oldest != entries_.end()) entries_.erase(oldest);
}

size_t OperatorCache::size() {
  MutexLock lock(&mu_);
  return entries_.size();
}

int64_t KeyOf(const void* pointer) {
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(pointer));
}

int64_t KeyOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

}  // namespace rill::xnnpack
