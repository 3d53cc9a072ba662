#include "rill/kvstore/dist_kvstore.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/dist/collective_ops.h"
#include "rill/ops/ops.h"

namespace rill::kvstore {

namespace {

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DistKVStore>> DistKVStore::Create(const KVStoreOptions& options) {
  RILL_RETURN_IF_ERROR(
      Annotate(ExecutorFor(options.reduce_context).status(),
               absl::StrCat("kvstore reduce context ", options.reduce_context.ToString())));
  if (options.first_bucket_bytes == 0 || options.bucket_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kvstore dist_sync: bucket sizes must be positive (first_bucket_bytes ",
                     options.first_bucket_bytes, ", bucket_bytes ", options.bucket_bytes, ")"));
  }
  std::shared_ptr<Communicator> comm = options.communicator;
  if (comm == nullptr) {
    RILL_ASSIGN_OR_RETURN(comm, dist::World());
  }
  engine::Engine* engine = options.engine != nullptr ? options.engine : &engine::Engine::Default();
  return std::unique_ptr<DistKVStore>(new DistKVStore(std::move(comm), options, engine));
}

absl::Status DistKVStore::Init(const std::string& key, const Tensor& value) {
  auto it = entries_.find(key);
  RILL_RETURN_IF_ERROR(
      CheckInit(key, value, it == entries_.end() ? nullptr : &it->second.stored, engine_));
  if (!buckets_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "kvstore dist_sync: Init of key '", key,
        "' after the first Push (the fusion buckets are laid out then; Init every key first)"));
  }
  if (value.dtype() != DType::kF32 && value.dtype() != DType::kF64) {
    return absl::InvalidArgumentError(absl::StrCat("kvstore dist_sync: Init of key '", key,
                                                   "': ", value.ToString(),
                                                   " (collectives take float32 or float64)"));
  }
  RILL_ASSIGN_OR_RETURN(
      Tensor stored, Tensor::Empty(value.shape(), value.dtype(), options_.reduce_context, engine_));
  RILL_RETURN_IF_ERROR(stored.CopyFrom(value));
  RILL_RETURN_IF_ERROR(dist::Broadcast(*comm_, stored, {.root = 0, .name = key}));
  entries_[key].stored = std::move(stored);
  order_.push_back(key);
  return absl::OkStatus();
}

absl::Status DistKVStore::Plan() {
  std::vector<Bucket> buckets;
  std::vector<uint64_t> bytes;
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    const Tensor& t = entries_[*it].stored;
    // A bucket takes keys while it holds less than its cap (so it may pass
    // the cap by its last key) and they share its dtype.
    const bool fits = !buckets.empty() &&
                      bytes.back() < (buckets.size() == 1 ? options_.first_bucket_bytes
                                                          : options_.bucket_bytes) &&
                      entries_[buckets.back().keys[0]].stored.dtype() == t.dtype();
    if (!fits) {
      buckets.emplace_back();
      bytes.push_back(0);
    }
    buckets.back().keys.push_back(*it);
    bytes.back() += t.ByteSize();
  }
  for (size_t b = 0; b < buckets.size(); ++b) {
    const DType dtype = entries_[buckets[b].keys[0]].stored.dtype();
    const int64_t elements = static_cast<int64_t>(bytes[b] / DTypeSize(dtype));
    RILL_ASSIGN_OR_RETURN(buckets[b].buffer,
                          Tensor::Empty(Shape{elements}, dtype, options_.reduce_context, engine_));
    uint64_t offset = 0;
    for (const std::string& key : buckets[b].keys) {
      Entry& e = entries_[key];
      RILL_ASSIGN_OR_RETURN(e.grad, buckets[b].buffer.View(e.stored.shape(), dtype, offset));
      e.bucket = static_cast<int>(b);
      offset += e.stored.ByteSize();
    }
  }
  buckets_ = std::move(buckets);
  return absl::OkStatus();
}

