#include "rill/stream/timer.h"

#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"

namespace rill {

absl::StatusOr<std::unique_ptr<Timer>> Timer::Create(StreamExecutor* executor) {
  if (executor == nullptr) return absl::InvalidArgumentError("Timer::Create: executor is null");
  RILL_RETURN_IF_ERROR(executor->Supports(Feature::kTimers));
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<Event> start, executor->CreateEvent());
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<Event> stop, executor->CreateEvent());
  return std::unique_ptr<Timer>(new Timer(std::move(start), std::move(stop)));
}

absl::StatusOr<absl::Duration> Timer::Elapsed() {
  if (!start_->recorded() || !stop_->recorded()) {
    return absl::FailedPreconditionError(
        "Timer::Elapsed: enqueue ThenStartTimer and ThenStopTimer first");
  }
  RILL_RETURN_IF_ERROR(stop_->Synchronize());
  RILL_RETURN_IF_ERROR(start_->Synchronize());
  return stop_->implementation()->ElapsedSince(*start_->implementation());
}

}  // namespace rill
