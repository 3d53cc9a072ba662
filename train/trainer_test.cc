// The trainer end to end on the real Fashion-MNIST files: a short run learns
// on every device, data-parallel training equals single-device training, and
// checkpoints round-trip through ONNX and reject what does not match.

#include "rill/train/trainer.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/graph/onnx/onnx_export.h"
#include "rill/io/dataset.h"
#include "rill/ops/testing/op_testing.h"
#include "rill/train/checkpoint.h"

namespace rill::train {
namespace {

using ::rill::ops::testing::AllContexts;
using ::rill::ops::testing::ContextName;
using ::testing::HasSubstr;

constexpr char kDir[] = "/usr/share/datasets/fashion-mnist";

const io::Dataset* Data(const char* split, int64_t limit) {
  static auto* cache = new std::map<std::pair<std::string, int64_t>, io::Dataset>();
  auto key = std::make_pair(std::string(split), limit);
  auto it = cache->find(key);
  if (it == cache->end()) {
    absl::StatusOr<io::Dataset> d = io::LoadFashionMnist(kDir, split, limit);
    if (!d.ok()) return nullptr;
    it = cache->emplace(key, *std::move(d)).first;
  }
  return &it->second;
}

#define NEED_DATA() \
  if (!std::filesystem::exists(kDir)) GTEST_SKIP() << kDir << " is absent (dataset-fashion-mnist)"

// A narrow copy of the convnet, quick on every device.
ConvNetOptions Small(double dropout) {
  ConvNetOptions m;
  m.conv1 = 8;
  m.conv2 = 16;
  m.hidden = 64;
  m.dropout = dropout;
  return m;
}

class TrainerTest : public ::testing::TestWithParam<engine::Context> {
 protected:
  // The small net on `ctx`, batch 50, dropout 0.4.
  TrainOptions SmallOn(engine::Context ctx) {
    TrainOptions o;
    o.model = Small(0.4);
    o.devices = {ctx};
    o.batch_size = 50;
    o.engine = engine_.get();
    return o;
  }

  std::unique_ptr<engine::Engine> engine_ = ops::testing::MakeEngine();
  std::string tmp_ = ::testing::TempDir();
};

// 2,000 images, 2 epochs: the loss falls and test accuracy passes 0.6.
TEST_P(TrainerTest, ShortRunLearns) {
  NEED_DATA();
  TrainOptions o = SmallOn(GetParam());
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status();
  const io::Dataset* train = Data("train", 2000);
  const io::Dataset* test = Data("test", 1000);
  ASSERT_NE(train, nullptr);
  ASSERT_NE(test, nullptr);
  auto before = (*t)->Evaluate(*test);
  ASSERT_TRUE(before.ok()) << before.status();
  std::vector<double> losses;
  for (int e = 0; e < 2; ++e) {
    auto r = (*t)->TrainEpoch(*train, e);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->batches, 40);
    EXPECT_EQ(r->train.examples, 2000);
    losses.push_back(r->train.loss);
  }
  auto after = (*t)->Evaluate(*test);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->examples, 1000);
  EXPECT_LT(losses[1], losses[0]);
  EXPECT_LT(after->loss, before->loss);
  EXPECT_GT(after->accuracy, 0.6) << "before training: " << before->accuracy;
}

