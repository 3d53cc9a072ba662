// Executor::Bind's work: the graph with its backward pass, placement and
// copies, the memory plan, allocation and the prepared calls.

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/graph/autodiff.h"
#include "rill/graph/executor_impl.h"
#include "rill/graph/memory_plan.h"
#include "rill/graph/passes.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/prepared.h"
#include "rill/stream/stream.h"

namespace rill::graph {

absl::Status Executor::Impl::Build(const Graph& fwd,
                                   const absl::flat_hash_map<std::string, Tensor>& args_in,
                                   const absl::flat_hash_map<std::string, Tensor>& grads_in) {
  RILL_RETURN_IF_ERROR(fwd.status());
  if (fwd.outputs().empty()) return absl::InvalidArgumentError("bind: the graph has no outputs");
  eng = opt.engine != nullptr ? opt.engine : &engine::Engine::Default();
  user_graph = fwd;
  user_args = args_in;
  args = args_in;
  grads = grads_in;
  RILL_ASSIGN_OR_RETURN(std::vector<int> fwd_order, TopoOrder(fwd));

  // --- Arguments: every variable the outputs need, nothing unknown.
  absl::flat_hash_map<std::string, EntryType> known;
  for (const auto& [name, t] : args) {
    const int id = fwd.Find(name);
    if (id < 0 || !fwd.node(id).is_variable()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bind: the graph has no variable '", name, "'"));
    }
    RILL_RETURN_IF_ERROR(Annotate(t.CheckUsable(), absl::StrCat("bind: variable '", name, "'")));
    if (t.engine() != eng) {
      return absl::InvalidArgumentError(
          absl::StrCat("bind: variable '", name, "' is a tensor of another engine"));
    }
    known[name] = EntryType{t.shape(), t.dtype()};
  }
  for (int id : fwd_order) {
    const Node& n = fwd.node(id);
    if (n.is_variable() && !args.contains(n.name)) {
      return absl::InvalidArgumentError(absl::StrCat("bind: ", fwd.Describe(id), " is not bound"));
    }
  }
  RILL_ASSIGN_OR_RETURN(EntryTypes fwd_types, InferTypes(fwd, fwd_order, known));
  for (int id : fwd_order) {
    for (const EntryType& t : fwd_types[id]) {
      if (!t.known()) {
        return absl::InvalidArgumentError(
            absl::StrCat("bind: the type of ", fwd.Describe(id), " is unknown"));
      }
    }
  }

  // --- Gradients wanted.
  std::vector<std::string> wrt;
  absl::flat_hash_set<std::string> adds;
  for (const auto& [name, req] : opt.grad_reqs) {
    if (fwd.Find(name) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("bind: grad_reqs names no variable ('", name, "')"));
    }
    if (req != GradReq::kNull && !grads.contains(name)) {
      return absl::InvalidArgumentError(absl::StrCat("bind: grad_req '", GradReqName(req),
                                                     "' for '", name,
                                                     "' but no gradient tensor is bound"));
    }
  }
  for (int id = 0; id < fwd.num_nodes(); ++id) {
    const Node& n = fwd.node(id);
    if (!n.is_variable()) continue;
    auto gi = grads.find(n.name);
    if (gi == grads.end()) continue;
    auto ri = opt.grad_reqs.find(n.name);
    const GradReq req = ri == opt.grad_reqs.end() ? GradReq::kWrite : ri->second;
    if (req == GradReq::kNull) continue;
    auto ai = args.find(n.name);
    if (ai == args.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bind: a gradient for '", n.name, "', which is not bound"));
    }
    const Tensor& gt = gi->second;
    RILL_RETURN_IF_ERROR(
        Annotate(gt.CheckUsable(), absl::StrCat("bind: gradient of '", n.name, "'")));
    if (gt.shape() != ai->second.shape() || gt.dtype() != ai->second.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("bind: the gradient of '", n.name, "' is ",
                                                     gt.ToString(), " but the variable is ",
                                                     ai->second.ToString()));
    }
    wrt.push_back(n.name);
    if (req == GradReq::kAdd) adds.insert(n.name);
  }
  for (const auto& [name, t] : grads) {
    if (fwd.Find(name) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("bind: a gradient for '", name, "', which is no variable"));
    }
  }

  // --- The backward graph.
  absl::flat_hash_map<std::string, Entry> var_grads;
  if (wrt.empty()) {
    g = fwd;
  } else {
    RILL_ASSIGN_OR_RETURN(BackwardGraph bg, BuildBackward(fwd, fwd_order, fwd_types, wrt));
    g = std::move(bg.graph);
    head_grads = bg.head_grads;
    var_grads = std::move(bg.var_grads);
  }
  outputs = fwd.outputs();

  // --- Placement and copies.
  node_ctx.assign(g.num_nodes(), 0);
  contexts.clear();
  CtxIndex(opt.context);
  auto group_ctx = [&](const std::string& group) {
    auto it = opt.group_contexts.find(group);
    return CtxIndex(it == opt.group_contexts.end() ? opt.context : it->second);
  };
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (n.is_variable()) {
      auto a = args.find(n.name);
      node_ctx[id] = a != args.end() ? CtxIndex(a->second.context()) : 0;
    } else {
      node_ctx[id] = group_ctx(n.group);
    }
  }
  const std::vector<int> wanted_ctx = node_ctx;
  RILL_RETURN_IF_ERROR(PlaceOnFallbacks());
  for (size_t i = 0; i < head_grads.size(); ++i) {
    const Entry& o = outputs[i];
    const int c = node_ctx[o.node];
    node_ctx[head_grads[i].node] = c;
    const EntryType& t = fwd_types[o.node][o.index];
    RILL_ASSIGN_OR_RETURN(Tensor h, Tensor::Empty(*t.shape, *t.dtype, contexts[c], eng));
    head_tensors.push_back(h);
    args[g.node(head_grads[i].node).name] = h;
  }
  for (auto& [name, e] : var_grads) {
    const int user = CtxIndex(grads.at(name).context());
    RILL_ASSIGN_OR_RETURN(std::optional<int> fallback, GradSumFallback(user));
    if (fallback.has_value()) {
      // The user's gradient array is on a device that cannot sum: the sum
      // runs on the fallback, and a copy writes the array.
      if (adds.contains(name)) {
        return absl::UnimplementedError(
            absl::StrCat("bind: the gradient of '", name, "' accumulates (GradReq::kAdd) on ",
                         contexts[user].ToString(),
                         ", which has no kernel to add with; bind it with kWrite, "
                         "or on a device with kernels"));
      }
      node_ctx[e.node] = *fallback;
      Entry c = g.OpParsed(CopyOp(), nullptr, {e}, absl::StrCat("_copy_grad_", name))[0];
      RILL_RETURN_IF_ERROR(g.status());
      node_ctx.push_back(user);
      e = c;
    } else {
      node_ctx[e.node] = user;
    }
    var_grad_sums[e.node] = grads.at(name);
  }
  // An output made on a fallback device is copied back to where it was
  // wanted, so callers find every output where they placed it.
  for (Entry& o : outputs) {
    if (node_ctx[o.node] == wanted_ctx[o.node]) continue;
    const int want = wanted_ctx[o.node];
    Entry c =
        g.OpParsed(CopyOp(), nullptr, {o},
                   absl::StrCat("_copy_", EntryName(o), "_to_", contexts[want].ToString()))[0];
    RILL_RETURN_IF_ERROR(g.status());
    node_ctx.push_back(want);
    o = c;
  }
  absl::flat_hash_map<std::pair<Entry, int>, Entry> copies;
  const int before_copies = g.num_nodes();
  for (int id = 0; id < before_copies; ++id) {
    if (g.node(id).op == &CopyOp()) continue;  // Made above: it crosses devices itself.
    const std::vector<Entry> inputs = g.node(id).inputs;
    for (size_t slot = 0; slot < inputs.size(); ++slot) {
      const Entry e = inputs[slot];
      if (e.node < 0 || e.node >= g.num_nodes() || node_ctx[e.node] == node_ctx[id]) continue;
      const std::pair<Entry, int> key{e, node_ctx[id]};
      auto it = copies.find(key);
      if (it == copies.end()) {
        Entry c = g.OpParsed(
            CopyOp(), nullptr, {e},
            absl::StrCat("_copy_", EntryName(e), "_to_", contexts[node_ctx[id]].ToString()))[0];
        RILL_RETURN_IF_ERROR(g.status());
        node_ctx.push_back(node_ctx[id]);
        it = copies.emplace(key, c).first;
      }
      g.SetInput(id, static_cast<int>(slot), it->second);
    }
  }

  // --- Order: the forward pass, then what the gradients need.
  RILL_ASSIGN_OR_RETURN(order, TopoOrder(g, outputs));
  num_forward = order.size();
  if (!var_grads.empty()) {
    // Gradients in the order the backward pass made them, so that the
    // order follows the trace (each value freed soon after it is made).
    std::vector<Entry> grads_made;
    for (const auto& [name, e] : var_grads) grads_made.push_back(e);
    auto made_at = [&](const Entry& e) {
      int last = e.node;
      if (!g.node(e.node).inputs.empty()) {
        last = 0;
        for (const Entry& in : g.node(e.node).inputs) last = std::max(last, in.node);
      }
      return last;
    };
    std::sort(grads_made.begin(), grads_made.end(),
              [&](const Entry& a, const Entry& b) { return made_at(a) < made_at(b); });
    std::vector<Entry> roots = outputs;
    roots.insert(roots.end(), grads_made.begin(), grads_made.end());
    RILL_ASSIGN_OR_RETURN(std::vector<int> all, TopoOrder(g, roots));
    absl::flat_hash_set<int> in_forward(order.begin(), order.end());
    for (int id : all) {
      if (!in_forward.contains(id)) order.push_back(id);
    }
  }
  position.assign(g.num_nodes(), -1);
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  absl::flat_hash_map<std::string, EntryType> all_known = known;
  for (size_t i = 0; i < head_grads.size(); ++i) {
    all_known[g.node(head_grads[i].node).name] = {head_tensors[i].shape(), head_tensors[i].dtype()};
  }
  RILL_ASSIGN_OR_RETURN(types, InferTypes(g, order, all_known));

  // --- Memory.
  PlanInput pin;
  pin.graph = &g;
  pin.order = &order;
  pin.types = &types;
  pin.context = &node_ctx;
  pin.enable = opt.plan_memory;
  for (int id : order) {
    if (g.node(id).is_variable()) pin.external.insert(Entry{id, 0});
  }
  for (const auto& [name, e] : var_grads) {
    pin.external.insert(e);
    if (adds.contains(name)) pin.sum_adds.insert(e.node);
  }
  for (const Entry& o : outputs) pin.pinned.insert(o);
  plan = PlanMemory(pin);
  if (opt.canary_inject_early_release) {
    // Move the first release whose last reader is a node with a predecessor
    // one node earlier.
    for (size_t pos = 1; pos < plan.released_after.size(); ++pos) {
      const Node& n = g.node(order[pos]);
      auto& rel = plan.released_after[pos];
      auto hit = std::find_if(rel.begin(), rel.end(), [&](int b) {
        for (const Entry& e : n.inputs) {
          if (plan.block[e.node][e.index] == b && !g.node(order[pos - 1]).is_variable())
            return true;
        }
        return false;
      });
      if (hit == rel.end()) continue;
      plan.released_after[pos - 1].push_back(*hit);
      rel.erase(hit);
      break;
    }
  }
  for (int id : order) {
    const Node& n = g.node(id);
    if (n.op != &GradSumOp()) continue;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (plan.fused[id][k]) fused_home[n.inputs[k]] = Entry{id, 0};
    }
  }
  RILL_RETURN_IF_ERROR(Allocate());
  RILL_RETURN_IF_ERROR(Prepare(/*is_train=*/true));
  // The devices whose kernels are the CPU context's (host:N): their
  // segments run inline in one host callback each (Impl::RunStep).
  absl::StatusOr<StreamExecutor*> cpu = ExecutorFor(engine::Context::Host(), eng);
  runs_host_kernels.assign(contexts.size(), false);
  for (size_t c = 0; c < contexts.size() && cpu.ok(); ++c) {
    if (contexts[c].is_host()) continue;
    absl::StatusOr<StreamExecutor*> exec = ExecutorFor(contexts[c], eng);
    runs_host_kernels[c] = exec.ok() && (*exec)->platform() == (*cpu)->platform();
  }
  forward_steps = MakeSteps(0, num_forward);
  backward_steps = MakeSteps(num_forward, order.size());
  PrepareSteps(forward_steps, true);
  PrepareSteps(backward_steps, true);
  return absl::OkStatus();
}

