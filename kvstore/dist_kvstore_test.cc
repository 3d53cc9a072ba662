// The dist_sync store, run by mpiexec with 1, 2 and 3 ranks
// (kvstore/CMakeLists.txt), against sums computed here from what every
// rank pushes. Every rank runs the same cases in the same order.

#include "rill/kvstore/dist_kvstore.h"

#include <gtest/gtest.h>

#include <vector>

#include "rill/dist/collective_ops.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/ops.h"
#include "rill/platform/platform_manager.h"
#include "rill/testing/status_testing.h"

namespace rill::kvstore {
namespace {

using testing::HasError;
using testing::IsOk;
using testing::Must;

// Rank r's value i on its device d.
float Value(int r, int d, int64_t i) { return static_cast<float>((r + 1) * 10 + d + (i % 5)); }

Tensor Filled(const Shape& shape, int r, int d, engine::Context ctx) {
  std::vector<float> v(static_cast<size_t>(shape.NumElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = Value(r, d, static_cast<int64_t>(i));
  return Must(Tensor::FromHost<float>(absl::MakeConstSpan(v), shape, ctx));
}

std::vector<engine::Context> Devices() {
  return {Must(engine::Context::Device("host", 0)), Must(engine::Context::Device("host", 1))};
}

std::unique_ptr<KVStore> Store(KVStoreOptions o = {}) {
  return Must(KVStore::Create("dist_sync", o));
}

TEST(DistKVStore, CreatedByNameWithTheWorld) {
  std::unique_ptr<KVStore> kv = Store();
  std::shared_ptr<Communicator> world = Must(dist::World());
  EXPECT_EQ(kv->type(), "dist_sync");
  EXPECT_EQ(kv->rank(), world->rank());
  EXPECT_EQ(kv->num_workers(), world->size());
  EXPECT_EQ(Must(KVStore::Create("dist_device_sync"))->type(), "dist_sync");
  EXPECT_TRUE(HasError(KVStore::Create("dist_async").status(), absl::StatusCode::kUnimplemented,
                       {"dist_async", "dist_sync"}));
  KVStoreOptions bad;
  bad.bucket_bytes = 0;
  EXPECT_TRUE(HasError(KVStore::Create("dist_sync", bad).status(),
                       absl::StatusCode::kInvalidArgument, {"bucket_bytes 0"}));
}

TEST(DistKVStore, InitBroadcastsRankZerosValue) {
  std::unique_ptr<KVStore> kv = Store();
  const int me = kv->rank();
  ASSERT_TRUE(IsOk(kv->Init("w", Filled(Shape{6}, me, 0, engine::Context::Host()))));
  Tensor out = Must(Tensor::Empty(Shape{6}, DType::kF32, engine::Context::Host()));
  ASSERT_TRUE(IsOk(kv->Pull("w", {out})));
  std::vector<float> got = Must(out.ToHost<float>());
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(got[i], Value(0, 0, i));
}

TEST(DistKVStore, PushSumsEveryDeviceOfEveryRankInBuckets) {
  KVStoreOptions o;
  o.first_bucket_bytes = 64;  // 16 floats
  o.bucket_bytes = 400;       // 100 floats
  std::unique_ptr<KVStore> kv = Store(o);
  auto* dist = static_cast<DistKVStore*>(kv.get());
  const int me = kv->rank(), n = kv->num_workers();
  // Init order a..e; the buckets run in reverse: e(10) d(10) | c(90) b(30) | a(7).
  const std::vector<std::pair<std::string, int64_t>> keys = {
      {"a", 7}, {"b", 30}, {"c", 90}, {"d", 10}, {"e", 10}};
  for (const auto& [k, size] : keys)
    ASSERT_TRUE(IsOk(kv->Init(k, Filled(Shape{size}, 0, 0, engine::Context::Host()))));
  std::vector<engine::Context> devs = Devices();
  for (int round = 0; round < 3; ++round) {
    for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
      std::vector<Tensor> grads;
      for (size_t d = 0; d < devs.size(); ++d)
        grads.push_back(Filled(Shape{it->second}, me, static_cast<int>(d) + round, devs[d]));
      ASSERT_TRUE(IsOk(kv->Push(it->first, grads, /*priority=*/-round)));
    }
    for (const auto& [k, size] : keys) {
      std::vector<Tensor> outs;
      for (const engine::Context& c : devs)
        outs.push_back(Must(Tensor::Empty(Shape{size}, DType::kF32, c)));
      ASSERT_TRUE(IsOk(kv->Pull(k, outs)));
      for (const Tensor& out : outs) {
        std::vector<float> got = Must(out.ToHost<float>());
        for (int64_t i = 0; i < size; ++i) {
          float want = 0;
          for (int r = 0; r < n; ++r)
            for (int d = 0; d < 2; ++d) want += Value(r, d + round, i);
          ASSERT_EQ(got[i], want) << k << "[" << i << "] round " << round;
        }
      }
    }
  }
  const std::vector<std::vector<std::string>> want_buckets = {{"e", "d"}, {"c", "b"}, {"a"}};
  EXPECT_EQ(dist->Buckets(), want_buckets);
  EXPECT_TRUE(HasError(kv->Init("late", Filled(Shape{1}, 0, 0, engine::Context::Host())),
                       absl::StatusCode::kFailedPrecondition, {"after the first Push"}));
}

TEST(DistKVStore, UpdaterGetsTheSumOverRanks) {
  std::unique_ptr<KVStore> kv = Store();
  const int me = kv->rank(), n = kv->num_workers();
  ASSERT_TRUE(IsOk(kv->Init("w", Filled(Shape{4}, 0, 0, engine::Context::Host()))));
  kv->SetUpdater([](const std::string&, const Tensor& grad, const Tensor& stored) {
    return ops::AddTo(stored, grad);  // w += sum of gradients
  });
  ASSERT_TRUE(IsOk(kv->Push("w", {Filled(Shape{4}, me, 1, engine::Context::Host())})));
  Tensor out = Must(Tensor::Empty(Shape{4}, DType::kF32, engine::Context::Host()));
  ASSERT_TRUE(IsOk(kv->Pull("w", {out})));
  std::vector<float> got = Must(out.ToHost<float>());
  for (int64_t i = 0; i < 4; ++i) {
    float want = Value(0, 0, i);
    for (int r = 0; r < n; ++r) want += Value(r, 1, i);
    EXPECT_EQ(got[i], want);
  }
}

TEST(DistKVStore, PullOfAPartlyPushedBucketReducesIt) {
  std::unique_ptr<KVStore> kv = Store();
  const int me = kv->rank(), n = kv->num_workers();
  for (const char* k : {"x", "y"})
    ASSERT_TRUE(IsOk(kv->Init(k, Filled(Shape{3}, 0, 0, engine::Context::Host()))));
  ASSERT_TRUE(IsOk(kv->Push("y", {Filled(Shape{3}, me, 2, engine::Context::Host())})));
  Tensor y = Must(Tensor::Empty(Shape{3}, DType::kF32, engine::Context::Host()));
  Tensor x = Must(Tensor::Empty(Shape{3}, DType::kF32, engine::Context::Host()));
  ASSERT_TRUE(IsOk(kv->Pull("y", {y})));
  ASSERT_TRUE(IsOk(kv->Pull("x", {x})));
  std::vector<float> gy = Must(y.ToHost<float>()), gx = Must(x.ToHost<float>());
  for (int64_t i = 0; i < 3; ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += Value(r, 2, i);
    EXPECT_EQ(gy[i], want);
    EXPECT_EQ(gx[i], Value(0, 0, i)) << "x was not pushed: it keeps its value";
  }
}

TEST(DistKVStore, BadArguments) {
  std::unique_ptr<KVStore> kv = Store();
  ASSERT_TRUE(IsOk(kv->Init("w", Filled(Shape{4}, 0, 0, engine::Context::Host()))));
  EXPECT_TRUE(HasError(kv->Push("nope", {Filled(Shape{4}, 0, 0, engine::Context::Host())}),
                       absl::StatusCode::kNotFound, {"'nope'"}));
  EXPECT_TRUE(HasError(kv->Push("w", {Filled(Shape{5}, 0, 0, engine::Context::Host())}),
                       absl::StatusCode::kInvalidArgument, {"float32[5]", "float32[4]"}));
  EXPECT_TRUE(HasError(kv->Init("w", Filled(Shape{4}, 0, 0, engine::Context::Host())),
                       absl::StatusCode::kAlreadyExists, {"'w'"}));
  Tensor ints = Must(Tensor::Empty(Shape{2}, DType::kI32, engine::Context::Host()));
  EXPECT_TRUE(HasError(kv->Init("i", ints), absl::StatusCode::kInvalidArgument, {"float32"}));
}

TEST(DistKVStoreFailures, DifferentModelsFailNamingTheFirstDifference) {
  StreamExecutor* exec =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  CommunicatorOptions co;
  co.timeout = std::chrono::seconds(20);
  KVStoreOptions o;
  o.communicator = Must(exec->AsCollectives()->NewCommunicator(co));
  if (o.communicator->size() < 2) GTEST_SKIP() << "needs 2 ranks (run by mpiexec -n 2)";
  std::unique_ptr<KVStore> kv = Store(o);
  const int me = kv->rank();
  ASSERT_TRUE(IsOk(kv->Init("conv1.weight", Filled(Shape{8}, me, 0, engine::Context::Host()))));
  // Rank 1 binds a wider fc1.
  const int64_t fc = me == 1 ? 32 : 16;
  ASSERT_TRUE(IsOk(kv->Init("fc1.weight", Filled(Shape{fc}, me, 0, engine::Context::Host()))));
  Tensor out = Must(Tensor::Empty(Shape{fc}, DType::kF32, engine::Context::Host()));
  ASSERT_TRUE(IsOk(kv->Pull("fc1.weight", {out})));
  absl::Status s = out.WaitToRead();
  EXPECT_TRUE(HasError(s, absl::StatusCode::kFailedPrecondition,
                       {"float x16 'fc1.weight'", "float x32 'fc1.weight'"}))
      << s;
}

}  // namespace
}  // namespace rill::kvstore