// Checkpoint: the reloaded ONNX model scores exactly what the trainer does.
TEST_P(TrainerTest, CheckpointRoundTrip) {
  NEED_DATA();
  TrainOptions o = SmallOn(GetParam());
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status();
  const io::Dataset* train = Data("train", 500);
  const io::Dataset* test = Data("test", 300);
  ASSERT_TRUE((*t)->TrainEpoch(*train, 0).ok());
  auto m = (*t)->Evaluate(*test);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string path = tmp_ + "/ckpt_" + ContextName({GetParam(), 0}) + ".onnx";
  ASSERT_TRUE((*t)->SaveCheckpoint(path).ok());
  auto r = EvaluateCheckpoint(path, o.model, *test, GetParam(), engine_.get(), 128);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->examples, 300);
  EXPECT_NEAR(r->accuracy, m->accuracy, 1e-9);
  EXPECT_NEAR(r->loss, m->loss, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(AllContexts, TrainerTest, ::testing::ValuesIn(AllContexts()), ContextName);

std::vector<float> Flat(const Trainer& t) {
  std::vector<float> out;
  for (const char* name :
       {"conv1_w", "conv1_b", "conv2_w", "conv2_b", "fc1_w", "fc1_b", "fc2_w", "fc2_b"}) {
    auto v = t.params().at(name).ToHost<float>();
    EXPECT_TRUE(v.ok()) << v.status();
    if (v.ok()) out.insert(out.end(), v->begin(), v->end());
  }
  return out;
}

// Data-parallel over two devices equals one device on the whole batch (fixed
// seed, no dropout), with the reduction on either device.
TEST(DataParallel, EqualsSingleDevice) {
  NEED_DATA();
  auto engine = ops::testing::MakeEngine();
  const io::Dataset* train = Data("train", 640);
  ASSERT_NE(train, nullptr);
  std::vector<std::vector<engine::Context>> layouts;
  auto host0 = engine::Context::Device("host", 0), host1 = engine::Context::Device("host", 1),
       opencl0 = engine::Context::Device("opencl", 0);
  ASSERT_TRUE(host0.ok());
  layouts.push_back({*host0});
  if (host1.ok() && ExecutorFor(*host1).ok()) layouts.push_back({*host0, *host1});
  if (opencl0.ok() && ExecutorFor(*opencl0).ok()) layouts.push_back({*host0, *opencl0});
  layouts.push_back({engine::Context::Host(), *host0});
  std::vector<float> want;
  for (const auto& devices : layouts) {
    for (size_t reduce = 0; reduce < (devices.size() > 1 ? devices.size() : 1); ++reduce) {
      TrainOptions o;
      o.model = Small(0);
      o.devices = devices;
      o.reduce_context = devices[reduce];
      o.batch_size = 64;
      o.engine = engine.get();
      auto t = Trainer::Create(o);
      ASSERT_TRUE(t.ok()) << t.status();
      auto r = (*t)->TrainEpoch(*train, 0);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->batches, 10);
      std::vector<float> got = Flat(**t);
      std::string what;
      for (const auto& d : devices) what += d.ToString() + " ";
      what += "reduce on " + devices[reduce].ToString();
      if (want.empty()) {
        want = got;
        continue;
      }
      ASSERT_EQ(got.size(), want.size());
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::abs(double{got[i]} - want[i]));
      EXPECT_LT(worst, 2e-4) << what;
      if (devices.size() > 1) {
        const kvstore::KVStoreStats s = (*t)->kvstore_stats();
        EXPECT_EQ(s.pushes, 10 * 8) << what;
        EXPECT_EQ(s.pulls, 10 * 8) << what;
      }
    }
  }
}

TEST(Trainer, BadOptions) {
  auto engine = ops::testing::MakeEngine();
  TrainOptions o;
  o.engine = engine.get();
  auto host0 = *engine::Context::Device("host", 0);
  o.devices = {host0, engine::Context::Host()};
  o.batch_size = 63;
  auto t = Trainer::Create(o);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("batch size 63"));
  o.batch_size = 64;
  o.devices = {host0, host0};
  t = Trainer::Create(o);
  EXPECT_THAT(t.status().message(), HasSubstr("host:0 is listed twice"));
  o.devices = {host0};
  o.lr = -1;
  t = Trainer::Create(o);
  EXPECT_THAT(t.status().message(), HasSubstr("lr -1"));
  o.lr = 1e-3;
  o.model.dropout = 1;
  t = Trainer::Create(o);
  EXPECT_THAT(t.status().message(), HasSubstr("dropout 1"));
}

// `n` synthetic 28x28 examples.
io::Dataset Synthetic(int64_t n, uint8_t salt) {
  io::Dataset d;
  d.size = n;
  d.rows = d.cols = 28;
  d.images.resize(static_cast<size_t>(n * 28 * 28));
  for (size_t i = 0; i < d.images.size(); ++i) d.images[i] = static_cast<uint8_t>(i * 31 + salt);
  for (int64_t i = 0; i < n; ++i) d.labels.push_back(static_cast<uint8_t>(i % 10));
  return d;
}

