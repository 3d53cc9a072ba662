#include "rill/kvstore/local_kvstore.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"

namespace rill::kvstore {
namespace {

// Host seconds since `start`, added to `*total` when the scope ends.
class ScopedSeconds {
 public:
  explicit ScopedSeconds(double* total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~ScopedSeconds() {
    *total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  double* total_;
  std::chrono::steady_clock::time_point start_;
};

// out = a + b (kWriteTo, or kWriteInplace when `out` is an input), or
// out += a + b with `accumulate` (the add kernels' own kAddTo).
absl::Status Add(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate,
                 int priority) {
  static const ops::OpDef& add = ops::BuiltinOp(op_names::kAdd);
  ops::InvokeOptions options;
  options.priority = priority;
  if (accumulate) options.reqs = {ops::OpReqType::kAddTo};
  const Tensor in[2] = {a, b};
  return ops::Invoke(add, in, nullptr, absl::MakeConstSpan(&out, 1), options).status();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalKVStore>> LocalKVStore::Create(const KVStoreOptions& options) {
  RILL_RETURN_IF_ERROR(
      Annotate(ExecutorFor(options.reduce_context).status(),
               absl::StrCat("kvstore reduce context ", options.reduce_context.ToString())));
  engine::Engine* engine = options.engine != nullptr ? options.engine : &engine::Engine::Default();
  return std::unique_ptr<LocalKVStore>(new LocalKVStore(options.reduce_context, engine));
}

absl::Status LocalKVStore::Init(const std::string& key, const Tensor& value) {
  auto it = entries_.find(key);
  RILL_RETURN_IF_ERROR(
      CheckInit(key, value, it == entries_.end() ? nullptr : &it->second.stored, engine_));
  RILL_ASSIGN_OR_RETURN(Tensor stored,
                        Tensor::Empty(value.shape(), value.dtype(), reduce_context_, engine_));
  RILL_RETURN_IF_ERROR(stored.CopyFrom(value));
  entries_[key].stored = std::move(stored);
  return absl::OkStatus();
}

absl::Status LocalKVStore::CheckTensors(const std::string& key, const Entry* entry,
                                        absl::Span<const Tensor> tensors, bool push) const {
  return CheckAgainstStored(key, entry != nullptr ? &entry->stored : nullptr, tensors, push,
                            engine_);
}

absl::Status LocalKVStore::CheckPush(const std::string& key,
                                     absl::Span<const Tensor> values) const {
  auto it = entries_.find(key);
  return CheckTensors(key, it == entries_.end() ? nullptr : &it->second, values, /*push=*/true);
}

absl::Status LocalKVStore::CheckPull(const std::string& key, absl::Span<const Tensor> outs) const {
  auto it = entries_.find(key);
  return CheckTensors(key, it == entries_.end() ? nullptr : &it->second, outs, /*push=*/false);
}

absl::StatusOr<Tensor> LocalKVStore::Buffer(Tensor& slot, const Tensor& like, engine::Context ctx) {
  if (!slot.defined()) {
    RILL_ASSIGN_OR_RETURN(slot, Tensor::Empty(like.shape(), like.dtype(), ctx, engine_));
  }
  return slot;
}

absl::Status LocalKVStore::Copy(const Tensor& src, const Tensor& dst, Tensor& host_slot) {
  bool direct = src.ByteSize() == 0 || src.executor() == dst.executor();
  if (!direct) {
    RILL_ASSIGN_OR_RETURN(StorageBlock s, src.Storage());
    RILL_ASSIGN_OR_RETURN(StorageBlock d, dst.Storage());
    direct = s.host != nullptr || d.host != nullptr;
  }
  if (direct) return dst.CopyFrom(src);
  RILL_ASSIGN_OR_RETURN(Tensor host, Buffer(host_slot, dst, engine::Context::Host()));
  RILL_RETURN_IF_ERROR(host.CopyFrom(src));
  return dst.CopyFrom(host);
}

absl::StatusOr<std::vector<Tensor>> LocalKVStore::Stage(Entry& entry,
                                                        absl::Span<const Tensor> values) {
  if (entry.staging.size() < values.size()) entry.staging.resize(values.size());
  if (entry.host_staging.size() < values.size()) entry.host_staging.resize(values.size());
  std::vector<Tensor> srcs;
  srcs.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].context() == reduce_context_) {
      srcs.push_back(values[i]);
      continue;
    }
    RILL_ASSIGN_OR_RETURN(Tensor buffer, Buffer(entry.staging[i], entry.stored, reduce_context_));
    RILL_RETURN_IF_ERROR(Copy(values[i], buffer, entry.host_staging[i]));
    srcs.push_back(std::move(buffer));
  }
  return srcs;
}

// dst = s0 + s1, then dst += s2 + s3, ..., and a last odd one in place:
// ceil((n - 1) / 2) engine functions.
absl::Status LocalKVStore::Sum(absl::Span<const Tensor> srcs, const Tensor& dst, int priority) {
  RILL_RETURN_IF_ERROR(Add(srcs[0], srcs[1], dst, /*accumulate=*/false, priority));
  size_t i = 2;
  for (; i + 1 < srcs.size(); i += 2) {
    RILL_RETURN_IF_ERROR(Add(srcs[i], srcs[i + 1], dst, /*accumulate=*/true, priority));
  }
  if (i < srcs.size()) RILL_RETURN_IF_ERROR(Add(dst, srcs[i], dst, /*accumulate=*/false, priority));
  return absl::OkStatus();
}

absl::Status LocalKVStore::Push(const std::string& key, absl::Span<const Tensor> values,
                                int priority) {
  ScopedSeconds timer(&stats_.push_seconds);
  RILL_RETURN_IF_ERROR(CheckPush(key, values));
  Entry& entry = entries_.find(key)->second;
  const std::string where = absl::StrCat("kvstore: Push of key '", key, "'");
  if (!updater_ && values.size() == 1) {  // One copy, straight into the stored value.
    if (!values[0].SharesStorageWith(entry.stored) ||
        values[0].byte_offset() != entry.stored.byte_offset()) {
      if (entry.host_staging.empty()) entry.host_staging.resize(1);
      RILL_RETURN_IF_ERROR(Annotate(Copy(values[0], entry.stored, entry.host_staging[0]), where));
    }
  } else {
    RILL_ASSIGN_OR_RETURN(std::vector<Tensor> srcs, Stage(entry, values));
    Tensor merged = srcs[0];
    if (srcs.size() > 1) {
      if (updater_) {
        RILL_ASSIGN_OR_RETURN(merged, Buffer(entry.merged, entry.stored, reduce_context_));
      } else {
        merged = entry.stored;
      }
      RILL_RETURN_IF_ERROR(Annotate(Sum(srcs, merged, priority), where));
    }
    if (updater_) {
      RILL_RETURN_IF_ERROR(
          Annotate(updater_(key, merged, entry.stored), absl::StrCat(where, ": updater")));
    }
  }
  ++stats_.pushes;
  for (const Tensor& v : values) stats_.bytes_pushed += v.ByteSize();
  return absl::OkStatus();
}

absl::Status LocalKVStore::Pull(const std::string& key, absl::Span<const Tensor> outs,
                                int priority) {
  ScopedSeconds timer(&stats_.pull_seconds);
  RILL_RETURN_IF_ERROR(CheckPull(key, outs));
  Entry& entry = entries_.find(key)->second;
  if (entry.pull_host_staging.size() < outs.size()) entry.pull_host_staging.resize(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].SharesStorageWith(entry.stored) &&
        outs[i].byte_offset() == entry.stored.byte_offset())
      continue;
    RILL_RETURN_IF_ERROR(Annotate(Copy(entry.stored, outs[i], entry.pull_host_staging[i]),
                                  absl::StrCat("kvstore: Pull of key '", key, "'")));
  }
  ++stats_.pulls;
  stats_.bytes_pulled += outs.size() * entry.stored.ByteSize();
  return absl::OkStatus();
}

}  // namespace rill::kvstore
