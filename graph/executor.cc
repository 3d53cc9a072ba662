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
#include "rill/graph/executor_impl.h"
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
      steps.push_back(Step{copy, node_ctx[id], {}, "", {}});
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

absl::Status Executor::Impl::RunStep(const StepRun& r, const engine::RunContext& rc) const {
  if (r.one_callback && rc.stream != nullptr) {
    // Captures one pointer (kept inline by the callable); the plan outlives
    // the work it pushed (~Impl waits for it).
    rc.stream->ThenDoHostCallbackWithStatus([run = &r]() -> absl::Status {
      const engine::RunContext here{run->impl->contexts[run->step->context], nullptr};
      for (int pos : run->step->positions)
        RILL_RETURN_IF_ERROR(run->impl->RunNode(pos, run->is_train, here));
      return absl::OkStatus();
    });
    return rc.stream->ok() ? absl::OkStatus() : rc.stream->status();
  }
  for (int pos : r.step->positions) RILL_RETURN_IF_ERROR(RunNode(pos, r.is_train, rc));
  return absl::OkStatus();
}

void Executor::Impl::PrepareSteps(std::vector<Step>& steps, bool is_train) const {
  auto by_key = [](engine::VarHandle a, engine::VarHandle b) { return a.bits() < b.bits(); };
  for (Step& s : steps) {
    StepRun& r = s.run[is_train ? 1 : 0];
    r = StepRun{this, &s, is_train, false, {}, {}};
    if (s.copy) continue;
    r.one_callback = runs_host_kernels[s.context];
    for (int pos : s.positions) {
      for (const ops::PreparedOp& p : prepared[is_train ? 1 : 0][order[pos]]) {
        r.reads.insert(r.reads.end(), p.reads().begin(), p.reads().end());
        r.writes.insert(r.writes.end(), p.writes().begin(), p.writes().end());
      }
      if (owner != nullptr) {
        for (int b : plan.released_after[pos]) r.writes.push_back(blocks[b].var());
      }
    }
    // What the engine's normalization would do at every push, done once: a
    // segment's inner entries are written and read, and in-place nodes
    // write one block over and over.
    std::sort(r.writes.begin(), r.writes.end(), by_key);
    r.writes.erase(std::unique(r.writes.begin(), r.writes.end()), r.writes.end());
    std::sort(r.reads.begin(), r.reads.end(), by_key);
    r.reads.erase(std::unique(r.reads.begin(), r.reads.end()), r.reads.end());
    r.reads.erase(std::remove_if(r.reads.begin(), r.reads.end(),
                                 [&](engine::VarHandle v) {
                                   return std::binary_search(r.writes.begin(), r.writes.end(), v,
                                                             by_key);
                                 }),
                  r.reads.end());
    r.reads.shrink_to_fit();
    r.writes.shrink_to_fit();
  }
}

absl::Status Executor::Impl::Push(const std::vector<Step>& steps, bool is_train) {
  for (const Step& s : steps) {
    if (s.copy) {
      RILL_RETURN_IF_ERROR(PushCopy(s.positions[0]));
      continue;
    }
    const StepRun* r = &s.run[is_train ? 1 : 0];
    auto fn = [r](engine::RunContext rc) { return r->impl->RunStep(*r, rc); };
    RILL_RETURN_IF_ERROR(eng->PushSync(std::move(fn), contexts[s.context], r->reads, r->writes,
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
  if (!is_train && m.prepared[0].empty()) {
    RILL_RETURN_IF_ERROR(m.Prepare(false));
    m.PrepareSteps(m.forward_steps, false);
  }
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
