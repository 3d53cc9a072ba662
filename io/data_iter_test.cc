#include "rill/io/data_iter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::io {
namespace {

using ::rill::ops::testing::AllContexts;
using ::rill::ops::testing::ContextName;
using ::testing::HasSubstr;

// n examples of rows x cols (rows * cols >= 2): pixels 0 and 1 hold the
// example's index (i % 256, i / 256), the others (i * 13 + p * 7) % 256;
// label i % 10.
Dataset MakeDataset(int64_t n, int64_t rows = 3, int64_t cols = 4) {
  Dataset d;
  d.size = n;
  d.rows = rows;
  d.cols = cols;
  const int64_t px = rows * cols;
  d.images.resize(n * px);
  d.labels.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < px; ++p)
      d.images[i * px + p] = static_cast<uint8_t>((i * 13 + p * 7) % 256);
    d.images[i * px] = static_cast<uint8_t>(i % 256);
    d.images[i * px + 1] = static_cast<uint8_t>(i / 256);
    d.labels[i] = static_cast<uint8_t>(i % 10);
  }
  return d;
}

struct HostBatch {
  std::vector<float> data;
  std::vector<int32_t> label;
};

// Batch `b` computed naively from the epoch's order.
HostBatch Reference(const Dataset& d, const std::vector<int64_t>& order, int64_t b,
                    const DataIterOptions& o) {
  HostBatch out;
  const int64_t px = d.rows * d.cols;
  const int64_t end = std::min<int64_t>(d.size, (b + 1) * o.batch_size);
  for (int64_t k = b * o.batch_size; k < end; ++k) {
    const int64_t i = order[k];
    for (int64_t p = 0; p < px; ++p) {
      const float scaled = static_cast<float>(d.images[i * px + p]) * o.scale;
      out.data.push_back((scaled - o.mean) / o.stddev);
    }
    out.label.push_back(d.labels[i]);
  }
  return out;
}

HostBatch ToHost(const Batch& b) {
  absl::StatusOr<std::vector<float>> data = b.data.ToHost<float>();
  absl::StatusOr<std::vector<int32_t>> label = b.label.ToHost<int32_t>();
  EXPECT_TRUE(data.ok()) << data.status();
  EXPECT_TRUE(label.ok()) << label.status();
  if (!data.ok() || !label.ok()) return {};
  return {*data, *label};
}

void ExpectBatch(const HostBatch& got, const HostBatch& want, const std::string& what) {
  ops::testing::ExpectNear(got.data, want.data, 1e-6, what + " data");
  EXPECT_EQ(got.label, want.label) << what << " labels";
}

std::optional<Batch> NextOrDie(DataIter& it) {
  absl::StatusOr<std::optional<Batch>> b = it.Next();
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *b : std::nullopt;
}

class DataIterTest : public ::testing::TestWithParam<engine::Context> {
 protected:
  DataIterOptions Options(int64_t batch_size, int prefetch) const {
    DataIterOptions o;
    o.batch_size = batch_size;
    o.prefetch = prefetch;
    o.seed = 7;
    o.context = GetParam();
    o.engine = engine_.get();
    return o;
  }
  std::unique_ptr<DataIter> Make(const Dataset& d, const DataIterOptions& o) {
    absl::StatusOr<std::unique_ptr<DataIter>> it = DataIter::Create(&d, o);
    EXPECT_TRUE(it.ok()) << it.status();
    return it.ok() ? std::move(*it) : nullptr;
  }
  std::unique_ptr<engine::Engine> engine_ = ops::testing::MakeEngine();
};