// Regression (issue 39, class 7): the trainer kept an iterator over the
// dataset across calls, so a dataset destroyed before the trainer (or a
// new one at the same address) was read after it was freed, also after
// TrainEpoch refused its arguments.
TEST(Trainer, TheDatasetMayGoBeforeTheTrainer) {
  auto engine = ops::testing::MakeEngine();
  TrainOptions o;
  o.model = Small(0);
  o.batch_size = 32;
  o.engine = engine.get();
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status();
  std::optional<io::Dataset> slot(Synthetic(128, 1));
  // Refused before an iterator is built.
  auto r = (*t)->TrainEpoch(*slot, -1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("epoch -1 is negative"));
  io::Dataset wrong = Synthetic(4, 0);
  wrong.rows = 14;
  wrong.images.resize(4 * 14 * 28);
  r = (*t)->TrainEpoch(wrong, 0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("images are 14x28, the model's 28x28"));
  r = (*t)->TrainEpoch(*slot, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->batches, 4);
  // Another dataset at the same address: it is the one read.
  slot.reset();
  slot.emplace(Synthetic(64, 2));
  r = (*t)->TrainEpoch(*slot, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->batches, 2);
  EXPECT_EQ(r->train.examples, 64);
  slot.reset();  // Before the trainer (ASan checks the rest).
  t->reset();
}

TEST(Checkpoint, RejectsMismatchedAndCorruptFiles) {
  NEED_DATA();
  auto engine = ops::testing::MakeEngine();
  TrainOptions o;
  o.model = Small(0);
  o.engine = engine.get();
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status();
  const std::string path = ::testing::TempDir() + "/ckpt_small.onnx";
  ASSERT_TRUE((*t)->SaveCheckpoint(path).ok());
  const io::Dataset* test = Data("test", 100);

  ConvNetOptions other = o.model;
  other.conv2 = 32;
  auto r = EvaluateCheckpoint(path, other, *test, engine::Context::Host(), engine.get());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("conv2_w"));
  EXPECT_THAT(r.status().message(), HasSubstr(path));

  // Truncated: the importer's error names the file.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string cut = ::testing::TempDir() + "/ckpt_cut.onnx";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  r = EvaluateCheckpoint(cut, o.model, *test, engine::Context::Host(), engine.get());
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr(cut));

  r = EvaluateCheckpoint(::testing::TempDir() + "/no_such.onnx", o.model, *test,
                         engine::Context::Host(), engine.get());
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("no_such.onnx"));
}

// Regression (issue 39, class 5): a checkpoint with the model's weight
// names and shapes but another graph loaded, and ran that graph.
TEST(Checkpoint, RefusesAnotherGraphWithTheModelsWeights) {
  auto engine = ops::testing::MakeEngine();
  TrainOptions o;
  o.model = Small(0);
  o.engine = engine.get();
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status();
  // The model's graph on tanh(x): the same weights, another function.
  graph::Graph g;
  const graph::Entry x = g.Input("x");
  const graph::Entry squashed = g.Op1("tanh", {x}, {}, "squash");
  std::vector<graph::Entry> logits =
      g.Compose(ConvNetInferenceGraph(o.model), {{"x", squashed}}, "");
  ASSERT_EQ(logits.size(), 1u);
  g.AddOutput(logits[0], "logits");
  ASSERT_TRUE(g.status().ok()) << g.status();
  graph::OnnxExportOptions eo;
  eo.input_shapes = {{"x", Shape{1, 1, 28, 28}}};
  eo.dynamic_batch = true;
  const std::string path = ::testing::TempDir() + "/ckpt_other_graph.onnx";
  ASSERT_TRUE(graph::ExportOnnxFile(g, (*t)->params(), path, eo).ok());
  auto m = LoadCheckpoint(path, o.model, engine::Context::Host(), engine.get());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr(path));
  EXPECT_THAT(m.status().message(),
              HasSubstr("its graph differs at operation #0: it has tanh('x')"));

  // The trainer's own checkpoint loads.
  const std::string good = ::testing::TempDir() + "/ckpt_same_graph.onnx";
  ASSERT_TRUE((*t)->SaveCheckpoint(good).ok());
  m = LoadCheckpoint(good, o.model, engine::Context::Host(), engine.get());
  EXPECT_TRUE(m.ok()) << m.status();
}

TEST(Checkpoint, OnlyRegularFilesAreRead) {
  auto engine = ops::testing::MakeEngine();
  const std::string fifo = ::testing::TempDir() + "/ckpt_fifo.onnx";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto m = LoadCheckpoint(fifo, Small(0), engine::Context::Host(), engine.get());
  std::remove(fifo.c_str());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr("not a regular file"));
  m = LoadCheckpoint(::testing::TempDir(), Small(0), engine::Context::Host(), engine.get());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr("is a directory"));
}

}  // namespace
}  // namespace rill::train
