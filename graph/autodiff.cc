#include "rill/graph/autodiff.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"
#include "rill/ops/prepared.h"
#include "rill/tensor/tensor.h"

namespace rill::graph {

const ops::OpDef& GradSumOp() {
  static const ops::OpDef* op = [] {
    auto* d = new ops::OpDef("_grad_sum");
    d->set_variadic_inputs().set_dtypes(kAllTypesMask);
    return d;
  }();
  return *op;
}

const ops::OpDef& CopyOp() {
  static const ops::OpDef* op = [] {
    auto* d = new ops::OpDef("_copy");
    d->set_dtypes(kAllTypesMask);
    return d;
  }();
  return *op;
}

namespace {

std::string ShapeAttr(const Shape& shape) { return ops::FormatIntTuple(shape.span()); }

// Shape-only tensors for the trace, and the entries they stand for.
class Placeholders {
 public:
  Placeholders(Graph* g, EntryTypes* types) : g_(g), types_(types) {}

  absl::StatusOr<Tensor> For(const Entry& e, const EntryType& t) {
    auto it = tensors_.find(e);
    if (it != tensors_.end()) return it->second;
    if (!t.known()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "autodiff: the type of ", g_->Describe(e.node), " output ", e.index, " is unknown"));
    }
    RILL_ASSIGN_OR_RETURN(Tensor x, Tensor::Empty(*t.shape, *t.dtype, engine::Context::Host()));
    Add(x, e);
    return x;
  }
  void Add(const Tensor& x, const Entry& e) {
    tensors_[e] = x;
    entries_[x.var().bits()] = {e, x.shape()};
  }
  // The entry behind a traced tensor; a reshaped view of one becomes a
  // reshape node. NotFound for a tensor from outside the trace.
  absl::StatusOr<Entry> EntryOf(const Tensor& x, const std::string& node_name,
                                const std::string& group) {
    auto it = entries_.find(x.var().bits());
    if (it == entries_.end()) {
      return absl::InternalError(absl::StrCat("autodiff: the gradient of node '", node_name,
                                              "' used a tensor that is not a graph value (",
                                              x.ToString(), ")"));
    }
    if (x.shape() == it->second.second && x.byte_offset() == 0) return it->second.first;
    if (x.byte_offset() != 0) {
      return absl::UnimplementedError(absl::StrCat("autodiff: the gradient of node '", node_name,
                                                   "' used a view at an offset"));
    }
    Entry r = g_->Op1(op_names::kReshape, {it->second.first}, {{"shape", ShapeAttr(x.shape())}},
                      absl::StrCat(node_name, "_view", views_++), group);
    RILL_RETURN_IF_ERROR(g_->status());
    types_->resize(g_->num_nodes());
    (*types_)[r.node] = {EntryType{x.shape(), x.dtype()}};
    return r;
  }

 private:
  Graph* g_;
  EntryTypes* types_;
  absl::flat_hash_map<Entry, Tensor> tensors_;
  absl::flat_hash_map<uint64_t, std::pair<Entry, Shape>> entries_;
  int views_ = 0;
};

}  // namespace