TEST_P(DataIterTest, BatchesMatchReferenceForEveryPrefetch) {
  const Dataset d = MakeDataset(37);
  std::vector<std::vector<float>> all;  // Per prefetch: every value of two epochs.
  for (int prefetch : {0, 1, 3}) {
    DataIterOptions o = Options(8, prefetch);
    o.scale = 1.0f / 255.0f;
    o.mean = 0.2f;
    o.stddev = 0.3f;
    std::unique_ptr<DataIter> it = Make(d, o);
    ASSERT_NE(it, nullptr);
    EXPECT_EQ(it->num_batches(), 5);
    EXPECT_EQ(it->num_examples(), 37);
    EXPECT_EQ(it->num_slots(), 2 * prefetch + 1);
    all.emplace_back();
    for (int epoch : {0, 1}) {
      ASSERT_TRUE(it->Reset(epoch).ok());
      for (int64_t b = 0;; ++b) {
        std::optional<Batch> batch = NextOrDie(*it);
        if (!batch) {
          EXPECT_EQ(b, 5);
          break;
        }
        const int64_t n = b < 4 ? 8 : 5;
        EXPECT_EQ(batch->size, n);
        EXPECT_EQ(batch->index, b);
        EXPECT_EQ(batch->data.shape(), (Shape{n, 1, 3, 4}));
        EXPECT_EQ(batch->data.dtype(), DType::kF32);
        EXPECT_EQ(batch->label.shape(), (Shape{n}));
        EXPECT_EQ(batch->label.dtype(), DType::kI32);
        EXPECT_EQ(batch->data.context(), GetParam());
        EXPECT_EQ(batch->label.context(), GetParam());
        const HostBatch got = ToHost(*batch);
        ExpectBatch(got, Reference(d, it->order(), b, o),
                    absl::StrCat("prefetch ", prefetch, " epoch ", epoch, " batch ", b));
        all.back().insert(all.back().end(), got.data.begin(), got.data.end());
      }
    }
  }
  EXPECT_EQ(all[0], all[1]) << "prefetch 0 and 1 differ";
  EXPECT_EQ(all[0], all[2]) << "prefetch 0 and 3 differ";
}

TEST_P(DataIterTest, EveryExampleOncePerEpoch) {
  const Dataset d = MakeDataset(300);  // Indices past 255 use pixel 1.
  DataIterOptions o = Options(32, 2);
  o.scale = 1.0f;  // Pixels come back as exact floats.
  std::unique_ptr<DataIter> it = Make(d, o);
  ASSERT_NE(it, nullptr);
  for (int epoch = 0; epoch < 3; ++epoch) {
    ASSERT_TRUE(it->Reset(epoch).ok());
    std::vector<int64_t> seen;
    while (std::optional<Batch> b = NextOrDie(*it)) {
      const HostBatch h = ToHost(*b);
      for (int64_t k = 0; k < b->size; ++k) {
        const int64_t i =
            static_cast<int64_t>(h.data[k * 12]) + 256 * static_cast<int64_t>(h.data[k * 12 + 1]);
        EXPECT_EQ(h.label[k], i % 10);
        seen.push_back(i);
      }
    }
    EXPECT_EQ(seen, it->order()) << "epoch " << epoch;
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> want(300);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(seen, want) << "epoch " << epoch << " is not a permutation";
  }
}

// A batch holds its contents through the next `prefetch` Next() calls; the
// one after that refills its slot (ring of 2 * prefetch + 1).
TEST_P(DataIterTest, BatchStaysValidForPrefetchCalls) {
  const Dataset d = MakeDataset(80);
  for (int prefetch : {0, 1, 3}) {
    const DataIterOptions o = Options(4, prefetch);
    std::unique_ptr<DataIter> it = Make(d, o);
    ASSERT_NE(it, nullptr);
    std::optional<Batch> first = NextOrDie(*it);
    ASSERT_TRUE(first.has_value());
    for (int k = 0; k < prefetch; ++k) ASSERT_TRUE(NextOrDie(*it).has_value());
    ExpectBatch(ToHost(*first), Reference(d, it->order(), 0, o),
                absl::StrCat("prefetch ", prefetch));
    ASSERT_TRUE(NextOrDie(*it).has_value());  // Pushes batch 2 * prefetch + 1 into batch 0's slot.
    ExpectBatch(ToHost(*first), Reference(d, it->order(), 2 * prefetch + 1, o),
                absl::StrCat("prefetch ", prefetch, " after the refill"));
  }
}

