#ifndef RILL_PLATFORM_UTILS_BACKEND_STREAM_SET_H_
#define RILL_PLATFORM_UTILS_BACKEND_STREAM_SET_H_

#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "rill/base/mutex.h"

namespace rill {

// The live backend streams of one backend executor, for
// SynchronizeAllActivity and deferred frees (the executor's front Streams
// are in its AttachedStreams).
// Shared (by shared_ptr) between the executor and its streams, so that a
// stream outliving its executor can still leave it. `StreamT` has
// `absl::Status BlockHostUntilDone()`.
//
// A set made with a `platform` set also enters its streams there, so the
// platform set holds the streams of every device of the platform: a free
// must be deferred past them all, because a stream may copy from a peer
// device's memory (ForEachLiveOnPlatform).
//
// SynchronizeAll waits for one stream at a time without holding the set's
// lock, so work it waits for may create and destroy streams of the same
// executor (a host callback that does would otherwise deadlock). While it
// waits for a stream, that stream's Remove -- called from its destructor --
// waits for it, so the stream is never destroyed under the wait.
// Thread-safe.
template <typename StreamT>
class BackendStreamSet {
 public:
  BackendStreamSet() = default;
  explicit BackendStreamSet(std::shared_ptr<BackendStreamSet> platform)
      : platform_(std::move(platform)) {}
  BackendStreamSet(const BackendStreamSet&) = delete;
  BackendStreamSet& operator=(const BackendStreamSet&) = delete;

  void Add(StreamT* stream) {
    if (platform_ != nullptr) platform_->Add(stream);
    MutexLock lock(&mu_);
    streams_.insert(stream);
  }

  // Returns once no SynchronizeAll or ForEachLive (of this set or of its
  // platform set) is using `stream`.
  void Remove(StreamT* stream) {
    {
      MutexLock lock(&mu_);
      streams_.erase(stream);  // No wait can start on it from now on.
      unpinned_.Wait(&mu_,
                     [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !pins_.contains(stream); });
    }
    if (platform_ != nullptr) platform_->Remove(stream);
  }

  // Waits for the work of every stream live when it is called (and still
  // live when its turn comes). Returns the first error of a wait: called
  // from a host callback of one of these streams, FailedPrecondition (that
  // stream's wait would include the caller), after waiting for the others.
  absl::Status SynchronizeAll() {
    absl::Status first;
    ForEachLive([&](StreamT* stream) {
      absl::Status waited = stream->BlockHostUntilDone();
      if (first.ok() && !waited.ok()) first = waited;
    });
    return first;
  }

  // Calls `fn` on every stream live when it is called (and still live when
  // its turn comes), without the set's lock; the stream cannot be destroyed
  // meanwhile.
  void ForEachLive(absl::FunctionRef<void(StreamT*)> fn) { ForEachLiveInSet(fn); }

  // ForEachLive over the streams of every device of the platform (of this
  // set alone when it was made without a platform set).
  void ForEachLiveOnPlatform(absl::FunctionRef<void(StreamT*)> fn) {
    if (platform_ != nullptr) {
      platform_->ForEachLiveInSet(fn);
    } else {
      ForEachLiveInSet(fn);
    }
  }

 private:
  void ForEachLiveInSet(absl::FunctionRef<void(StreamT*)> fn) {
    std::vector<StreamT*> snapshot;
    {
      MutexLock lock(&mu_);
      snapshot.assign(streams_.begin(), streams_.end());
    }
    for (StreamT* stream : snapshot) {
      {
        MutexLock lock(&mu_);
        if (!streams_.contains(stream)) continue;  // Destroyed: its destructor drained it.
        ++pins_[stream];
      }
      fn(stream);
      MutexLock lock(&mu_);
      if (--pins_[stream] == 0) {
        pins_.erase(stream);
        unpinned_.SignalAll();
      }
    }
  }

  const std::shared_ptr<BackendStreamSet> platform_;  // Null: none.
  Mutex mu_;
  CondVar unpinned_;
  absl::flat_hash_set<StreamT*> streams_ ABSL_GUARDED_BY(mu_);
  // Streams a SynchronizeAll is waiting for, with how many are.
  absl::flat_hash_map<StreamT*, int> pins_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_PLATFORM_UTILS_BACKEND_STREAM_SET_H_
