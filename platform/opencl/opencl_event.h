#ifndef RILL_PLATFORM_OPENCL_OPENCL_EVENT_H_
#define RILL_PLATFORM_OPENCL_OPENCL_EVENT_H_

// rill:internal -- not installed: the OpenCL backend's implementation; users include
// opencl_platform.h.

#include <CL/cl.h>

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor_interface.h"

namespace rill {

// One record of an OpenCL event: the recording stream's status when the
// record ran, and the marker (a retained cl_event) that completes when the
// device reaches that point. A failed stream enqueues no marker.
struct OpenClRecord {
  absl::Status status;
  cl_event marker = nullptr;  // Retained by whoever holds the record.
};

// The completion record of an OpenCL event, shared by the event and by the
// stream work that records or waits on it, so the event may be destroyed
// while that work is pending. A record gets a generation when it is
// enqueued; it "runs" when the recording stream's worker reaches it (after
// that stream's earlier host callbacks) and completes when its marker does.
// Thread-safe.
class OpenClEventState {
 public:
  OpenClEventState() = default;
  ~OpenClEventState();
  OpenClEventState(const OpenClEventState&) = delete;
  OpenClEventState& operator=(const OpenClEventState&) = delete;

  // Called when a record is enqueued; returns its generation.
  uint64_t BeginRecord();
  // Called when the record runs. Takes over `marker`'s reference.
  void Complete(uint64_t generation, absl::Status status, cl_event marker);
  // Blocks until the record `generation` has run (not until its marker
  // completes) and returns the latest record, its marker retained for the
  // caller.
  OpenClRecord WaitRun(uint64_t generation);
  uint64_t latest() const;
  EventInterface::State Poll() const;
  // Blocks until the record `generation` has run and the latest record's
  // marker then completes; its stream's error, or the marker's failure.
  absl::Status Synchronize(uint64_t generation);
  // The latest marker (not retained), nullptr when none.
  cl_event marker() const;

 private:
  mutable Mutex mu_;
  CondVar cv_;
  uint64_t recorded_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_set<uint64_t> outstanding_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  cl_event marker_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// Checks a marker's execution status: OK when CL_COMPLETE, the failure when
// negative, FailedPrecondition while it is still running.
absl::Status MarkerStatus(cl_event marker);

// An OpenCL event: a handle on a shared OpenClEventState. Timing uses the
// markers' CL_PROFILING_COMMAND_END (streams are created with profiling
// enabled), i.e. device time. Thread-safe.
class OpenClEvent : public EventInterface {
 public:
  OpenClEvent() : state_(std::make_shared<OpenClEventState>()) {}
  State Poll() override { return state_->Poll(); }
  absl::Status Synchronize() override { return state_->Synchronize(state_->latest()); }
  absl::AnyInvocable<absl::Status() &&> WaiterForLatestRecord() override {
    return
        [state = state_, generation = state_->latest()] { return state->Synchronize(generation); };
  }
  absl::StatusOr<absl::Duration> ElapsedSince(const EventInterface& start) override;
  // The latest record's marker (cl_event), nullptr before the first record
  // has run or when its stream had failed.
  void* native_handle() override { return state_->marker(); }
  const std::shared_ptr<OpenClEventState>& state() const { return state_; }

 private:
  std::shared_ptr<OpenClEventState> state_;
};

}  // namespace rill

#endif  // RILL_PLATFORM_OPENCL_OPENCL_EVENT_H_
