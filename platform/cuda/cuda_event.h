#ifndef RILL_PLATFORM_CUDA_CUDA_EVENT_H_
#define RILL_PLATFORM_CUDA_CUDA_EVENT_H_

// rill:internal -- not installed: the CUDA backend's implementation; users include cuda_platform.h.

#include <cuda_runtime_api.h>

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor_interface.h"

namespace rill {

// One record of a CUDA event: a timing cudaEvent_t and the recording
// stream's error at the record (OK when it had not failed: a record on a
// failed stream completes at once carrying that error, so waiters learn of
// the failure instead of consuming stale data).
class CudaEventRecord {
 public:
  static absl::StatusOr<std::shared_ptr<CudaEventRecord>> Create(int ordinal);
  ~CudaEventRecord();
  CudaEventRecord(const CudaEventRecord&) = delete;
  CudaEventRecord& operator=(const CudaEventRecord&) = delete;

  cudaEvent_t event() const { return event_; }
  int ordinal() const { return ordinal_; }
  absl::Status error() const;
  void set_error(absl::Status error);
  // Blocks until the record completes; the recording stream's error first.
  absl::Status Synchronize() const;

 private:
  CudaEventRecord(int ordinal, cudaEvent_t event) : ordinal_(ordinal), event_(event) {}
  const int ordinal_;
  const cudaEvent_t event_;
  mutable Mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

// A CUDA event. CUDA moves an event when it is recorded again, but a wait
// taken before keeps the record it saw (WaiterForLatestRecord): so a record
// that a waiter still holds is left alone and the next record gets a fresh
// cudaEvent_t; otherwise the same one is re-recorded (no allocation on the
// engine's hot path). Thread-safe.
class CudaEvent : public EventInterface {
 public:
  static absl::StatusOr<std::unique_ptr<CudaEvent>> Create(int ordinal);

  State Poll() override;
  absl::Status Synchronize() override;
  absl::StatusOr<absl::Duration> ElapsedSince(const EventInterface& start) override;
  absl::AnyInvocable<absl::Status() &&> WaiterForLatestRecord() override;
  void* native_handle() override { return current()->event(); }

  int ordinal() const { return ordinal_; }
  // The record a new cudaEventRecord should use (fresh when the latest is
  // held by a waiter), made current; CudaStream::RecordEvent calls it.
  absl::StatusOr<std::shared_ptr<CudaEventRecord>> NextRecord();
  std::shared_ptr<CudaEventRecord> current() const;

 private:
  CudaEvent(int ordinal, std::shared_ptr<CudaEventRecord> record)
      : ordinal_(ordinal), current_(std::move(record)) {}

  const int ordinal_;
  mutable Mutex mu_;
  std::shared_ptr<CudaEventRecord> current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_PLATFORM_CUDA_CUDA_EVENT_H_
