#ifndef RILL_PLATFORM_HOST_HOST_EVENT_H_
#define RILL_PLATFORM_HOST_HOST_EVENT_H_

// rill:internal -- not installed: the host backend's implementation; users include host_platform.h.

#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor_interface.h"

namespace rill {

// The completion record of a host event, shared by the event and by the
// stream work that records or waits on it (so the event may be destroyed
// while that work is pending). Each record gets a generation number when it
// is enqueued; a wait enqueued later waits for the generation it saw and
// gets that record's result (its stream's error), even when records on
// several streams complete out of order or the event is recorded again
// before the wait runs. Thread-safe.
class HostEventState {
 public:
  // Called when a record is enqueued; returns its generation.
  uint64_t BeginRecord();
  // Called when the record runs; `status` is the recording stream's error.
  void Complete(uint64_t generation, const absl::Status& status);
  // A wait for the latest record, taken now and run later (on a stream):
  // it blocks until that record has run and returns its stream's error.
  static absl::AnyInvocable<absl::Status() &&> WaiterForLatest(
      std::shared_ptr<HostEventState> state);
  // Blocks until the latest record has run; returns its stream's error.
  absl::Status WaitForLatest();
  // Pending while any record has not run; then the latest record's result.
  EventInterface::State Poll() const;
  // When the latest record ran; valid once Poll() is not pending.
  std::chrono::steady_clock::time_point completed_at() const;

 private:
  struct Result {
    absl::Status status;
    std::chrono::steady_clock::time_point at;
  };
  // Keeps the latest record's result until released (a waiter holds it).
  uint64_t Hold();
  void Release(uint64_t generation);
  absl::Status Wait(uint64_t generation);
  // Drops a result nobody can ask for any more.
  void ForgetLocked(uint64_t generation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  CondVar cv_;
  uint64_t recorded_ ABSL_GUARDED_BY(mu_) = 0;
  // Records enqueued and not yet run: with records on several streams they
  // may complete out of order.
  absl::flat_hash_set<uint64_t> outstanding_ ABSL_GUARDED_BY(mu_);
  // Results of records that ran and can still be asked for: the latest,
  // and those a pending wait holds (`held_`: waits per generation).
  absl::flat_hash_map<uint64_t, Result> results_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, int> held_ ABSL_GUARDED_BY(mu_);
};

// A host event: a handle on a shared HostEventState. Thread-safe.
class HostEvent : public EventInterface {
 public:
  HostEvent() : state_(std::make_shared<HostEventState>()) {}
  State Poll() override { return state_->Poll(); }
  absl::Status Synchronize() override { return state_->WaitForLatest(); }
  absl::AnyInvocable<absl::Status() &&> WaiterForLatestRecord() override {
    return HostEventState::WaiterForLatest(state_);
  }
  absl::StatusOr<absl::Duration> ElapsedSince(const EventInterface& start) override;
  const std::shared_ptr<HostEventState>& state() const { return state_; }

 private:
  std::shared_ptr<HostEventState> state_;
};

}  // namespace rill

#endif  // RILL_PLATFORM_HOST_HOST_EVENT_H_
