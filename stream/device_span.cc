#include "rill/stream/device_span.h"

#include <utility>

#include "absl/time/time.h"
#include "rill/base/trace_clock.h"
#include "rill/executor/stream_executor.h"
#include "rill/stream/event.h"
#include "rill/stream/stream.h"
#include "rill/stream/stream_trace_state.h"

namespace rill {
namespace {

// A stream's anchor is replaced after this long, so that device timers
// with float precision (CUDA's milliseconds) measure short distances.
constexpr int64_t kReanchorNs = 10'000'000'000;

}  // namespace

DeviceSpan::~DeviceSpan() = default;

std::unique_ptr<DeviceSpan> DeviceSpan::Begin(Stream* stream) {
  StreamExecutor* executor = stream == nullptr ? nullptr : stream->parent();
  if (executor == nullptr || !stream->ok() || stream->trace_ == nullptr ||
      !executor->Supports(Feature::kTimers).ok()) {
    return nullptr;
  }
  internal::StreamTraceState& state = *stream->trace_;
  const int64_t now = TraceClockNs();
  if (state.anchor == nullptr || now - state.anchor_enqueued_ns > kReanchorNs) {
    absl::StatusOr<std::unique_ptr<Event>> event = executor->CreateEvent();
    if (!event.ok()) return nullptr;
    auto anchor = std::make_shared<internal::TraceAnchor>();
    anchor->event = std::move(*event);
    stream->ThenRecordEvent(anchor->event.get());
    // In stream order, so every later span's notification finds it set.
    stream->ThenNotify([anchor](const absl::Status&) { anchor->host_ns.store(TraceClockNs()); });
    state.anchor = std::move(anchor);
    state.anchor_enqueued_ns = now;
  }
  absl::StatusOr<std::unique_ptr<Event>> start = executor->CreateEvent();
  if (!start.ok()) return nullptr;
  std::unique_ptr<DeviceSpan> span(new DeviceSpan);
  span->anchor_ = state.anchor;
  span->start_ = std::move(*start);
  stream->ThenRecordEvent(span->start_.get());
  return span;
}

void DeviceSpan::End(std::unique_ptr<DeviceSpan> span, Stream* stream, Done done) {
  std::unique_ptr<Event> stop;
  if (span != nullptr && stream->parent() != nullptr) {
    absl::StatusOr<std::unique_ptr<Event>> event = stream->parent()->CreateEvent();
    if (event.ok()) {
      stop = std::move(*event);
      stream->ThenRecordEvent(stop.get());
    }
  }
  stream->ThenNotify([span = std::move(span), stop = std::move(stop),
                      done = std::move(done)](absl::Status outcome) mutable {
    int64_t start_ns = 0, end_ns = 0;
    if (outcome.ok() && span != nullptr && stop != nullptr) {
      EventInterface* anchor = span->anchor_->event->implementation();
      const int64_t anchor_ns = span->anchor_->host_ns.load();
      absl::StatusOr<absl::Duration> from = span->start_->implementation()->ElapsedSince(*anchor);
      absl::StatusOr<absl::Duration> to = stop->implementation()->ElapsedSince(*anchor);
      if (anchor_ns != 0 && from.ok() && to.ok()) {
        start_ns = anchor_ns + absl::ToInt64Nanoseconds(*from);
        end_ns = anchor_ns + absl::ToInt64Nanoseconds(*to);
      } else if (absl::StatusOr<absl::Duration> d =
                     stop->implementation()->ElapsedSince(*span->start_->implementation());
                 d.ok()) {
        end_ns = TraceClockNs();
        start_ns = end_ns - absl::ToInt64Nanoseconds(*d);
      }
      if (end_ns < start_ns) end_ns = start_ns;
    }
    // The events go before the callback returns: they are the stream's.
    stop.reset();
    span.reset();
    std::move(done)(std::move(outcome), start_ns, end_ns);
  });
}

}  // namespace rill
