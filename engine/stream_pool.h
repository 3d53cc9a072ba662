#ifndef RILL_ENGINE_STREAM_POOL_H_
#define RILL_ENGINE_STREAM_POOL_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "engine/opr_block.h"
#include "executor/stream_executor.h"
#include "stream/stream.h"

namespace rill::engine::internal {

// Streams of one device for engine functions. A function holds its stream
// exclusively while it enqueues. A stream whose work is still running is
// handed out again only to a function that depends on exactly that work (its
// last record), so a failure on a stream -- which makes the stream skip all
// later work -- reaches only functions that depend on the failed work; a
// stream found failed is retired (kept until shutdown, never reused).
// Thread-safe.
class StreamPool {
 public:
  explicit StreamPool(StreamExecutor* executor) : executor_(executor) {}
  ~StreamPool();
  // A stream for a function whose only unfinished dependency is `after`
  // (may be null): `after`'s stream when that can be reused, else an idle one.
  absl::StatusOr<Stream*> Acquire(const Fence* after);
  // The function holding `stream` has enqueued its work, ending in `fence`.
  void Release(Stream* stream, const Fence* fence);
  // Work enqueued on `stream` (one Release) has finished.
  void WorkDone(Stream* stream);
  StreamExecutor* executor() const { return executor_; }

 private:
  struct Entry {
    std::unique_ptr<Stream> stream;
    bool enqueuing = false;
    int pending = 0;                // Releases whose work has not finished.
    const Fence* last = nullptr;    // The latest record enqueued (identity only).
    bool usable() const { return !enqueuing && stream->ok(); }
  };
  Entry* FindLocked(Stream* stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  StreamExecutor* const executor_;
  Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_STREAM_POOL_H_
