#ifndef RILL_BASE_SLOW_NOTICE_H_
#define RILL_BASE_SLOW_NOTICE_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"

namespace rill {

// A sign of life for work that is usually quick but can be slow the first
// time (an OpenCL program build, CLBlast compiling its kernels on a cold
// PoCL cache). Scope the work with a SlowWorkNotice: if the work is still
// running after `delay`, `message` is logged once at WARNING (visible at the
// default log level) with the caller's file and line; when it then ends, a
// second line says how long it took. Fast work prints nothing.
//
// One process-wide watchdog thread, started on first use and never stopped,
// serves every notice; constructing and destroying a notice takes a mutex
// and signals it, with no thread created, so it may wrap calls that are
// slow only the first time. The destructor never waits for the delay.
//
//   {
//     SlowWorkNotice notice("compiling OpenCL kernels for opencl:0 (first use; "
//                           "PoCL caches them, later runs are fast)...");
//     clBuildProgram(...);
//   }  // After 1 s of silence: "[rill W ...] compiling ...", then "... done in 7.8 s".
//
// Thread-safe; each notice belongs to the thread that scopes the work.
// Where a notice was scoped: std::source_location's part that both GCC and
// clang (with libstdc++ 12, which lacks it for clang) provide.
struct SourcePlace {
  static SourcePlace current(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    return SourcePlace{file, line};
  }
  const char* file_name() const { return file; }
  int line() const { return number; }
  const char* file = "";
  int number = 0;
};

class SlowWorkNotice {
 public:
  explicit SlowWorkNotice(std::string message, absl::Duration delay = absl::Seconds(1),
                          SourcePlace where = SourcePlace::current());
  ~SlowWorkNotice();
  SlowWorkNotice(const SlowWorkNotice&) = delete;
  SlowWorkNotice& operator=(const SlowWorkNotice&) = delete;

 private:
  uint64_t id_;  // With deadline_, the key in the watchdog's queue.
  absl::Time start_;
  absl::Time deadline_;
};

}  // namespace rill

#endif  // RILL_BASE_SLOW_NOTICE_H_
