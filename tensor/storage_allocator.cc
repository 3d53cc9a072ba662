#include "rill/tensor/storage_allocator.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/base/logging.h"
#include "rill/executor/stream_executor.h"

namespace rill {
namespace {

std::string Bytes(int64_t b) {
  if (b >= (int64_t{1} << 20)) return absl::StrFormat("%.1f MiB", b / 1048576.0);
  if (b >= 1024) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrCat(b, " B");
}

}  // namespace

std::string AllocatorStats::ToString() const {
  return absl::StrCat("in use ", Bytes(bytes_in_use), ", cached ", Bytes(bytes_cached), ", peak ",
                      Bytes(peak_bytes), ", limit ", limit > 0 ? Bytes(limit) : "none", ", ",
                      requests, " requests (", pool_hits, " pool hits, ", device_allocations,
                      " device allocations, ", releases, " cache releases)");
}

StorageAllocator::StorageAllocator(StreamExecutor* executor, AllocatorOptions options)
    : executor_(executor), options_(options) {
  stats_.limit = static_cast<int64_t>(options.limit);
  // Probe once whether this device's memory is host-addressable.
  absl::StatusOr<DeviceMemoryBase> probe = executor_->Allocate(64);
  if (probe.ok()) {
    host_addressable_ = executor_->HostAddress(*probe).ok();
    (void)executor_->Deallocate(&*probe);
  }
}

StorageAllocator::~StorageAllocator() {
  std::vector<DeviceMemoryBase> to_free;
  {
    MutexLock lock(&mu_);
    ReleaseCachedLocked(&to_free);
    if (stats_.bytes_in_use > 0) {
      RILL_LOG(WARNING) << "storage allocator of " << executor_->DebugName() << " destroyed with "
                        << stats_.bytes_in_use << " bytes in use";
    }
  }
  FreeToDevice(to_free);
}

StorageAllocator* StorageAllocator::For(StreamExecutor* executor) {
  return &executor->attachments().Get<StorageAllocator>(
      [executor] { return std::make_unique<StorageAllocator>(executor); });
}

uint64_t StorageAllocator::RoundUp(uint64_t bytes) const {
  MutexLock lock(&mu_);
  return RoundUpLocked(bytes);
}

uint64_t StorageAllocator::RoundUpLocked(uint64_t bytes) const {
  const uint64_t step = bytes <= options_.small_limit ? options_.page : options_.large_step;
  if (step <= 1) return bytes;
  if (bytes > UINT64_MAX - (step - 1)) return 0;
  return (bytes + step - 1) / step * step;
}

absl::StatusOr<StorageBlock> StorageAllocator::Allocate(uint64_t bytes) {
  if (bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("StorageAllocator on ", executor_->DebugName(), ": cannot allocate 0 bytes"));
  }
  uint64_t rounded = 0;
  {
    MutexLock lock(&mu_);
    rounded = RoundUpLocked(bytes);
    if (rounded == 0 || rounded > static_cast<uint64_t>(INT64_MAX)) {
      return absl::ResourceExhaustedError(absl::StrCat("StorageAllocator on ",
                                                       executor_->DebugName(), ": a request of ",
                                                       bytes, " bytes overflows a 63-bit size"));
    }
    auto it = cache_.lower_bound(rounded);
    if (it != cache_.end() &&
        static_cast<double>(it->first) <= options_.max_waste * static_cast<double>(rounded)) {
      StorageBlock block = it->second.back();
      it->second.pop_back();
      const int64_t size = static_cast<int64_t>(it->first);
      if (it->second.empty()) cache_.erase(it);
      stats_.bytes_cached -= size;
      stats_.bytes_in_use += size;
      ++stats_.requests;
      ++stats_.pool_hits;
      return block;
    }
  }
  return AllocateFromDevice(rounded);
}

absl::StatusOr<StorageBlock> StorageAllocator::AllocateFromDevice(uint64_t rounded) {
  absl::Status last;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt == 1) {  // Release the cache and retry once.
      std::vector<DeviceMemoryBase> to_free;
      {
        MutexLock lock(&mu_);
        ReleaseCachedLocked(&to_free);
      }
      FreeToDevice(to_free);
    }
    {
      MutexLock lock(&mu_);
      const int64_t held = stats_.bytes_in_use + stats_.bytes_cached;
      if (options_.limit > 0 && static_cast<uint64_t>(held) + rounded > options_.limit) {
        last = absl::ResourceExhaustedError(
            absl::StrCat("over the allocator's limit of ", options_.limit, " bytes"));
        continue;
      }
      // Reserve the bytes, so that concurrent requests respect the limit.
      stats_.bytes_in_use += static_cast<int64_t>(rounded);
    }
    absl::StatusOr<DeviceMemoryBase> memory = executor_->Allocate(rounded);
    MutexLock lock(&mu_);
    if (!memory.ok()) {
      stats_.bytes_in_use -= static_cast<int64_t>(rounded);
      last = memory.status();
      continue;
    }
    StorageBlock block{*memory, nullptr};
    if (host_addressable_) {
      absl::StatusOr<void*> host = executor_->HostAddress(*memory);
      if (host.ok()) block.host = *host;
    }
    ++stats_.requests;
    ++stats_.device_allocations;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes_in_use + stats_.bytes_cached);
    return block;
  }
  MutexLock lock(&mu_);
  return absl::ResourceExhaustedError(
      absl::StrCat("out of memory on ", executor_->DebugName(), " allocating ", rounded, " bytes (",
                   last.message(), "); allocator: ", stats_.ToString()));
}

void StorageAllocator::Free(const StorageBlock& block) {
  if (block.is_null()) return;
  const uint64_t size = block.memory.size();
  {
    MutexLock lock(&mu_);
    stats_.bytes_in_use -= static_cast<int64_t>(size);
    if (options_.pooling) {
      cache_[size].push_back(block);
      stats_.bytes_cached += static_cast<int64_t>(size);
      return;
    }
  }
  DeviceMemoryBase memory = block.memory;
  (void)executor_->Deallocate(&memory);
}

void StorageAllocator::ReleaseCachedLocked(std::vector<DeviceMemoryBase>* to_free) {
  for (auto& [size, blocks] : cache_) {
    for (const StorageBlock& b : blocks) to_free->push_back(b.memory);
  }
  cache_.clear();
  stats_.bytes_cached = 0;
  ++stats_.releases;
}

void StorageAllocator::FreeToDevice(const std::vector<DeviceMemoryBase>& blocks) {
  for (DeviceMemoryBase m : blocks) (void)executor_->Deallocate(&m);
}

void StorageAllocator::ReleaseCached() {
  std::vector<DeviceMemoryBase> to_free;
  {
    MutexLock lock(&mu_);
    ReleaseCachedLocked(&to_free);
  }
  FreeToDevice(to_free);
}

AllocatorStats StorageAllocator::Stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void StorageAllocator::SetOptions(const AllocatorOptions& options) {
  MutexLock lock(&mu_);
  options_ = options;
  stats_.limit = static_cast<int64_t>(options.limit);
}

AllocatorOptions StorageAllocator::options() const {
  MutexLock lock(&mu_);
  return options_;
}

}  // namespace rill
