// The local store against a naive host reference (sums of integer-valued
// floats, so every result is exact), with every context present as the
// reduce context and as the source and destination of pushes and pulls.

#include "rill/kvstore/kvstore.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/ops/ops.h"
#include "rill/ops/testing/op_testing.h"
#include "rill/platform/platform.h"
#include "rill/tensor/storage_allocator.h"

namespace rill::kvstore {
namespace {

using ::rill::ops::testing::AllContexts;
using ::rill::ops::testing::ContextName;
using ::testing::HasSubstr;

const Shape kShape({3, 5});
constexpr int64_t kN = 15;

// Integer values in [-8, 8], as floats, deterministic per seed.
std::vector<float> IntData(uint64_t seed) {
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i)
    v[i] = static_cast<float>(static_cast<int64_t>((seed * 7919 + i * 31) % 17) - 8);
  return v;
}

std::vector<float> Plus(std::vector<float> a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// The reduce context under test.
class KVStoreTest : public ::testing::TestWithParam<engine::Context> {
 protected:
  void SetUp() override {
    KVStoreOptions o;
    o.reduce_context = GetParam();
    o.engine = engine_.get();
    auto kv = KVStore::Create("local", o);
    ASSERT_TRUE(kv.ok()) << kv.status();
    kv_ = *std::move(kv);
  }
  Tensor Make(const std::vector<float>& v, engine::Context ctx) {
    return *Tensor::FromHost<float>(v, kShape, ctx, engine_.get());
  }
  Tensor Empty(engine::Context ctx) {
    return *Tensor::Empty(kShape, DType::kF32, ctx, engine_.get());
  }
  // Context i of every context present, cyclically.
  engine::Context Ctx(size_t i) const { return all_[i % all_.size()]; }
  void ExpectValue(const Tensor& t, const std::vector<float>& want, const std::string& what) {
    auto got = t.ToHost<float>();
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    EXPECT_EQ(*got, want) << what << " (" << t.ToString() << ")";
  }
  // Pulls `key` into a fresh tensor on every context and checks each.
  void ExpectPulledEverywhere(const std::string& key, const std::vector<float>& want,
                              const std::string& what) {
    std::vector<Tensor> outs;
    for (const engine::Context& c : all_) outs.push_back(Empty(c));
    ASSERT_TRUE(kv_->Pull(key, outs).ok());
    for (const Tensor& out : outs) ExpectValue(out, want, what);
  }

  std::unique_ptr<engine::Engine> engine_ = ops::testing::MakeEngine();
  std::vector<engine::Context> all_ = AllContexts();
  std::unique_ptr<KVStore> kv_;
};

TEST_P(KVStoreTest, Basics) {
  EXPECT_EQ(kv_->type(), "local");
  EXPECT_EQ(kv_->rank(), 0);
  EXPECT_EQ(kv_->num_workers(), 1);
}

TEST_P(KVStoreTest, InitPullRoundTrip) {
  for (size_t s = 0; s < all_.size(); ++s) {
    const std::string key = absl::StrCat("w", s);
    const std::vector<float> data = IntData(s);
    Tensor src = Make(data, Ctx(s));
    ASSERT_TRUE(kv_->Init(key, src).ok());
    ASSERT_TRUE(
        src.CopyFrom(Make(IntData(99), Ctx(s))).ok());  // Init copied: the store keeps `data`.
    ExpectPulledEverywhere(key, data, absl::StrCat(key, " from ", Ctx(s).ToString()));
  }
}

// N values on contexts s, s+1, ... sum exactly; pull broadcasts the sum.
TEST_P(KVStoreTest, PushSumsAndPullBroadcasts) {
  ASSERT_TRUE(kv_->Init("w", Make(IntData(0), engine::Context::Host())).ok());
  for (size_t n = 1; n <= 5; ++n) {
    for (size_t s = 0; s < all_.size(); ++s) {
      std::vector<Tensor> values;
      std::vector<float> want(kN, 0.f);
      for (size_t i = 0; i < n; ++i) {
        const std::vector<float> v = IntData(10 * n + s + i);
        values.push_back(Make(v, Ctx(s + i)));
        want = Plus(want, v);
      }
      ASSERT_TRUE(kv_->Push("w", values).ok());
      ExpectPulledEverywhere("w", want, absl::StrCat(n, " values from ", Ctx(s).ToString(), " on"));
    }
  }
}

TEST_P(KVStoreTest, PushReplacesWithoutUpdater) {
  ASSERT_TRUE(kv_->Init("w", Make(std::vector<float>(kN, 100.f), Ctx(1))).ok());
  ASSERT_TRUE(kv_->Push("w", {Make(IntData(1), Ctx(0)), Make(IntData(2), Ctx(2))}).ok());
  ExpectPulledEverywhere("w", Plus(IntData(1), IntData(2)), "after a push of two");
  ASSERT_TRUE(kv_->Push("w", {Make(IntData(3), Ctx(3))}).ok());
  ExpectPulledEverywhere("w", IntData(3), "after a push of one");
}

// An SGD step done with ops, stored -= 0.5 * grad; it also copies the merged
// gradient it gets to a probe on cpu, to check that gradient.
struct SgdProbe {
  int calls = 0;
  std::vector<engine::Context> contexts;
  std::vector<Tensor> merged;
  Updater updater() {
    return
        [this](const std::string& key, const Tensor& grad, const Tensor& stored) -> absl::Status {
          ++calls;
          contexts.push_back(grad.context());
          contexts.push_back(stored.context());
          absl::StatusOr<Tensor> probe = grad.CopyTo(engine::Context::Host());
          if (!probe.ok()) return probe.status();
          merged.push_back(*probe);
          absl::StatusOr<Tensor> step = ops::MulScalar(grad, 0.5);
          if (!step.ok()) return step.status();
          const Tensor in[2] = {stored, *step};
          return ops::Invoke("sub", in, {}, absl::MakeConstSpan(&stored, 1)).status();
        };
  }
};

TEST_P(KVStoreTest, UpdaterAppliedOncePerPushWithTheMergedGradient) {
  SgdProbe sgd;
  kv_->SetUpdater(sgd.updater());
  std::vector<float> w = IntData(5);
  ASSERT_TRUE(kv_->Init("w", Make(w, Ctx(2))).ok());
  std::vector<std::vector<float>> sums;
  // Pushes of 3, 2 and 1 values, the last one on the reduce context itself,
  // without waiting in between.
  const size_t rounds = 3;
  for (size_t r = 0; r < rounds; ++r) {
    std::vector<Tensor> values;
    std::vector<float> sum(kN, 0.f);
    for (size_t i = 0; i < rounds - r; ++i) {
      const std::vector<float> g = IntData(20 + 3 * r + i);
      const engine::Context c = r + 1 == rounds ? GetParam() : Ctx(r + i);
      values.push_back(Make(g, c));
      sum = Plus(sum, g);
    }
    ASSERT_TRUE(kv_->Push("w", values).ok());
    sums.push_back(sum);
    for (int64_t i = 0; i < kN; ++i) w[i] -= 0.5f * sum[i];
  }
  ExpectPulledEverywhere("w", w, "after three sgd steps");
  ASSERT_EQ(sgd.calls, 3);
  ASSERT_EQ(sgd.merged.size(), 3u);
  for (size_t r = 0; r < sums.size(); ++r)
    ExpectValue(sgd.merged[r], sums[r], absl::StrCat("merged ", r));
  for (const engine::Context& c : sgd.contexts) EXPECT_EQ(c, GetParam());
}

// The optimizer op as the updater, as kvstore/README.md shows it.
TEST_P(KVStoreTest, SgdUpdateOpAsUpdater) {
  kv_->SetUpdater([](const std::string&, const Tensor& grad, const Tensor& w) {
    return ops::Invoke("sgd_update", {w, grad}, {{"lr", "0.5"}}, {w}).status();
  });
  ASSERT_TRUE(kv_->Init("w", Make(IntData(1), Ctx(1))).ok());
  ASSERT_TRUE(kv_->Push("w", {Make(IntData(2), Ctx(2)), Make(IntData(3), Ctx(3))}).ok());
  std::vector<float> want = IntData(1);
  const std::vector<float> sum = Plus(IntData(2), IntData(3));
  for (int64_t i = 0; i < kN; ++i) want[i] -= 0.5f * sum[i];
  ExpectPulledEverywhere("w", want, "after sgd_update");
}

TEST_P(KVStoreTest, UpdaterErrorIsReturnedWithTheKey) {
  ASSERT_TRUE(kv_->Init("w", Make(IntData(0), Ctx(0))).ok());
  kv_->SetUpdater([](const std::string&, const Tensor&, const Tensor&) {
    return absl::FailedPreconditionError("no state for this parameter");
  });
  absl::Status s = kv_->Push("w", {Make(IntData(1), Ctx(1))});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("'w'"));
  EXPECT_THAT(s.message(), HasSubstr("no state for this parameter"));
}

// Rounds of push then pull with no wait in between: each round pushes the
// previous round's pulled copies, so a wrong order gives a wrong value.
// Without updater w' = 2w + 1 (two copies and ones); with updater
// stored += merged, w' = 3w + 1.
TEST_P(KVStoreTest, ManyRoundsWithoutWaitingAreOrdered) {
  for (bool with_updater : {false, true}) {
    SCOPED_TRACE(with_updater ? "with updater" : "without updater");
    const std::string key = with_updater ? "u" : "r";
    if (with_updater) {
      kv_->SetUpdater([](const std::string&, const Tensor& grad, const Tensor& stored) {
        return ops::AddTo(stored, grad);
      });
    }
    std::vector<float> w = IntData(7);
    ASSERT_TRUE(kv_->Init(key, Make(w, Ctx(0))).ok());
    std::vector<Tensor> copies = {Empty(Ctx(1)), Empty(Ctx(2))};
    const Tensor ones = Make(std::vector<float>(kN, 1.f), Ctx(3));
    ASSERT_TRUE(kv_->Pull(key, copies).ok());
    const int rounds = with_updater ? 12 : 20;  // Stays below 2^24: exact in float.
    for (int r = 0; r < rounds; ++r) {
      ASSERT_TRUE(kv_->Push(key, {copies[0], copies[1], ones}).ok());
      ASSERT_TRUE(kv_->Pull(key, copies).ok());
      for (float& x : w) x = (with_updater ? 3 : 2) * x + 1;
    }
    ExpectValue(copies[0], w, "first copy");
    ExpectValue(copies[1], w, "second copy");
    ExpectPulledEverywhere(key, w, "final");
  }
}

TEST_P(KVStoreTest, BatchedPushAndPull) {
  const std::vector<std::string> keys = {"a", "b", "c"};
  std::vector<std::vector<Tensor>> values, outs;
  std::vector<std::vector<float>> want;
  for (size_t k = 0; k < keys.size(); ++k) {
    ASSERT_TRUE(kv_->Init(keys[k], Make(IntData(k), Ctx(k))).ok());
    values.push_back({Make(IntData(30 + k), Ctx(k)), Make(IntData(40 + k), Ctx(k + 1))});
    want.push_back(Plus(IntData(30 + k), IntData(40 + k)));
    outs.push_back({Empty(Ctx(k + 2)), Empty(Ctx(k + 3))});
  }
  ASSERT_TRUE(kv_->Push(keys, values).ok());
  ASSERT_TRUE(kv_->Pull(keys, outs).ok());
  for (size_t k = 0; k < keys.size(); ++k) {
    for (const Tensor& out : outs[k]) ExpectValue(out, want[k], keys[k]);
  }
  // One bad key: nothing is pushed.
  std::vector<std::vector<Tensor>> bad = values;
  bad[2] = {Make(IntData(50), Ctx(0)),
            *Tensor::Empty(Shape({2}), DType::kF32, Ctx(0), engine_.get())};
  EXPECT_EQ(kv_->Push(keys, bad).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(kv_->Pull(keys, outs).ok());
  for (size_t k = 0; k < keys.size(); ++k)
    ExpectValue(outs[k][0], want[k], keys[k] + " after a bad batch");
  EXPECT_EQ(kv_->Push(keys, absl::MakeConstSpan(values).subspan(1)).code(),
            absl::StatusCode::kInvalidArgument);
}

// Allocations counted on every executor: after the first push and pull of a
// key, later ones allocate nothing; values already on the reduce context
// are summed without even a first allocation.
TEST_P(KVStoreTest, PushAllocatesNothingAfterTheFirst) {
  std::vector<StorageAllocator*> allocators;
  for (const engine::Context& c : all_)
    allocators.push_back(StorageAllocator::For(*ExecutorFor(c)));
  auto requests = [&] {
    EXPECT_TRUE(engine_->WaitForAll().ok());
    int64_t n = 0;
    for (StorageAllocator* a : allocators) n += a->Stats().requests;  // cpu and host:0 share one.
    return n;
  };
  ASSERT_TRUE(kv_->Init("local", Make(IntData(1), GetParam())).ok());
  std::vector<Tensor> local = {Make(IntData(2), GetParam()), Make(IntData(3), GetParam()),
                               Make(IntData(4), GetParam())};
  const int64_t before = requests();
  ASSERT_TRUE(kv_->Push("local", local).ok());
  EXPECT_EQ(requests(), before) << "values on the reduce context were copied";
  ExpectPulledEverywhere("local", Plus(Plus(IntData(2), IntData(3)), IntData(4)), "local sum");

  for (bool with_updater : {false, true}) {
    SCOPED_TRACE(with_updater ? "with updater" : "without updater");
    const std::string key = with_updater ? "u" : "r";
    if (with_updater) {
      kv_->SetUpdater(
          [](const std::string&, const Tensor& g, const Tensor& w) { return ops::AddTo(w, g); });
    }
    ASSERT_TRUE(kv_->Init(key, Make(IntData(5), Ctx(0))).ok());
    std::vector<Tensor> values, outs;
    for (size_t i = 0; i < all_.size(); ++i) values.push_back(Make(IntData(6 + i), Ctx(i)));
    for (size_t i = 0; i < all_.size(); ++i) outs.push_back(Empty(Ctx(i + 1)));
    ASSERT_TRUE(kv_->Push(key, values).ok());
    ASSERT_TRUE(kv_->Pull(key, outs).ok());
    const int64_t after_first = requests();
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(kv_->Push(key, values).ok());
      ASSERT_TRUE(kv_->Pull(key, outs).ok());
    }
    EXPECT_EQ(requests(), after_first);
  }
}

TEST_P(KVStoreTest, StatsCountPushesPullsAndBytes) {
  const uint64_t bytes = kN * sizeof(float);
  ASSERT_TRUE(kv_->Init("w", Make(IntData(0), Ctx(0))).ok());
  ASSERT_TRUE(kv_->Push("w", {Make(IntData(1), Ctx(0)), Make(IntData(2), Ctx(1))}).ok());
  ASSERT_TRUE(kv_->Push("w", {Make(IntData(3), Ctx(2))}).ok());
  ASSERT_TRUE(kv_->Pull("w", {Empty(Ctx(0)), Empty(Ctx(1)), Empty(Ctx(2))}).ok());
  EXPECT_FALSE(kv_->Push("nope", {Make(IntData(3), Ctx(2))}).ok());  // Not counted.
  const KVStoreStats s = kv_->stats();
  EXPECT_EQ(s.pushes, 2);
  EXPECT_EQ(s.pulls, 1);
  EXPECT_EQ(s.bytes_pushed, 3 * bytes);
  EXPECT_EQ(s.bytes_pulled, 3 * bytes);
  EXPECT_GT(s.push_seconds, 0);
  EXPECT_GT(s.pull_seconds, 0);
}

TEST_P(KVStoreTest, Errors) {
  const Tensor v = Make(IntData(0), Ctx(0));
  absl::Status s = kv_->Push("missing_key", {v});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("missing_key"));
  s = kv_->Pull("missing_key", {v});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("missing_key"));

  ASSERT_TRUE(kv_->Init("w", v).ok());
  s = kv_->Init("w", v);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), HasSubstr("'w'"));
  EXPECT_EQ(kv_->Init("", v).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kv_->Init("undefined", Tensor()).code(), absl::StatusCode::kFailedPrecondition);

  const Tensor wrong_shape = *Tensor::Empty(Shape({5, 3}), DType::kF32, Ctx(1), engine_.get());
  s = kv_->Push("w", {v, wrong_shape});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'w'"));
  EXPECT_THAT(s.message(), HasSubstr("[5, 3]"));
  EXPECT_THAT(s.message(), HasSubstr("[3, 5]"));
  const Tensor wrong_dtype = *Tensor::Empty(kShape, DType::kF64, Ctx(1), engine_.get());
  s = kv_->Pull("w", {wrong_dtype});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("float64"));

  s = kv_->Push("w", {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("no values"));
  EXPECT_EQ(kv_->Pull("w", {}).code(), absl::StatusCode::kInvalidArgument);

  auto other_engine = ops::testing::MakeEngine();
  const Tensor foreign = *Tensor::FromHost<float>(IntData(0), kShape, Ctx(0), other_engine.get());
  s = kv_->Push("w", {foreign});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("engine"));
  EXPECT_TRUE(other_engine->WaitForAll().ok());

  // Nothing above changed the stored value.
  ExpectPulledEverywhere("w", IntData(0), "after the errors");
}

