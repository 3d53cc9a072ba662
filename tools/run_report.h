#ifndef RILL_TOOLS_RUN_REPORT_H_
#define RILL_TOOLS_RUN_REPORT_H_

// What one rill-run invocation measured and checked, printed as text or
// written as one JSON document (the same figures).
//
//   RunReport r;
//   r.model = "net.onnx"; r.latencies_ms = {...}; ...
//   PrintRunReport(r, stdout);
//   std::string json = RunReportJson(r);
//
// A plain value; thread-compatible.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "rill/graph/executor.h"
#include "rill/tensor/dtype.h"
#include "rill/tensor/shape.h"
#include "tools/run_inputs.h"

namespace rill::tools {

struct RunReport {
  struct Input {
    std::string name;
    Shape shape;
    DType dtype = DType::kF32;
    std::string source;  // "random", "file x.pb", "test data .../input_0.pb"
  };
  struct Output {
    std::string name;
    Shape shape;
    DType dtype = DType::kF32;
    std::string reference;             // The reference file; empty when none.
    std::optional<OutputCheck> check;  // When a reference was given.
  };

  std::string model;
  std::string device;
  int opset = 0;
  int opt = 1;
  int64_t batch = 1;  // Axis 0 of the first input (1 for a scalar or none).
  int warmup = 0;
  int runs = 0;
  double rtol = 0, atol = 0;
  int forward_nodes = 0;
  double import_ms = 0;
  double optimize_ms = 0;
  std::string optimize_level = "none";
  std::string optimize;  // OptimizeReport::ToString().
  double bind_ms = 0;
  graph::MemoryReport memory;
  std::vector<double> latencies_ms;  // One per timed run, in run order.
  double total_s = 0;                // Wall time of the timed runs.
  double cpu_s = 0;                  // CPU time of the process (all threads) during them.
  std::vector<Input> inputs;
  std::vector<Output> outputs;

  // Nearest-rank percentile of latencies_ms (p in [0, 100]: 0 is the
  // minimum, 100 the maximum); 0 when empty.
  double Percentile(double p) const;
  double MeanMs() const;
  // batch * runs / total_s and runs / total_s.
  double SamplesPerSecond() const;
  double RunsPerSecond() const;
  // Whether any output was compared, and whether every compared one passed.
  bool Checked() const;
  bool AllPassed() const;
};

void PrintRunReport(const RunReport& r, std::FILE* out);
std::string RunReportJson(const RunReport& r);

}  // namespace rill::tools

#endif  // RILL_TOOLS_RUN_REPORT_H_
