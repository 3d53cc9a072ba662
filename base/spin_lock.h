#ifndef RILL_BASE_SPIN_LOCK_H_
#define RILL_BASE_SPIN_LOCK_H_

#include <atomic>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "rill/base/cpu_relax.h"
#include "rill/base/lock_count.h"

namespace rill {

// A lock for critical sections of a few dozen instructions that several
// threads take often (the engine's per-var state): it never sleeps in the
// kernel, spinning with a CPU pause and then yielding the core, so a holder
// that was preempted can run. For anything longer, use rill::Mutex.
// Thread-safe.
class ABSL_LOCKABLE SpinLock {
 public:
  SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    for (int i = 0; locked_.exchange(true, std::memory_order_acquire); ++i) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++i < 64) {
          CpuRelax();
        } else {
          std::this_thread::yield();
        }
      }
    }
    ++tls_lock_acquisitions;
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// Holds a SpinLock for its scope.
class ABSL_SCOPED_LOCKABLE SpinLockHolder {
 public:
  explicit SpinLockHolder(SpinLock* lock) ABSL_EXCLUSIVE_LOCK_FUNCTION(lock) : lock_(lock) {
    lock_->Lock();
  }
  ~SpinLockHolder() ABSL_UNLOCK_FUNCTION() { lock_->Unlock(); }
  SpinLockHolder(const SpinLockHolder&) = delete;
  SpinLockHolder& operator=(const SpinLockHolder&) = delete;

 private:
  SpinLock* lock_;
};

}  // namespace rill

#endif  // RILL_BASE_SPIN_LOCK_H_