INSTANTIATE_TEST_SUITE_P(AllContexts, KVStoreTest, ::testing::ValuesIn(AllContexts()), ContextName);

TEST(KVStoreCreate, UnknownTypes) {
  absl::StatusOr<std::unique_ptr<KVStore>> kv = KVStore::Create("local_allreduce");
  EXPECT_EQ(kv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(kv.status().message(), HasSubstr("'local_allreduce'"));
  EXPECT_THAT(kv.status().message(), HasSubstr("local"));
  // Asynchronous distributed stores (a parameter server) do not exist;
  // dist_sync is tested under mpiexec (dist_kvstore_test).
  for (const char* dist : {"dist", "dist_async"}) {
    kv = KVStore::Create(dist);
    EXPECT_EQ(kv.status().code(), absl::StatusCode::kUnimplemented) << dist;
    EXPECT_THAT(kv.status().message(), HasSubstr("only synchronous distributed stores"));
  }
}

TEST(KVStoreCreate, MissingReduceContext) {
  KVStoreOptions o;
  auto platform = engine::Context::Device("host", 0);
  ASSERT_TRUE(platform.ok());
  o.reduce_context = engine::Context::Device(platform->platform, 1000);
  absl::StatusOr<std::unique_ptr<KVStore>> kv = KVStore::Create("local", o);
  EXPECT_FALSE(kv.ok());
  EXPECT_THAT(kv.status().message(), HasSubstr("host:1000"));
}

}  // namespace
}  // namespace rill::kvstore
