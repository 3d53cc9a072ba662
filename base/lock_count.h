#ifndef RILL_BASE_LOCK_COUNT_H_
#define RILL_BASE_LOCK_COUNT_H_

#include <cstdint>

namespace rill {

// Locks (rill::Mutex and SpinLock) the calling thread has taken: the
// benchmarks read it before and after a call to say how many locks the call
// costs (bench/ops_bench: locks per op push). One thread-local increment
// per acquisition.
inline thread_local uint64_t tls_lock_acquisitions = 0;

}  // namespace rill

#endif  // RILL_BASE_LOCK_COUNT_H_
