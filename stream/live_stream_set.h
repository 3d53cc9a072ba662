#ifndef RILL_STREAM_LIVE_STREAM_SET_H_
#define RILL_STREAM_LIVE_STREAM_SET_H_

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "base/mutex.h"

namespace rill {

// The live streams of one backend executor, for SynchronizeAllActivity.
// Shared (by shared_ptr) between the executor and its streams, so that a
// stream outliving its executor can still leave it. `StreamT` has
// `absl::Status BlockHostUntilDone()`.
//
// SynchronizeAll waits for one stream at a time without holding the set's
// lock, so work it waits for may create and destroy streams of the same
// executor (a host callback that does would otherwise deadlock). While it
// waits for a stream, that stream's Remove -- called from its destructor --
// waits for it, so the stream is never destroyed under the wait.
// Thread-safe.
template <typename StreamT>
class LiveStreamSet {
 public:
  void Add(StreamT* stream) {
    MutexLock lock(&mu_);
    streams_.insert(stream);
  }

  // Returns once no SynchronizeAll is waiting for `stream`.
  void Remove(StreamT* stream) {
    MutexLock lock(&mu_);
    streams_.erase(stream);  // No wait can start on it from now on.
    unpinned_.Wait(&mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !pins_.contains(stream); });
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
  void ForEachLive(absl::FunctionRef<void(StreamT*)> fn) {
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

 private:
  Mutex mu_;
  CondVar unpinned_;
  absl::flat_hash_set<StreamT*> streams_ ABSL_GUARDED_BY(mu_);
  // Streams a SynchronizeAll is waiting for, with how many are.
  absl::flat_hash_map<StreamT*, int> pins_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_STREAM_LIVE_STREAM_SET_H_
