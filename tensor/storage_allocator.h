#ifndef RILL_TENSOR_STORAGE_ALLOCATOR_H_
#define RILL_TENSOR_STORAGE_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/executor/device_memory.h"

namespace rill {

class StreamExecutor;

// How a StorageAllocator rounds and limits. Sizes in bytes.
struct AllocatorOptions {
  uint64_t page = 4096;            // Requests up to small_limit round up to a multiple of this.
  uint64_t small_limit = 1 << 20;  // Past it, requests round up to a multiple of large_step.
  uint64_t large_step = 2 << 20;
  uint64_t limit =
      0;  // Bytes held from the device (in use + cached); 0: no limit but the device's.
  bool pooling = true;     // false: every Free returns the block to the device.
  double max_waste = 2.0;  // A cached block up to this many times the class serves it.
};

// What an allocator holds and did. Bytes are rounded sizes.
struct AllocatorStats {
  int64_t bytes_in_use = 0;  // Handed out and not freed.
  int64_t bytes_cached = 0;  // Freed, kept for reuse.
  int64_t peak_bytes = 0;    // Highest bytes_in_use + bytes_cached, i.e. held from the device.
  int64_t requests = 0;      // Allocate calls that succeeded.
  int64_t pool_hits = 0;     // ... served from the cache.
  int64_t device_allocations = 0;  // ... that allocated from the device.
  int64_t releases = 0;            // Times the cache was emptied (ReleaseCached, retries).
  int64_t limit = 0;               // The options' limit (0: none).
  // "in use 8.0 MiB, cached 2.0 MiB, peak 10.0 MiB, limit 16.0 MiB, 12 requests (9 pool hits, 3
  // device allocations)".
  std::string ToString() const;
};

// A block handed out by StorageAllocator: the device allocation (offset 0)
// and its rounded size, and its host address where the device's memory is
// host-addressable (nullptr otherwise).
struct StorageBlock {
  DeviceMemoryBase memory;
  void* host = nullptr;
  bool is_null() const { return memory.is_null(); }
};

// The caching device-memory pool of one executor (MXNet's pooled storage
// manager). Requests round to a size class (`page` multiples up to
// `small_limit`, `large_step` multiples past it); a freed block goes to the
// cache and serves the next request whose class it fits, taking the
// smallest such block no larger than `max_waste` times the class, so that
// variable sizes reuse blocks across neighbouring classes.
// Blocks are whole device allocations (StreamExecutor::Allocate), so the
// allocator works on every backend, including those whose handles cannot be
// offset by pointer arithmetic (OpenCL): a tensor view into a block is a
// DeviceMemoryBase sub-range.
//
// Free() caches the block at once: the caller guarantees that no work still
// uses it. Tensors get that guarantee from the engine: a tensor's storage is
// freed by the function of its var's DeleteVariable, which runs after every
// function pushed before that touched the var has completed, device work
// included (stream-ordered reuse; tensor/README.md).
//
// Failure: when the device (or `limit`) cannot give a block, the cache is
// released and the allocation retried once; then ResourceExhausted whose
// message carries Stats().
//
//   StorageAllocator* alloc = StorageAllocator::For(executor);
//   RILL_ASSIGN_OR_RETURN(StorageBlock b, alloc->Allocate(1000));  // 4096 bytes held
//   alloc->Free(b);
//
// One per executor, created on first use and destroyed with the executor
// (For; kept in StreamExecutor::attachments()), or owned by the caller (the
// constructor). Tensors must not outlive their executor. Thread-safe.
class StorageAllocator {
 public:
  explicit StorageAllocator(StreamExecutor* executor, AllocatorOptions options = {});
  ~StorageAllocator();  // Returns cached blocks to the device; blocks in use leak (logged).
  StorageAllocator(const StorageAllocator&) = delete;
  StorageAllocator& operator=(const StorageAllocator&) = delete;

  // The allocator of `executor`, made on first use.
  static StorageAllocator* For(StreamExecutor* executor);

  // A block of at least `bytes` (> 0) bytes.
  absl::StatusOr<StorageBlock> Allocate(uint64_t bytes);
  // Takes back a block from Allocate (cached, or returned to the device
  // without pooling). No work may use it any more.
  void Free(const StorageBlock& block);
  // Returns every cached block to the device.
  void ReleaseCached();
  AllocatorStats Stats() const;
  void SetOptions(const AllocatorOptions& options);
  AllocatorOptions options() const;
  // The size class of a request of `bytes` (0 when rounding overflows).
  uint64_t RoundUp(uint64_t bytes) const;
  StreamExecutor* executor() const { return executor_; }

 private:
  uint64_t RoundUpLocked(uint64_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<StorageBlock> AllocateFromDevice(uint64_t rounded);
  void ReleaseCachedLocked(std::vector<DeviceMemoryBase>* to_free)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FreeToDevice(const std::vector<DeviceMemoryBase>& blocks);

  StreamExecutor* const executor_;
  bool host_addressable_ = false;
  mutable Mutex mu_;
  AllocatorOptions options_ ABSL_GUARDED_BY(mu_);
  AllocatorStats stats_ ABSL_GUARDED_BY(mu_);
  // Block size -> cached blocks (with their host addresses), ordered so
  // that a request takes the smallest cached block that fits within
  // `max_waste` of its class.
  std::map<uint64_t, std::vector<StorageBlock>> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_TENSOR_STORAGE_ALLOCATOR_H_
