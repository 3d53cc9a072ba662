#ifndef RILL_STREAM_STREAM_TRACE_STATE_H_
#define RILL_STREAM_STREAM_TRACE_STATE_H_

// Private to stream/: what a Stream keeps for its listeners and DeviceSpan.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "rill/base/mutex.h"
#include "rill/stream/device_span.h"
#include "rill/stream/event.h"
#include "rill/stream/stream_listener.h"

namespace rill::internal {

// An event recorded once on a stream, and when the host saw it complete (0
// until then): device times of the stream's spans are measured from it.
struct TraceAnchor {
  std::unique_ptr<Event> event;
  std::atomic<int64_t> host_ns{0};
};

struct StreamTraceState {
  mutable Mutex mu;
  std::string lane ABSL_GUARDED_BY(mu);
  std::string device;  // Set once, at creation.
  // Enqueuing thread only (streams are thread-compatible).
  std::shared_ptr<TraceAnchor> anchor;
  int64_t anchor_enqueued_ns = 0;

  std::string Lane() const {
    MutexLock lock(&mu);
    return lane;
  }
};

// A Then* call being traced, from TraceBegin to Done.
struct TracedOp {
  StreamOp info;
  std::unique_ptr<DeviceSpan> span;
  // The calling thread's traced call before this one (a plugin call that
  // enqueues on another stream nests), restored by Done.
  StreamOp* outer = nullptr;
};

inline void SetTracedPlugin(TracedOp* op, std::string name) { op->info.plugin = std::move(name); }

}  // namespace rill::internal

#endif  // RILL_STREAM_STREAM_TRACE_STATE_H_
