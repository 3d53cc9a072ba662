#ifndef RILL_BASE_TRACE_CLOCK_H_
#define RILL_BASE_TRACE_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace rill {

// The clock of Rill's traces and verbose lines: nanoseconds since the Unix
// epoch, as std::chrono::system_clock reads it once per process, advanced by
// std::chrono::steady_clock from then on -- so it lines up with wall-clock
// logs and other tools' traces to within the system clock's accuracy, and
// never jumps or runs backwards while the process lives.
inline int64_t TraceClockNs() {
  using namespace std::chrono;
  static const int64_t offset =
      duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count() -
      duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
  return offset + duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace rill

#endif  // RILL_BASE_TRACE_CLOCK_H_
