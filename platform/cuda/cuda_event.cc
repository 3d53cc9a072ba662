#include "rill/platform/cuda/cuda_event.h"

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"

namespace rill {

absl::StatusOr<std::shared_ptr<CudaEventRecord>> CudaEventRecord::Create(int ordinal) {
  CudaDeviceScope scope(ordinal);
  RILL_RETURN_IF_ERROR(scope.status());
  cudaEvent_t event = nullptr;
  RILL_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDefault));
  return std::shared_ptr<CudaEventRecord>(new CudaEventRecord(ordinal, event));
}

CudaEventRecord::~CudaEventRecord() {
  CudaDeviceScope scope(ordinal_);
  cudaEventDestroy(event_);
}

absl::Status CudaEventRecord::error() const {
  MutexLock lock(&mu_);
  return error_;
}

void CudaEventRecord::set_error(absl::Status error) {
  MutexLock lock(&mu_);
  error_ = std::move(error);
}

absl::Status CudaEventRecord::Synchronize() const {
  absl::Status failed = error();
  if (!failed.ok()) return Annotate(failed, "the stream that recorded the event had failed");
  CudaDeviceScope scope(ordinal_);
  RILL_RETURN_IF_ERROR(scope.status());
  return CudaStatus(cudaEventSynchronize(event_), "cudaEventSynchronize");
}

absl::StatusOr<std::unique_ptr<CudaEvent>> CudaEvent::Create(int ordinal) {
  RILL_ASSIGN_OR_RETURN(std::shared_ptr<CudaEventRecord> record, CudaEventRecord::Create(ordinal));
  return std::unique_ptr<CudaEvent>(new CudaEvent(ordinal, std::move(record)));
}

std::shared_ptr<CudaEventRecord> CudaEvent::current() const {
  MutexLock lock(&mu_);
  return current_;
}

absl::StatusOr<std::shared_ptr<CudaEventRecord>> CudaEvent::NextRecord() {
  {
    MutexLock lock(&mu_);
    if (current_.use_count() == 1) return current_;  // Nobody holds it: re-record.
  }
  RILL_ASSIGN_OR_RETURN(std::shared_ptr<CudaEventRecord> fresh, CudaEventRecord::Create(ordinal_));
  MutexLock lock(&mu_);
  current_ = fresh;
  return fresh;
}

EventInterface::State CudaEvent::Poll() {
  std::shared_ptr<CudaEventRecord> record = current();
  if (!record->error().ok()) return State::kError;
  CudaDeviceScope scope(ordinal_);
  const cudaError_t error = cudaEventQuery(record->event());
  if (error == cudaSuccess) return State::kComplete;
  if (error == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return State::kPending;
  }
  return State::kError;
}

absl::Status CudaEvent::Synchronize() { return current()->Synchronize(); }

absl::AnyInvocable<absl::Status() &&> CudaEvent::WaiterForLatestRecord() {
  return [record = current()] { return record->Synchronize(); };
}

absl::StatusOr<absl::Duration> CudaEvent::ElapsedSince(const EventInterface& start) {
  const auto* cuda_start = dynamic_cast<const CudaEvent*>(&start);
  if (cuda_start == nullptr) {
    return absl::InvalidArgumentError("ElapsedSince: the start event is not a CUDA event");
  }
  CudaDeviceScope scope(ordinal_);
  float ms = 0;
  const cudaError_t error =
      cudaEventElapsedTime(&ms, cuda_start->current()->event(), current()->event());
  if (error == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return absl::FailedPreconditionError("ElapsedSince: both events must have completed");
  }
  RILL_RETURN_IF_ERROR(CudaStatus(error, "cudaEventElapsedTime"));
  return absl::Microseconds(static_cast<double>(ms) * 1000.0);
}

}  // namespace rill
