#include "rill/platform/host/host_event.h"

#include "rill/base/status_macros.h"

namespace rill {

uint64_t HostEventState::BeginRecord() {
  MutexLock lock(&mu_);
  outstanding_.insert(++recorded_);
  ForgetLocked(recorded_ - 1);  // No longer the latest.
  return recorded_;
}

void HostEventState::Complete(uint64_t generation, const absl::Status& status) {
  MutexLock lock(&mu_);
  outstanding_.erase(generation);
  if (generation == recorded_ || held_.contains(generation)) {
    results_[generation] = Result{status, std::chrono::steady_clock::now()};
  }
  cv_.SignalAll();
}

uint64_t HostEventState::Hold() {
  MutexLock lock(&mu_);
  ++held_[recorded_];
  return recorded_;
}

void HostEventState::Release(uint64_t generation) {
  MutexLock lock(&mu_);
  auto it = held_.find(generation);
  if (it == held_.end() || --it->second > 0) return;
  held_.erase(it);
  ForgetLocked(generation);
}

void HostEventState::ForgetLocked(uint64_t generation) {
  if (generation != recorded_ && !held_.contains(generation)) results_.erase(generation);
}

absl::Status HostEventState::Wait(uint64_t generation) {
  MutexLock lock(&mu_);
  cv_.Wait(&mu_,
           [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !outstanding_.contains(generation); });
  auto it = results_.find(generation);
  if (it == results_.end()) return absl::OkStatus();  // Generation 0: never recorded.
  return Annotate(it->second.status, "the stream that recorded the event had failed");
}

absl::AnyInvocable<absl::Status() &&> HostEventState::WaiterForLatest(
    std::shared_ptr<HostEventState> state) {
  // Holds the record's result until the wait has run or is dropped (a
  // failed stream skips it).
  struct Held {
    std::shared_ptr<HostEventState> state;
    uint64_t generation;
    ~Held() { state->Release(generation); }
  };
  const uint64_t generation = state->Hold();
  std::shared_ptr<Held> held(new Held{std::move(state), generation});  // No temporary to release.
  return [held] { return held->state->Wait(held->generation); };
}

absl::Status HostEventState::WaitForLatest() {
  const uint64_t generation = Hold();
  absl::Status status = Wait(generation);
  Release(generation);
  return status;
}

EventInterface::State HostEventState::Poll() const {
  MutexLock lock(&mu_);
  if (!outstanding_.empty()) return EventInterface::State::kPending;
  auto it = results_.find(recorded_);
  return it == results_.end() || it->second.status.ok() ? EventInterface::State::kComplete
                                                        : EventInterface::State::kError;
}

std::chrono::steady_clock::time_point HostEventState::completed_at() const {
  MutexLock lock(&mu_);
  auto it = results_.find(recorded_);
  return it == results_.end() ? std::chrono::steady_clock::time_point() : it->second.at;
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
