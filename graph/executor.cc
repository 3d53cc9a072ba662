#include "rill/graph/executor.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/base/status_macros.h"
#include "rill/graph/autodiff.h"
#include "rill/graph/memory_plan.h"
#include "rill/graph/passes.h"
#include "rill/ops/invoke.h"
#include "rill/ops/prepared.h"
#include "rill/stream/stream.h"

namespace rill::graph {

const char* GradReqName(GradReq req) {
  switch (req) {
    case GradReq::kNull:
      return "null";
    case GradReq::kWrite:
      return "write";
    case GradReq::kAdd:
      return "add";
  }
  return "?";
}

std::string MemoryReport::ToString() const {
  return absl::StrFormat(
      "%d entries in %d blocks: %d bytes planned, %d without reuse (ratio %.3f); %d in-place, %d "
      "kAddTo; "
      "%d bytes bound by the caller",
      entries, blocks, planned_bytes, naive_bytes, ratio(), inplace, addto, external_bytes);
}

namespace {

// One engine function: consecutive op nodes on one context, or one copy.
struct Step {
  bool copy = false;
  int context = 0;
  std::vector<int> positions;  // Into Impl::order.
  std::string name;
};

}  // namespace

struct Executor::Impl {
  ~Impl();
  Graph user_graph;  // As bound, for Reshape.
  absl::flat_hash_map<std::string, Tensor> user_args;
  Graph g;
  BindOptions opt;
  engine::Engine* eng = nullptr;
  absl::flat_hash_map<std::string, Tensor> args, grads;
  std::vector<engine::Context> contexts;
  std::vector<int> node_ctx;
  EntryTypes types;
  std::vector<int> order;     // Forward nodes, then backward nodes.
  size_t num_forward = 0;     // Positions [0, num_forward) are the forward pass.
  std::vector<int> position;  // Per node: its index in order, or -1.
  std::vector<Entry> outputs;
  std::vector<Entry> head_grads;
  std::vector<Tensor> head_tensors;
  bool heads_are_ones = false;
  // The `_grad_sum` node of each requested gradient, and the caller's tensor.
  absl::flat_hash_map<int, Tensor> var_grad_sums;
  MemoryPlan plan;
  std::vector<Tensor> blocks;
  std::vector<std::vector<Tensor>> tensors;  // [node][output]
  // Per node: the prepared calls (an op node: one; a `_grad_sum`: one
  // identity per part not fused), for training [1] and inference [0].
  std::vector<std::vector<ops::PreparedOp>> prepared[2];
  std::vector<Step> forward_steps, backward_steps;
  bool trained_forward = false;
  // Canary mode: per block, the entry it holds (node * 256 + output), -1
  // when released.
  std::unique_ptr<std::atomic<int64_t>[]> owner;

  int CtxIndex(const engine::Context& c) {
    for (size_t i = 0; i < contexts.size(); ++i) {
      if (contexts[i] == c) return static_cast<int>(i);
    }
    contexts.push_back(c);
    return static_cast<int>(contexts.size()) - 1;
  }
  static int64_t Code(const Entry& e) { return static_cast<int64_t>(e.node) * 256 + e.index; }
  // The entry whose storage `e` is: a fused gradient part is its sum.
  Entry Home(const Entry& e) const {
    auto it = fused_home.find(e);
    return it == fused_home.end() ? e : it->second;
  }
  absl::flat_hash_map<Entry, Entry> fused_home;

