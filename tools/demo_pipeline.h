#ifndef RILL_TOOLS_DEMO_PIPELINE_H_
#define RILL_TOOLS_DEMO_PIPELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rill/executor/stream_executor.h"

namespace rill::demo {

// One timed step of a demo pipeline.
struct Step {
  std::string name;   // "h2d", "saxpy", ...
  std::string where;  // The stream that ran it.
  absl::Duration device_time;
};

struct PipelineResult {
  std::vector<Step> steps;
  absl::Duration wall_time;  // Host time from first enqueue to verified result.
  double max_abs_error = 0;  // Against the host reference.
};

// Runs the copy -> kernel -> cross-stream wait -> kernel -> copy pipeline on
// `executor` over `n` floats and checks the result against a host reference.
// Error statuses carry the failing stream's first error.
absl::StatusOr<PipelineResult> RunCopyKernelPipeline(StreamExecutor* executor, int64_t n);

}  // namespace rill::demo

#endif  // RILL_TOOLS_DEMO_PIPELINE_H_
