#ifndef RILL_KVSTORE_KVSTORE_H_
#define RILL_KVSTORE_KVSTORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rill/engine/engine.h"
#include "rill/plugins/collectives/collectives.h"
#include "rill/tensor/tensor.h"

namespace rill::kvstore {

// Called by Push once the merged gradient's sum has been pushed, to update
// the stored value in place: `merged_grad` and `stored` live on the store's
// reduce context (e.g. an optimizer pushing ops::Invoke("adam_update", ...)
// with `stored` as its output). It pushes work; it does not wait. An error
// it returns is returned by Push, annotated with the key. It must not keep
// `merged_grad` past its own pushes: the next Push of the key rewrites it
// (in engine order, so work already pushed reads the right sum).
using Updater = std::function<absl::Status(const std::string& key, const Tensor& merged_grad,
                                           const Tensor& stored)>;

struct KVStoreOptions {
  engine::Context reduce_context = engine::Context::Host();  // Where sums and updates run.
  engine::Engine* engine = nullptr;                          // Null: Engine::Default().
  // Distributed stores ("dist_sync"): the communicator across processes
  // (null: dist::World(), the ranks of the MPI launch), and the gradient
  // fusion buckets' sizes -- the first bucket small, so that its reduction
  // starts early in the backward pass (PyTorch DDP's 1 MB and 25 MB).
  std::shared_ptr<Communicator> communicator;
  uint64_t first_bucket_bytes = uint64_t{1} << 20;
  uint64_t bucket_bytes = uint64_t{25} << 20;
};

// Counters since the store was made. The times are host time spent inside
// Push/Pull calls (they only push engine work), not the time the work takes.
struct KVStoreStats {
  int64_t pushes = 0, pulls = 0;  // Per key (a batched call counts each key).
  uint64_t bytes_pushed = 0;      // Bytes of every value pushed.
  uint64_t bytes_pulled = 0;      // Bytes of every output pulled into.
  double push_seconds = 0, pull_seconds = 0;
};

// A key-value store for data-parallel parameter sync (MXNet's KVStore):
// each parameter lives once in the store under a key; workers Push their
// gradients (one tensor per device), which are summed and either replace the
// stored value or go through an Updater (an optimizer step) that updates it;
// then every device Pulls the new value.
//
// "local" (LocalKVStore) keeps every value on one reduce context of this
// process. "dist_sync" (DistKVStore, also "dist_device_sync") keeps a copy
// on every process of an MPI launch and sums the gradients of all of them
// with collectives; rank() and num_workers() say where this one stands.
//
// Everything is asynchronous and ordered through the engine by the tensors'
// vars: Push and Pull check their arguments, push copies and ops, and
// return; no call waits. Errors in the arguments are returned at once; an
// error while the work runs poisons the tensors it writes (the stored value,
// the pulled outputs), and reading one returns it. The engine and every
// tensor handed in must belong to the same engine, which must outlive the
// store.
//
//   RILL_ASSIGN_OR_RETURN(auto kv, kvstore::KVStore::Create("local"));
//   RILL_RETURN_IF_ERROR(kv->Init("w", w0));
//   RILL_RETURN_IF_ERROR(kv->Push("w", {grad_gpu0, grad_gpu1}));  // sum replaces "w"
//   RILL_RETURN_IF_ERROR(kv->Pull("w", {w_gpu0, w_gpu1}));        // broadcast
//   RILL_ASSIGN_OR_RETURN(std::vector<float> w, w_gpu0.ToHost<float>());
//
// Thread-compatible: calls on one store must not overlap (the engine work
// they push runs concurrently and in order).
class KVStore {
 public:
  // "local", "dist_sync" (or "dist_device_sync", the same store);
  // anything else: InvalidArgument naming the type and listing the known
  // ones. The reduce context must exist (NotFound/Unavailable).
  static absl::StatusOr<std::unique_ptr<KVStore>> Create(const std::string& type,
                                                         const KVStoreOptions& options = {});
  virtual ~KVStore();

  virtual std::string type() const = 0;
  virtual int rank() const { return 0; }
  virtual int num_workers() const { return 1; }

  // Copies `value` (any context) into the store, on the reduce context.
  // AlreadyExists if `key` was initialized; InvalidArgument for an empty key
  // or a tensor of another engine; FailedPrecondition for an undefined or
  // freed tensor (here and in Push/Pull).
  virtual absl::Status Init(const std::string& key, const Tensor& value) = 0;

  // Sums `values` (one per device, any contexts, the stored value's shape
  // and dtype) on the reduce context. With an updater: updater(key, sum,
  // stored). Without: the stored value is replaced by the sum (MXNet).
  // NotFound for an unknown key; InvalidArgument for empty `values` or a
  // value of another shape, dtype or engine (naming the key and shapes).
  // Nothing is pushed when an argument is wrong. `priority` is the engine
  // priority of the ops pushed (copies, through Tensor::CopyFrom, take none).
  virtual absl::Status Push(const std::string& key, absl::Span<const Tensor> values,
                            int priority = 0) = 0;
  // Copies the stored value into each of `outs` (any contexts): broadcast.
  // Errors as Push.
  virtual absl::Status Pull(const std::string& key, absl::Span<const Tensor> outs,
                            int priority = 0) = 0;

  // Batched forms over several keys (values[i] goes with keys[i]), as
  // MXNet's list API. Every key's arguments are checked before anything is
  // pushed. (A subclass that overrides the single-key forms writes
  // `using KVStore::Push; using KVStore::Pull;` to keep these visible.)
  absl::Status Push(absl::Span<const std::string> keys,
                    absl::Span<const std::vector<Tensor>> values, int priority = 0);
  absl::Status Pull(absl::Span<const std::string> keys, absl::Span<const std::vector<Tensor>> outs,
                    int priority = 0);

  // Replaces the updater (an empty one: the sum replaces the stored value).
  // Affects later pushes only.
  virtual void SetUpdater(Updater updater) = 0;
  virtual KVStoreStats stats() const = 0;

 protected:
  KVStore() = default;
  // What Push / Pull would reject, without pushing anything (for the batched
  // forms). The defaults accept everything.
  virtual absl::Status CheckPush(const std::string& key, absl::Span<const Tensor> values) const;
  virtual absl::Status CheckPull(const std::string& key, absl::Span<const Tensor> outs) const;
  // Init's arguments: a non-empty key not initialized yet (`existing`, its
  // stored value, null), a usable `value` of `engine`.
  static absl::Status CheckInit(const std::string& key, const Tensor& value, const Tensor* existing,
                                engine::Engine* engine);
  // Push's values (`push`) or Pull's outputs against `stored`, the value of
  // `key` (null: not initialized, NotFound): non-empty, usable, the stored
  // shape and dtype, of `engine`.
  static absl::Status CheckAgainstStored(const std::string& key, const Tensor* stored,
                                         absl::Span<const Tensor> tensors, bool push,
                                         engine::Engine* engine);
};

}  // namespace rill::kvstore

#endif  // RILL_KVSTORE_KVSTORE_H_