absl::Status Executor::Impl::Allocate() {
  blocks.clear();
  for (const MemoryPlan::Block& b : plan.blocks) {
    RILL_ASSIGN_OR_RETURN(Tensor t,
                          Tensor::Empty(Shape{static_cast<int64_t>(std::max<uint64_t>(b.bytes, 1))},
                                        DType::kU8, contexts[b.context], eng));
    blocks.push_back(std::move(t));
  }
  if (opt.canary) {
    owner = std::make_unique<std::atomic<int64_t>[]>(std::max<size_t>(blocks.size(), 1));
    for (size_t i = 0; i < blocks.size(); ++i) owner[i].store(-1);
  }
  tensors.assign(g.num_nodes(), {});
  // Homes first (a fused part is a view of its sum's tensor).
  auto make = [&](const Entry& e) -> absl::StatusOr<Tensor> {
    const Node& n = g.node(e.node);
    const EntryType& t = types[e.node][e.index];
    if (n.is_variable()) return args.at(n.name);
    if (auto it = var_grad_sums.find(e.node); it != var_grad_sums.end()) return it->second;
    const int b = plan.block[e.node][e.index];
    if (b < 0)
      return absl::InternalError(absl::StrCat("bind: no storage planned for ", EntryName(e)));
    return blocks[b].View(*t.shape, *t.dtype, 0);
  };
  for (int id : order) {
    const Node& n = g.node(id);
    tensors[id].resize(n.num_outputs());
    for (int o = 0; o < n.num_outputs(); ++o) {
      const Entry e{id, o};
      const Entry home = Home(e);
      if (!(home == e)) continue;
      RILL_ASSIGN_OR_RETURN(tensors[id][o], make(e));
    }
  }
  for (int id : order) {
    for (int o = 0; o < g.node(id).num_outputs(); ++o) {
      const Entry e{id, o};
      const Entry home = Home(e);
      if (home == e) continue;
      tensors[id][o] = tensors[home.node][home.index];
    }
  }
  return absl::OkStatus();
}

