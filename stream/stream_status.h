#ifndef RILL_STREAM_STREAM_STATUS_H_
#define RILL_STREAM_STREAM_STATUS_H_

#include <atomic>

#include "absl/status/status.h"
#include "base/mutex.h"

namespace rill {

// The error state of one stream: keeps the first error and nothing after it.
// Shared by the front Stream (errors found when a call is enqueued) and the
// backend stream (errors found when work runs, e.g. a host callback that
// fails), which records asynchronous failures here and skips later work.
// Thread-safe.
class StreamStatus {
 public:
  // Keeps `status` if it is an error and no error was kept before.
  void Update(const absl::Status& status) {
    if (status.ok()) return;
    MutexLock lock(&mu_);
    if (first_error_.ok()) {
      first_error_ = status;
      failed_.store(true, std::memory_order_release);
    }
  }
  bool ok() const { return !failed_.load(std::memory_order_acquire); }
  absl::Status Get() const {
    if (ok()) return absl::OkStatus();
    MutexLock lock(&mu_);
    return first_error_;
  }

 private:
  mutable Mutex mu_;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
};

}  // namespace rill

#endif  // RILL_STREAM_STREAM_STATUS_H_
