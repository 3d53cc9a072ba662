#ifndef RILL_KVSTORE_DIST_KVSTORE_H_
#define RILL_KVSTORE_DIST_KVSTORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "rill/kvstore/kvstore.h"

namespace rill::kvstore {

// The "dist_sync" store (MXNet's dist_sync and dist_device_sync, without a
// parameter server): every process of an MPI launch keeps every value on
// its reduce context, and a Push of all keys sums the gradients of every
// device of every process with all-reduces (dist/collective_ops.h), so the
// stored values stay identical on all ranks.
//
//   * Init copies the value in and broadcasts rank 0's: parameters start
//     identical whatever each rank initialized. Every rank must Init the
//     same keys with the same shapes in the same order: the communicator's
//     order check names the first key that differs.
//   * Push sums this process's values (one per device) into the key's slice
//     of a fusion bucket on the reduce context. Buckets are laid out at the
//     first Push, over the keys in reverse Init order (the order a backward
//     pass writes gradients), the first up to `first_bucket_bytes`, the rest
//     up to `bucket_bytes` (KVStoreOptions; PyTorch DDP's 1 MB and 25 MB).
//     Once every key of a bucket has been pushed, the bucket's all-reduce is
//     pushed to the engine, with the Push's priority; it starts as soon as
//     the gradients it holds are written, while the backward pass goes on
//     with the layers before. Then the updater runs per key on its slice of
//     the summed bucket (or the sum replaces the stored value). The buckets
//     are allocated once and reused every step.
//   * Pull copies the stored value out. A Pull of a key whose bucket is
//     waiting for other keys reduces the bucket at once with what was
//     pushed (keys not pushed keep their stored values).
//
// Every rank must make the same calls in the same order. Errors while the
// work runs (a rank lost, a mismatch) poison the stored values and the
// outputs. Thread-compatible.
class DistKVStore final : public KVStore {
 public:
  static absl::StatusOr<std::unique_ptr<DistKVStore>> Create(const KVStoreOptions& options = {});

  std::string type() const override { return "dist_sync"; }
  int rank() const override { return comm_->rank(); }
  int num_workers() const override { return comm_->size(); }
  absl::Status Init(const std::string& key, const Tensor& value) override;
  using KVStore::Pull;
  using KVStore::Push;
  absl::Status Push(const std::string& key, absl::Span<const Tensor> values,
                    int priority = 0) override;
  absl::Status Pull(const std::string& key, absl::Span<const Tensor> outs,
                    int priority = 0) override;
  void SetUpdater(Updater updater) override { updater_ = std::move(updater); }
  KVStoreStats stats() const override { return stats_; }

  Communicator& communicator() const { return *comm_; }
  // The keys of each bucket, in reduction order (empty before the first Push).
  std::vector<std::vector<std::string>> Buckets() const;

 protected:
  absl::Status CheckPush(const std::string& key, absl::Span<const Tensor> values) const override;
  absl::Status CheckPull(const std::string& key, absl::Span<const Tensor> outs) const override;

 private:
  struct Entry {
    Tensor stored;                // On the reduce context.
    Tensor grad;                  // Its slice of the bucket (after the first Push).
    std::vector<Tensor> staging;  // Per value position past the first, on the reduce context.
    int bucket = -1;
    bool pushed = false;  // Pushed since its bucket was last reduced.
  };
  struct Bucket {
    Tensor buffer;  // One dtype, on the reduce context.
    std::vector<std::string> keys;
    size_t pushed = 0;
  };

  DistKVStore(std::shared_ptr<Communicator> comm, const KVStoreOptions& options,
              engine::Engine* engine)
      : comm_(std::move(comm)), options_(options), engine_(engine) {}

  absl::Status Plan();
  absl::Status Reduce(int bucket, int priority);

  const std::shared_ptr<Communicator> comm_;
  const KVStoreOptions options_;
  engine::Engine* const engine_;
  absl::flat_hash_map<std::string, Entry> entries_;
  std::vector<std::string> order_;  // Init order.
  std::vector<Bucket> buckets_;
  Updater updater_;
  KVStoreStats stats_;
};

}  // namespace rill::kvstore

#endif  // RILL_KVSTORE_DIST_KVSTORE_H_
