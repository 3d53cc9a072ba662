#include "rill/io/data_iter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rill/base/checked_math.h"
#include "rill/base/status_macros.h"
#include "rill/plugins/rng/philox/philox.h"

namespace rill::io {
namespace {

absl::Status CheckDataset(const Dataset* data) {
  if (data == nullptr) return absl::InvalidArgumentError("DataIter: the dataset is null");
  if (data->size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DataIter: the dataset is empty (size ", data->size, ")"));
  }
  const CheckedInt<int64_t> checked_total =
      CheckedInt<int64_t>(data->rows) * data->cols * data->size;
  if (data->rows < 0 || data->cols < 0 || !checked_total.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("DataIter: bad dataset shape ", data->size,
                                                   " x ", data->rows, " x ", data->cols));
  }
  const int64_t total = checked_total.value();
  if (data->images.size() != static_cast<uint64_t>(total) ||
      data->labels.size() != static_cast<uint64_t>(data->size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("DataIter: the dataset holds ", data->images.size(), " image bytes and ",
                     data->labels.size(), " labels; its sizes (", data->size, " x ", data->rows,
                     " x ", data->cols, ") want ", total, " and ", data->size));
  }
  return absl::OkStatus();
}

absl::Status CheckOptions(const DataIterOptions& o) {
  auto bad = [](std::string what) { return absl::InvalidArgumentError("DataIter: " + what); };
  if (o.batch_size <= 0) return bad(absl::StrCat("batch_size ", o.batch_size, " must be positive"));
  if (o.prefetch < 0 || o.prefetch > kMaxPrefetch) {
    return bad(absl::StrCat("prefetch ", o.prefetch, " is not in [0, ", kMaxPrefetch, "]"));
  }
  if (!(o.stddev > 0) || !std::isfinite(o.stddev)) {
    return bad(absl::StrCat("stddev ", o.stddev, " must be positive and finite"));
  }
  if (!std::isfinite(o.scale) || !std::isfinite(o.mean)) {
    return bad(absl::StrCat("scale ", o.scale, " and mean ", o.mean, " must be finite"));
  }
  if (o.shard_count < 1) {
    return bad(absl::StrCat("shard_count ", o.shard_count, " must be at least 1"));
  }
  if (o.shard_index < 0 || o.shard_index >= o.shard_count) {
    return bad(absl::StrCat("shard_index ", o.shard_index, " is not in [0, shard_count ",
                            o.shard_count, ")"));
  }
  if (!(CheckedInt<int64_t>(o.batch_size) * o.shard_count).ok()) {
    return OverflowError(absl::StrCat("DataIter: the global batch (batch_size ", o.batch_size,
                                      " * shard_count ", o.shard_count, ")"));
  }
  return absl::OkStatus();
}

// The host address of a cpu-context tensor (null for zero bytes).
absl::StatusOr<char*> HostAddress(const Tensor& t) {
  RILL_ASSIGN_OR_RETURN(StorageBlock block, t.Storage());
  if (t.ByteSize() == 0) return nullptr;
  if (block.host == nullptr) {
    return absl::InternalError(
        absl::StrCat("DataIter: staging tensor ", t.ToString(), " has no host address"));
  }
  return static_cast<char*>(block.host) + t.byte_offset();
}

// What one fill function needs; it holds no pointer into the iterator.
struct FillJob {
  const uint8_t* images;
  const uint8_t* labels;
  int64_t pixels;
  std::shared_ptr<const std::vector<int64_t>> order;
  int64_t begin, n;
  float* data;
  int32_t* label;
  std::array<float, 256> lut;

  absl::Status operator()(engine::RunContext) const {
    for (int64_t k = 0; k < n; ++k) {
      const int64_t example = (*order)[begin + k];
      const uint8_t* src = images + example * pixels;
      float* dst = data + k * pixels;
      for (int64_t p = 0; p < pixels; ++p) dst[p] = lut[src[p]];
      label[k] = static_cast<int32_t>(labels[example]);
    }
    return absl::OkStatus();
  }
};

// Rows [0, n) of `t` (t itself when that is all of it).
absl::StatusOr<Tensor> Head(const Tensor& t, int64_t n) {
  if (t.shape().dim(0) == n) return t;
  return t.Slice(0, n);
}

}  // namespace

