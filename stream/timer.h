#ifndef RILL_STREAM_TIMER_H_
#define RILL_STREAM_TIMER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rill/stream/event.h"

namespace rill {

class StreamExecutor;

// Measures device time between two points of one stream:
//   RILL_ASSIGN_OR_RETURN(auto timer, Timer::Create(executor));
//   stream.ThenStartTimer(timer.get()).ThenLaunch(...).ThenStopTimer(timer.get());
//   RILL_ASSIGN_OR_RETURN(absl::Duration t, timer->Elapsed());  // waits for the stop
// Built on two events of the executor. Thread-compatible.
class Timer {
 public:
  static absl::StatusOr<std::unique_ptr<Timer>> Create(StreamExecutor* executor);

  // Blocks until the stop point has run, then returns the device time
  // between start and stop. FailedPrecondition if start or stop was never
  // enqueued; the stream's error if it failed before the stop.
  absl::StatusOr<absl::Duration> Elapsed();

  Event* start_event() { return start_.get(); }
  Event* stop_event() { return stop_.get(); }

 private:
  Timer(std::unique_ptr<Event> start, std::unique_ptr<Event> stop)
      : start_(std::move(start)), stop_(std::move(stop)) {}
  std::unique_ptr<Event> start_;
  std::unique_ptr<Event> stop_;
};

}  // namespace rill

#endif  // RILL_STREAM_TIMER_H_
