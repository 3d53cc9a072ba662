#ifndef RILL_TOOLS_DEMO_DNN_H_
#define RILL_TOOLS_DEMO_DNN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rill/executor/stream_executor.h"

namespace rill::demo {

struct DnnDemoResult {
  std::string plugin;     // The executor's DNN chain ("onednn", "xnnpack,onednn", "cudnn").
  std::string layout;     // "NCHW", or "NHWC" when the chain's first plugin computes only that.
  std::string fallbacks;  // Calls handed on along the chain: "2 to onednn"; empty when none.
  absl::Duration device_time;  // Timer around the five layers.
  double max_abs_error = 0;    // Against the naive host reference.
};

// A small forward pass through the executor's DNN plugin chain on one stream:
// convolution 3x3 (pad 1) -> bias add -> relu -> 2x2 max pool -> softmax
// over channels, on a 2 x 3 x 16 x 16 input with 8 filters, checked against
// naive loops on the host. Unimplemented (with the reason) when the
// executor's platform has no DNN plugin.
absl::StatusOr<DnnDemoResult> RunDnnForward(StreamExecutor* executor);

}  // namespace rill::demo

#endif  // RILL_TOOLS_DEMO_DNN_H_
