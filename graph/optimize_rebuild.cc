#include "rill/graph/optimize_rebuild.h"

#include "absl/strings/str_cat.h"

namespace rill::graph::internal {

Rebuild::Rebuild(const Graph& in, const absl::flat_hash_map<std::string, Tensor>& constants)
    : in_(in), constants_(constants) {
  if (!in.status().ok()) {
    status_ = in.status();
    return;
  }
  absl::StatusOr<std::vector<int>> order = TopoOrder(in);
  if (!order.ok()) {
    status_ = order.status();
    return;
  }
  order_ = *std::move(order);
  absl::flat_hash_map<std::string, EntryType> known;
  for (const auto& [name, t] : constants) known[name] = EntryType{t.shape(), t.dtype()};
  absl::StatusOr<EntryTypes> types = InferTypes(in, order_, known);
  if (!types.ok()) {
    status_ = types.status();
    return;
  }
  types_ = *std::move(types);
  types_.resize(in.num_nodes());
  for (int id : order_) {
    types_[id].resize(in.node(id).num_outputs());
    for (const Entry& e : in.node(id).inputs) ++consumers_[e];
  }
  for (const Entry& e : in.outputs()) ++consumers_[e];
}

int Rebuild::consumers(Entry old) const {
  auto it = consumers_.find(old);
  return it == consumers_.end() ? 0 : it->second;
}

Entry Rebuild::Map(Entry old) {
  auto it = map_.find(old);
  if (it != map_.end()) return it->second;
  if (hook) {
    if (std::optional<Entry> e = hook(old)) return *e;
  }
  if (auto m = made_.find(old); m != made_.end()) {
    Entry e = AddConst(made_names_[old], m->second);
    map_[old] = e;
    return e;
  }
  const Node& n = in_.node(old.node);
  if (n.is_variable()) {
    Entry e = out_.Variable(n.name, n.kind, n.shape, n.dtype);
    auto c = constants_.find(n.name);
    if (c != constants_.end()) out_constants_[n.name] = c->second;
    map_[old] = e;
    return e;
  }
  // A node not copied yet: the passes visit in topological order, so this
  // is a pass bug; the graph reports it.
  out_.Fail(absl::InternalError(
      absl::StrCat("optimizer: ", in_.Describe(old.node), " used before it was rebuilt")));
  return Entry{};
}

Entry Rebuild::Copy(int id) {
  const Node& n = in_.node(id);
  std::vector<Entry> inputs;
  inputs.reserve(n.inputs.size());
  for (const Entry& e : n.inputs) inputs.push_back(Map(e));
  // Attributes are kept where the node has them (the dump shows them).
  std::vector<Entry> outs =
      n.attrs.empty() ? out_.OpParsed(*n.op, n.params, std::move(inputs), n.name, n.group)
                      : out_.Op(n.op->name(), std::move(inputs), n.attrs, n.name, n.group);
  for (size_t i = 0; i < outs.size(); ++i) map_[Entry{id, static_cast<int>(i)}] = outs[i];
  return outs.empty() ? Entry{} : outs[0];
}

std::optional<Tensor> Rebuild::ConstOf(Entry old) const {
  auto m = made_.find(old);
  if (m != made_.end()) return m->second;
  const Node& n = in_.node(old.node);
  if (!n.is_variable()) return std::nullopt;
  auto c = constants_.find(n.name);
  if (c == constants_.end()) return std::nullopt;
  return c->second;
}

std::string Rebuild::UniqueName(const std::string& hint) {
  std::string name = hint;
  for (int i = 1; in_.Find(name) >= 0 || out_.Find(name) >= 0; ++i) {
    name = absl::StrCat(hint, "_", i);
  }
  return name;
}

Entry Rebuild::AddConst(const std::string& hint, Tensor value) {
  const std::string name = UniqueName(hint);
  Entry e = out_.Param(name, value.shape(), value.dtype());
  out_constants_[name] = std::move(value);
  return e;
}

void Rebuild::SetConst(Entry old, const std::string& hint, Tensor value) {
  made_[old] = std::move(value);
  made_names_[old] = hint;  // The variable is made when a node reads it.
}

absl::StatusOr<Graph> Rebuild::Finish(absl::flat_hash_map<std::string, Tensor>* constants) {
  for (size_t i = 0; i < in_.outputs().size(); ++i) {
    out_.AddOutput(Map(in_.outputs()[i]), in_.output_names()[i]);
  }
  if (!out_.status().ok()) return out_.status();
  *constants = std::move(out_constants_);
  return std::move(out_);
}

}  // namespace rill::graph::internal
