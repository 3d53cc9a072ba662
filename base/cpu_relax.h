#ifndef RILL_BASE_CPU_RELAX_H_
#define RILL_BASE_CPU_RELAX_H_

namespace rill {

// Tells the core that the calling thread is spinning on a memory location
// (x86 `pause`, Arm `yield`): it saves power, yields the core's resources to
// a sibling hyperthread and avoids the memory-order flush when the wait
// ends. A no-op where there is no such instruction.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace rill

#endif  // RILL_BASE_CPU_RELAX_H_
