#include "rill/graph/passes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"

namespace rill::graph {

std::string EntryType::ToString() const {
  return absl::StrCat(dtype ? DTypeName(*dtype) : "?", shape ? shape->ToString() : "");
}

absl::StatusOr<std::vector<int>> TopoOrder(const Graph& g) { return TopoOrder(g, g.outputs()); }

absl::StatusOr<std::vector<int>> TopoOrder(const Graph& g, const std::vector<Entry>& roots) {
  RILL_RETURN_IF_ERROR(g.status());
  const int n = g.num_nodes();
  auto check = [&](const Entry& e, int user, int slot) -> absl::Status {
    if (e.node < 0 || e.node >= n || e.index < 0 || e.index >= g.node(e.node).num_outputs()) {
      return absl::InvalidArgumentError(absl::StrCat(
          user < 0 ? std::string("graph output") : absl::StrCat(g.Describe(user), " input ", slot),
          " names output ", e.index, " of node #", e.node, ", which does not exist"));
    }
    return absl::OkStatus();
  };
  // Iterative DFS; state 1 = on the stack, 2 = done.
  std::vector<char> state(n, 0);
  std::vector<int> order;
  std::vector<std::pair<int, size_t>> stack;
  for (size_t r = 0; r < roots.size(); ++r) {
    RILL_RETURN_IF_ERROR(check(roots[r], -1, static_cast<int>(r)));
    if (state[roots[r].node]) continue;
    stack.push_back({roots[r].node, 0});
    state[roots[r].node] = 1;
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const Node& node = g.node(id);
      if (next < node.inputs.size()) {
        const Entry& e = node.inputs[next];
        RILL_RETURN_IF_ERROR(check(e, id, static_cast<int>(next)));
        ++next;
        if (state[e.node] == 1) {
          std::string cycle;
          bool on = false;
          for (const auto& [sid, _] : stack) {
            on |= sid == e.node;
            if (on) absl::StrAppend(&cycle, cycle.empty() ? "" : " -> ", g.node(sid).name);
          }
          return absl::InvalidArgumentError(
              absl::StrCat("graph has a cycle: ", cycle, " -> ", g.node(e.node).name));
        }
        if (state[e.node] == 0) {
          state[e.node] = 1;
          stack.push_back({e.node, 0});
        }
        continue;
      }
      state[id] = 2;
      order.push_back(id);
      stack.pop_back();
    }
  }
  return order;
}

absl::Status InferNodeTypes(const Graph& g, int id,
                            const absl::flat_hash_map<std::string, EntryType>& known,
                            EntryTypes& types) {
  const Node& n = g.node(id);
  if (types.size() <= static_cast<size_t>(id)) types.resize(id + 1);
  types[id].resize(n.num_outputs());
  if (n.is_variable()) {
    EntryType t;
    t.shape = n.shape;
    t.dtype = n.dtype;
    auto it = known.find(n.name);
    if (it != known.end()) {
      if (n.shape && it->second.shape && *n.shape != *it->second.shape) {
        return absl::InvalidArgumentError(absl::StrCat(g.Describe(id), " is declared ",
                                                       n.shape->ToString(), " but bound to ",
                                                       it->second.ToString()));
      }
      if (n.dtype && it->second.dtype && *n.dtype != *it->second.dtype) {
        return absl::InvalidArgumentError(absl::StrCat(g.Describe(id), " is declared ",
                                                       DTypeName(*n.dtype), " but bound to ",
                                                       it->second.ToString()));
      }
      if (it->second.shape) t.shape = it->second.shape;
      if (it->second.dtype) t.dtype = it->second.dtype;
    }
    types[id][0] = t;
    return absl::OkStatus();
  }
  std::vector<Shape> in_shapes;
  std::vector<DType> in_types;
  for (const Entry& e : n.inputs) {
    if (types.size() <= static_cast<size_t>(e.node)) return absl::OkStatus();
    const EntryType& t = types[e.node][e.index];
    if (!t.known()) return absl::OkStatus();  // Partial: unknown downstream of an unknown input.
    in_shapes.push_back(*t.shape);
    in_types.push_back(*t.dtype);
  }
  auto where = [&] {
    std::string s = absl::StrCat(g.Describe(id), " with inputs (");
    for (size_t i = 0; i < in_shapes.size(); ++i) {
      absl::StrAppend(&s, i ? ", " : "", DTypeName(in_types[i]), in_shapes[i].ToString());
    }
    return s + ")";
  };
  for (size_t i = 0; i < in_types.size(); ++i) {
    if ((n.op->dtypes() & DTypeBit(in_types[i])) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": op '", n.op->name(),
                                                     "' does not take ", DTypeName(in_types[i]),
                                                     " (input ", i, ")"));
    }
  }
  ops::InferContext ictx{n.params.get(), in_shapes, in_types};
  std::vector<DType> out_types(n.num_outputs());
  absl::Status s = n.op->infer_type() ? n.op->infer_type()(ictx, &out_types)
                                      : ops::SameTypeAsInputs(ictx, &out_types);
  if (!s.ok()) return Annotate(s, where());
  std::vector<Shape> out_shapes(n.num_outputs());
  s = n.op->infer_shape() ? n.op->infer_shape()(ictx, &out_shapes)
                          : ops::SameShapeAsInput0(ictx, &out_shapes);
  if (!s.ok()) return Annotate(s, where());
  for (int o = 0; o < n.num_outputs(); ++o) {
    types[id][o].shape = out_shapes[o];
    types[id][o].dtype = out_types[o];
  }
  return absl::OkStatus();
}

absl::StatusOr<EntryTypes> InferTypes(const Graph& g, const std::vector<int>& order,
                                      const absl::flat_hash_map<std::string, EntryType>& known) {
  EntryTypes types(g.num_nodes());
  for (int i = 0; i < g.num_nodes(); ++i) types[i].resize(g.node(i).num_outputs());
  for (int id : order) RILL_RETURN_IF_ERROR(InferNodeTypes(g, id, known, types));
  return types;
}

}  // namespace rill::graph