// A reader pushed before the refill sees the old batch, however slow it is:
// the engine orders the refill after it. Where the slot's memory is
// host-addressable (cpu, host:N) the reader reads the slot itself; elsewhere
// it reads an engine-ordered copy of it.
TEST_P(DataIterTest, ReaderPushedBeforeRefillSeesItsBatch) {
  const Dataset d = MakeDataset(20);
  const DataIterOptions o = Options(4, 0);  // One slot: every Next() refills it.
  std::unique_ptr<DataIter> it = Make(d, o);
  ASSERT_NE(it, nullptr);
  std::optional<Batch> b0 = NextOrDie(*it);
  ASSERT_TRUE(b0.has_value());
  Tensor src = b0->data;
  absl::StatusOr<StorageBlock> block = src.Storage();
  ASSERT_TRUE(block.ok()) << block.status();
  if (block->host == nullptr) {
    absl::StatusOr<Tensor> staged = b0->data.CopyTo(engine::Context::Host());
    ASSERT_TRUE(staged.ok()) << staged.status();
    src = *staged;
    block = src.Storage();
    ASSERT_TRUE(block.ok()) << block.status();
  }
  auto seen = std::make_shared<std::vector<float>>(src.NumElements());
  const char* from = static_cast<const char*>(block->host) + src.byte_offset();
  ASSERT_TRUE(engine_
                  ->PushSync(
                      [from, seen](engine::RunContext) {
                        std::this_thread::sleep_for(std::chrono::milliseconds(100));
                        std::memcpy(seen->data(), from, seen->size() * sizeof(float));
                        return absl::OkStatus();
                      },
                      engine::Context::Host(), {src.var()}, {}, engine::FnProperty::kNormal, 0,
                      "slow reader")
                  .ok());
  ASSERT_TRUE(NextOrDie(*it).has_value());  // Refills the slot, twice.
  ASSERT_TRUE(NextOrDie(*it).has_value());
  ASSERT_TRUE(engine_->WaitForAll().ok());
  ops::testing::ExpectNear(*seen, Reference(d, it->order(), 0, o).data, 1e-6, "slow reader");
}

TEST_P(DataIterTest, LastPartialBatchAndDropLast) {
  const Dataset d = MakeDataset(10);
  for (bool drop_last : {false, true}) {
    DataIterOptions o = Options(4, 1);
    o.drop_last = drop_last;
    std::unique_ptr<DataIter> it = Make(d, o);
    ASSERT_NE(it, nullptr);
    EXPECT_EQ(it->num_batches(), drop_last ? 2 : 3);
    EXPECT_EQ(it->num_examples(), drop_last ? 8 : 10);
    std::vector<int64_t> sizes;
    while (std::optional<Batch> b = NextOrDie(*it)) {
      sizes.push_back(b->size);
      EXPECT_EQ(b->data.shape(), (Shape{b->size, 1, 3, 4}));
      EXPECT_EQ(b->label.shape(), (Shape{b->size}));
      ExpectBatch(ToHost(*b), Reference(d, it->order(), b->index, o),
                  absl::StrCat("batch ", b->index));
    }
    EXPECT_EQ(sizes, drop_last ? (std::vector<int64_t>{4, 4}) : (std::vector<int64_t>{4, 4, 2}));
  }
}

TEST_P(DataIterTest, BatchLargerThanDataset) {
  const Dataset d = MakeDataset(10);
  for (bool drop_last : {false, true}) {
    DataIterOptions o = Options(64, 2);
    o.drop_last = drop_last;
    std::unique_ptr<DataIter> it = Make(d, o);
    ASSERT_NE(it, nullptr);
    EXPECT_EQ(it->num_batches(), drop_last ? 0 : 1);
    std::optional<Batch> b = NextOrDie(*it);
    ASSERT_EQ(b.has_value(), !drop_last);
    if (b) {
      EXPECT_EQ(b->size, 10);
      ExpectBatch(ToHost(*b), Reference(d, it->order(), 0, o), "the one batch");
    }
  }
}

