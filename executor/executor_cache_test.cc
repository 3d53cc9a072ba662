#include "rill/executor/executor_cache.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rill/platform/host/host_executor.h"
#include "rill/platform/host/host_platform.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::HasError;

const PlatformIdInfo kCacheIdInfo{"cache"};

// A host executor that appends its ordinal to `log` when destroyed.
class LoggingExecutor : public HostExecutor {
 public:
  LoggingExecutor(int ordinal, std::vector<int>* log)
      : HostExecutor(DeviceDescription{}, 1 << 20), ordinal_(ordinal), log_(log) {}
  ~LoggingExecutor() override { log_->push_back(ordinal_); }

 private:
  int ordinal_;
  std::vector<int>* log_;
};

class ExecutorCacheTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<StreamExecutor>> Make(int ordinal) {
    return std::make_unique<StreamExecutor>(
        &platform_, ordinal, std::make_unique<LoggingExecutor>(ordinal, &destroyed_));
  }
  StreamExecutorConfig Config(int ordinal) {
    StreamExecutorConfig config;
    config.ordinal = ordinal;
    return config;
  }

  HostPlatform platform_{HostPlatformOptions{"cache", &kCacheIdInfo, 4, 1 << 20}};
  std::vector<int> destroyed_;
};

TEST_F(ExecutorCacheTest, ConcurrentGetOrCreateCreatesOncePerOrdinal) {
  constexpr int kThreads = 8, kOrdinals = 4, kCalls = 50;
  std::atomic<int> created[kOrdinals] = {};
  std::vector<StreamExecutor*> seen[kThreads];
  {
    ExecutorCache cache;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kCalls; ++i) {
          const int ordinal = (t + i) % kOrdinals;
          absl::StatusOr<StreamExecutor*> e = cache.GetOrCreate(Config(ordinal), [&] {
            ++created[ordinal];
            std::this_thread::sleep_for(std::chrono::microseconds(200));  // Widen the race.
            return Make(ordinal);
          });
          seen[t].push_back(e.ok() ? *e : nullptr);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (int o = 0; o < kOrdinals; ++o) {
      EXPECT_EQ(created[o].load(), 1) << "ordinal " << o;
      StreamExecutor* cached = *cache.Get(Config(o));
      EXPECT_EQ(cached->device_ordinal(), o);
      for (int t = 0; t < kThreads; ++t) {
        for (int i = 0; i < kCalls; ++i) {
          if ((t + i) % kOrdinals == o) {
            ASSERT_EQ(seen[t][i], cached);
          }
        }
      }
    }
  }
  EXPECT_EQ(destroyed_, (std::vector<int>{3, 2, 1, 0}))
      << "destroyed once each, newest ordinal first";
}

TEST_F(ExecutorCacheTest, FailedCreationIsNotCached) {
  ExecutorCache cache;
  EXPECT_TRUE(HasError(cache.Get(Config(1)).status(), absl::StatusCode::kNotFound, {"ordinal 1"}));
  absl::StatusOr<StreamExecutor*> failed =
      cache.GetOrCreate(Config(1), []() -> absl::StatusOr<std::unique_ptr<StreamExecutor>> {
        return absl::InternalError("driver hiccup");
      });
  EXPECT_TRUE(HasError(failed.status(), absl::StatusCode::kInternal, {"driver hiccup"}));
  EXPECT_FALSE(cache.Get(Config(1)).ok());
  absl::StatusOr<StreamExecutor*> retried = cache.GetOrCreate(Config(1), [&] { return Make(1); });
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(*cache.Get(Config(1)), *retried);
}

TEST_F(ExecutorCacheTest, DestroyAllEmptiesTheCache) {
  ExecutorCache cache;
  ASSERT_TRUE(cache.GetOrCreate(Config(0), [&] { return Make(0); }).ok());
  ASSERT_TRUE(cache.GetOrCreate(Config(2), [&] { return Make(2); }).ok());
  cache.DestroyAll();
  EXPECT_EQ(destroyed_, (std::vector<int>{2, 0}));
  EXPECT_FALSE(cache.Get(Config(0)).ok());
  cache.DestroyAll();  // Twice is harmless.
  EXPECT_EQ(destroyed_.size(), 2u);
}

}  // namespace
}  // namespace rill
