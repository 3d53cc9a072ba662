#ifndef RILL_ENGINE_SHARDED_COUNTER_H_
#define RILL_ENGINE_SHARDED_COUNTER_H_

// rill:internal -- not installed: the engine's implementation; users include engine.h.

#include <atomic>
#include <cstdint>

namespace rill::engine::internal {

// A monotone count that many threads add to at high rate: each thread adds
// to its own shard (a cache line of its own), so that two workers counting
// completions do not pass one line back and forth. Reading sums the shards;
// with seq_cst operations a read that follows an add (in the single order
// of seq_cst operations) includes it. Thread-safe.
class ShardedCounter {
 public:
  void Add(int64_t n, std::memory_order order = std::memory_order_relaxed) {
    shards_[ShardIndex()].value.fetch_add(n, order);
  }
  int64_t Sum(std::memory_order order = std::memory_order_relaxed) const {
    int64_t sum = 0;
    for (const Shard& s : shards_) sum += s.value.load(order);
    return sum;
  }

 private:
  static constexpr int kShards = 8;
  struct alignas(64) Shard {
    std::atomic<int64_t> value{0};
  };
  // Threads take shards round robin on first use.
  static int ShardIndex() {
    static std::atomic<int> next{0};
    thread_local const int index = next.fetch_add(1, std::memory_order_relaxed) % kShards;
    return index;
  }
  Shard shards_[kShards];
};

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_SHARDED_COUNTER_H_