TEST_P(DataIterTest, ResetMidEpochDropsPrefetchedBatches) {
  const Dataset d = MakeDataset(50);
  const DataIterOptions o = Options(5, 3);
  std::unique_ptr<DataIter> it = Make(d, o);
  ASSERT_NE(it, nullptr);
  std::optional<Batch> kept = NextOrDie(*it);  // Epoch 0, batch 0 ...
  ASSERT_TRUE(kept.has_value());
  const HostBatch kept_want = Reference(d, it->order(), 0, o);
  ASSERT_TRUE(NextOrDie(*it).has_value());
  ASSERT_TRUE(it->Reset(1).ok());
  EXPECT_EQ(it->order(), ShuffleOrder(50, 7, 1));
  int64_t count = 0;
  while (std::optional<Batch> b = NextOrDie(*it)) {
    if (b->index == 0) ExpectBatch(ToHost(*kept), kept_want, "epoch 0 batch 0 after Reset");
    ExpectBatch(ToHost(*b), Reference(d, it->order(), b->index, o),
                absl::StrCat("epoch 1 batch ", b->index));
    ++count;
  }
  EXPECT_EQ(count, 10);
}

// The example index a batch row holds, read back from pixels 0 and 1
// (needs scale 1, mean 0, stddev 1).
std::vector<int64_t> ExampleIds(const HostBatch& h, int64_t pixels) {
  std::vector<int64_t> ids;
  for (size_t k = 0; k * pixels < h.data.size(); ++k) {
    ids.push_back(static_cast<int64_t>(h.data[k * pixels]) +
                  256 * static_cast<int64_t>(h.data[k * pixels + 1]));
  }
  return ids;
}

