#include "rill/executor/executor_cache.h"

#include "absl/strings/str_cat.h"

namespace rill {

absl::StatusOr<StreamExecutor*> ExecutorCache::GetOrCreate(const StreamExecutorConfig& config,
                                                           Factory factory) {
  // Creation happens under the lock: it is rare, and it makes "created once"
  // trivially true.
  MutexLock lock(&mu_);
  auto it = executors_.find(config.ordinal);
  if (it != executors_.end()) return it->second.get();
  absl::StatusOr<std::unique_ptr<StreamExecutor>> created = factory();
  if (!created.ok()) return created.status();
  StreamExecutor* executor = created->get();
  executors_.emplace(config.ordinal, std::move(*created));
  return executor;
}

absl::StatusOr<StreamExecutor*> ExecutorCache::Get(const StreamExecutorConfig& config) const {
  MutexLock lock(&mu_);
  auto it = executors_.find(config.ordinal);
  if (it == executors_.end()) {
    return absl::NotFoundError(absl::StrCat("no executor cached for ordinal ", config.ordinal));
  }
  return it->second.get();
}

void ExecutorCache::DestroyAll() {
  std::map<int, std::unique_ptr<StreamExecutor>> doomed;
  {
    MutexLock lock(&mu_);
    doomed.swap(executors_);
  }
  while (!doomed.empty()) doomed.erase(std::prev(doomed.end()));
}

}  // namespace rill
