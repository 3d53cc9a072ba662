#ifndef RILL_IO_DATA_ITER_H_
#define RILL_IO_DATA_ITER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/engine/engine.h"
#include "rill/io/dataset.h"
#include "rill/tensor/tensor.h"

namespace rill::io {

// The most batches DataIterOptions::prefetch may load ahead.
inline constexpr int kMaxPrefetch = 256;

struct DataIterOptions {
  int64_t batch_size = 64;
  bool shuffle = true;
  // The order of epoch e is a function of (seed, e) only: ShuffleOrder.
  uint64_t seed = 0;
  // false: the last partial batch is delivered (smaller); true: dropped.
  // With shards this applies to the last partial global batch (below).
  bool drop_last = false;
  // Data-parallel sharding: shard `shard_index` of `shard_count` (e.g. MPI
  // rank of size) takes its part of each global batch. Every shard shuffles
  // the same way (same seed and epoch), and the order is cut into global
  // batches of G = batch_size * shard_count examples: shard r's batch i holds
  // order()[i * G + r * batch_size, i * G + (r + 1) * batch_size). So
  // batch_size is the per-shard batch, and shard 0..N-1's batches i, joined
  // in order, are batch i of one shard with batch_size * N. A last partial
  // global batch of m examples (drop_last false) is split as evenly as
  // possible in shard order (the first m % N shards take one more) when
  // m >= shard_count, and dropped when m < shard_count, so that no shard
  // gets an empty batch. Requires shard_count >= 1, shard_index in
  // [0, shard_count). With shard_count 1 nothing changes.
  int shard_count = 1;
  int shard_index = 0;
  // Normalization: x = (pixel * scale - mean) / stddev, in float.
  float scale = 1.0f / 255.0f;
  float mean = 0.0f, stddev = 1.0f;
  // Batches loaded ahead, in [0, kMaxPrefetch] (0: loaded when asked for).
  int prefetch = 2;
  // Where batches are delivered (cpu, host:N, opencl:0, cuda:0).
  engine::Context context = engine::Context::Host();
  // null: engine::Engine::Default(). Must outlive the iterator.
  engine::Engine* engine = nullptr;
};

// One batch. Its tensors are views of the iterator's ring slot (see
// DataIter for how long they hold this batch).
struct Batch {
  Tensor data;        // float32 [n, 1, rows, cols] on options.context
  Tensor label;       // int32 [n] on options.context
  int64_t size = 0;   // n: batch_size, except maybe the last batch (and
                      // the dataset size when that is smaller); with
                      // shards, sizes of the last batch differ by at most 1
  int64_t index = 0;  // batch number within the epoch (the same on every shard)
};

// The permutation of [0, n) for `epoch` under `seed`: Fisher-Yates from the
// back, where step i (i = n-1 .. 1) swaps i with j = floor(x * (i + 1) / 2^64),
// x being the low 64 bits of Philox4x32-10 at counter {i, i >> 32, epoch, 0}
// under key {seed, seed >> 32}. (The bias of that mapping is below
// (i + 1) / 2^64.) Pure; thread-safe.
std::vector<int64_t> ShuffleOrder(int64_t n, uint64_t seed, int epoch);

// Iterates over a Dataset in batches, epoch by epoch: shuffles, normalizes
// the images to float32 [n, 1, rows, cols], turns labels into int32 [n], and
// delivers both on options.context, loading `prefetch` batches ahead through
// the engine.
//
// How batches are made: the iterator keeps a ring of 2 * prefetch + 1 slots
// (num_slots()); each has staging tensors on the cpu context and, for a
// device context, tensors there. Filling a slot is one engine function on the
// cpu context that writes the staging tensors (gathers the epoch's examples,
// normalizes, converts labels), then a Tensor::CopyFrom to the device. Next()
// pushes the fill of batch i + prefetch and returns batch i's tensors without
// waiting: whoever reads them (ops, ToHost) is ordered after the fill by the
// engine, and the fill that later reuses the slot is ordered after every
// function pushed before it that reads the slot.
//
// Lifetime of a batch: a Batch returned by Next() holds that batch for every
// function pushed before the (prefetch + 1)-th Next() call after it (that
// call pushes the fill that reuses its slot; Reset counts as no call). Push
// the ops that read a batch before then, or copy it (CopyTo) to keep it
// longer. Reading it afterwards (even ToHost) sees a later batch.
//
// Errors: Create and Reset return InvalidArgument for bad options (Reset,
// OutOfRange for a first batch past the epoch's end); Next
// returns an engine push's error. A failure inside a fill poisons that
// batch's tensors (reading them returns the error), as for any engine
// function.
//
// The dataset and the engine must outlive the iterator; the destructor waits
// for the fills still pending (they read the dataset).
//
//   DataIterOptions opt;  opt.batch_size = 128;  opt.context = ctx;
//   RILL_ASSIGN_OR_RETURN(auto it, DataIter::Create(&train, opt));
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     RILL_RETURN_IF_ERROR(it->Reset(epoch));
//     while (true) {
//       RILL_ASSIGN_OR_RETURN(std::optional<Batch> b, it->Next());
//       if (!b) break;
//       ... ops on b->data, b->label ...
//     }
//   }
//
// Thread-compatible: one thread at a time calls Reset/Next.
class DataIter {
 public:
  // Starts epoch 0 (as Reset(0)). `data` is borrowed: it must outlive the
  // iterator and stay unchanged. InvalidArgument for a null or empty
  // dataset, a dataset whose vectors do not match its sizes, batch_size <= 0,
  // prefetch outside [0, kMaxPrefetch], stddev <= 0, a non-finite scale,
  // mean or stddev, shard_count < 1, shard_index outside [0, shard_count), or
  // batch_size * shard_count overflowing; NotFound / Unavailable for a context that is not here.
  static absl::StatusOr<std::unique_ptr<DataIter>> Create(const Dataset* data,
                                                          DataIterOptions options);