// Shards 0..N-1's batches i, joined in shard order, are batch i of the
// unsharded iterator with batch_size * N (an independent reference: it reads
// the same shuffle with plain batching), and no example is in two shards.
TEST_P(DataIterTest, ShardsJoinToTheUnshardedGlobalBatch) {
  struct Case {
    int64_t size, batch_size;
    int shards;
    bool drop_last;
    int64_t want_batches;
    std::vector<int64_t> want_last_sizes;  // per shard, of the last batch
  };
  const std::vector<Case> cases = {
      {37, 4, 2, false, 5, {3, 2}},     // G 8: 4 full, 5 left split 3 + 2
      {37, 4, 2, true, 4, {4, 4}},      // the 5 left dropped
      {37, 4, 3, false, 3, {4, 4, 4}},  // G 12: 1 left < 3 shards: dropped
      {40, 4, 3, false, 4, {2, 1, 1}},  // 4 left split 2 + 1 + 1
      {40, 4, 3, true, 3, {4, 4, 4}},  {40, 4, 2, false, 5, {4, 4}},  // G 8 divides 40
      {5, 4, 2, false, 1, {3, 2}},  // G 8 > size: one partial global batch
  };
  for (const Case& c : cases) {
    const std::string what = absl::StrCat("size ", c.size, " batch ", c.batch_size, " shards ",
                                          c.shards, " drop_last ", c.drop_last);
    const Dataset d = MakeDataset(c.size);
    DataIterOptions ro = Options(c.batch_size * c.shards, 1);
    ro.scale = 1.0f;  // Pixels come back as exact floats: example ids.
    ro.drop_last = c.drop_last;
    std::unique_ptr<DataIter> ref = Make(d, ro);
    ASSERT_NE(ref, nullptr) << what;
    std::vector<std::unique_ptr<DataIter>> shards;
    int64_t shard_examples = 0;
    for (int r = 0; r < c.shards; ++r) {
      DataIterOptions o = Options(c.batch_size, 2);
      o.scale = 1.0f;
      o.drop_last = c.drop_last;
      o.shard_count = c.shards;
      o.shard_index = r;
      shards.push_back(Make(d, o));
      ASSERT_NE(shards.back(), nullptr) << what;
      EXPECT_EQ(shards.back()->num_batches(), c.want_batches) << what;
      shard_examples += shards.back()->num_examples();
    }
    for (int epoch : {0, 1}) {
      ASSERT_TRUE(ref->Reset(epoch).ok());
      for (auto& it : shards) ASSERT_TRUE(it->Reset(epoch).ok());
      std::set<int64_t> seen;
      int64_t delivered = 0;
      for (int64_t i = 0; i < c.want_batches; ++i) {
        const std::string at = absl::StrCat(what, " epoch ", epoch, " batch ", i);
        std::optional<Batch> want = NextOrDie(*ref);
        ASSERT_TRUE(want.has_value()) << at;
        HostBatch joined;
        for (int r = 0; r < c.shards; ++r) {
          std::optional<Batch> b = NextOrDie(*shards[r]);
          ASSERT_TRUE(b.has_value()) << at << " shard " << r;
          EXPECT_EQ(b->index, i) << at;
          const int64_t want_size = i + 1 == c.want_batches ? c.want_last_sizes[r] : c.batch_size;
          EXPECT_EQ(b->size, want_size) << at << " shard " << r;
          EXPECT_EQ(b->data.shape(), (Shape{b->size, 1, 3, 4})) << at;
          const HostBatch h = ToHost(*b);
          for (int64_t id : ExampleIds(h, 12)) {
            EXPECT_TRUE(seen.insert(id).second)
                << at << " shard " << r << ": example " << id << " was already delivered";
          }
          delivered += b->size;
          joined.data.insert(joined.data.end(), h.data.begin(), h.data.end());
          joined.label.insert(joined.label.end(), h.label.begin(), h.label.end());
        }
        ExpectBatch(joined, ToHost(*want), at);
      }
      for (int r = 0; r < c.shards; ++r) {
        EXPECT_FALSE(NextOrDie(*shards[r]).has_value()) << what << " shard " << r << " ends";
      }
      EXPECT_EQ(delivered, shard_examples) << what << ": the shards' num_examples()";
    }
  }
}