// Nodes whose op has no kernel on their device go to the device its
// platform declares (Platform::OpFallback); the copies in and out are made
// with the other placement copies. Listed once in a warning.
absl::Status Executor::Impl::PlaceOnFallbacks() {
  std::vector<std::string> moved;
  const size_t num_contexts = contexts.size();
  for (size_t c = 0; c < num_contexts; ++c) {
    RILL_ASSIGN_OR_RETURN(StreamExecutor * exec, ExecutorFor(contexts[c], eng));
    std::optional<int> fallback;
    for (int id = 0; id < g.num_nodes(); ++id) {
      const Node& n = g.node(id);
      if (n.is_variable() || node_ctx[id] != static_cast<int>(c) || n.op == &CopyOp()) continue;
      // A gradient sum runs as identity (kWriteTo) and _accumulate-style adds.
      const ops::OpDef& op = n.op == &GradSumOp() ? ops::BuiltinOp(op_names::kIdentity) : *n.op;
      if (ops::OpRegistry::Choose(op, exec).ok()) continue;
      if (!fallback.has_value()) {
        RILL_ASSIGN_OR_RETURN(std::optional<engine::Context> to,
                              ops::FallbackFor(contexts[c], /*host_fallback=*/false, eng));
        if (!to.has_value()) break;  // Prepare reports the missing kernel.
        fallback = CtxIndex(*to);
      }
      node_ctx[id] = *fallback;
      ops::NoteFallback(*n.op, contexts[c], contexts[*fallback], 1, /*log=*/false);
      moved.push_back(absl::StrCat(n.name, " (", n.op->name(), ")"));
    }
  }
  if (!moved.empty()) {
    RILL_LOG(WARNING) << "bind: " << moved.size()
                      << " node(s) have no kernel on their device and run on its fallback with "
                         "copies: "
                      << absl::StrJoin(moved, ", ");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<int>> Executor::Impl::GradSumFallback(int c) {
  RILL_ASSIGN_OR_RETURN(StreamExecutor * exec, ExecutorFor(contexts[c], eng));
  if (ops::OpRegistry::Choose(ops::BuiltinOp(op_names::kIdentity), exec).ok())
    return std::optional<int>();
  RILL_ASSIGN_OR_RETURN(std::optional<engine::Context> to,
                        ops::FallbackFor(contexts[c], /*host_fallback=*/false, eng));
  if (!to.has_value()) return std::optional<int>();  // Prepare reports the missing kernel.
  return std::optional<int>(CtxIndex(*to));
}

absl::Status Executor::Impl::Prepare(bool is_train) {
  auto& prep = prepared[is_train ? 1 : 0];
  prep.assign(g.num_nodes(), {});
  static const ops::OpDef& identity = ops::BuiltinOp(op_names::kIdentity);
  const size_t end = is_train ? order.size() : num_forward;
  for (size_t pos = 0; pos < end; ++pos) {
    const int id = order[pos];
    const Node& n = g.node(id);
    if (n.is_variable() || n.op == &CopyOp()) continue;
    std::vector<Tensor> in;
    for (const Entry& e : n.inputs) in.push_back(tensors[e.node][e.index]);
    ops::InvokeOptions o;
    o.is_train = is_train;
    auto where = [&] {
      return absl::StrCat("graph ", g.Describe(id), " on ", contexts[node_ctx[id]].ToString());
    };
    if (n.op == &GradSumOp()) {
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (plan.fused[id][k]) continue;
        o.reqs = {plan.sum_req[id][k]};
        absl::StatusOr<ops::PreparedOp> p =
            ops::PreparedOp::Prepare(identity, {in[k]}, nullptr, {tensors[id][0]}, o);
        if (!p.ok()) return Annotate(p.status(), where());
        prep[id].push_back(*std::move(p));
      }
      continue;
    }
    o.reqs = plan.req[id];
    absl::StatusOr<ops::PreparedOp> p =
        ops::PreparedOp::Prepare(*n.op, in, n.params, tensors[id], o);
    if (!p.ok()) return Annotate(p.status(), where());
    prep[id].push_back(*std::move(p));
  }
  return absl::OkStatus();
}

}  // namespace rill::graph
