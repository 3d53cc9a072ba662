// Cache-line prefetches for the engine's hot paths.
//
// Almost every line the engine touches per function was last written by
// another core. A read prefetch of such a line brings it in shared, and the
// write that follows (a lock, a count) then pays a second cross-core round
// trip to own it. PrefetchForWrite asks for the line in the exclusive state
// at once. GCC emits `prefetchw` for __builtin_prefetch(p, 1) only when
// built for a CPU that has it (-mprfchw), and our builds target generic
// x86-64; so on x86-64 this checks CPUID once and issues the instruction
// itself where the CPU supports it.
//
// Prefetches never fault: the pointer may be stale or point at freed memory
// (such hints are how these are used), and sanitizers do not instrument them.

#ifndef RILL_ENGINE_PREFETCH_H_
#define RILL_ENGINE_PREFETCH_H_

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace rill::engine::internal {

#if defined(__x86_64__) || defined(__i386__)
// CPUID.80000001H:ECX.PRFCHW[bit 8] ("3dnowprefetch" in /proc/cpuinfo).
inline bool CpuHasPrefetchW() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & (1u << 8)) != 0;
}
inline const bool kHasPrefetchW = CpuHasPrefetchW();
#endif

inline void PrefetchForRead(const void* p) { __builtin_prefetch(p, 0, 3); }

inline void PrefetchForWrite(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  if (kHasPrefetchW) {
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
    return;
  }
#endif
  __builtin_prefetch(p, 1, 3);
}

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_PREFETCH_H_