// Reset(epoch, k) delivers what Reset(epoch) and k Next() calls would, on
// one iterator that keeps running (so the ring is re-based mid-epoch).
TEST_P(DataIterTest, ResetAtBatchMatchesSkipping) {
  const Dataset d = MakeDataset(37);
  for (int prefetch : {0, 2}) {
    for (int shards : {1, 3}) {
      DataIterOptions o = Options(4, prefetch);
      o.shard_count = shards;
      o.shard_index = shards - 1;
      std::unique_ptr<DataIter> skip = Make(d, o);
      std::unique_ptr<DataIter> jump = Make(d, o);
      ASSERT_NE(skip, nullptr);
      ASSERT_NE(jump, nullptr);
      const int64_t nb = skip->num_batches();
      ASSERT_EQ(nb, shards == 1 ? 10 : 3);
      for (int64_t k = 0; k <= nb; ++k) {
        const std::string what =
            absl::StrCat("prefetch ", prefetch, " shards ", shards, " first batch ", k);
        // `jump` holds a batch of the previous epoch across the Reset.
        std::optional<Batch> kept = NextOrDie(*jump);
        HostBatch kept_want;
        if (kept) kept_want = ToHost(*kept);
        ASSERT_TRUE(skip->Reset(1).ok());
        for (int64_t i = 0; i < k; ++i) ASSERT_TRUE(NextOrDie(*skip).has_value()) << what;
        ASSERT_TRUE(jump->Reset(1, k).ok()) << what;
        EXPECT_EQ(jump->order(), skip->order()) << what;
        int64_t count = 0;
        while (true) {
          std::optional<Batch> want = NextOrDie(*skip);
          std::optional<Batch> got = NextOrDie(*jump);
          ASSERT_EQ(got.has_value(), want.has_value()) << what;
          if (!want) break;
          EXPECT_EQ(got->index, want->index) << what;
          EXPECT_EQ(got->size, want->size) << what;
          ExpectBatch(ToHost(*got), ToHost(*want), absl::StrCat(what, " batch ", got->index));
          if (kept && count == 0 && prefetch > 0) {
            ExpectBatch(ToHost(*kept), kept_want, what + ": the batch kept across Reset");
          }
          ++count;
        }
        EXPECT_EQ(count, nb - k) << what;
        ASSERT_TRUE(jump->Reset(0).ok());
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllContexts, DataIterTest, ::testing::ValuesIn(AllContexts()),
                         ContextName);

class DataIterHostTest : public ::testing::Test {
 protected:
  std::unique_ptr<engine::Engine> engine_ = ops::testing::MakeEngine();
  DataIterOptions Options() const {
    DataIterOptions o;
    o.batch_size = 4;
    o.engine = engine_.get();
    return o;
  }
};

TEST_F(DataIterHostTest, OrderIsAFunctionOfSeedAndEpoch) {
  const Dataset d = MakeDataset(100);
  DataIterOptions o = Options();
  o.seed = 42;
  auto a = *DataIter::Create(&d, o);
  auto b = *DataIter::Create(&d, o);
  ASSERT_TRUE(a->Reset(3).ok());
  ASSERT_TRUE(b->Reset(2).ok());
  ASSERT_TRUE(b->Reset(3).ok());
  EXPECT_EQ(a->order(), b->order()) << "same seed and epoch";
  EXPECT_EQ(a->order(), ShuffleOrder(100, 42, 3));
  const std::vector<int64_t> e3 = a->order();
  ASSERT_TRUE(a->Reset(4).ok());
  EXPECT_NE(a->order(), e3) << "epochs 3 and 4";
  o.seed = 43;
  auto c = *DataIter::Create(&d, o);
  ASSERT_TRUE(c->Reset(3).ok());
  EXPECT_NE(c->order(), e3) << "seeds 42 and 43";
  std::vector<int64_t> identity(100);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(e3, identity);
  std::vector<int64_t> sorted = e3;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, identity);
  // Known values, so that a change of the generator is noticed.
  EXPECT_EQ(ShuffleOrder(5, 0, 0), ShuffleOrder(5, 0, 0));
  EXPECT_EQ(ShuffleOrder(1, 9, 9), (std::vector<int64_t>{0}));
  EXPECT_TRUE(ShuffleOrder(0, 9, 9).empty());
}

TEST_F(DataIterHostTest, ShuffleIsRoughlyUniform) {
  // Where element 0 lands, over 4000 epochs of 8: 500 per position expected.
  std::vector<int> where(8);
  for (int e = 0; e < 4000; ++e) {
    const std::vector<int64_t> order = ShuffleOrder(8, 123, e);
    ++where[std::find(order.begin(), order.end(), 0) - order.begin()];
  }
  for (int p = 0; p < 8; ++p) {
    EXPECT_GT(where[p], 400) << "position " << p;  // ~4.7 sigma.
    EXPECT_LT(where[p], 600) << "position " << p;
  }
}

TEST_F(DataIterHostTest, NoShuffleIsIdentity) {
  const Dataset d = MakeDataset(23);
  DataIterOptions o = Options();
  o.shuffle = false;
  auto it = *DataIter::Create(&d, o);
  std::vector<int64_t> identity(23);
  std::iota(identity.begin(), identity.end(), 0);
  for (int e : {0, 1, 5}) {
    ASSERT_TRUE(it->Reset(e).ok());
    EXPECT_EQ(it->order(), identity) << "epoch " << e;
  }
}

TEST_F(DataIterHostTest, EndOfEpochIsNulloptUntilReset) {
  const Dataset d = MakeDataset(8);
  auto it = *DataIter::Create(&d, Options());
  ASSERT_TRUE(NextOrDie(*it).has_value());
  ASSERT_TRUE(NextOrDie(*it).has_value());
  for (int k = 0; k < 3; ++k) EXPECT_FALSE(NextOrDie(*it).has_value());
  ASSERT_TRUE(it->Reset(1).ok());
  EXPECT_EQ(it->epoch(), 1);
  std::optional<Batch> b = NextOrDie(*it);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->index, 0);
}

TEST_F(DataIterHostTest, ResetToTheFreshEpochPushesNothing) {
  const Dataset d = MakeDataset(40);
  auto it = *DataIter::Create(&d, Options());
  const int64_t pushed = engine_->Stats().pushed;
  ASSERT_TRUE(it->Reset(0).ok());
  EXPECT_EQ(engine_->Stats().pushed, pushed);
  ASSERT_TRUE(NextOrDie(*it).has_value());
  ASSERT_TRUE(it->Reset(0).ok());  // A batch was taken: restarts.
  EXPECT_GT(engine_->Stats().pushed, pushed + 1);
}

TEST_F(DataIterHostTest, BadOptions) {
  const Dataset d = MakeDataset(8);
  auto expect_bad = [&](const Dataset* data, const DataIterOptions& o, const std::string& what) {
    absl::StatusOr<std::unique_ptr<DataIter>> it = DataIter::Create(data, o);
    ASSERT_FALSE(it.ok()) << what;
    EXPECT_EQ(it.status().code(), absl::StatusCode::kInvalidArgument) << it.status();
    EXPECT_THAT(std::string(it.status().message()), HasSubstr(what));
  };
  DataIterOptions o = Options();
  o.batch_size = 0;
  expect_bad(&d, o, "batch_size 0");
  o.batch_size = -3;
  expect_bad(&d, o, "batch_size -3");
  o = Options();
  o.prefetch = -1;
  expect_bad(&d, o, "prefetch -1");
  o.prefetch = kMaxPrefetch + 1;
  expect_bad(&d, o, absl::StrCat("prefetch ", kMaxPrefetch + 1));
  o = Options();
  o.stddev = 0;
  expect_bad(&d, o, "stddev 0");
  o.stddev = -1;
  expect_bad(&d, o, "stddev -1");
  o.stddev = std::numeric_limits<float>::quiet_NaN();
  expect_bad(&d, o, "stddev nan");
  o.stddev = std::numeric_limits<float>::infinity();
  expect_bad(&d, o, "stddev inf");
  o = Options();
  o.mean = std::numeric_limits<float>::infinity();
  expect_bad(&d, o, "mean inf");
  o = Options();
  expect_bad(nullptr, o, "null");
  Dataset empty;
  expect_bad(&empty, o, "empty");
  Dataset broken = MakeDataset(8);
  broken.labels.pop_back();
  expect_bad(&broken, o, "7 labels");
  broken = MakeDataset(8);
  broken.rows = 5;
  expect_bad(&broken, o, "want 160");
  o = Options();
  o.shard_count = 0;
  expect_bad(&d, o, "shard_count 0 must be at least 1");
  o.shard_count = -2;
  expect_bad(&d, o, "shard_count -2");
  o = Options();
  o.shard_index = -1;
  expect_bad(&d, o, "shard_index -1 is not in [0, shard_count 1)");
  o.shard_count = 3;
  o.shard_index = 3;
  expect_bad(&d, o, "shard_index 3 is not in [0, shard_count 3)");
  o = Options();
  o.batch_size = std::numeric_limits<int64_t>::max() / 2 + 1;
  o.shard_count = 2;
  expect_bad(&d, o, "batch_size 4611686018427387904 * shard_count 2) overflows");
  o = Options();
  auto it = *DataIter::Create(&d, o);
  absl::Status s = it->Reset(-1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("epoch -1"));
}

TEST_F(DataIterHostTest, ResetAtBatchLoadsOnlyFromThere) {
  const Dataset d = MakeDataset(40);  // 10 batches of 4.
  DataIterOptions o = Options();
  o.prefetch = 3;
  auto it = *DataIter::Create(&d, o);
  for (int64_t k : {0, 5, 8, 10}) {
    const int64_t pushed = engine_->Stats().pushed;
    ASSERT_TRUE(it->Reset(1, k).ok());
    // One fill per batch loaded ahead; the skipped ones are not loaded.
    EXPECT_EQ(engine_->Stats().pushed - pushed, std::min<int64_t>(3, 10 - k)) << "from " << k;
    std::optional<Batch> b = NextOrDie(*it);
    ASSERT_EQ(b.has_value(), k < 10) << "from " << k;
    if (b) {
      EXPECT_EQ(b->index, k);
    }
  }
  const int64_t pushed = engine_->Stats().pushed;
  ASSERT_TRUE(it->Reset(2, 4).ok());
  ASSERT_TRUE(it->Reset(2, 4).ok());  // Nothing taken yet: does nothing.
  EXPECT_EQ(engine_->Stats().pushed - pushed, 3);
}

TEST_F(DataIterHostTest, ResetAtBadBatchIsAnErrorAndChangesNothing) {
  const Dataset d = MakeDataset(40);  // 10 batches of 4.
  auto it = *DataIter::Create(&d, Options());
  ASSERT_TRUE(it->Reset(2, 3).ok());
  absl::Status s = it->Reset(1, 11);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("first_batch 11 is past the epoch's 10 batches"));
  s = it->Reset(1, -1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("first_batch -1"));
  s = it->Reset(-1, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(it->epoch(), 2);
  std::optional<Batch> b = NextOrDie(*it);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->index, 3);
}

