#ifndef RILL_ENGINE_STREAM_POOL_H_
#define RILL_ENGINE_STREAM_POOL_H_

// rill:internal -- not installed: the engine's implementation; users include engine.h.

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/engine/opr_block.h"
#include "rill/executor/stream_executor.h"
#include "rill/stream/stream.h"

namespace rill::engine::internal {

// Streams of one device for engine functions, at most `max_streams` of
// them in use (EngineOptions::streams_per_device; 1 for copies). A function
// holds its stream exclusively while it enqueues. In order of preference it
// gets: the stream of the work it depends on (its last record, so it waits
// for nothing); an idle stream; a new stream while fewer than `max_streams`
// are usable; else the usable stream with the least unfinished work (it
// then queues behind work it does not depend on -- the price of the bound).
// Only when every usable stream is held by a function enqueuing right now
// (more workers than streams) is one more created. A failure on a stream
// makes the stream skip all later work, so a stream found failed is retired
// (kept until shutdown, never reused, not counted). Streams are labelled for
// traces "<device> engine stream <n>" ("<device> engine copy stream").
// Thread-safe.
class StreamPool {
 public:
  StreamPool(StreamExecutor* executor, int max_streams, bool copy)
      : executor_(executor), max_streams_(max_streams < 1 ? 1 : max_streams), copy_(copy) {}
  ~StreamPool();
  // A stream for a function whose only unfinished dependency is `after`
  // (may be null): `after`'s stream when that can be reused, else an idle one.
  absl::StatusOr<Stream*> Acquire(const Fence* after);
  // The function holding `stream` has enqueued its work, ending in `fence`.
  void Release(Stream* stream, const Fence* fence);
  // Work enqueued on `stream` (one Release) has finished.
  void WorkDone(Stream* stream);
  StreamExecutor* executor() const { return executor_; }
  // Streams created so far, retired ones included.
  int stream_count();

 private:
  struct Entry {
    std::unique_ptr<Stream> stream;
    bool enqueuing = false;
    int pending = 0;              // Releases whose work has not finished.
    const Fence* last = nullptr;  // The latest record enqueued (identity only).
    bool usable() const { return !enqueuing && stream->ok(); }
  };
  Entry* FindLocked(Stream* stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  StreamExecutor* const executor_;
  const int max_streams_;
  const bool copy_;
  Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_STREAM_POOL_H_
