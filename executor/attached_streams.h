#ifndef RILL_EXECUTOR_ATTACHED_STREAMS_H_
#define RILL_EXECUTOR_ATTACHED_STREAMS_H_

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "rill/base/mutex.h"

namespace rill {

class Stream;

// The front Streams attached to one StreamExecutor (a backend keeps its
// backend streams in a BackendStreamSet). Shared (by shared_ptr) between
// the executor and its streams, so that either may be destroyed first, on
// any thread, without one touching the other after it is gone:
//
//  - a stream's destructor calls BeginRemove: if the executor is detaching
//    that stream, it waits for the detach to end and learns that it was
//    detached; otherwise it leaves the set and drains its work. Either way
//    it then destroys its backend stream and, if BeginRemove counted it,
//    calls EndRemove.
//  - the executor's destructor calls DetachAll, which detaches the streams
//    still in the set one at a time (without the lock, so streams being
//    destroyed meanwhile are not held up by a drain), then waits for every
//    counted BeginRemove to reach its EndRemove: every stream whose
//    destruction started before DetachAll returned is counted, so the
//    backend outlives the destruction of their backend streams.
//
// Thread-safe.
class AttachedStreams {
 public:
  void Add(Stream* stream) {
    MutexLock lock(&mu_);
    streams_.insert(stream);
  }

  struct Leave {
    bool attached;  // Was in the set: the stream drains its own work.
    bool counted;   // The caller must call EndRemove.
  };
  Leave BeginRemove(Stream* stream) {
    MutexLock lock(&mu_);
    changed_.Wait(&mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return detaching_ != stream; });
    const bool attached = streams_.erase(stream) > 0;
    const bool counted = attached || (closing_ && !closed_);
    if (counted) ++leaving_;
    return {attached, counted};
  }
  void EndRemove() {
    MutexLock lock(&mu_);
    --leaving_;
    changed_.SignalAll();
  }

  // Calls `detach` on every stream in the set, one at a time, and waits
  // for the streams leaving on their own. Returns how many it detached.
  int DetachAll(absl::FunctionRef<void(Stream*)> detach) {
    int detached = 0;
    mu_.Lock();
    closing_ = true;
    while (!streams_.empty()) {
      Stream* stream = *streams_.begin();
      streams_.erase(stream);
      detaching_ = stream;
      mu_.Unlock();
      detach(stream);
      mu_.Lock();
      detaching_ = nullptr;
      changed_.SignalAll();
      ++detached;
    }
    changed_.Wait(&mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return leaving_ == 0; });
    closed_ = true;
    mu_.Unlock();
    return detached;
  }

 private:
  Mutex mu_;
  CondVar changed_;  // detaching_ or leaving_ changed.
  absl::flat_hash_set<Stream*> streams_ ABSL_GUARDED_BY(mu_);
  Stream* detaching_ ABSL_GUARDED_BY(mu_) = nullptr;
  int leaving_ ABSL_GUARDED_BY(mu_) = 0;       // Between a counted BeginRemove and EndRemove.
  bool closing_ ABSL_GUARDED_BY(mu_) = false;  // DetachAll has started...
  bool closed_ ABSL_GUARDED_BY(mu_) = false;   // ... and returned.
};

}  // namespace rill

#endif  // RILL_EXECUTOR_ATTACHED_STREAMS_H_