std::vector<int64_t> ShuffleOrder(int64_t n, uint64_t seed, int epoch) {
  std::vector<int64_t> order(n > 0 ? static_cast<size_t>(n) : 0);
  std::iota(order.begin(), order.end(), int64_t{0});
  const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t ui = static_cast<uint64_t>(i);
    const philox::Block r = philox::Philox4x32_10(
        philox::Block{{static_cast<uint32_t>(ui), static_cast<uint32_t>(ui >> 32),
                       static_cast<uint32_t>(epoch), 0}},
        k0, k1);
    const uint64_t x = uint64_t{r.v[0]} | (uint64_t{r.v[1]} << 32);
    const uint64_t j = static_cast<uint64_t>((static_cast<unsigned __int128>(x) * (ui + 1)) >> 64);
    std::swap(order[i], order[j]);
  }
  return order;
}

DataIter::DataIter(const Dataset* data, DataIterOptions options, engine::Engine* engine)
    : data_(data),
      options_(std::move(options)),
      engine_(engine),
      pixels_(data->rows * data->cols),
      rows_per_slot_(std::min(options_.batch_size, data->size)),
      global_batch_(options_.batch_size * options_.shard_count) {
  num_full_ = data->size / global_batch_;
  const int64_t rest = data->size % global_batch_;
  num_batches_ = num_full_ + (!options_.drop_last && rest >= options_.shard_count ? 1 : 0);
  for (int v = 0; v < 256; ++v) {
    // Two statements, as the formula reads: no fused multiply-add.
    const float scaled = static_cast<float>(v) * options_.scale;
    lut_[v] = (scaled - options_.mean) / options_.stddev;
  }
}

absl::StatusOr<std::unique_ptr<DataIter>> DataIter::Create(const Dataset* data,
                                                           DataIterOptions options) {
  RILL_RETURN_IF_ERROR(CheckDataset(data));
  RILL_RETURN_IF_ERROR(CheckOptions(options));
  RILL_RETURN_IF_ERROR(ExecutorFor(options.context).status());
  engine::Engine* engine = options.engine != nullptr ? options.engine : &engine::Engine::Default();
  std::unique_ptr<DataIter> it(new DataIter(data, std::move(options), engine));
  RILL_RETURN_IF_ERROR(it->MakeSlots());
  RILL_RETURN_IF_ERROR(it->Reset(0));
  return it;
}

absl::Status DataIter::MakeSlots() {
  const engine::Context cpu = engine::Context::Host();
  const Shape data_shape{rows_per_slot_, 1, data_->rows, data_->cols};
  const Shape label_shape{rows_per_slot_};
  slots_.resize(2 * static_cast<size_t>(options_.prefetch) + 1);
  for (Slot& s : slots_) {
    RILL_ASSIGN_OR_RETURN(s.host_data, Tensor::Empty(data_shape, DType::kF32, cpu, engine_));
    RILL_ASSIGN_OR_RETURN(s.host_label, Tensor::Empty(label_shape, DType::kI32, cpu, engine_));
    if (options_.context.is_host()) {
      s.data = s.host_data;
      s.label = s.host_label;
    } else {
      RILL_ASSIGN_OR_RETURN(s.data,
                            Tensor::Empty(data_shape, DType::kF32, options_.context, engine_));
      RILL_ASSIGN_OR_RETURN(s.label,
                            Tensor::Empty(label_shape, DType::kI32, options_.context, engine_));
    }
  }
  return absl::OkStatus();
}

DataIter::~DataIter() {
  // Pending fills read the dataset, which may go once we return.
  for (const Slot& s : slots_) {
    if (s.host_data.defined()) engine_->WaitForVar(s.host_data.var()).IgnoreError();
  }
}

int64_t DataIter::num_examples() const {
  if (num_batches_ == 0) return 0;
  return (num_batches_ - 1) * options_.batch_size + BatchSize(num_batches_ - 1);
}

// Batches [0, num_full_) are full; batch num_full_ (when it exists) shares
// the remaining `rest` examples: shard r takes rest / N, plus one for the
// first rest % N shards, in shard order.
int64_t DataIter::BatchBegin(int64_t b) const {
  const int64_t r = options_.shard_index;
  if (b < num_full_) return b * global_batch_ + r * options_.batch_size;
  const int64_t rest = data_->size - num_full_ * global_batch_, n = options_.shard_count;
  return num_full_ * global_batch_ + r * (rest / n) + std::min<int64_t>(r, rest % n);
}

