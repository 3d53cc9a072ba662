#include "platform/cuda/cuda_event.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "platform/cuda/cuda_plugin.h"
#include "platform/cuda/cuda_status.h"

namespace rill {

absl::StatusOr<std::unique_ptr<CudaEvent>> CudaEvent::Create(int ordinal) {
  CudaDeviceScope scope(ordinal);
  RILL_RETURN_IF_ERROR(scope.status());
  cudaEvent_t event = nullptr;
  RILL_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDefault));
  return std::unique_ptr<CudaEvent>(new CudaEvent(ordinal, event));
}

CudaEvent::~CudaEvent() {
  CudaDeviceScope scope(ordinal_);
  cudaEventDestroy(event_);
}

void CudaEvent::SetRecordError(absl::Status error) {
  MutexLock lock(&mu_);
  record_error_ = std::move(error);
}

absl::Status CudaEvent::record_error() const {
  MutexLock lock(&mu_);
  return record_error_;
}

EventInterface::State CudaEvent::Poll() {
  if (!record_error().ok()) return State::kError;
  CudaDeviceScope scope(ordinal_);
  const cudaError_t error = cudaEventQuery(event_);
  if (error == cudaSuccess) return State::kComplete;
  if (error == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return State::kPending;
  }
  return State::kError;
}

absl::Status CudaEvent::Synchronize() {
  absl::Status error = record_error();
  if (!error.ok()) return Annotate(error, "the stream that recorded the event had failed");
  CudaDeviceScope scope(ordinal_);
  RILL_RETURN_IF_ERROR(scope.status());
  return CudaStatus(cudaEventSynchronize(event_), "cudaEventSynchronize");
}

absl::StatusOr<absl::Duration> CudaEvent::ElapsedSince(const EventInterface& start) {
  const auto* cuda_start = dynamic_cast<const CudaEvent*>(&start);
  if (cuda_start == nullptr) {
    return absl::InvalidArgumentError("ElapsedSince: the start event is not a CUDA event");
  }
  CudaDeviceScope scope(ordinal_);
  float ms = 0;
  const cudaError_t error = cudaEventElapsedTime(&ms, cuda_start->event_, event_);
  if (error == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return absl::FailedPreconditionError("ElapsedSince: both events must have completed");
  }
  RILL_RETURN_IF_ERROR(CudaStatus(error, "cudaEventElapsedTime"));
  return absl::Microseconds(static_cast<double>(ms) * 1000.0);
}

}  // namespace rill
