#ifndef RILL_EXECUTOR_EXECUTOR_CACHE_H_
#define RILL_EXECUTOR_EXECUTOR_CACHE_H_

#include <map>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor.h"

namespace rill {

// Which executor a caller wants from a platform.
struct StreamExecutorConfig {
  int ordinal = 0;  // Device index, 0 .. VisibleDeviceCount() - 1.
};

// The executors of one platform, created on first request and kept for the
// cache's life (one per device ordinal). A failed creation is not cached: a
// later call tries again. Thread-safe: concurrent GetOrCreate calls for one
// ordinal create it once.
class ExecutorCache {
 public:
  using Factory = absl::FunctionRef<absl::StatusOr<std::unique_ptr<StreamExecutor>>()>;

  ExecutorCache() = default;
  ~ExecutorCache() { DestroyAll(); }
  ExecutorCache(const ExecutorCache&) = delete;
  ExecutorCache& operator=(const ExecutorCache&) = delete;

  absl::StatusOr<StreamExecutor*> GetOrCreate(const StreamExecutorConfig& config, Factory factory);
  // The cached executor, or NotFound.
  absl::StatusOr<StreamExecutor*> Get(const StreamExecutorConfig& config) const;
  // Destroys every executor (in reverse ordinal order).
  void DestroyAll();

 private:
  mutable Mutex mu_;
  std::map<int, std::unique_ptr<StreamExecutor>> executors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_EXECUTOR_EXECUTOR_CACHE_H_
