#ifndef RILL_PLATFORM_HOST_HOST_EVENT_H_
#define RILL_PLATFORM_HOST_HOST_EVENT_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "base/mutex.h"
#include "executor/stream_executor_interface.h"

namespace rill {

// The completion record of a host event, shared by the event and by the
// stream work that records or waits on it (so the event may be destroyed
// while that work is pending). Each record gets a generation number when it
// is enqueued; a wait enqueued later waits for the generation it saw.
// Thread-safe.
class HostEventState {
 public:
  // Called when a record is enqueued; returns its generation.
  uint64_t BeginRecord();
  // Called when the record runs; `status` is the recording stream's error
  // (kept as the event's status: the latest completion's).
  void Complete(uint64_t generation, const absl::Status& status);
  // Blocks until `generation` has completed; returns its stream's error.
  absl::Status Wait(uint64_t generation);
  uint64_t latest() const;
  EventInterface::State Poll() const;
  // When the latest completed record ran; valid once Poll() is not pending.
  std::chrono::steady_clock::time_point completed_at() const;

 private:
  mutable Mutex mu_;
  CondVar cv_;
  uint64_t recorded_ ABSL_GUARDED_BY(mu_) = 0;
  // Records enqueued and not yet run: with records on several streams they
  // may complete out of order.
  absl::flat_hash_set<uint64_t> outstanding_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point completed_at_ ABSL_GUARDED_BY(mu_);
};

// A host event: a handle on a shared HostEventState. Thread-safe.
class HostEvent : public EventInterface {
 public:
  HostEvent() : state_(std::make_shared<HostEventState>()) {}
  State Poll() override { return state_->Poll(); }
  absl::Status Synchronize() override { return state_->Wait(state_->latest()); }
  absl::AnyInvocable<absl::Status() &&> WaiterForLatestRecord() override {
    return [state = state_, generation = state_->latest()] { return state->Wait(generation); };
  }
  absl::StatusOr<absl::Duration> ElapsedSince(const EventInterface& start) override;
  const std::shared_ptr<HostEventState>& state() const { return state_; }

 private:
  std::shared_ptr<HostEventState> state_;
};

}  // namespace rill

#endif  // RILL_PLATFORM_HOST_HOST_EVENT_H_
