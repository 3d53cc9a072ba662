#ifndef RILL_KVSTORE_LOCAL_KVSTORE_H_
#define RILL_KVSTORE_LOCAL_KVSTORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "rill/kvstore/kvstore.h"

namespace rill::kvstore {

// The "local" store (MXNet's KVStoreLocal with CommCPU/CommDevice): every
// value lives once on the reduce context of this process.
//
// Push: a value on the reduce context is summed where it is; one on another
// context is first copied (Tensor::CopyFrom, on copy streams) into a staging
// buffer of that key and position (through a host buffer of the store's own
// between two devices without a direct path). The sum is "add" ops on the
// reduce context, written straight into the stored value without an
// updater, or into the key's merged-gradient buffer with one (a single value
// on the reduce context is handed to the updater as it is). Buffers are
// allocated on the first push that needs them and reused, so a later push
// allocates nothing (the engine orders each rewrite after the reads of the
// previous push). Pull copies the stored value into each output, likewise
// without allocating. `priority` goes to the sum ops.
//
//   KVStoreOptions o;
//   o.reduce_context = *engine::Context::Device("opencl", 0);
//   RILL_ASSIGN_OR_RETURN(auto kv, LocalKVStore::Create(o));
//
// The store owns its stored values and buffers; destroying it releases them
// after the work already pushed. Thread-compatible.
class LocalKVStore final : public KVStore {
 public:
  // NotFound/Unavailable when the reduce context does not exist.
  static absl::StatusOr<std::unique_ptr<LocalKVStore>> Create(const KVStoreOptions& options = {});

  std::string type() const override { return "local"; }
  absl::Status Init(const std::string& key, const Tensor& value) override;
  using KVStore::Pull;
  using KVStore::Push;
  absl::Status Push(const std::string& key, absl::Span<const Tensor> values,
                    int priority = 0) override;
  absl::Status Pull(const std::string& key, absl::Span<const Tensor> outs,
                    int priority = 0) override;
  void SetUpdater(Updater updater) override { updater_ = std::move(updater); }
  KVStoreStats stats() const override { return stats_; }

  engine::Context reduce_context() const { return reduce_context_; }
  engine::Engine* engine() const { return engine_; }

 protected:
  absl::Status CheckPush(const std::string& key, absl::Span<const Tensor> values) const override;
  absl::Status CheckPull(const std::string& key, absl::Span<const Tensor> outs) const override;

 private:
  struct Entry {
    Tensor stored;                // On the reduce context.
    Tensor merged;                // The updater's merged gradient (made on first need).
    std::vector<Tensor> staging;  // Per value position: its copy on the reduce context.
    // On cpu, per position, between two devices without a direct path.
    std::vector<Tensor> host_staging, pull_host_staging;
  };

  LocalKVStore(engine::Context reduce_context, engine::Engine* engine)
      : reduce_context_(reduce_context), engine_(engine) {}

  // Checks Push's values or Pull's outputs against the stored value of `key`.
  absl::Status CheckTensors(const std::string& key, const Entry* entry,
                            absl::Span<const Tensor> tensors, bool push) const;
  // The summands on the reduce context: values there as they are, the rest
  // copied into the entry's staging buffers.
  absl::StatusOr<std::vector<Tensor>> Stage(Entry& entry, absl::Span<const Tensor> values);
  // Writes the sum of `srcs` (all on the reduce context, at least two) into `dst`.
  absl::Status Sum(absl::Span<const Tensor> srcs, const Tensor& dst, int priority);
  // `slot`, made on `ctx` like `like` if it is not yet.
  absl::StatusOr<Tensor> Buffer(Tensor& slot, const Tensor& like, engine::Context ctx);
  // dst.CopyFrom(src), through `host_slot` (made on cpu on first need) when
  // the two are on different devices and neither is host-addressable, where
  // CopyFrom would make a temporary each time.
  absl::Status Copy(const Tensor& src, const Tensor& dst, Tensor& host_slot);

  const engine::Context reduce_context_;
  engine::Engine* const engine_;  // Borrowed; outlives the store.
  absl::flat_hash_map<std::string, Entry> entries_;
  Updater updater_;
  KVStoreStats stats_;
};

}  // namespace rill::kvstore

#endif  // RILL_KVSTORE_LOCAL_KVSTORE_H_
