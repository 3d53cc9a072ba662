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
  bool drop_last = false;
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
                      // the dataset size when that is smaller)
  int64_t index = 0;  // batch number within the epoch
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
// Errors: Create and Reset return InvalidArgument for bad options; Next
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
  // prefetch outside [0, kMaxPrefetch], stddev <= 0, or a non-finite scale,
  // mean or stddev; NotFound / Unavailable for a context that is not here.
  static absl::StatusOr<std::unique_ptr<DataIter>> Create(const Dataset* data,
                                                          DataIterOptions options);

  ~DataIter();
  DataIter(const DataIter&) = delete;
  DataIter& operator=(const DataIter&) = delete;

  // Starts epoch `epoch` (>= 0, InvalidArgument otherwise) from its first
  // batch, with its shuffle order; batches prefetched for the old epoch are
  // dropped. Pushes the fills of the first `prefetch` batches. Resetting to
  // the current epoch before any of its batches was taken does nothing.
  absl::Status Reset(int epoch);

  // The next batch of the epoch, or std::nullopt at its end (every call,
  // until Reset).
  absl::StatusOr<std::optional<Batch>> Next();

  // Batches per epoch: ceil(size / batch_size), or floor with drop_last.
  int64_t num_batches() const { return num_batches_; }
  // Examples the batches of one epoch hold: the dataset size, or
  // num_batches() * batch_size with drop_last.
  int64_t num_examples() const;
  // This epoch's permutation of the dataset (identity without shuffle);
  // batch b holds examples order()[b * batch_size, ...).
  const std::vector<int64_t>& order() const { return *order_; }
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
  int64_t num_batches_ = 0;
  std::array<float, 256> lut_{};  // the normalized value of each pixel byte
  std::vector<Slot> slots_;

  std::shared_ptr<const std::vector<int64_t>> order_;  // shared with pending fills
  int epoch_ = 0;
  bool started_ = false;
  int64_t next_ = 0;    // the batch Next() returns next
  int64_t pushed_ = 0;  // batches of this epoch whose fill is pushed: [0, pushed_)
  uint64_t base_ = 0;   // ring position of this epoch's batch 0
};

}  // namespace rill::io

#endif  // RILL_IO_DATA_ITER_H_
