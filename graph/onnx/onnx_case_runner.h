#ifndef RILL_GRAPH_ONNX_ONNX_CASE_RUNNER_H_
#define RILL_GRAPH_ONNX_ONNX_CASE_RUNNER_H_

// Test-only: runs ONNX test cases in the layout of the ONNX backend tests
// and the model zoo (dir/model.onnx, dir/test_data_set_0/input_<i>.pb
// feeding the i-th graph input that is not an initializer, output_<i>.pb
// the expected i-th output) through the importer and Executor::Bind /
// Forward(false) on one context, comparing with a stated tolerance. Shared
// by graph_onnx_node_test and graph_onnx_model_cases_test.
//
//   std::string why;
//   if (!GenerateOnce(out, "/usr/bin/python3 gen.py -o", &why)) GTEST_SKIP() << why;
//   CaseOptions o;
//   o.tolerance = {.rtol = 1e-4, .atol = 1e-5};
//   CaseResult r = RunCase(out / "lstm", ctx, engine.get(), o);
//   EXPECT_EQ(r.outcome, Outcome::kPass) << r.reason;
//
// Nothing here aborts on a bad case: every problem is a CaseResult or a
// status. Thread-compatible (plain functions over their arguments).

#include <filesystem>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rill/engine/engine.h"
#include "rill/graph/onnx/onnx_import.h"
#include "rill/graph/onnx/onnx_tensor.h"
#include "rill/tensor/tensor.h"

namespace rill::graph::onnx_testing {

// The whole file (empty when it cannot be read).
std::string ReadFile(const std::filesystem::path& p);

// Whether /usr/bin/python3 can import onnx.
bool PythonHasOnnx();

// Makes directory `out` once: when it does not exist, runs
// `<command> '<out>.tmp.<pid>'` (output to a log beside it) and renames the
// temporary to `out`, so concurrent test processes never see half of it
// (the first rename wins; the others drop their copy). False with `why`
// set when python3 lacks onnx or the command fails.
bool GenerateOnce(const std::filesystem::path& out, const std::string& command, std::string* why);

// got ~ want: same dtype and shape; floats within atol + rtol * |want|
// (NaN matches NaN, an infinity itself); integers and bools exactly.
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};
bool ValuesClose(const OnnxHostTensor& got, const OnnxHostTensor& want, const Tolerance& tol,
                 std::string* why);

// A Tensor's contents on the host (any context).
absl::StatusOr<OnnxHostTensor> HostOf(const Tensor& t);

struct CaseOptions {
  Tolerance tolerance;
  // Symbolic dims of the graph inputs take the sizes of the fed test data
  // (OnnxImportOptions::dim_params), as a caller binding real inputs does.
  bool dims_from_data = false;
  // When the import says a shape or axes input must be constant: fix the
  // integer inputs, and the inputs no node reads as its data (input 0), at
  // import to their test data (the node tests' rule).
  bool fix_integer_inputs = true;
  // Run by graph::testing::EvaluateImperatively instead of the Executor.
  bool imperative = false;
};

// One case imported on a context, with everything Bind needs.
struct ImportedCase {
  OnnxModel model;
  // The initializers and every fed input that was not fixed at import.
  absl::flat_hash_map<std::string, Tensor> args;
  std::vector<OnnxHostTensor> want;  // The expected outputs, in order.
  bool fixed_inputs = false;         // Integer inputs fixed at import.
};
// The import's status as is (Unimplemented for what Rill lacks);
// InvalidArgument for unreadable test data.
absl::StatusOr<ImportedCase> ImportCase(const std::filesystem::path& dir, engine::Context ctx,
                                        engine::Engine* engine, const CaseOptions& options = {});

// The graph's outputs for `args` (Bind with the canary on, Forward(false)).
absl::StatusOr<std::vector<Tensor>> RunForward(const OnnxModel& m,
                                               const absl::flat_hash_map<std::string, Tensor>& args,
                                               engine::Context ctx, engine::Engine* engine,
                                               bool imperative = false);

enum class Outcome { kUnsupported, kPass, kFail };
struct CaseResult {
  Outcome outcome = Outcome::kFail;
  std::string reason;
  bool fixed_inputs = false;  // Integer inputs (shapes, axes) fixed at import.
};
// Imports, runs and compares one case. kUnsupported: the import said
// Unimplemented, or the model has sequence/optional/map values.
CaseResult RunCase(const std::filesystem::path& dir, engine::Context ctx, engine::Engine* engine,
                   const CaseOptions& options = {});

}  // namespace rill::graph::onnx_testing

#endif  // RILL_GRAPH_ONNX_ONNX_CASE_RUNNER_H_