  ~DataIter();
  DataIter(const DataIter&) = delete;
  DataIter& operator=(const DataIter&) = delete;

  // Starts epoch `epoch` (>= 0, InvalidArgument otherwise) from its first
  // batch, with its shuffle order; batches prefetched for the old epoch are
  // dropped. Pushes the fills of the first `prefetch` batches. Resetting to
  // the current epoch before any of its batches was taken does nothing.
  absl::Status Reset(int epoch) { return Reset(epoch, 0); }

  // Starts epoch `epoch` at batch `first_batch` (to resume a run mid-epoch):
  // the next Next() returns batch first_batch, exactly as Reset(epoch)
  // followed by first_batch Next() calls would, but the batches before it
  // are neither loaded nor pushed. first_batch == num_batches() starts the
  // epoch at its end. InvalidArgument for epoch < 0 or first_batch < 0,
  // OutOfRange for first_batch > num_batches(); the iterator is unchanged on
  // error. Resetting to the current epoch and first batch before any batch
  // was taken does nothing.
  absl::Status Reset(int epoch, int64_t first_batch);

  // The next batch of the epoch, or std::nullopt at its end (every call,
  // until Reset).
  absl::StatusOr<std::optional<Batch>> Next();

  // Batches per epoch (global batches, the same on every shard):
  // ceil(size / batch_size), or floor with drop_last; with shards, of
  // G = batch_size * shard_count: floor(size / G), plus one when drop_last is
  // false and size % G >= shard_count.
  int64_t num_batches() const { return num_batches_; }
  // Examples this shard's batches hold in one epoch: the dataset size, or
  // num_batches() * batch_size with drop_last (without shards).
  int64_t num_examples() const;
  // This epoch's permutation of the dataset (identity without shuffle), the
  // same on every shard; batch b of this shard holds examples
  // order()[BatchBegin(b), BatchBegin(b) + size) (b * batch_size without
  // shards).
  const std::vector<int64_t>& order() const { return *order_; }
  // Where this shard's batch b (in [0, num_batches())) starts in order().
  int64_t BatchBegin(int64_t b) const;
  int epoch() const { return epoch_; }
  int num_slots() const { return static_cast<int>(slots_.size()); }
  const DataIterOptions& options() const { return options_; }

 private:
  // One ring slot. For the cpu context, data/label are host_data/host_label.
  struct Slot {
    Tensor host_data,
        host_label;      // float32 [rows_per_slot, 1, rows, cols], int32 [rows_per_slot] on cpu
    Tensor data, label;  // the same on options.context
  };

  DataIter(const Dataset* data, DataIterOptions options, engine::Engine* engine);
  absl::Status MakeSlots();
  int64_t BatchSize(int64_t batch) const;
  Slot& SlotOf(int64_t batch) {
    return slots_[(base_ + static_cast<uint64_t>(batch)) % slots_.size()];
  }
  absl::Status PushFill(int64_t batch);

  const Dataset* const data_;
  const DataIterOptions options_;
  engine::Engine* const engine_;
  const int64_t pixels_;         // rows * cols
  const int64_t rows_per_slot_;  // min(batch_size, size)
  const int64_t global_batch_;   // batch_size * shard_count (checked in Create)
  int64_t num_full_ = 0;         // full global batches
  int64_t num_batches_ = 0;
  std::array<float, 256> lut_{};  // the normalized value of each pixel byte
  std::vector<Slot> slots_;

  std::shared_ptr<const std::vector<int64_t>> order_;  // shared with pending fills
  int epoch_ = 0;
  bool started_ = false;
  int64_t first_ = 0;   // the batch this epoch started at (Reset)
  int64_t next_ = 0;    // the batch Next() returns next
  int64_t pushed_ = 0;  // batches of this epoch whose fill is pushed: [first_, pushed_)
  uint64_t base_ = 0;   // ring position of this epoch's batch 0, in [0, num_slots())
};

}  // namespace rill::io

#endif  // RILL_IO_DATA_ITER_H_
