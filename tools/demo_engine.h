#ifndef RILL_TOOLS_DEMO_ENGINE_H_
#define RILL_TOOLS_DEMO_ENGINE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rill::demo {

struct EngineDemoResult {
  std::string devices;  // "host:0 + host:1"
  int functions = 0;    // Pushed.
  absl::Duration wall_time;
  double max_abs_error = 0;
};

// A training-like loop on the dependency engine across two devices of the
// host platform (one if only one exists): copy x in on device 0, y = 2x
// there, copy y to device 1, out = w * y (reads w), g = y + 1, then the
// in-place update w += g, which must wait for the earlier read of w; the
// host reads out and w back and checks them against a serial reference.
// With `trace_path`, writes the engine's Chrome trace there.
absl::StatusOr<EngineDemoResult> RunEngineDemo(int iterations, int64_t n,
                                               const std::string& trace_path);

}  // namespace rill::demo

#endif  // RILL_TOOLS_DEMO_ENGINE_H_
