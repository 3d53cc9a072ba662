#ifndef RILL_PLATFORM_CUDA_CUDA_EVENT_H_
#define RILL_PLATFORM_CUDA_CUDA_EVENT_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "base/mutex.h"
#include "executor/stream_executor_interface.h"

namespace rill {

// A timing cudaEvent of one device. A record on a stream that had already
// failed completes at once carrying that stream's error, so waiters learn
// of the failure instead of consuming stale data. Thread-safe.
class CudaEvent : public EventInterface {
 public:
  static absl::StatusOr<std::unique_ptr<CudaEvent>> Create(int ordinal);
  ~CudaEvent() override;

  State Poll() override;
  absl::Status Synchronize() override;
  absl::StatusOr<absl::Duration> ElapsedSince(const EventInterface& start) override;
  void* native_handle() override { return event_; }

  cudaEvent_t event() const { return event_; }
  int ordinal() const { return ordinal_; }
  // Called by CudaStream::RecordEvent: `error` is the recording stream's
  // state at the record (OK when it had not failed).
  void SetRecordError(absl::Status error);
  absl::Status record_error() const;

 private:
  CudaEvent(int ordinal, cudaEvent_t event) : ordinal_(ordinal), event_(event) {}

  const int ordinal_;
  const cudaEvent_t event_;
  mutable Mutex mu_;
  absl::Status record_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_PLATFORM_CUDA_CUDA_EVENT_H_