absl::Status DistKVStore::Reduce(int index, int priority) {
  Bucket& b = buckets_[index];
  RILL_RETURN_IF_ERROR(dist::AllReduce(
      *comm_, b.buffer, b.buffer,
      {.op = ReduceOp::kSum, .priority = priority, .name = absl::StrCat("bucket ", index)}));
  for (const std::string& key : b.keys) {
    Entry& e = entries_[key];
    if (!e.pushed) continue;
    e.pushed = false;
    if (updater_) {
      RILL_RETURN_IF_ERROR(Annotate(updater_(key, e.grad, e.stored),
                                    absl::StrCat("kvstore: updater of key '", key, "'")));
    } else {
      RILL_RETURN_IF_ERROR(e.stored.CopyFrom(e.grad));
    }
  }
  b.pushed = 0;
  return absl::OkStatus();
}

absl::Status DistKVStore::CheckPush(const std::string& key, absl::Span<const Tensor> values) const {
  auto it = entries_.find(key);
  return CheckAgainstStored(key, it == entries_.end() ? nullptr : &it->second.stored, values,
                            /*push=*/true, engine_);
}

absl::Status DistKVStore::CheckPull(const std::string& key, absl::Span<const Tensor> outs) const {
  auto it = entries_.find(key);
  return CheckAgainstStored(key, it == entries_.end() ? nullptr : &it->second.stored, outs,
                            /*push=*/false, engine_);
}

absl::Status DistKVStore::Push(const std::string& key, absl::Span<const Tensor> values,
                               int priority) {
  const auto start = std::chrono::steady_clock::now();
  RILL_RETURN_IF_ERROR(CheckPush(key, values));
  if (buckets_.empty()) RILL_RETURN_IF_ERROR(Plan());
  Entry& e = entries_[key];
  if (e.pushed) RILL_RETURN_IF_ERROR(Reduce(e.bucket, priority));  // A second round began.
  RILL_RETURN_IF_ERROR(e.grad.CopyFrom(values[0]));
  if (e.staging.size() < values.size()) e.staging.resize(values.size());
  for (size_t i = 1; i < values.size(); ++i) {
    const Tensor* summand = &values[i];
    if (values[i].context() != options_.reduce_context) {
      if (!e.staging[i].defined()) {
        RILL_ASSIGN_OR_RETURN(e.staging[i], Tensor::Empty(e.stored.shape(), e.stored.dtype(),
                                                          options_.reduce_context, engine_));
      }
      RILL_RETURN_IF_ERROR(e.staging[i].CopyFrom(values[i]));
      summand = &e.staging[i];
    }
    RILL_RETURN_IF_ERROR(ops::AddTo(e.grad, *summand));
  }
  e.pushed = true;
  Bucket& b = buckets_[e.bucket];
  if (++b.pushed == b.keys.size()) RILL_RETURN_IF_ERROR(Reduce(e.bucket, priority));
  stats_.pushes += 1;
  stats_.bytes_pushed += values.size() * e.stored.ByteSize();
  stats_.push_seconds += Since(start);
  return absl::OkStatus();
}

absl::Status DistKVStore::Pull(const std::string& key, absl::Span<const Tensor> outs,
                               int priority) {
  const auto start = std::chrono::steady_clock::now();
  RILL_RETURN_IF_ERROR(CheckPull(key, outs));
  Entry& e = entries_[key];
  if (e.pushed) RILL_RETURN_IF_ERROR(Reduce(e.bucket, priority));
  for (const Tensor& out : outs) RILL_RETURN_IF_ERROR(out.CopyFrom(e.stored));
  stats_.pulls += 1;
  stats_.bytes_pulled += outs.size() * e.stored.ByteSize();
  stats_.pull_seconds += Since(start);
  return absl::OkStatus();
}

std::vector<std::vector<std::string>> DistKVStore::Buckets() const {
  std::vector<std::vector<std::string>> out;
  for (const Bucket& b : buckets_) out.push_back(b.keys);
  return out;
}

}  // namespace rill::kvstore
