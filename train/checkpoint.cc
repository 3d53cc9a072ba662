#include "rill/train/checkpoint.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/base/untrusted_file.h"
#include "rill/graph/executor.h"
#include "rill/graph/onnx/onnx_export.h"
#include "rill/io/data_iter.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"

namespace rill::train {
namespace {

// The computation of `g` without its node names: one line per op node the
// outputs depend on, inputs before their users (depth-first from the
// outputs, in input order), "op(args) {attrs}", where an argument is a
// variable's name or "#k[:i]", output i of line k; then one line per
// output. Two graphs compute the same function of their variables when
// their structures are equal. Iterative: a hostile file's deep chain does
// not overflow the stack.
std::vector<std::string> Structure(const graph::Graph& g) {
  std::vector<std::string> lines;
  std::vector<int> line_of(g.num_nodes(), -1);  // -1: not visited; -2: on the stack.
  auto arg = [&](const graph::Entry& e) -> std::string {
    if (e.node < 0 || e.node >= g.num_nodes()) return "?";
    const graph::Node& n = g.node(e.node);
    if (n.is_variable()) return absl::StrCat("'", n.name, "'");
    return absl::StrCat("#", line_of[e.node], e.index != 0 ? absl::StrCat(":", e.index) : "");
  };
  for (const graph::Entry& out : g.outputs()) {
    std::vector<std::pair<int, size_t>> stack;  // (node, next input to visit)
    if (out.node >= 0 && out.node < g.num_nodes()) stack.push_back({out.node, 0});
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const graph::Node& n = g.node(id);
      if (line_of[id] >= 0 || n.is_variable()) {
        stack.pop_back();
        continue;
      }
      line_of[id] = -2;
      if (next < n.inputs.size()) {
        const int in = n.inputs[next++].node;
        if (in >= 0 && in < g.num_nodes() && line_of[in] == -1) stack.push_back({in, 0});
        continue;  // A cycle (line_of -2) is left as "#-2": it differs from any model.
      }
      std::string line = absl::StrCat(n.op->name(), "(");
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        absl::StrAppend(&line, i != 0 ? ", " : "", arg(n.inputs[i]));
      }
      absl::StrAppend(&line, ")");
      if (!n.attrs.empty()) {
        absl::StrAppend(&line, " {", absl::StrJoin(n.attrs, ", ", absl::PairFormatter("=")), "}");
      }
      line_of[id] = static_cast<int>(lines.size());
      lines.push_back(std::move(line));
      stack.pop_back();
    }
  }
  for (const graph::Entry& out : g.outputs()) lines.push_back(absl::StrCat("output ", arg(out)));
  return lines;
}

// The structure of `model`'s inference graph as a checkpoint of it imports:
// exported and imported again, with its parameters as graph inputs.
absl::StatusOr<std::vector<std::string>> ModelStructure(const ConvNetOptions& model,
                                                        const std::vector<ParamSpec>& specs) {
  graph::OnnxExportOptions eo;
  eo.graph_name = "fashion_mnist_convnet";
  eo.input_shapes = {{"x", Shape{1, 1, model.rows, model.cols}}};
  for (const ParamSpec& p : specs) eo.input_shapes[p.name] = p.shape;
  eo.dynamic_batch = true;
  RILL_ASSIGN_OR_RETURN(std::string bytes,
                        graph::ExportOnnxBytes(ConvNetInferenceGraph(model), {}, eo));
  RILL_ASSIGN_OR_RETURN(graph::OnnxModel m, graph::ImportOnnxBytes(bytes, {}, "the model"));
  return Structure(m.graph);
}

