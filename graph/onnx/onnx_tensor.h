#ifndef RILL_GRAPH_ONNX_ONNX_TENSOR_H_
#define RILL_GRAPH_ONNX_ONNX_TENSOR_H_

// ONNX tensors and element types on the Rill side: TensorProto (raw_data
// or the typed *_data fields) to host bytes or to a Tensor, and ONNX
// element types to DType. Used by the importer and by the node-test
// harness (test_data_set_*/input_*.pb).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/engine/engine.h"
#include "rill/tensor/dtype.h"
#include "rill/tensor/shape.h"
#include "rill/tensor/tensor.h"

namespace onnx {
class TensorProto;
}  // namespace onnx

namespace rill {
class FileBudget;  // rill/base/untrusted_file.h
}  // namespace rill

namespace rill::graph {

// A tensor held on the host while importing: constants (initializers,
// Constant nodes, shapes computed at import time). Little-endian element
// bytes, exactly shape x dtype. A value type; thread-compatible.
struct OnnxHostTensor {
  DType dtype = DType::kF32;
  Shape shape;
  std::string bytes;

  int64_t size() const { return shape.NumElements(); }
  // The elements converted to int64 / double (any type but float16, which
  // converts through float).
  std::vector<int64_t> Int64s() const;
  std::vector<double> Doubles() const;
  static OnnxHostTensor FromInt64s(const std::vector<int64_t>& v, Shape shape);
  // One element of `dtype` holding `value`.
  static OnnxHostTensor Fill(DType dtype, const Shape& shape, double value);
  // `v` (shape.NumElements() values) converted to `dtype`.
  static OnnxHostTensor FromDoubles(const std::vector<double>& v, const Shape& shape, DType dtype);
};

// The DType of ONNX element type `elem_type` (TensorProto::DataType):
// FLOAT, DOUBLE, FLOAT16, INT32, INT64, UINT8, BOOL. Unimplemented naming
// the type for the others.
absl::StatusOr<DType> DTypeFromOnnx(int32_t elem_type);
// "FLOAT", "INT8", ... ("type 42" when unknown).
std::string OnnxTypeName(int32_t elem_type);

// The contents of `t`: InvalidArgument naming the tensor when its data does
// not match its dims (raw bytes or element count), Unimplemented for
// external data or an unsupported element type. The claimed size
// (overflow-checked) is checked against the data present before anything is
// allocated, and taken from `budget` when given (ResourceExhausted past it).
absl::StatusOr<OnnxHostTensor> HostTensorFromProto(const onnx::TensorProto& t,
                                                   FileBudget* budget = nullptr);
// The same as a Tensor on `ctx`.
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& t, engine::Context ctx,
                                       engine::Engine* engine = nullptr);
absl::StatusOr<Tensor> TensorFromHost(const OnnxHostTensor& t, engine::Context ctx,
                                      engine::Engine* engine = nullptr);

}  // namespace rill::graph

#endif  // RILL_GRAPH_ONNX_ONNX_TENSOR_H_