int64_t DataIter::BatchSize(int64_t batch) const {
  if (batch < num_full_) return options_.batch_size;
  const int64_t rest = data_->size - num_full_ * global_batch_, n = options_.shard_count;
  return rest / n + (options_.shard_index < rest % n ? 1 : 0);
}

absl::Status DataIter::Reset(int epoch, int64_t first_batch) {
  if (epoch < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DataIter::Reset: epoch ", epoch, " is negative"));
  }
  if (first_batch < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DataIter::Reset: first_batch ", first_batch, " is negative"));
  }
  if (first_batch > num_batches_) {
    return absl::OutOfRangeError(absl::StrCat("DataIter::Reset: first_batch ", first_batch,
                                              " is past the epoch's ", num_batches_, " batches"));
  }
  if (started_ && epoch == epoch_ && next_ == first_ && first_batch == first_) {
    return absl::OkStatus();
  }
  // The slots of batches already returned keep their place in the ring;
  // those of prefetched batches not returned are reused first: batch
  // first_batch takes the slot after the last one returned.
  const uint64_t n = slots_.size();
  const uint64_t next_slot = (base_ + static_cast<uint64_t>(next_)) % n;
  base_ = (next_slot + n - static_cast<uint64_t>(first_batch) % n) % n;
  epoch_ = epoch;
  started_ = true;
  first_ = first_batch;
  next_ = first_batch;
  pushed_ = first_batch;
  if (options_.shuffle) {
    order_ = std::make_shared<const std::vector<int64_t>>(
        ShuffleOrder(data_->size, options_.seed, epoch));
  } else {
    auto identity = std::make_shared<std::vector<int64_t>>(data_->size);
    std::iota(identity->begin(), identity->end(), int64_t{0});
    order_ = std::move(identity);
  }
  while (pushed_ < std::min<int64_t>(num_batches_, first_batch + options_.prefetch)) {
    RILL_RETURN_IF_ERROR(PushFill(pushed_));
    ++pushed_;
  }
  return absl::OkStatus();
}

absl::Status DataIter::PushFill(int64_t batch) {
  Slot& s = SlotOf(batch);
  const int64_t n = BatchSize(batch);
  RILL_ASSIGN_OR_RETURN(char* data, HostAddress(s.host_data));
  RILL_ASSIGN_OR_RETURN(char* label, HostAddress(s.host_label));
  FillJob job{data_->images.data(),
              data_->labels.data(),
              pixels_,
              order_,
              BatchBegin(batch),
              n,
              reinterpret_cast<float*>(data),
              reinterpret_cast<int32_t*>(label),
              lut_};
  RILL_RETURN_IF_ERROR(
      engine_->PushSync(std::move(job), engine::Context::Host(), {},
                        {s.host_data.var(), s.host_label.var()}, engine::FnProperty::kNormal, 0,
                        absl::StrCat("DataIter fill (epoch ", epoch_, ", batch ", batch, ")")));
  if (options_.context.is_host()) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(Tensor dst_data, Head(s.data, n));
  RILL_ASSIGN_OR_RETURN(Tensor src_data, Head(s.host_data, n));
  RILL_RETURN_IF_ERROR(dst_data.CopyFrom(src_data));
  RILL_ASSIGN_OR_RETURN(Tensor dst_label, Head(s.label, n));
  RILL_ASSIGN_OR_RETURN(Tensor src_label, Head(s.host_label, n));
  return dst_label.CopyFrom(src_label);
}

absl::StatusOr<std::optional<Batch>> DataIter::Next() {
  if (next_ >= num_batches_) return std::optional<Batch>();
  const int64_t want = std::min<int64_t>(num_batches_, next_ + options_.prefetch + 1);
  while (pushed_ < want) {
    RILL_RETURN_IF_ERROR(PushFill(pushed_));
    ++pushed_;
  }
  Slot& s = SlotOf(next_);
  Batch b;
  b.size = BatchSize(next_);
  b.index = next_;
  RILL_ASSIGN_OR_RETURN(b.data, Head(s.data, b.size));
  RILL_ASSIGN_OR_RETURN(b.label, Head(s.label, b.size));
  ++next_;
  return std::optional<Batch>(std::move(b));
}

}  // namespace rill::io
