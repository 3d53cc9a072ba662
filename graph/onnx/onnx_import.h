#ifndef RILL_GRAPH_ONNX_ONNX_IMPORT_H_
#define RILL_GRAPH_ONNX_ONNX_IMPORT_H_

// ONNX import: an ONNX model (default domain, opsets 1-17) becomes a
// graph::Graph plus the tensors its variables are bound to.
//
//   OnnxImportOptions opt;
//   opt.context = engine::Context::Device(opencl_id, 0);
//   RILL_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnxFile("net.onnx", opt));
//   absl::flat_hash_map<std::string, Tensor> args = m.initializers;
//   args[m.inputs[0]] = x;
//   RILL_ASSIGN_OR_RETURN(auto exec, graph::Executor::Bind(m.graph, args, {}, {.context =
//   opt.context})); RILL_RETURN_IF_ERROR(exec->Forward(/*is_train=*/false));
//
// What maps to what is in graph/onnx/README.md. The model may be hostile
// (the untrusted-file policy, base/untrusted_file.h). Errors never crash:
// InvalidArgument for a malformed model (an empty or unparsable file or one
// that is not a regular file, naming the file; a failed onnx::checker check;
// an attribute libonnx's shape inference would trap on, such as a stride of
// 0, naming the node, the attribute and the value; an initializer whose data
// does not match its dims; a node input or graph output naming no value;
// axes named twice; a cycle), ResourceExhausted for initializers past the
// file allocation cap, Unimplemented for
// something valid that Rill does not support (naming the node, its op type
// and the opset): an op type, an attribute value, an element type,
// sequence/optional values, external data, a shape or axes value that is
// not constant at import time.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rill/engine/engine.h"
#include "rill/graph/graph.h"
#include "rill/tensor/tensor.h"

namespace rill::graph {

struct OnnxImportOptions {
  // Where the initializer (and folded constant) tensors are made.
  engine::Context context = engine::Context::Host();
  // null: engine::Engine::Default().
  engine::Engine* engine = nullptr;
  // Graph inputs whose values are fixed at import (as an engine that needs
  // static shapes fixes its shape tensors): treated as initializers, so a
  // shape or axes fed as an input folds. A name that is no graph input is
  // InvalidArgument.
  absl::flat_hash_map<std::string, Tensor> constant_inputs;
  // Values for symbolic dimensions of the graph inputs, by the symbol's
  // name (`dim_param`, such as "batch_size"), fixed before shape inference
  // so that shape arithmetic on them folds at import.
  absl::flat_hash_map<std::string, int64_t> dim_params;
  // When > 0: the value of every graph input's axis 0 that is symbolic or
  // unknown (a batch size; dim_params take precedence).
  int64_t batch = 0;
  // The shapes graph inputs will be fed with: their symbolic dimensions
  // take these values (and so does every other input's dimension with the
  // same symbol). A rank or a static dimension that differs from the
  // model's, or a name that is no graph input, is InvalidArgument.
  absl::flat_hash_map<std::string, std::vector<int64_t>> input_shapes;
};

// An imported model. Every variable of `graph` that is not in `inputs` is
// bound by a tensor of `initializers` with its name: initializers read by
// an op are kParam variables; Constant node values (and values computed at
// import time, such as a Shape of a statically known shape) that an op
// reads are kAux variables. Initializers read only at import time (a
// Reshape's shape, axes) are folded and have no variable. Graph outputs
// carry the ONNX output names.
struct OnnxModel {
  Graph graph;
  absl::flat_hash_map<std::string, Tensor> initializers;
  // Graph inputs that are not initializers, in model order (kInput
  // variables with their declared shape and type when fully known).
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  // The default domain's opset version.
  int64_t opset = 0;
};

absl::StatusOr<OnnxModel> ImportOnnxFile(const std::string& path,
                                         const OnnxImportOptions& options = {});
// `what` names the bytes in errors (a file name).
absl::StatusOr<OnnxModel> ImportOnnxBytes(std::string_view bytes,
                                          const OnnxImportOptions& options = {},
                                          std::string_view what = "ONNX model");

}  // namespace rill::graph

#endif  // RILL_GRAPH_ONNX_ONNX_IMPORT_H_
