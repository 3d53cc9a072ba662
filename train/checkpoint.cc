#include "rill/train/checkpoint.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/graph/executor.h"
#include "rill/io/data_iter.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"

namespace rill::train {

absl::StatusOr<graph::OnnxModel> LoadCheckpoint(const std::string& path,
                                                const ConvNetOptions& model, engine::Context ctx,
                                                engine::Engine* engine) {
  RILL_ASSIGN_OR_RETURN(std::vector<ParamSpec> specs, ConvNetParams(model));
  graph::OnnxImportOptions io;
  io.context = ctx;
  io.engine = engine;
  RILL_ASSIGN_OR_RETURN(graph::OnnxModel m, graph::ImportOnnxFile(path, io));
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
    for (const auto& [name, t] : m.initializers) {
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
