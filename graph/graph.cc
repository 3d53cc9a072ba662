#include "rill/graph/graph.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/op_registry.h"

namespace rill::graph {

const char* VarKindName(VarKind kind) {
  switch (kind) {
    case VarKind::kInput:
      return "input";
    case VarKind::kParam:
      return "param";
    case VarKind::kAux:
      return "aux";
  }
  return "?";
}

void Graph::Fail(absl::Status error) {
  if (status_.ok() && !error.ok()) status_ = std::move(error);
}

int Graph::AddNode(Node n) {
  const int id = static_cast<int>(nodes_.size());
  if (!by_name_.emplace(n.name, id).second) {
    Fail(absl::AlreadyExistsError(absl::StrCat("graph: two nodes are called '", n.name, "'")));
    return -1;
  }
  nodes_.push_back(std::move(n));
  return id;
}

bool Graph::CheckEntry(const Entry& e, std::string_view user) {
  if (!e.valid()) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("graph: ", std::string(user), " takes an invalid entry")));
    return false;
  }
  if (e.node >= num_nodes() || e.index < 0 || e.index >= nodes_[e.node].num_outputs()) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("graph: ", std::string(user), " takes output ", e.index, " of node ", e.node,
                     ", which does not exist (", num_nodes(), " nodes)")));
    return false;
  }
  return true;
}

Entry Graph::Variable(std::string name, VarKind kind, std::optional<Shape> shape,
                      std::optional<DType> dtype) {
  if (!status_.ok()) return {};
  if (name.empty()) {
    Fail(absl::InvalidArgumentError("graph: a variable needs a name"));
    return {};
  }
  Node n;
  n.name = std::move(name);
  n.kind = kind;
  n.shape = std::move(shape);
  n.dtype = dtype;
  const int id = AddNode(std::move(n));
  return id < 0 ? Entry{} : Entry{id, 0};
}
Entry Graph::Input(std::string name, std::optional<Shape> shape, std::optional<DType> dtype) {
  return Variable(std::move(name), VarKind::kInput, std::move(shape), dtype);
}
Entry Graph::Param(std::string name, std::optional<Shape> shape, std::optional<DType> dtype) {
  return Variable(std::move(name), VarKind::kParam, std::move(shape), dtype);
}
Entry Graph::Aux(std::string name, std::optional<Shape> shape, std::optional<DType> dtype) {
  return Variable(std::move(name), VarKind::kAux, std::move(shape), dtype);
}

std::vector<Entry> Graph::Op(std::string_view op, std::vector<Entry> inputs,
                             const ops::Attrs& attrs, std::string name, std::string group) {
  if (!status_.ok()) return {};
  absl::StatusOr<const ops::OpDef*> def = ops::OpRegistry::Global().Find(op);
  bool auto_named = false;
  while (name.empty() ||
         (auto_named && by_name_.contains(name))) {  // "<op><n>", skipping names in use.
    auto_named = true;
    name = absl::StrCat(std::string(op), auto_names_[std::string(op)]++);
  }
  if (!def.ok()) {
    Fail(Annotate(def.status(), absl::StrCat("graph node '", name, "'")));
    return {};
  }
  const ops::OpDef& d = **def;
  if (d.num_inputs() >= 0 ? static_cast<int>(inputs.size()) != d.num_inputs() : inputs.empty()) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("graph node '", name, "': op '", d.name(), "' takes ",
                     d.num_inputs() >= 0 ? absl::StrCat(d.num_inputs()) : "one or more",
                     " input(s), got ", inputs.size())));
    return {};
  }
  for (const Entry& e : inputs) {
    if (!CheckEntry(e, absl::StrCat("node '", name, "'"))) return {};
  }
  absl::StatusOr<std::shared_ptr<const void>> params = d.params().Parse(d.name(), attrs);
  if (!params.ok()) {
    Fail(Annotate(params.status(), absl::StrCat("graph node '", name, "'")));
    return {};
  }
  Node n;
  n.name = std::move(name);
  n.op = &d;
  n.attrs = attrs;
  n.params = *std::move(params);
  n.inputs = std::move(inputs);
  n.group = std::move(group);
  const int id = AddNode(std::move(n));
  if (id < 0) return {};
  std::vector<Entry> out;
  for (int i = 0; i < d.num_outputs(); ++i) out.push_back({id, i});
  return out;
}

std::vector<Entry> Graph::OpParsed(const ops::OpDef& op, std::shared_ptr<const void> params,
                                   std::vector<Entry> inputs, std::string name, std::string group) {
  if (!status_.ok()) return {};
  for (const Entry& e : inputs) {
    if (!CheckEntry(e, absl::StrCat("node '", name, "'"))) return {};
  }
  Node n;
  n.name = std::move(name);
  n.op = &op;
  n.params = std::move(params);
  n.inputs = std::move(inputs);
  n.group = std::move(group);
  const int id = AddNode(std::move(n));
  if (id < 0) return {};
  std::vector<Entry> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back({id, i});
  return out;
}

