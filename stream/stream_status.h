#ifndef RILL_STREAM_STREAM_STATUS_H_
#define RILL_STREAM_STREAM_STATUS_H_

#include <atomic>

#include "absl/status/status.h"
#include "rill/base/mutex.h"

namespace rill {

// The error state of one stream, shared by the front Stream and the backend
// stream. It has two views, because an error has a place in the stream's
// order:
//
//  - the front's view (ok(), Get()): the first error known, whenever and
//    wherever it was found. Once it is set, later Then* calls are skipped.
//  - the queue's view (queue_ok(), QueueGet()): the first error that the
//    work running now comes after. Backends skip queued work, and complete
//    event records and notifications, by this view.
//
// An error found when work runs (a failing host callback, a device error)
// is at the place of that work: Update() sets both views. An error found
// when a call is made (bad arguments) is at the place of that call, after
// everything already queued: UpdateAtFront() sets only the front's view,
// and the front then queues a marker whose task returns the error, so the
// queue's view turns failed when the work before the call has run (work
// queued before a bad call still runs, and events recorded before it
// complete without its error). Thread-safe.
class StreamStatus {
 public:
  // An error at the place of the work running now: kept as the first error
  // of each view that has none.
  void Update(const absl::Status& status) {
    if (status.ok()) return;
    MutexLock lock(&mu_);
    if (first_error_.ok()) {
      first_error_ = status;
      failed_.store(true, std::memory_order_release);
    }
    if (queue_error_.ok()) {
      queue_error_ = status;
      queue_failed_.store(true, std::memory_order_release);
    }
  }
  // An error at the place of a call being made: kept as the front's first
  // error if it has none. Returns whether it was kept (the caller then
  // queues the marker that carries it into the queue's view).
  bool UpdateAtFront(const absl::Status& status) {
    if (status.ok()) return false;
    MutexLock lock(&mu_);
    if (!first_error_.ok()) return false;
    first_error_ = status;
    failed_.store(true, std::memory_order_release);
    return true;
  }

  // The front's view: no error known.
  bool ok() const { return !failed_.load(std::memory_order_acquire); }
  // The first error known (OK while none).
  absl::Status Get() const {
    if (ok()) return absl::OkStatus();
    MutexLock lock(&mu_);
    return first_error_;
  }
  // The queue's view: no error at or before the work running now.
  bool queue_ok() const { return !queue_failed_.load(std::memory_order_acquire); }
  // The first error at or before the work running now (OK while none).
  absl::Status QueueGet() const {
    if (queue_ok()) return absl::OkStatus();
    MutexLock lock(&mu_);
    return queue_error_;
  }

 private:
  mutable Mutex mu_;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  absl::Status queue_error_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
  std::atomic<bool> queue_failed_{false};
};

}  // namespace rill

#endif  // RILL_STREAM_STREAM_STATUS_H_
