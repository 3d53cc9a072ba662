#ifndef RILL_TRAIN_TRAINER_H_
#define RILL_TRAIN_TRAINER_H_

// Trains the Fashion-MNIST convnet (train/convnet.h) as a bound Rill graph,
// through the engine, on one device or data-parallel over several (MXNet's
// module with a local KVStore):
//
//   * one device: each step copies the batch into the executor's inputs,
//     runs Forward and Backward, and applies Adam to every parameter in
//     place, all pushed to the engine;
//   * N devices: the batch is split in N equal parts; each device has its
//     own executor and copy of the parameters; gradients are pushed to the
//     KVStore, which sums them on the reduce context and runs Adam there
//     (with the gradient scaled by 1/N, so a step equals the single-device
//     step on the whole batch), and the new weights are pulled back.
//
// Nothing waits for the device except a bounded look-behind: after pushing
// step i the trainer waits for step i-1's loss, so the host stays at most
// about one step ahead while data loading (io::DataIter's prefetch) and the
// next step's pushes overlap the running one.
//
//   RILL_ASSIGN_OR_RETURN(auto trainer, Trainer::Create(options));
//   for (int e = 0; e < epochs; ++e) {
//     RILL_ASSIGN_OR_RETURN(EpochResult r, trainer->TrainEpoch(train, e, progress, &stop));
//     RILL_ASSIGN_OR_RETURN(Metrics m, trainer->Evaluate(test));
//   }
//   RILL_RETURN_IF_ERROR(trainer->SaveCheckpoint("model.onnx"));
//
// Thread-compatible.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rill/engine/engine.h"
#include "rill/io/dataset.h"
#include "rill/kvstore/kvstore.h"
#include "rill/tensor/tensor.h"
#include "rill/train/convnet.h"
#include "rill/train/report.h"
#include "rill/train/train_state.h"

namespace rill::train {

struct TrainOptions {
  ConvNetOptions model;
  // The devices the batch is split over (at least one; batch_size must divide
  // evenly). With several, the KVStore reduces on `reduce_context` (default:
  // the first device).
  std::vector<engine::Context> devices = {engine::Context::Host()};
  std::optional<engine::Context> reduce_context;
  int64_t batch_size = 64;
  // Adam.
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  uint64_t seed = 42;  // parameters, shuffling and dropout
  int prefetch = 2;    // batches loaded ahead
  int64_t eval_batch = 500;
  int bulk_size = 15;                // graph::BindOptions::bulk_size
  engine::Engine* engine = nullptr;  // null: engine::Engine::Default()

  // Data-parallel over processes (MPI ranks): with a communicator, each rank
  // trains on its shard of every global batch of `batch_size` (split again
  // over its `devices`), starts from rank 0's parameters and sums the
  // gradients of every rank through a "dist_sync" KVStore, so that a step on
  // N ranks is the step one process takes on the whole batch. Every rank
  // must make the same Trainer calls in the same order.
  std::shared_ptr<Communicator> communicator;
  uint64_t first_bucket_bytes = uint64_t{1} << 20;  // KVStoreOptions
  uint64_t bucket_bytes = uint64_t{25} << 20;
  // Push gradients while the backward pass runs (the default); false waits
  // for the whole backward pass first (to measure what overlap saves).
  bool overlap = true;
  // The mean training loss of every `curve_every` steps goes to
  // EpochResult::steps (0: none).
  int64_t curve_every = 20;
  // Stop after this many steps in all (0: no limit), as if stopped.
  int64_t max_steps = 0;
  // Every `state_every` steps, rank 0 writes the training state (parameters,
  // Adam's state, position) to `state_path`, which Create's `resume` reads
  // back (0: only when SaveState is called).
  int64_t state_every = 0;
  std::string state_path;
  // Continue from this state (ReadTrainState): parameters, Adam's state and
  // step, and the epoch and batch to go on from; it must be of this model
  // and seed (InvalidArgument naming the difference).
  std::optional<TrainState> resume;

  std::string ToString() const;
};

struct Metrics {
  double loss = 0;
  double accuracy = 0;
  int64_t examples = 0;
};

struct EpochResult {
  int epoch = 0;
  Metrics train;  // mean loss and accuracy over the epoch's batches (dropout on)
  int64_t batches = 0;
  double seconds = 0;  // wall time of the epoch, loading included
  double images_per_second = 0;
  bool stopped = false;     // the stop flag or max_steps ended it early
  int64_t first_batch = 0;  // where it started (a resumed epoch starts later)
  // The mean training loss of every curve_every steps (this rank's share).
  std::vector<StepRecord> steps;
  double comm_seconds = 0;  // in collectives (waiting for peers included)
};

// What a progress display gets, at most every `progress_seconds` and once at
// the end of the epoch.
struct Progress {
  int epoch = 0;
  int64_t batch = 0, batches = 0;
  int64_t images = 0;
  double seconds = 0;
  double loss = 0;  // running mean over the epoch so far
  bool done = false;
  int world = 1;            // ranks training together
  double comm_seconds = 0;  // in collectives this epoch, waiting for peers included
};
using ProgressFn = std::function<void(const Progress&)>;

class Trainer {
 public:
  // Checks the options (InvalidArgument naming the bad value), initializes
  // the parameters from `seed` and binds one executor per device.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(TrainOptions options);
  ~Trainer();

  // One pass over `data`, shuffled with (seed, epoch); a last partial batch
  // is dropped. `stop` (may be null; ignored with several ranks, which must
  // stop together: see max_steps) ends the epoch after the current batch;
  // called again for the same epoch, TrainEpoch then goes on from there.
  // `data` is read during the call only: it may be destroyed as soon as
  // TrainEpoch returns. InvalidArgument (before anything is built or
  // pushed) for a negative epoch, images of another size than the model's,
  // more classes than the model has, a negative or NaN progress_seconds,
  // and what io::DataIter::Create refuses (an empty dataset, ...).
  absl::StatusOr<EpochResult> TrainEpoch(const io::Dataset& data, int epoch,
                                         const ProgressFn& progress = nullptr,
                                         const std::atomic<bool>* stop = nullptr,
                                         double progress_seconds = 0.5);

  // Loss and accuracy over `data` on the first device, dropout off.
  absl::StatusOr<Metrics> Evaluate(const io::Dataset& data);

  // The first device's parameters (after the last step's update).
  const absl::flat_hash_map<std::string, Tensor>& params() const;

  // Writes the inference graph (logits) and the weights as an ONNX model.
  absl::Status SaveCheckpoint(const std::string& path) const;

  // Writes the training state to `path` (ReadTrainState reads it back):
  // waits for the last step. `epoch` and `next_batch` say where a resumed
  // run goes on. Rank 0 writes; other ranks return at once.
  absl::Status SaveState(const std::string& path, int epoch, int64_t next_batch) const;
  // Where training stands: the epoch and batch the next TrainEpoch starts
  // from (after Create with `resume`, the saved position), and the steps
  // taken.
  int resume_epoch() const;
  int64_t steps() const;
  // Changes TrainOptions::max_steps (0: no limit).
  void SetMaxSteps(int64_t max_steps);
  int rank() const;
  int world_size() const;

  // KVStore counters (zero with one device).
  kvstore::KVStoreStats kvstore_stats() const;
  const TrainOptions& options() const;

  struct Impl;

 private:
  explicit Trainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill::train

#endif  // RILL_TRAIN_TRAINER_H_
