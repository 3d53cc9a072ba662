#ifndef RILL_STREAM_DEVICE_SPAN_H_
#define RILL_STREAM_DEVICE_SPAN_H_

#include <cstdint>
#include <memory>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"

namespace rill {

class Event;
class Stream;
namespace internal {
struct TraceAnchor;
}  // namespace internal

// When a stretch of a stream's work ran on its device, on the trace clock
// (base/trace_clock.h). Both ends are events of the stream's backend
// (Feature::kTimers), so the span is device time, not the time it took to
// enqueue. They are placed on the trace clock through one anchor event per
// stream, whose completion the host observes once: every span of a stream
// shares the anchor's offset (within the latency of one host callback), so
// spans of one stream keep their order and nesting.
//
//   auto span = DeviceSpan::Begin(stream);
//   stream->ThenLaunch(...);
//   DeviceSpan::End(std::move(span), stream, [](absl::Status s, int64_t start, int64_t end) {...});
//
// Used by the stream listeners and the engine's trace. Thread-compatible,
// like the stream.
class DeviceSpan {
 public:
  using Done = absl::AnyInvocable<void(absl::Status status, int64_t start_ns, int64_t end_ns) &&>;

  // Marks the start at the current end of `stream`'s queue. Null when the
  // stream is detached or in error, or its backend has no timers.
  static std::unique_ptr<DeviceSpan> Begin(Stream* stream);
  // Marks the end after the work enqueued since Begin; `done` runs on a
  // host thread once it has run, with the outcome of the stream's work up
  // to there and the times (both 0 when they could not be measured).
  // `span` may be null: `done` then gets no times.
  static void End(std::unique_ptr<DeviceSpan> span, Stream* stream, Done done);

  ~DeviceSpan();

 private:
  DeviceSpan() = default;
  std::shared_ptr<internal::TraceAnchor> anchor_;
  std::unique_ptr<Event> start_;
};

}  // namespace rill

#endif  // RILL_STREAM_DEVICE_SPAN_H_