  absl::Status Build(const Graph& fwd, const absl::flat_hash_map<std::string, Tensor>& args_in,
                     const absl::flat_hash_map<std::string, Tensor>& grads_in);
  absl::Status PlaceAndCopy();
  absl::Status Allocate();
  absl::Status Prepare(bool is_train);
  std::vector<Step> MakeSteps(size_t begin, size_t end) const;
  absl::Status Push(const std::vector<Step>& steps, bool is_train);
  absl::Status RunNode(int pos, bool is_train, const engine::RunContext& rc) const;
  absl::Status PushCopy(int pos) const;
  // Canary mode: the blocks a node reads still hold its inputs; after it,
  // its outputs own their blocks and the blocks it released are filled.
  absl::Status CheckInputs(int pos) const;
  // (Blocks of `context` only; the outputs' tags too when `outputs`.)
  absl::Status AfterNode(int pos, const engine::RunContext& rc, int context, bool outputs) const;
  std::string EntryName(const Entry& e) const {
    const Node& n = g.node(e.node);
    return n.num_outputs() > 1 ? absl::StrCat(n.name, ":", e.index) : n.name;
  }
};

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
  for (size_t i = 0; i < head_grads.size(); ++i) {
    const Entry& o = outputs[i];
    const int c = node_ctx[o.node];
    node_ctx[head_grads[i].node] = c;
    const EntryType& t = fwd_types[o.node][o.index];
    RILL_ASSIGN_OR_RETURN(Tensor h, Tensor::Empty(*t.shape, *t.dtype, contexts[c], eng));
    head_tensors.push_back(h);
    args[g.node(head_grads[i].node).name] = h;
  }
  for (const auto& [name, e] : var_grads) {
    node_ctx[e.node] = CtxIndex(grads.at(name).context());
    var_grad_sums[e.node] = grads.at(name);
  }
  absl::flat_hash_map<std::pair<Entry, int>, Entry> copies;
  const int before_copies = g.num_nodes();
  for (int id = 0; id < before_copies; ++id) {
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
  forward_steps = MakeSteps(0, num_forward);
  backward_steps = MakeSteps(num_forward, order.size());
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

absl::Status Executor::Impl::Prepare(bool is_train) {
  auto& prep = prepared[is_train ? 1 : 0];
  prep.assign(g.num_nodes(), {});
  static const ops::OpDef& identity = ops::BuiltinOp("identity");
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

std::vector<Step> Executor::Impl::MakeSteps(size_t begin, size_t end) const {
  // A node joins the segment of the node before it only when it is that
  // node's one consumer: a segment is a chain, so no other node waits for
  // the end of a segment to read a value made in its middle, and
  // independent branches stay separate functions the engine can overlap.
  std::vector<int> consumers(g.num_nodes(), 0);
  std::vector<int> last_consumer(g.num_nodes(), -1);
  for (size_t pos = begin; pos < end; ++pos) {
    const int id = order[pos];
    for (const Entry& e : g.node(id).inputs) {
      if (last_consumer[e.node] != id) ++consumers[e.node];
      last_consumer[e.node] = id;
    }
  }
  for (const Entry& o : outputs) consumers[o.node] += 2;  // Read by the caller.
  std::vector<Step> steps;
  const int bulk = std::max(1, opt.bulk_size);
  int prev = -1;
  for (size_t pos = begin; pos < end; ++pos) {
    const int id = order[pos];
    const Node& n = g.node(id);
    if (n.is_variable()) continue;
    const bool copy = n.op == &CopyOp();
    const bool chained = prev >= 0 && consumers[prev] == 1 && last_consumer[prev] == id;
    if (copy || !chained || steps.empty() || steps.back().copy ||
        steps.back().context != node_ctx[id] ||
        static_cast<int>(steps.back().positions.size()) >= bulk) {
      steps.push_back(Step{copy, node_ctx[id], {}, ""});
    }
    steps.back().positions.push_back(static_cast<int>(pos));
    prev = id;
  }
  for (Step& s : steps) {
    const std::string& first = g.node(order[s.positions.front()]).name;
    s.name = s.positions.size() == 1
                 ? first
                 : absl::StrCat(first, "..", g.node(order[s.positions.back()]).name, " (",
                                s.positions.size(), " nodes)");
  }
  return steps;
}

absl::Status Executor::Impl::CheckInputs(int pos) const {
  const int id = order[pos];
  const Node& n = g.node(id);
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Entry& e = n.inputs[k];
    if (n.op == &GradSumOp() && plan.fused[id][k]) continue;
    const int b = plan.block[e.node][e.index];
    if (b < 0) continue;
    const int64_t have = owner[b].load();
    if (have != Code(Home(e))) {
      return absl::InternalError(absl::StrCat(
          "canary: graph ", g.Describe(id), " reads ", EntryName(e), " from block ", b, ", which ",
          have < 0
              ? std::string("the plan has released")
              : absl::StrCat("the plan gave to ", EntryName(Entry{static_cast<int>(have / 256),
                                                                  static_cast<int>(have % 256)}))));
    }
  }
  return absl::OkStatus();
}

absl::Status Executor::Impl::AfterNode(int pos, const engine::RunContext& rc, int context,
                                       bool outputs) const {
  const int id = order[pos];
  for (int o = 0; outputs && o < g.node(id).num_outputs(); ++o) {
    const int b = plan.block[id][o];
    if (b >= 0) owner[b].store(Code(Home(Entry{id, o})));
  }
  for (int b : plan.released_after[pos]) {
    if (plan.blocks[b].context != context) continue;
    owner[b].store(-1);
    // Fill the block with NaN bytes in stream order (or at once, inline).
    absl::StatusOr<StorageBlock> sb = blocks[b].Storage();
    if (!sb.ok()) return sb.status();
    if (rc.stream == nullptr) {
      if (sb->host != nullptr) std::memset(sb->host, 0xFF, plan.blocks[b].bytes);
    } else {
      DeviceMemoryBase m = sb->memory;
      rc.stream->ThenMemset32(&m, 0xFFFFFFFFu, plan.blocks[b].bytes / 4 * 4);
      if (!rc.stream->ok()) return rc.stream->status();
    }
  }
  return absl::OkStatus();
}

absl::Status Executor::Impl::RunNode(int pos, bool is_train, const engine::RunContext& rc) const {
  const int id = order[pos];
  if (owner != nullptr) RILL_RETURN_IF_ERROR(CheckInputs(pos));
  for (const ops::PreparedOp& p : prepared[is_train ? 1 : 0][id]) {
    absl::Status s = p.Run(rc);
    if (!s.ok()) return Annotate(s, absl::StrCat("graph node '", g.node(id).name, "'"));
  }
  if (owner != nullptr) RILL_RETURN_IF_ERROR(AfterNode(pos, rc, node_ctx[id], true));
  return absl::OkStatus();
}

absl::Status Executor::Impl::PushCopy(int pos) const {
  const int id = order[pos];
  const Entry& src = g.node(id).inputs[0];
  const Tensor& from = tensors[src.node][src.index];
  const Tensor& to = tensors[id][0];
  const Impl* self = this;
  if (owner != nullptr) {  // The canary's checks, in the copy's var order.
    RILL_RETURN_IF_ERROR(eng->PushSync(
        [self, pos](engine::RunContext) { return self->CheckInputs(pos); }, from.context(),
        {from.var()}, {}, engine::FnProperty::kNormal, 0, "canary_check"));
  }
  absl::Status st = to.CopyFrom(from);
  if (!st.ok()) return Annotate(st, absl::StrCat("graph node '", g.node(id).name, "'"));
  if (owner != nullptr) {
    // One update per context (a copy always crosses two): the copy's output
    // and the released blocks on its side, the source's released blocks on
    // the other.
    const int cto = node_ctx[id], cfrom = node_ctx[src.node];
    for (int c : {cto, cfrom}) {
      std::vector<engine::VarHandle> writes;
      if (c == cto) writes.push_back(to.var());
      for (int b : plan.released_after[pos]) {
        if (plan.blocks[b].context == c) writes.push_back(blocks[b].var());
      }
      const bool outs = c == cto;
      RILL_RETURN_IF_ERROR(eng->PushSync(
          [self, pos, c, outs](engine::RunContext rc) { return self->AfterNode(pos, rc, c, outs); },
          contexts[c], {}, writes, engine::FnProperty::kNormal, 0, "canary_update"));
    }
  }
  return absl::OkStatus();
}

absl::Status Executor::Impl::Push(const std::vector<Step>& steps, bool is_train) {
  for (const Step& s : steps) {
    if (s.copy) {
      RILL_RETURN_IF_ERROR(PushCopy(s.positions[0]));
      continue;
    }
    std::vector<engine::VarHandle> reads, writes;
    for (int pos : s.positions) {
      for (const ops::PreparedOp& p : prepared[is_train ? 1 : 0][order[pos]]) {
        reads.insert(reads.end(), p.reads().begin(), p.reads().end());
        writes.insert(writes.end(), p.writes().begin(), p.writes().end());
      }
      if (owner != nullptr) {
        for (int b : plan.released_after[pos]) writes.push_back(blocks[b].var());
      }
    }
    const Impl* self = this;
    std::vector<int> positions = s.positions;
    auto fn = [self, positions = std::move(positions),
               is_train](engine::RunContext rc) -> absl::Status {
      for (int pos : positions) RILL_RETURN_IF_ERROR(self->RunNode(pos, is_train, rc));
      return absl::OkStatus();
    };
    RILL_RETURN_IF_ERROR(eng->PushSync(std::move(fn), contexts[s.context], reads, writes,
                                       engine::FnProperty::kNormal, 0, s.name));
  }
  return absl::OkStatus();
}

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  for (const Entry& o : impl_->outputs) outputs_.push_back(impl_->tensors[o.node][o.index]);
}

Executor::~Executor() = default;

Executor::Impl::~Impl() {
  // Engine functions pushed by this plan reference it: wait for them.
  for (const Tensor& b : blocks) (void)b.WaitToWrite();
  for (const auto& [name, t] : grads) (void)t.WaitToWrite();
  for (const auto& [name, t] : args) (void)t.WaitToWrite();
}

absl::StatusOr<std::unique_ptr<Executor>> Executor::Bind(
    const Graph& g, const absl::flat_hash_map<std::string, Tensor>& args,
    const absl::flat_hash_map<std::string, Tensor>& grads, const BindOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->opt = options;
  RILL_RETURN_IF_ERROR(impl->Build(g, args, grads));
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

absl::Status Executor::Forward(bool is_train) {
  Impl& m = *impl_;
  if (!is_train && m.prepared[0].empty()) RILL_RETURN_IF_ERROR(m.Prepare(false));
  RILL_RETURN_IF_ERROR(m.Push(m.forward_steps, is_train));
  m.trained_forward = is_train;
  return absl::OkStatus();
}

absl::Status Executor::Backward(absl::Span<const Tensor> head_grads) {
  Impl& m = *impl_;
  if (m.head_grads.empty()) {
    return absl::FailedPreconditionError("Backward: no gradient was requested at bind");
  }
  if (!m.trained_forward)
    return absl::FailedPreconditionError("Backward: run Forward(is_train=true) first");
  if (head_grads.empty()) {
    if (!m.heads_are_ones) {
      for (const Tensor& h : m.head_tensors) {
        ops::InvokeOptions o;
        RILL_RETURN_IF_ERROR(
            ops::Invoke(
                "fill", {},
                {{"shape", h.shape().ToString()}, {"value", "1"}, {"dtype", DTypeName(h.dtype())}},
                {h}, o)
                .status());
      }
      m.heads_are_ones = true;
    }
  } else {
    if (head_grads.size() != m.head_tensors.size()) {
      return absl::InvalidArgumentError(absl::StrCat("Backward: ", head_grads.size(),
                                                     " head gradients for ", m.head_tensors.size(),
                                                     " outputs"));
    }
    for (size_t i = 0; i < head_grads.size(); ++i) {
      absl::Status s = m.head_tensors[i].CopyFrom(head_grads[i]);
      if (!s.ok()) return Annotate(s, absl::StrCat("Backward: head gradient ", i));
    }
    m.heads_are_ones = false;
  }
  return m.Push(m.backward_steps, true);
}

absl::Status Executor::Reshape(const absl::flat_hash_map<std::string, Tensor>& args) {
  const Impl& m = *impl_;
  absl::flat_hash_map<std::string, Tensor> merged = m.user_args;
  for (const auto& [name, t] : args) {
    if (!merged.contains(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Reshape: '", name, "' is not a bound variable"));
    }
    merged[name] = t;
  }
  auto next = std::make_unique<Impl>();
  next->opt = m.opt;
  RILL_RETURN_IF_ERROR(next->Build(m.user_graph, merged, m.grads));
  impl_ = std::move(next);  // The old plan's destructor waits for its pushed work.
  outputs_.clear();
  for (const Entry& o : impl_->outputs) outputs_.push_back(impl_->tensors[o.node][o.index]);
  return absl::OkStatus();
}

const MemoryReport& Executor::memory() const { return impl_->plan.report; }
int Executor::num_forward_nodes() const { return static_cast<int>(impl_->num_forward); }
int Executor::num_backward_nodes() const {
  return static_cast<int>(impl_->order.size() - impl_->num_forward);
}

std::string Executor::DebugString() const {
  const Impl& m = *impl_;
  std::string s;
  for (size_t pos = 0; pos < m.order.size(); ++pos) {
    const int id = m.order[pos];
    const Node& n = m.g.node(id);
    if (pos == m.num_forward) absl::StrAppend(&s, "-- backward\n");
    absl::StrAppend(&s, n.name, " = ", n.is_variable() ? VarKindName(n.kind) : n.op->name(), "(");
    for (size_t k = 0; k < n.inputs.size(); ++k)
      absl::StrAppend(&s, k ? ", " : "", m.EntryName(n.inputs[k]));
    absl::StrAppend(&s, ") on ", m.contexts[m.node_ctx[id]].ToString());
    for (int o = 0; o < n.num_outputs(); ++o) {
      const int b = m.plan.block[id][o];
      absl::StrAppend(&s, " [", m.types[id][o].ToString(), " ",
                      b < 0 ? std::string("bound") : absl::StrCat("block ", b), " ",
                      ops::OpReqName(m.plan.req[id][o]), "]");
    }
    absl::StrAppend(&s, "\n");
  }
  absl::StrAppend(&s, m.plan.report.ToString(), "\n");
  return s;
}

}  // namespace rill::graph
