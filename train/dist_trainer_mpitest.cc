// Data-parallel training over MPI ranks, run by mpiexec with 2 and 3 ranks
// (train/CMakeLists.txt): after every step the parameters are bitwise the
// same on every rank, and after K steps N ranks with batch B/N each hold
// the parameters one process reaches with batch B (which every rank also
// trains here, alone, as the reference).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "rill/dist/collective_ops.h"
#include "rill/io/dataset.h"
#include "rill/testing/status_testing.h"
#include "rill/train/trainer.h"

namespace rill::train {
namespace {

using testing::IsOk;
using testing::Must;

constexpr char kDir[] = "/usr/share/datasets/fashion-mnist";

ConvNetOptions Small() {
  ConvNetOptions m;
  m.conv1 = 8;
  m.conv2 = 16;
  m.hidden = 64;
  m.dropout = 0;  // Masks differ between device layouts; the sums must not.
  return m;
}

TEST(DistTrainer, RanksStayIdenticalAndMatchOneProcessWithTheWholeBatch) {
  if (!std::filesystem::exists(kDir)) GTEST_SKIP() << kDir << " is absent";
  std::shared_ptr<Communicator> world = Must(dist::World());
  const io::Dataset data = Must(io::LoadFashionMnist(kDir, "train", 960));
  constexpr int kSteps = 6;
  constexpr int64_t kBatch = 48;  // Divides over 1, 2 and 3 ranks.

  TrainOptions o;
  o.model = Small();
  o.batch_size = kBatch;
  o.communicator = world;
  o.first_bucket_bytes = 4096;  // Several buckets for this small net.
  o.bucket_bytes = 16384;
  std::unique_ptr<Trainer> dist = Must(Trainer::Create(o));
  TrainOptions alone = o;
  alone.communicator = nullptr;
  std::unique_ptr<Trainer> single = Must(Trainer::Create(alone));

  for (int step = 1; step <= kSteps; ++step) {
    dist->SetMaxSteps(step);
    single->SetMaxSteps(step);
    ASSERT_TRUE(IsOk(dist->TrainEpoch(data, 0).status()));
    ASSERT_TRUE(IsOk(single->TrainEpoch(data, 0).status()));
    ASSERT_EQ(dist->steps(), step);
    // In one order on every rank (a hash map's differs between processes:
    // the order check caught exactly that).
    std::vector<std::string> names;
    for (const auto& [name, w] : dist->params()) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const Tensor& w = dist->params().at(name);
      // Every rank's copy, gathered: bitwise equal to rank 0's.
      Tensor all = Must(Tensor::Empty(Shape{w.NumElements() * world->size()}, DType::kF32,
                                      engine::Context::Host()));
      Tensor flat = Must(w.Reshape(Shape{w.NumElements()}));
      ASSERT_TRUE(IsOk(dist::AllGather(*world, flat, all, {.name = name})));
      std::vector<float> got = Must(all.ToHost<float>());
      const int64_t n = w.NumElements();
      for (int r = 1; r < world->size(); ++r) {
        ASSERT_EQ(0, std::memcmp(got.data(), got.data() + r * n, n * sizeof(float)))
            << name << " differs between rank 0 and rank " << r << " after step " << step;
      }
      // Against the one-process run with the whole batch.
      std::vector<float> ref = Must(single->params().at(name).ToHost<float>());
      double worst = 0;
      for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(double{ref[i]} - got[i]));
      EXPECT_LT(worst, 2e-4) << name << " after step " << step;
    }
  }
}

}  // namespace
}  // namespace rill::train
