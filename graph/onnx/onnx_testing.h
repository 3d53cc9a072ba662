#ifndef RILL_GRAPH_ONNX_ONNX_TESTING_H_
#define RILL_GRAPH_ONNX_ONNX_TESTING_H_

// Test helpers for the ONNX importer: an imperative evaluation of a Graph
// (each op node through ops::Invoke in node order, the order the importer
// adds them in), used as an independent reference beside the Executor.

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/graph.h"
#include "ops/invoke.h"
#include "tensor/tensor.h"

namespace rill::graph::testing {

// Runs `g` forward for inference: variables from `args` by name; ops
// without inputs run on `ctx`. Returns the graph's outputs.
inline absl::StatusOr<std::vector<Tensor>> EvaluateImperatively(
    const Graph& g, const absl::flat_hash_map<std::string, Tensor>& args, engine::Context ctx,
    engine::Engine* engine) {
  RILL_RETURN_IF_ERROR(g.status());
  std::vector<std::vector<Tensor>> values(g.num_nodes());
  for (int i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    if (n.is_variable()) {
      auto it = args.find(n.name);
      if (it == args.end()) return absl::InvalidArgumentError(absl::StrCat("unbound variable '", n.name, "'"));
      values[i] = {it->second};
      continue;
    }
    std::vector<Tensor> in;
    for (const Entry& e : n.inputs) {
      if (e.node < 0 || e.node >= i) return absl::InvalidArgumentError(absl::StrCat(g.Describe(i), " reads ahead"));
      in.push_back(values[e.node][e.index]);
    }
    ops::InvokeOptions o;
    o.is_train = false;
    o.context = ctx;
    o.engine = engine;
    absl::StatusOr<std::vector<Tensor>> out = ops::Invoke(*n.op, in, n.params, {}, o);
    if (!out.ok()) return Annotate(out.status(), g.Describe(i));
    values[i] = *std::move(out);
  }
  std::vector<Tensor> outs;
  for (const Entry& e : g.outputs()) outs.push_back(values[e.node][e.index]);
  return outs;
}

}  // namespace rill::graph::testing

#endif  // RILL_GRAPH_ONNX_ONNX_TESTING_H_
