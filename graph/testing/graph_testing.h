#ifndef RILL_GRAPH_TESTING_GRAPH_TESTING_H_
#define RILL_GRAPH_TESTING_GRAPH_TESTING_H_

// Test helpers for graphs: an imperative evaluation of a Graph (each op
// node through ops::Invoke in topological order), the independent
// reference the Executor is checked against.

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/graph/graph.h"
#include "rill/graph/passes.h"
#include "rill/ops/invoke.h"
#include "rill/tensor/tensor.h"

namespace rill::graph::testing {

// Runs `g` forward: variables from `args` by name; ops without inputs run
// on `ctx` (null engine: the default). Returns the graph's outputs.
inline absl::StatusOr<std::vector<Tensor>> EvaluateImperatively(
    const Graph& g, const absl::flat_hash_map<std::string, Tensor>& args, engine::Context ctx,
    engine::Engine* engine, bool is_train = false) {
  RILL_ASSIGN_OR_RETURN(std::vector<int> order, TopoOrder(g));
  std::vector<std::vector<Tensor>> values(g.num_nodes());
  for (int i : order) {
    const Node& n = g.node(i);
    if (n.is_variable()) {
      auto it = args.find(n.name);
      if (it == args.end())
        return absl::InvalidArgumentError(absl::StrCat("unbound variable '", n.name, "'"));
      values[i] = {it->second};
      continue;
    }
    std::vector<Tensor> in;
    for (const Entry& e : n.inputs) in.push_back(values[e.node][e.index]);
    ops::InvokeOptions o;
    o.is_train = is_train;
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

#endif  // RILL_GRAPH_TESTING_GRAPH_TESTING_H_
