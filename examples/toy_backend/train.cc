// toy_train: a few batches of Rill's Fashion-MNIST convnet (rill::train)
// on toy:0, and the same batches on the CPU context from the same seed.
// The toy backend registers nothing for ops: it gets them from the op
// layer by what it declares (host-addressable memory, the host library
// plugins), or, run with TOY_HOST_MEMORY=0 TOY_OP_FALLBACK=cpu, from its
// fallback device with copies. Exits 0 when both runs learn (test loss
// falls by a fifth) and agree (mean training loss within 2 %), 1 on any
// failure, 77 (a skip for ctest) without the dataset.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "rill/ops/invoke.h"
#include "rill/rill.h"
#include "rill/train/trainer.h"

namespace {

constexpr int64_t kTrainImages = 640;  // 10 batches of 64 per epoch.
constexpr int64_t kTestImages = 500;

struct Run {
  double loss_before = 0, loss_after = 0, train_loss = 0, accuracy = 0;
};

absl::StatusOr<Run> TrainOn(rill::engine::Context ctx, const rill::io::Dataset& train,
                            const rill::io::Dataset& test) {
  rill::train::TrainOptions o;
  o.devices = {ctx};
  o.batch_size = 64;
  o.eval_batch = 250;
  o.prefetch = 1;
  RILL_ASSIGN_OR_RETURN(auto trainer, rill::train::Trainer::Create(o));
  Run r;
  RILL_ASSIGN_OR_RETURN(rill::train::Metrics before, trainer->Evaluate(test));
  r.loss_before = before.loss;
  for (int epoch = 0; epoch < 2; ++epoch) {
    RILL_ASSIGN_OR_RETURN(rill::train::EpochResult e, trainer->TrainEpoch(train, epoch));
    r.train_loss += e.train.loss / 2;
  }
  RILL_ASSIGN_OR_RETURN(rill::train::Metrics after, trainer->Evaluate(test));
  r.loss_after = after.loss;
  r.accuracy = after.accuracy;
  std::printf("%-6s test loss %.4f -> %.4f, accuracy %.3f, mean train loss %.4f\n",
              ctx.ToString().c_str(), r.loss_before, r.loss_after, r.accuracy, r.train_loss);
  return r;
}

absl::Status Main() {
  RILL_ASSIGN_OR_RETURN(
      rill::io::Dataset train,
      rill::io::LoadFashionMnist(rill::io::kFashionMnistDir, "train", kTrainImages));
  RILL_ASSIGN_OR_RETURN(
      rill::io::Dataset test,
      rill::io::LoadFashionMnist(rill::io::kFashionMnistDir, "test", kTestImages));
  RILL_ASSIGN_OR_RETURN(rill::engine::Context toy, rill::engine::Context::Parse("toy:0"));
  const uint64_t fallbacks_before = rill::ops::FallbackCount();
  RILL_ASSIGN_OR_RETURN(Run on_toy, TrainOn(toy, train, test));
  std::printf("op calls run on a fallback device: %llu\n",
              static_cast<unsigned long long>(rill::ops::FallbackCount() - fallbacks_before));
  RILL_ASSIGN_OR_RETURN(Run on_cpu, TrainOn(rill::engine::Context::Host(), train, test));
  if (!(on_toy.loss_after < 0.8 * on_toy.loss_before)) {
    return absl::InternalError("the convnet did not learn on toy:0");
  }
  if (!(std::abs(on_toy.train_loss - on_cpu.train_loss) <= 0.02 * on_cpu.train_loss)) {
    return absl::InternalError("toy:0 and cpu disagree on the mean training loss");
  }
  return absl::OkStatus();
}

}  // namespace

int main() {
  if (!std::filesystem::exists(rill::io::kFashionMnistDir)) {
    std::printf("skipped: no Fashion-MNIST at %s\n", rill::io::kFashionMnistDir);
    return 77;
  }
  absl::Status s = Main();
  rill::engine::Engine::ShutdownDefault();
  if (!s.ok()) {
    std::fprintf(stderr, "toy_train: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::printf("toy_train: toy:0 learns and matches the CPU context\n");
  return 0;
}
