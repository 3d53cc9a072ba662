#ifndef RILL_TOOLS_RUN_INPUTS_H_
#define RILL_TOOLS_RUN_INPUTS_H_

// What rill-run feeds a model and compares it with: ONNX TensorProto files
// (.pb), the ONNX model-zoo test data layout (test_data_set_0/input_0.pb
// ..., output_0.pb ...), random inputs with a fixed seed, and the
// elementwise comparison of an output with its reference.
//
//   RILL_ASSIGN_OR_RETURN(std::string set, ResolveTestDataSet("resnet50/"));
//   std::vector<std::string> refs = NumberedFiles(set, "output_");
//   RILL_ASSIGN_OR_RETURN(graph::OnnxHostTensor want, ReadTensorFile(refs[0]));
//   OutputCheck c = CompareTensors(got, want, /*rtol=*/1e-3, /*atol=*/1e-4);
//
// Free functions; thread-compatible.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/graph/onnx/onnx_tensor.h"
#include "rill/tensor/dtype.h"
#include "rill/tensor/shape.h"
#include "rill/tensor/tensor.h"

namespace rill::tools {

// The TensorProto in file `path`: NotFound when it cannot be opened,
// InvalidArgument naming the file when it does not parse or its data does
// not match its dims, Unimplemented for an element type Rill lacks.
absl::StatusOr<graph::OnnxHostTensor> ReadTensorFile(const std::string& path);

// The test data set of `dir`: `dir` itself when it holds input_0.pb or
// output_0.pb, else its first test_data_set_* (by name). NotFound naming
// `dir` when it is neither.
absl::StatusOr<std::string> ResolveTestDataSet(const std::string& dir);

// `dir`/<prefix>0.pb, <prefix>1.pb, ... up to the first missing number.
std::vector<std::string> NumberedFiles(const std::string& dir, const std::string& prefix);

// A host tensor of `dtype` and `shape` with values from `rng`: floats
// uniform in [-1, 1), integers in [0, 3], bools either way.
graph::OnnxHostTensor RandomTensor(DType dtype, const Shape& shape, std::mt19937_64& rng);

// The model's graph inputs that are not initializers, in order (the i-th
// is fed by a test set's input_<i>.pb).
absl::StatusOr<std::vector<std::string>> GraphInputNames(const std::string& model_path);

// The type and shape model `model_path` declares for graph input `name`,
// with a symbolic or unknown axis 0 taken as `batch` (1 when 0): for inputs
// the importer left without a static shape. InvalidArgument naming the
// input and the axis for another symbolic axis or no declared shape,
// Unimplemented for an element type Rill lacks, NotFound when there is no
// such input.
struct DeclaredInput {
  Shape shape;
  DType dtype = DType::kF32;
};
absl::StatusOr<DeclaredInput> ReadDeclaredInput(const std::string& model_path,
                                                const std::string& name, int64_t batch);

// `t`'s contents on the host (waits for its writers).
absl::StatusOr<graph::OnnxHostTensor> ToHostTensor(const Tensor& t);

// The result of comparing one output with its reference:
// |got - ref| <= atol + rtol * |ref| for every element (NaN matches NaN, an
// infinity itself), shapes and types equal.
struct OutputCheck {
  bool pass = false;
  std::string reason;      // Why it failed: shape, type, or the worst element.
  double max_abs = 0;      // max |got - ref|.
  double max_rel = 0;      // max |got - ref| / |ref| over elements with ref != 0.
  int64_t mismatches = 0;  // Elements outside the tolerance.
};
OutputCheck CompareTensors(const graph::OnnxHostTensor& got, const graph::OnnxHostTensor& ref,
                           double rtol, double atol);

}  // namespace rill::tools

#endif  // RILL_TOOLS_RUN_INPUTS_H_