absl::StatusOr<BackwardGraph> BuildBackward(const Graph& fwd, const std::vector<int>& order,
                                            const EntryTypes& types,
                                            const std::vector<std::string>& wrt) {
  BackwardGraph out;
  out.graph = fwd;
  Graph& g = out.graph;
  EntryTypes all = types;  // Grows with the backward nodes.
  auto type_of = [&](const Entry& e) -> EntryType {
    return e.node < static_cast<int>(all.size()) ? all[e.node][e.index] : EntryType{};
  };
  auto note_types = [&](int node, const std::vector<Tensor>& ts) {
    if (static_cast<int>(all.size()) <= node) all.resize(node + 1);
    all[node].resize(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) all[node][i] = {ts[i].shape(), ts[i].dtype()};
  };

  // Which nodes a requested gradient flows through.
  absl::flat_hash_set<std::string> wanted(wrt.begin(), wrt.end());
  std::vector<char> needs(fwd.num_nodes(), 0);
  for (const std::string& name : wrt) {
    const int id = fwd.Find(name);
    if (id < 0 || !fwd.node(id).is_variable()) {
      return absl::InvalidArgumentError(
          absl::StrCat("autodiff: no variable '", name, "' to differentiate"));
    }
  }
  for (int id : order) {
    const Node& n = fwd.node(id);
    if (n.is_variable()) {
      needs[id] = wanted.contains(n.name);
      continue;
    }
    for (const Entry& e : n.inputs) needs[id] |= needs[e.node];
  }

  Placeholders ph(&g, &all);
  absl::flat_hash_map<Entry, std::vector<Entry>> contrib;
  for (size_t i = 0; i < fwd.outputs().size(); ++i) {
    const Entry o = fwd.outputs()[i];
    const EntryType t = type_of(o);
    Entry h = g.Input(absl::StrCat("_head_grad", i), t.shape, t.dtype);
    RILL_RETURN_IF_ERROR(g.status());
    out.head_grads.push_back(h);
    all.resize(g.num_nodes());
    all[h.node] = {t};
    contrib[o].push_back(h);
  }

  // A node holding the sum of `parts` (or the single part).
  int sums = 0;
  auto summed = [&](const std::vector<Entry>& parts, const std::string& name,
                    const std::string& group) -> absl::StatusOr<Entry> {
    if (parts.size() == 1) return parts[0];
    Entry s = g.OpParsed(GradSumOp(), nullptr, parts, absl::StrCat(name, "_sum", sums++), group)[0];
    RILL_RETURN_IF_ERROR(g.status());
    all.resize(g.num_nodes());
    all[s.node] = {type_of(parts[0])};
    return s;
  };
  // Turns the calls recorded by `trace` into nodes.
  auto emit = [&](ops::OpTrace& trace, const std::string& base,
                  const std::string& group) -> absl::Status {
    int k = 0;
    for (ops::OpTrace::Call& c : trace.TakeCalls()) {
      std::vector<Entry> ins;
      for (const Tensor& x : c.inputs) {
        RILL_ASSIGN_OR_RETURN(Entry e, ph.EntryOf(x, base, group));
        ins.push_back(e);
      }
      std::vector<Entry> outs =
          g.OpParsed(*c.op, c.params, std::move(ins),
                     absl::StrCat(base, "_backward", k++, "_", c.op->name()), group);
      RILL_RETURN_IF_ERROR(g.status());
      note_types(outs[0].node, c.outputs);
      for (size_t i = 0; i < outs.size(); ++i) ph.Add(c.outputs[i], outs[i]);
    }
    return absl::OkStatus();
  };

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int id = *it;
    const Node& n = fwd.node(id);
    if (n.is_variable() || !needs[id]) continue;
    bool any = false;
    for (int o = 0; o < n.num_outputs(); ++o) any |= contrib.contains(Entry{id, o});
    if (!any) continue;
    if (n.op->gradient() == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("autodiff: ", fwd.Describe(id), " has no gradient"));
    }
    std::vector<Tensor> ins, outs, ograds;
    for (const Entry& e : n.inputs) {
      RILL_ASSIGN_OR_RETURN(Tensor x, ph.For(e, type_of(e)));
      ins.push_back(x);
    }
    {
      ops::OpTrace trace;
      for (int o = 0; o < n.num_outputs(); ++o) {
        const Entry e{id, o};
        RILL_ASSIGN_OR_RETURN(Tensor y, ph.For(e, type_of(e)));
        outs.push_back(y);
        auto c = contrib.find(e);
        if (c == contrib.end()) {  // No gradient reaches this output: zeros.
          const EntryType t = type_of(e);
          ops::InvokeOptions opt;
          opt.context = engine::Context::Host();
          RILL_ASSIGN_OR_RETURN(
              auto z, ops::Invoke(op_names::kZeros, {},
                                  {{"shape", ShapeAttr(*t.shape)}, {"dtype", DTypeName(*t.dtype)}},
                                  {}, opt));
          ograds.push_back(z[0]);
          continue;
        }
        RILL_ASSIGN_OR_RETURN(Entry s,
                              summed(c->second, absl::StrCat(n.name, "_grad", o), n.group));
        RILL_ASSIGN_OR_RETURN(Tensor gt, ph.For(s, type_of(s)));
        ograds.push_back(gt);
      }
      ops::GradientContext gc{n.params.get(), ins, outs, ograds};
      absl::StatusOr<std::vector<Tensor>> grads = n.op->gradient()(gc);
      if (!grads.ok())
        return Annotate(grads.status(), absl::StrCat("autodiff: gradient of ", fwd.Describe(id)));
      RILL_RETURN_IF_ERROR(emit(trace, n.name, n.group));
      for (size_t i = 0; i < n.inputs.size() && i < grads->size(); ++i) {
        const Tensor& gi = (*grads)[i];
        if (!gi.defined() || !needs[n.inputs[i].node]) continue;
        RILL_ASSIGN_OR_RETURN(Entry e, ph.EntryOf(gi, n.name, n.group));
        contrib[n.inputs[i]].push_back(e);
      }
    }
  }

  // One `_grad_sum` per requested variable (a single part too: the executor
  // binds its output to the caller's gradient tensor).
  for (const std::string& name : wrt) {
    const int id = fwd.Find(name);
    const Entry v{id, 0};
    std::vector<Entry> parts;
    auto c = contrib.find(v);
    if (c != contrib.end()) parts = c->second;
    if (parts.empty()) {  // Not on any path to an output: a zero gradient.
      const EntryType t = type_of(v);
      if (!t.known()) {
        return absl::FailedPreconditionError(
            absl::StrCat("autodiff: the type of ", fwd.Describe(id), " is unknown"));
      }
      Entry z = g.Op1(op_names::kZeros, {},
                      {{"shape", ShapeAttr(*t.shape)}, {"dtype", DTypeName(*t.dtype)}},
                      absl::StrCat("_zero_grad_", name));
      RILL_RETURN_IF_ERROR(g.status());
      parts.push_back(z);
    }
    Entry s = g.OpParsed(GradSumOp(), nullptr, parts, absl::StrCat("_grad_", name))[0];
    RILL_RETURN_IF_ERROR(g.status());
    out.var_grads[name] = s;
  }
  return out;
}

}  // namespace rill::graph
