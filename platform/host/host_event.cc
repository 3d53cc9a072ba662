#include "platform/host/host_event.h"

#include "base/status_macros.h"

namespace rill {

uint64_t HostEventState::BeginRecord() {
  MutexLock lock(&mu_);
  outstanding_.insert(++recorded_);
  return recorded_;
}

void HostEventState::Complete(uint64_t generation, const absl::Status& status) {
  MutexLock lock(&mu_);
  outstanding_.erase(generation);
  status_ = status;
  completed_at_ = std::chrono::steady_clock::now();
  cv_.SignalAll();
}

absl::Status HostEventState::Wait(uint64_t generation) {
  MutexLock lock(&mu_);
  cv_.Wait(&mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !outstanding_.contains(generation);
  });
  return Annotate(status_, "the stream that recorded the event had failed");
}

uint64_t HostEventState::latest() const {
  MutexLock lock(&mu_);
  return recorded_;
}

EventInterface::State HostEventState::Poll() const {
  MutexLock lock(&mu_);
  if (!outstanding_.empty()) return EventInterface::State::kPending;
  return status_.ok() ? EventInterface::State::kComplete : EventInterface::State::kError;
}

std::chrono::steady_clock::time_point HostEventState::completed_at() const {
  MutexLock lock(&mu_);
  return completed_at_;
}

absl::StatusOr<absl::Duration> HostEvent::ElapsedSince(const EventInterface& start) {
  const auto* host_start = dynamic_cast<const HostEvent*>(&start);
  if (host_start == nullptr) {
    return absl::InvalidArgumentError("ElapsedSince: the start event is not a host event");
  }
  if (Poll() != State::kComplete || host_start->state_->Poll() != State::kComplete) {
    return absl::FailedPreconditionError("ElapsedSince: both events must have completed");
  }
  return absl::FromChrono(state_->completed_at() - host_start->state_->completed_at());
}

}  // namespace rill
