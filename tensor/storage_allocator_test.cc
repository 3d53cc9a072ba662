// The storage allocator: size classes, statistics, the retry path, the
// limit, variable sizes, and reuse that waits for every reader (through the
// tensor's DeleteVariable).
#include "rill/tensor/storage_allocator.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/stream.h"
#include "rill/tensor/tensor.h"

namespace rill {
namespace {

StreamExecutor* HostExecutor(int ordinal = 0) {
  return *(*PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(ordinal);
}

TEST(StorageAllocatorTest, RoundsToSizeClassesAndReusesCachedBlocks) {
  StorageAllocator alloc(HostExecutor());
  EXPECT_EQ(alloc.RoundUp(1), 4096u);
  EXPECT_EQ(alloc.RoundUp(4097), 8192u);
  EXPECT_EQ(alloc.RoundUp((1 << 20) + 1), 2u << 20);
  auto a = alloc.Allocate(1000);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->memory.size(), 4096u);
  EXPECT_NE(a->host, nullptr);  // The host device's memory is host-addressable.
  alloc.Free(*a);
  auto b = alloc.Allocate(4000);  // Same class: the cached block.
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->memory, a->memory);
  AllocatorStats s = alloc.Stats();
  EXPECT_EQ(s.requests, 2);
  EXPECT_EQ(s.pool_hits, 1);
  EXPECT_EQ(s.device_allocations, 1);
  EXPECT_EQ(s.bytes_in_use, 4096);
  EXPECT_EQ(s.bytes_cached, 0);
  alloc.Free(*b);
  EXPECT_EQ(alloc.Stats().bytes_cached, 4096);
  alloc.ReleaseCached();
  EXPECT_EQ(alloc.Stats().bytes_cached, 0);
  EXPECT_EQ(alloc.Allocate(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(alloc.Allocate(UINT64_MAX - 5).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(StorageAllocatorTest, ReleasesTheCacheAndRetriesOnceThenReportsStatistics) {
  AllocatorOptions o;
  o.limit = 3 * 4096;
  StorageAllocator alloc(HostExecutor(), o);
  auto a = *alloc.Allocate(2 * 4096);
  alloc.Free(a);                      // 8 KiB cached in the 8 KiB class.
  auto b = alloc.Allocate(3 * 4096);  // Another class: fits only after the cache goes.
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(alloc.Stats().releases, 1);
  EXPECT_EQ(alloc.Stats().bytes_cached, 0);
  auto c = alloc.Allocate(1);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("in use 12.0 KiB"), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find("limit 12.0 KiB"), std::string::npos) << c.status();
  alloc.Free(*b);
}

// Variable sizes: the pool serves repeats from the cache and holds no more
// than the largest working set rounded to classes.
TEST(StorageAllocatorTest, VariableSizesReuseTheirClasses) {
  StorageAllocator alloc(HostExecutor());
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint64_t> size(1, 3 << 20);
  std::vector<StorageBlock> live;
  int64_t live_bytes = 0, max_live = 0;
  for (int i = 0; i < 2000; ++i) {
    if (live.size() < 8) {
      const uint64_t want = size(rng) / (i % 3 + 1);
      auto b = alloc.Allocate(want);
      ASSERT_TRUE(b.ok());
      live_bytes += static_cast<int64_t>(alloc.RoundUp(want));
      max_live = std::max(max_live, live_bytes);
      live.push_back(*b);
    } else {
      for (int k = 0; k < 2; ++k) {
        const size_t j = rng() % live.size();
        live_bytes -= static_cast<int64_t>(live[j].memory.size());  // At most 2x its class.
        alloc.Free(live[j]);
        live.erase(live.begin() + static_cast<long>(j));
      }
    }
  }
  AllocatorStats s = alloc.Stats();
  EXPECT_GT(s.pool_hits, s.device_allocations);
  // Held memory stays within a small multiple of the largest working set.
  EXPECT_LT(s.peak_bytes, 4 * max_live) << s.ToString();
  for (const auto& b : live) alloc.Free(b);
}

// A tensor's block is reused only after every function that read it has
// completed. A host:0 stream reads the tensor 100 ms after the read was
// pushed; the tensor is dropped at once and a same-size tensor is written
// right away. Were the block handed out at the drop, the late read would
// see the new contents.
TEST(StorageAllocatorTest, ReuseWaitsForEveryEarlierReader) {
  auto engine = *engine::Engine::Create({});
  auto host0 = *engine::Context::Device("host", 0);
  std::vector<float> ones(1024, 1.f), twos(1024, 2.f);
  auto a = std::make_unique<Tensor>(*Tensor::FromHost<float>(ones, {1024}, host0, engine.get()));
  const StorageBlock block = *a->Storage();
  auto sum = std::make_shared<std::atomic<double>>(0);
  ASSERT_TRUE(engine
                  ->PushSync(
                      [block, sum](engine::RunContext rc) {
                        rc.stream->ThenDoHostCallback([block, sum] {
                          std::this_thread::sleep_for(std::chrono::milliseconds(100));
                          const float* p = static_cast<const float*>(block.host);
                          *sum = std::accumulate(p, p + 1024, 0.0);
                        });
                        return absl::OkStatus();
                      },
                      host0, {a->var()}, {}, engine::FnProperty::kNormal, 0, "slow_reader")
                  .ok());
  a.reset();  // Drop the only handle while the read is pending.
  std::vector<Tensor> others;
  for (int i = 0; i < 4; ++i) {
    others.push_back(*Tensor::FromHost<float>(twos, {1024}, host0, engine.get()));
    ASSERT_TRUE(others.back().WaitToRead().ok());
  }
  ASSERT_TRUE(engine->WaitForAll().ok());
  EXPECT_EQ(sum->load(), 1024.0);
}

}  // namespace
}  // namespace rill