TEST_F(DataIterHostTest, MissingDeviceIsAnError) {
  for (const engine::Context& c : AllContexts()) {
    if (c.is_host()) continue;
    const Dataset d = MakeDataset(8);
    DataIterOptions o = Options();
    o.context = engine::Context::Device(c.platform, 99);
    absl::StatusOr<std::unique_ptr<DataIter>> it = DataIter::Create(&d, o);
    ASSERT_FALSE(it.ok());
    EXPECT_TRUE(absl::IsNotFound(it.status()) || absl::IsUnavailable(it.status()) ||
                absl::IsInvalidArgument(it.status()))
        << it.status();
    return;
  }
  GTEST_SKIP() << "no device platform here";
}

TEST_F(DataIterHostTest, RealFashionMnistTestSplit) {
  if (!std::filesystem::is_directory(kFashionMnistDir))
    GTEST_SKIP() << kFashionMnistDir << " is absent";
  absl::StatusOr<Dataset> d = LoadFashionMnist(kFashionMnistDir, "test");
  ASSERT_TRUE(d.ok()) << d.status();
  DataIterOptions o = Options();
  o.batch_size = 1000;
  o.mean = 0.2860f;
  o.stddev = 0.3530f;
  auto it = *DataIter::Create(&*d, o);
  EXPECT_EQ(it->num_batches(), 10);
  std::vector<int> per_class(10);
  double sum = 0;
  int64_t count = 0;
  while (std::optional<Batch> b = NextOrDie(*it)) {
    const HostBatch h = ToHost(*b);
    for (int32_t l : h.label) ++per_class.at(l);
    for (float x : h.data) sum += x;
    count += static_cast<int64_t>(h.data.size());
  }
  EXPECT_EQ(per_class, std::vector<int>(10, 1000));
  EXPECT_NEAR(sum / count, 0.0, 0.05) << "normalized with the dataset's mean and stddev";
}

}  // namespace
}  // namespace rill::io