// InvalidArgument naming the first operation where `got` (the file's)
// differs from `want` (the model's).
absl::Status CompareStructure(const std::vector<std::string>& got,
                              const std::vector<std::string>& want, const std::string& where) {
  for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
    const std::string g = i < got.size() ? got[i] : "nothing";
    const std::string w = i < want.size() ? want[i] : "nothing";
    if (g == w) continue;
    return absl::InvalidArgumentError(absl::StrCat(where, "its graph differs at operation #", i,
                                                   ": it has ", g, ", the model has ", w));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<graph::OnnxModel> LoadCheckpoint(const std::string& path,
                                                const ConvNetOptions& model, engine::Context ctx,
                                                engine::Engine* engine) {
  RILL_ASSIGN_OR_RETURN(std::vector<ParamSpec> specs, ConvNetParams(model));
  graph::OnnxImportOptions io;
  io.context = ctx;
  io.engine = engine;
  // An untrusted file: a regular file, no longer than the allocation cap.
  RILL_ASSIGN_OR_RETURN(std::string bytes, ReadUntrustedFile("checkpoint", path));
  RILL_ASSIGN_OR_RETURN(graph::OnnxModel m, graph::ImportOnnxBytes(bytes, io, path));
  bytes = std::string();
  const std::string where =
      absl::StrCat("checkpoint ", path, " does not match the model (", model.ToString(), "): ");
  for (const ParamSpec& p : specs) {
    auto it = m.initializers.find(p.name);
    if (it == m.initializers.end()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "it has no weight '", p.name, "'"));
    }
    if (it->second.shape() != p.shape || it->second.dtype() != DType::kF32) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "weight '", p.name, "' is ", it->second.ToString(),
                       ", the model needs float32", p.shape.ToString()));
    }
  }
  if (m.initializers.size() != specs.size()) {  // Every wanted one is there: name an extra one.
    for (const auto& entry : m.initializers) {
      const std::string& name = entry.first;
      if (std::none_of(specs.begin(), specs.end(),
                       [&](const ParamSpec& p) { return p.name == name; })) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "it has an extra weight '", name, "'"));
      }
    }
  }
  if (m.inputs.size() != 1 || m.outputs.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(where, "it has ", m.inputs.size(),
                                                   " inputs and ", m.outputs.size(),
                                                   " outputs, the model has one of each"));
  }
  // The weights fit; the graph that uses them must be the model's too.
  RILL_ASSIGN_OR_RETURN(std::vector<std::string> want, ModelStructure(model, specs));
  RILL_RETURN_IF_ERROR(CompareStructure(Structure(m.graph), want, where));
  return m;
}

absl::StatusOr<Metrics> EvaluateCheckpoint(const std::string& path, const ConvNetOptions& model,
                                           const io::Dataset& data, engine::Context ctx,
                                           engine::Engine* engine, int64_t eval_batch) {
  RILL_ASSIGN_OR_RETURN(graph::OnnxModel m, LoadCheckpoint(path, model, ctx, engine));
  io::DataIterOptions io;
  io.batch_size = eval_batch;
  io.shuffle = false;
  io.context = ctx;
  io.engine = engine;
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<io::DataIter> it, io::DataIter::Create(&data, io));
  RILL_RETURN_IF_ERROR(it->Reset(0));
  graph::BindOptions bo;
  bo.context = ctx;
  bo.engine = engine;
  absl::flat_hash_map<int64_t, std::pair<Tensor, std::unique_ptr<graph::Executor>>> execs;
  Metrics metrics;
  double loss = 0;
  int64_t correct = 0;
  while (true) {
    RILL_ASSIGN_OR_RETURN(std::optional<io::Batch> batch, it->Next());
    if (!batch.has_value()) break;
    auto& [x, exec] = execs[batch->size];
    if (exec == nullptr) {
      RILL_ASSIGN_OR_RETURN(x, Tensor::Empty(batch->data.shape(), DType::kF32, ctx, engine));
      absl::flat_hash_map<std::string, Tensor> args = m.initializers;
      args[m.inputs[0]] = x;
      RILL_ASSIGN_OR_RETURN(exec, graph::Executor::Bind(m.graph, args, {}, bo));
    }
    RILL_RETURN_IF_ERROR(x.CopyFrom(batch->data));
    RILL_RETURN_IF_ERROR(exec->Forward(/*is_train=*/false));
    const Tensor& logits = exec->outputs()[0];
    RILL_ASSIGN_OR_RETURN(std::vector<Tensor> l,
                          ops::Invoke(op_names::kSoftmaxCrossEntropy, {logits, batch->label}));
    RILL_ASSIGN_OR_RETURN(std::vector<Tensor> pred,
                          ops::Invoke(op_names::kArgmax, {logits}, {{"axis", "1"}}));
    RILL_ASSIGN_OR_RETURN(std::vector<float> lv, l[0].ToHost<float>());
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> pv, pred[0].ToHost<int64_t>());
    RILL_ASSIGN_OR_RETURN(std::vector<int32_t> yv, batch->label.ToHost<int32_t>());
    loss += lv[0] * static_cast<double>(batch->size);
    for (size_t i = 0; i < pv.size(); ++i) correct += pv[i] == yv[i];
    metrics.examples += batch->size;
  }
  if (metrics.examples > 0) {
    metrics.loss = loss / static_cast<double>(metrics.examples);
    metrics.accuracy = static_cast<double>(correct) / static_cast<double>(metrics.examples);
  }
  return metrics;
}

}  // namespace rill::train