Entry Graph::Op1(std::string_view op, std::vector<Entry> inputs, const ops::Attrs& attrs,
                 std::string name, std::string group) {
  std::vector<Entry> out = Op(op, std::move(inputs), attrs, std::move(name), std::move(group));
  return out.empty() ? Entry{} : out[0];
}

void Graph::AddOutput(Entry e, std::string name) {
  if (!status_.ok() || !CheckEntry(e, "AddOutput")) return;
  if (name.empty())
    name = e.index == 0 ? nodes_[e.node].name : absl::StrCat(nodes_[e.node].name, ":", e.index);
  outputs_.push_back(e);
  output_names_.push_back(std::move(name));
}

std::vector<Entry> Graph::Compose(const Graph& sub,
                                  const absl::flat_hash_map<std::string, Entry>& bind,
                                  std::string_view prefix) {
  if (!status_.ok()) return {};
  if (!sub.status().ok()) {
    Fail(Annotate(sub.status(), absl::StrCat("graph: composing '", std::string(prefix), "'")));
    return {};
  }
  for (const auto& [name, e] : bind) {
    const int id = sub.Find(name);
    if (id < 0 || !sub.node(id).is_variable()) {
      Fail(absl::InvalidArgumentError(absl::StrCat("graph: composing '", std::string(prefix),
                                                   "': the sub-graph has no variable '", name,
                                                   "'")));
      return {};
    }
    if (!CheckEntry(e, absl::StrCat("Compose '", std::string(prefix), "'"))) return {};
  }
  std::vector<int> map(sub.num_nodes(), -1);
  std::vector<Entry> bound(sub.num_nodes());
  for (int i = 0; i < sub.num_nodes(); ++i) {
    const Node& s = sub.node(i);
    if (s.is_variable()) {
      auto it = bind.find(s.name);
      if (it != bind.end()) {
        bound[i] = it->second;
        continue;
      }
    }
    Node n = s;
    n.name = absl::StrCat(std::string(prefix), s.name);
    for (Entry& e : n.inputs) {
      if (e.node < 0 || e.node >= sub.num_nodes()) continue;  // Left for the passes to report.
      e = bound[e.node].valid() ? bound[e.node] : Entry{map[e.node], e.index};
    }
    map[i] = AddNode(std::move(n));
    if (map[i] < 0) return {};
  }
  std::vector<Entry> out;
  for (const Entry& e : sub.outputs()) {
    out.push_back(bound[e.node].valid() ? bound[e.node] : Entry{map[e.node], e.index});
  }
  return out;
}

void Graph::SetInput(int node, int slot, Entry e) {
  if (!status_.ok()) return;
  if (node < 0 || node >= num_nodes() || slot < 0 ||
      slot >= static_cast<int>(nodes_[node].inputs.size())) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("graph: SetInput(", node, ", ", slot, ") names no input")));
    return;
  }
  nodes_[node].inputs[slot] = e;  // Checked by the passes (it may point forward).
}

int Graph::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? -1 : it->second;
}

std::vector<int> Graph::Variables(VarKind kind) const {
  std::vector<int> v;
  for (int i = 0; i < num_nodes(); ++i) {
    if (nodes_[i].is_variable() && nodes_[i].kind == kind) v.push_back(i);
  }
  return v;
}

std::string Graph::Describe(int node) const {
  if (node < 0 || node >= num_nodes()) return absl::StrCat("node #", node);
  const Node& n = nodes_[node];
  if (n.is_variable()) return absl::StrCat(VarKindName(n.kind), " '", n.name, "'");
  return absl::StrCat("node '", n.name, "' (", n.op->name(), ")");
}

std::string Graph::ToString() const {
  std::string s;
  for (const Node& n : nodes_) {
    if (n.is_variable()) {
      absl::StrAppend(
          &s, n.name, ": ", VarKindName(n.kind),
          n.shape ? absl::StrCat(" ", n.dtype ? DTypeName(*n.dtype) : "", n.shape->ToString()) : "",
          "\n");
      continue;
    }
    absl::StrAppend(&s, n.name, " = ", n.op->name(), "(");
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Entry& e = n.inputs[i];
      const bool ok = e.node >= 0 && e.node < num_nodes();
      absl::StrAppend(&s, i ? ", " : "", ok ? nodes_[e.node].name : absl::StrCat("#", e.node),
                      e.index ? absl::StrCat(":", e.index) : "");
    }
    absl::StrAppend(&s, ")");
    if (!n.attrs.empty()) {
      absl::StrAppend(&s, " {");
      for (size_t i = 0; i < n.attrs.size(); ++i) {
        absl::StrAppend(&s, i ? ", " : "", n.attrs[i].first, "=", n.attrs[i].second);
      }
      absl::StrAppend(&s, "}");
    }
    if (!n.group.empty()) absl::StrAppend(&s, " @", n.group);
    absl::StrAppend(&s, "\n");
  }
  for (size_t i = 0; i < outputs_.size(); ++i)
    absl::StrAppend(&s, "output ", output_names_[i], "\n");
  return s;
}

}  // namespace rill::graph
