// rill:internal
#ifndef RILL_GRAPH_ONNX_ONNX_VALIDATE_H_
#define RILL_GRAPH_ONNX_ONNX_VALIDATE_H_

// Inside the ONNX importer: the checks Rill makes on an untrusted model
// before any outside library (libonnx's checker and shape inference) sees
// it. libonnx trusts attribute values: a Conv or pooling node with a stride
// of 0 divides by zero inside onnx::convPoolShapeInference, a DepthToSpace
// blocksize whose square wraps to 0 does the same. Not a public API.

#include <cstdint>

#include "absl/status/status.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace rill::graph {

// The bound on a spatial attribute value (kernel_shape, strides, dilations,
// pads, group, blocksize...): 2^31, so that products of two of them do not
// wrap in libonnx's int64 arithmetic.
inline constexpr int64_t kMaxOnnxSpatialAttr = int64_t{1} << 31;

// InvalidArgument naming the node, the attribute and the value for a node
// (in the main graph, a subgraph or a model-local function) whose attributes
// libonnx's shape inference could trap on, and naming the value and the
// axis for a declared value (graph input, output, value_info) with a
// negative dimension or more elements than fit in 63 bits:
//   Conv, ConvInteger, QLinearConv, ConvTranspose, MaxPool, AveragePool,
//   LpPool, MaxUnpool: kernel_shape, strides, dilations in [1, 2^31];
//   pads, output_padding, output_shape in [0, 2^31]; group in [1, 2^31];
//   the per-axis lists of one length (pads twice it); auto_pad one of
//   NOTSET, SAME_UPPER, SAME_LOWER, VALID;
//   DepthToSpace, SpaceToDepth: blocksize in [1, 2^31].
absl::Status ValidateOnnxModel(const onnx::ModelProto& m);

}  // namespace rill::graph

#endif  // RILL_GRAPH_ONNX_ONNX_VALIDATE_H_
