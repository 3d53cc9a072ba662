#include "rill/platform/opencl/opencl_event.h"

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/platform/opencl/opencl_status.h"

namespace rill {

OpenClEventState::~OpenClEventState() {
  MutexLock lock(&mu_);
  if (marker_ != nullptr) clReleaseEvent(marker_);
}

uint64_t OpenClEventState::BeginRecord() {
  MutexLock lock(&mu_);
  outstanding_.insert(++recorded_);
  return recorded_;
}

void OpenClEventState::Complete(uint64_t generation, absl::Status status, cl_event marker) {
  MutexLock lock(&mu_);
  outstanding_.erase(generation);
  status_ = std::move(status);
  if (marker_ != nullptr) clReleaseEvent(marker_);
  marker_ = marker;
  cv_.SignalAll();
}

OpenClRecord OpenClEventState::WaitRun(uint64_t generation) {
  MutexLock lock(&mu_);
  cv_.Wait(&mu_,
           [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !outstanding_.contains(generation); });
  if (marker_ != nullptr) clRetainEvent(marker_);
  return OpenClRecord{status_, marker_};
}

uint64_t OpenClEventState::latest() const {
  MutexLock lock(&mu_);
  return recorded_;
}

cl_event OpenClEventState::marker() const {
  MutexLock lock(&mu_);
  return marker_;
}

absl::Status MarkerStatus(cl_event marker) {
  cl_int state = CL_QUEUED;
  RILL_RETURN_IF_ERROR(ClStatus(
      clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state, nullptr),
      "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)"));
  if (state == CL_COMPLETE) return absl::OkStatus();
  if (state < 0) return ClStatus(state, "a device command before the event failed");
  return absl::FailedPreconditionError("the event's marker has not completed yet");
}

EventInterface::State OpenClEventState::Poll() const {
  MutexLock lock(&mu_);
  if (!outstanding_.empty()) return EventInterface::State::kPending;
  if (!status_.ok()) return EventInterface::State::kError;
  if (marker_ == nullptr) return EventInterface::State::kComplete;
  absl::Status marker = MarkerStatus(marker_);
  if (marker.ok()) return EventInterface::State::kComplete;
  return marker.code() == absl::StatusCode::kFailedPrecondition ? EventInterface::State::kPending
                                                                : EventInterface::State::kError;
}

absl::Status OpenClEventState::Synchronize(uint64_t generation) {
  OpenClRecord record = WaitRun(generation);
  absl::Status status = Annotate(record.status, "the stream that recorded the event had failed");
  if (record.marker != nullptr) {
    if (status.ok()) {
      status = ClStatus(clWaitForEvents(1, &record.marker), "clWaitForEvents(event marker)");
      if (status.ok()) status = MarkerStatus(record.marker);
    }
    clReleaseEvent(record.marker);
  }
  return status;
}

namespace {

absl::StatusOr<cl_ulong> EndTime(const OpenClEventState& state) {
  cl_event marker = state.marker();
  if (marker == nullptr) {
    return absl::FailedPreconditionError("ElapsedSince: an event has no completed device marker");
  }
  cl_ulong end = 0;
  RILL_RETURN_IF_ERROR(ClStatus(
      clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr),
      "clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)"));
  return end;
}

}  // namespace

absl::StatusOr<absl::Duration> OpenClEvent::ElapsedSince(const EventInterface& start) {
  const auto* cl_start = dynamic_cast<const OpenClEvent*>(&start);
  if (cl_start == nullptr) {
    return absl::InvalidArgumentError("ElapsedSince: the start event is not an OpenCL event");
  }
  if (Poll() != State::kComplete || cl_start->state_->Poll() != State::kComplete) {
    return absl::FailedPreconditionError("ElapsedSince: both events must have completed");
  }
  RILL_ASSIGN_OR_RETURN(cl_ulong end, EndTime(*state_));
  RILL_ASSIGN_OR_RETURN(cl_ulong begin, EndTime(*cl_start->state_));
  const int64_t ns = static_cast<int64_t>(end) - static_cast<int64_t>(begin);
  return absl::Nanoseconds(ns);
}

}  // namespace rill
