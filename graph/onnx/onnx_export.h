#ifndef RILL_GRAPH_ONNX_ONNX_EXPORT_H_
#define RILL_GRAPH_ONNX_ONNX_EXPORT_H_

// ONNX export, the reverse of onnx_import.h: a graph::Graph and the tensors
// of its weights become an ONNX model (default domain, opsets 13-17).
//
//   absl::flat_hash_map<std::string, Tensor> weights = ...;   // "k1", "b1", ...
//   OnnxExportOptions opt;
//   opt.input_shapes = {{"x", Shape{1, 1, 28, 28}}};
//   opt.dynamic_batch = true;                                  // any batch size
//   RILL_RETURN_IF_ERROR(ExportOnnxFile(inference_graph, weights, "net.onnx", opt));
//
// The graph's outputs become the model's outputs, under the graph's output
// names; the nodes they depend on become ONNX nodes (what maps to what is
// in graph/onnx/README.md); a variable in `initializers` becomes an
// initializer holding that tensor (read with ToHost, so this waits for the
// work that writes it), every other variable a graph input.
//
// Variables the outputs do not depend on are left out.
//
// Errors: the graph's own status; Unimplemented naming the node and its op
// for an op with no ONNX mapping (softmax_cross_entropy, optimizer and
// backward ops, ...) or an output that cannot be exported (dropout's mask),
// and for an opset outside 13-17; InvalidArgument naming the variable for a
// graph input with no known shape, for a name in `initializers` or
// `input_shapes` that is no variable of the graph, for a tensor whose shape
// or type differs from the variable's declared one, and for a graph output
// named like a variable or like another output; InternalError with the
// checker's message when onnx::checker or ONNX's strict shape inference
// with type checks rejects the result (a bug in the exporter). Thread-safe:
// no shared state (the tensors are only read).

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/graph/graph.h"
#include "rill/tensor/shape.h"
#include "rill/tensor/tensor.h"

namespace rill::graph {

struct OnnxExportOptions {
  std::string producer_name = "rill";
  // The default domain's opset: 13 to 17 (the exported forms are the same
  // in all of them).
  int64_t opset = 13;
  std::string graph_name = "rill";
  // Shapes of graph inputs (variables not in `initializers`) that the graph
  // does not declare; the element type is the declared one, else float32.
  // A shape given for a variable that declares another is InvalidArgument.
  absl::flat_hash_map<std::string, Shape> input_shapes;
  // Axis 0 of every graph input and output becomes the symbolic dimension
  // "N" (the batch), so the model runs at any batch size. The graph must not
  // bake the batch size in (a reshape to an explicit batch dimension).
  bool dynamic_batch = false;
};

// The serialized ModelProto.
absl::StatusOr<std::string> ExportOnnxBytes(
    const Graph& g, const absl::flat_hash_map<std::string, Tensor>& initializers,
    const OnnxExportOptions& options = {});
// The same written to `path`, atomically (to `path`.tmp, then renamed). An
// error naming the path when it cannot be written (NotFound for a missing
// directory, PermissionDenied, ...).
absl::Status ExportOnnxFile(const Graph& g,
                            const absl::flat_hash_map<std::string, Tensor>& initializers,
                            const std::string& path, const OnnxExportOptions& options = {});

}  // namespace rill::graph

#endif  // RILL_GRAPH_ONNX_ONNX_EXPORT_H_
