#ifndef RILL_STREAM_STREAM_REGISTRY_H_
#define RILL_STREAM_STREAM_REGISTRY_H_

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "base/mutex.h"

namespace rill {

class Stream;

// The live Streams of one StreamExecutor. Shared (by shared_ptr) between
// the executor and its streams, so that either may be destroyed first, on
// any thread, without one touching the other after it is gone:
//
//  - a stream's destructor calls BeginRemove: if the executor is detaching
//    that stream, it waits for the detach to end and learns that it was
//    detached; otherwise it leaves the set, drains its work and destroys its
//    backend stream, then calls EndRemove.
//  - the executor's destructor calls DetachAll, which detaches the streams
//    still in the set one at a time (without the lock, so streams being
//    destroyed meanwhile are not held up by a drain), then waits for every
//    BeginRemove to reach its EndRemove, so the backend outlives the
//    destruction of every backend stream that started before.
//
// Thread-safe.
class StreamRegistry {
 public:
  void Add(Stream* stream) {
    MutexLock lock(&mu_);
    streams_.insert(stream);
  }

  // Returns true if `stream` was in the set and has left it (the caller must
  // call EndRemove), false if it was detached (or never added).
  bool BeginRemove(Stream* stream) {
    MutexLock lock(&mu_);
    changed_.Wait(&mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return detaching_ != stream; });
    if (streams_.erase(stream) == 0) return false;
    ++leaving_;
    return true;
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
    mu_.Unlock();
    return detached;
  }

 private:
  Mutex mu_;
  CondVar changed_;  // detaching_ or leaving_ changed.
  absl::flat_hash_set<Stream*> streams_ ABSL_GUARDED_BY(mu_);
  Stream* detaching_ ABSL_GUARDED_BY(mu_) = nullptr;
  int leaving_ ABSL_GUARDED_BY(mu_) = 0;  // Between BeginRemove and EndRemove.
};

}  // namespace rill

#endif  // RILL_STREAM_STREAM_REGISTRY_H_
