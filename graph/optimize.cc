// The optimizer's driver, levels and report, and its elementwise passes:
// constant folding, identity removal, GELU fusion. The convolution fusions
// are in optimize_conv.cc.

#include "rill/graph/optimize.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/graph/optimize_rebuild.h"
#include "rill/ops/elementwise/elementwise.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"

namespace rill::graph {

using internal::PassContext;
using internal::Rebuild;

namespace {

constexpr RewriteInfo kRewrites[] = {
    {"fold_constants", OptLevel::kBasic,
     "a node whose inputs are all constants is run once and becomes a constant"},
    {"remove_identity", OptLevel::kBasic,
     "identity, dropout, a reshape to the same shape and a cast to the same type disappear"},
    {"fold_conv_affine", OptLevel::kExtended,
     "a per-channel add/sub/mul/div by a constant after a convolution folds into its weight "
     "and bias"},
    {"fuse_conv_residual", OptLevel::kExtended,
     "an add of a tensor of the convolution's shape becomes its residual input"},
    {"fuse_conv_activation", OptLevel::kExtended,
     "relu, clip to [0, c], sigmoid or tanh after a convolution becomes its activation"},
    {"fuse_gelu", OptLevel::kExtended, "x * 0.5 * (1 + erf(x / sqrt(2))) becomes gelu(x)"},
    {"fuse_layer_norm", OptLevel::kExtended,
     "the mean/sub/pow/mean/add/sqrt/div/mul/add chain of a LayerNorm becomes layer_norm"},
    {"constant_filters", OptLevel::kAll,
     "convolutions with constant weights get a filter id: the DNN plugin converts the weight "
     "to its layout once"},
    {"nhwc_layout", OptLevel::kAll,
     "those convolutions compute in NHWC: consecutive ones hand each other their tensors "
     "with no conversion; transposes only where another op reads"},
};

int CountOps(const Graph& g) {
  absl::StatusOr<std::vector<int>> order = TopoOrder(g);
  if (!order.ok()) return 0;
  int n = 0;
  for (int id : *order) n += g.node(id).is_variable() ? 0 : 1;
  return n;
}

// Whether node `id` passes its input 0 through unchanged at inference.
bool IsIdentity(const Rebuild& r, int id) {
  const Node& n = r.in().node(id);
  const std::string& op = n.op->name();
  if (op == op_names::kIdentity || op == op_names::kDropout) return n.inputs.size() == 1;
  if (op == op_names::kReshape || op == op_names::kCast) {
    const EntryType& in = r.type(n.inputs[0]);
    const EntryType& out = r.type(Entry{id, 0});
    return in.known() && out.known() && *in.shape == *out.shape && *in.dtype == *out.dtype;
  }
  return false;
}

bool IsOutput(const Rebuild& r, Entry e) {
  for (const Entry& o : r.in().outputs())
    if (o == e) return true;
  return false;
}

// Runs node `id` on the CPU on its constant inputs; nullopt when it cannot
// (a random op, an unknown or too large output, a failure).
std::optional<std::vector<Tensor>> Evaluate(const Rebuild& r, int id, int64_t max_bytes) {
  const Node& n = r.in().node(id);
  if (n.op->NeedsResource(ops::ResourceKind::kRandom) || n.inputs.empty()) return std::nullopt;
  for (int k = 0; k < n.num_outputs(); ++k) {
    const EntryType& t = r.type(Entry{id, k});
    if (!t.known() || t.shape->NumElements() * DTypeSize(*t.dtype) > max_bytes) return std::nullopt;
  }
  std::vector<Tensor> inputs;
  engine::Context home = engine::Context::Cpu();
  for (const Entry& e : n.inputs) {
    std::optional<Tensor> c = r.ConstOf(e);
    if (!c) return std::nullopt;
    if (inputs.empty()) home = c->context();
    absl::StatusOr<Tensor> on_cpu = c->CopyTo(engine::Context::Cpu());
    if (!on_cpu.ok()) return std::nullopt;
    inputs.push_back(*std::move(on_cpu));
  }
  ops::InvokeOptions io;
  io.is_train = false;
  absl::StatusOr<std::vector<Tensor>> out = ops::Invoke(*n.op, inputs, n.params, {}, io);
  if (!out.ok()) return std::nullopt;
  for (Tensor& t : *out) {
    if (!t.WaitToRead().ok()) return std::nullopt;
    if (!(home == engine::Context::Cpu())) {
      absl::StatusOr<Tensor> back = t.CopyTo(home);
      if (!back.ok()) return std::nullopt;
      t = *std::move(back);
    }
  }
  return *std::move(out);
}

}  // namespace

namespace internal {

const std::string& OpOf(const Rebuild& r, Entry e) {
  static const std::string kNone;
  const Node& n = r.in().node(e.node);
  return n.is_variable() ? kNone : n.op->name();
}

std::optional<std::pair<Entry, Entry>> Binary(const Rebuild& r, Entry e, const char* op) {
  const Node& node = r.in().node(e.node);
  if (node.is_variable() || e.index != 0 || node.op->name() != op || node.inputs.size() != 2)
    return std::nullopt;
  return std::make_pair(node.inputs[0], node.inputs[1]);
}

std::optional<Entry> Unary(const Rebuild& r, Entry e, const char* op) {
  const Node& node = r.in().node(e.node);
  if (node.is_variable() || e.index != 0 || node.op->name() != op || node.inputs.size() != 1)
    return std::nullopt;
  return node.inputs[0];
}

double ScalarOperand(const Node& node) {
  return static_cast<const ops::ScalarParams*>(node.params.get())->scalar;
}

std::optional<double> ScalarConst(const Rebuild& r, Entry e) {
  std::optional<Tensor> c = r.ConstOf(e);
  if (!c || c->shape().NumElements() != 1) return std::nullopt;
  if (c->dtype() == DType::kF32) {
    absl::StatusOr<std::vector<float>> v = c->ToHost<float>();
    if (v.ok()) return (*v)[0];
  } else if (c->dtype() == DType::kF64) {
    absl::StatusOr<std::vector<double>> v = c->ToHost<double>();
    if (v.ok()) return (*v)[0];
  }
  return std::nullopt;
}

absl::Status FoldAndClean(Rebuild& r, PassContext& pc) {
  for (int id : r.order()) {
    const Node& n = r.in().node(id);
    if (n.is_variable()) continue;
    const Entry out{id, 0};
    if (pc.On("remove_identity") && IsIdentity(r, id) && !IsOutput(r, out)) {
      r.Set(out, r.Map(n.inputs[0]));
      pc.Count("remove_identity");
      continue;
    }
    bool constant = !n.inputs.empty();
    for (const Entry& e : n.inputs) constant = constant && r.ConstOf(e).has_value();
    for (int k = 0; constant && k < n.num_outputs(); ++k) constant = !IsOutput(r, Entry{id, k});
    if (constant && pc.On("fold_constants")) {
      if (std::optional<std::vector<Tensor>> v = Evaluate(r, id, pc.max_fold_bytes)) {
        for (int k = 0; k < n.num_outputs(); ++k) {
          r.SetConst(Entry{id, k}, k == 0 ? n.name : absl::StrCat(n.name, ":", k), (*v)[k]);
        }
        pc.Count("fold_constants");
        continue;
      }
    }
    r.Copy(id);
  }
  return absl::OkStatus();
}

namespace {

// Whether old entry `e` is op(x, c) or op(c, x) with c the constant scalar
// `value` (or op_scalar(x) with that scalar), for op mul/add/div; sets *x.
bool IsScalarOp(const Rebuild& r, Entry e, const char* op, const char* op_scalar, double value,
                bool commutes, Entry* x) {
  auto near = [value](std::optional<double> v) {
    return v && std::abs(*v - value) <= 1e-4 * std::abs(value);
  };
  if (std::optional<Entry> in = Unary(r, e, op_scalar)) {
    if (!near(ScalarOperand(r.in().node(e.node)))) return false;
    *x = *in;
    return true;
  }
  std::optional<std::pair<Entry, Entry>> in = Binary(r, e, op);
  if (!in) return false;
  if (near(ScalarConst(r, in->second))) {
    *x = in->first;
    return true;
  }
  if (commutes && near(ScalarConst(r, in->first))) {
    *x = in->second;
    return true;
  }
  return false;
}

// GELU's erf form, from its last node: returns x when `e` is
//   mul(mul(x, 1 + erf(x / sqrt2)), 0.5)  or  mul(mul(x, 0.5), 1 + erf(...))
// with every inner entry read once (x / sqrt2 may be x * (1 / sqrt2)).
std::optional<Entry> GeluInput(const Rebuild& r, Entry e) {
  namespace n = op_names;
  constexpr double kSqrt2 = 1.4142135623730951;
  auto once = [&](Entry v) { return r.consumers(v) == 1; };
  auto erf_part = [&](Entry v, Entry* x) {  // 1 + erf(x / sqrt2)
    Entry er;
    if (!once(v) || !IsScalarOp(r, v, n::kAdd, n::kAddScalar, 1, true, &er)) return false;
    if (!once(er) || OpOf(r, er) != n::kErf) return false;
    const Entry d = r.in().node(er.node).inputs[0];
    return once(d) && (IsScalarOp(r, d, n::kDiv, n::kDivScalar, kSqrt2, false, x) ||
                       IsScalarOp(r, d, n::kMul, n::kMulScalar, 1 / kSqrt2, true, x));
  };
  Entry inner;
  if (IsScalarOp(r, e, n::kMul, n::kMulScalar, 0.5, true, &inner) && once(inner)) {
    std::optional<std::pair<Entry, Entry>> m = Binary(r, inner, n::kMul);
    if (!m) return std::nullopt;
    Entry x;
    if (erf_part(m->second, &x) && x == m->first) return x;
    if (erf_part(m->first, &x) && x == m->second) return x;
    return std::nullopt;
  }
  std::optional<std::pair<Entry, Entry>> m = Binary(r, e, n::kMul);
  if (!m) return std::nullopt;
  auto [a, b] = *m;
  for (int swap = 0; swap < 2; ++swap) {
    Entry half_x, x;
    if (once(a) && IsScalarOp(r, a, n::kMul, n::kMulScalar, 0.5, true, &half_x) &&
        erf_part(b, &x) && x == half_x)
      return x;
    std::swap(a, b);
  }
  return std::nullopt;
}

}  // namespace

absl::Status FusePatterns(Rebuild& r, PassContext& pc) {
  for (int id : r.order()) {
    const Node& n = r.in().node(id);
    if (n.is_variable()) continue;
    if (pc.On("fuse_layer_norm")) {
      if (std::optional<LayerNormMatch> m = LayerNormOf(r, Entry{id, 0})) {
        r.Set(Entry{id, 0},
              r.out().Op1(op_names::kLayerNorm, {r.Map(m->x), r.Map(m->gamma), r.Map(m->beta)},
                          {{"axis", absl::StrCat(m->axis)}, {"eps", absl::StrCat(m->eps)}}, n.name,
                          n.group));
        pc.Count("fuse_layer_norm");
        continue;
      }
    }
    if (pc.On("fuse_gelu")) {
      if (std::optional<Entry> x = GeluInput(r, Entry{id, 0})) {
        const EntryType& t = r.type(*x);
        if (t.known() && *t.dtype == DType::kF32) {
          r.Set(Entry{id, 0}, r.out().Op1(op_names::kGelu, {r.Map(*x)}, {}, n.name, n.group));
          pc.Count("fuse_gelu");
          continue;
        }
      }
    }
    r.Copy(id);
  }
  return absl::OkStatus();
}

}  // namespace internal

const char* OptLevelName(OptLevel level) {
  switch (level) {
    case OptLevel::kNone:
      return "none";
    case OptLevel::kBasic:
      return "basic";
    case OptLevel::kExtended:
      return "extended";
    case OptLevel::kAll:
      return "all";
  }
  return "?";
}

absl::StatusOr<OptLevel> ParseOptLevel(std::string_view s) {
  for (OptLevel l : {OptLevel::kNone, OptLevel::kBasic, OptLevel::kExtended, OptLevel::kAll}) {
    if (s == OptLevelName(l) || s == absl::StrCat(static_cast<int>(l))) return l;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("optimization level '", std::string(s),
                   "': the levels are none, basic, extended, all (or 0-3)"));
}

absl::Span<const RewriteInfo> Rewrites() { return kRewrites; }

absl::Status CheckRewriteNames(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    bool known = false;
    for (const RewriteInfo& w : kRewrites) known = known || name == w.name;
    if (known) continue;
    std::vector<std::string> all;
    for (const RewriteInfo& w : kRewrites) all.push_back(w.name);
    return absl::InvalidArgumentError(absl::StrCat("no rewrite '", name, "' to disable (they are ",
                                                   absl::StrJoin(all, ", "), ")"));
  }
  return absl::OkStatus();
}

std::string OptimizeReport::ToString() const {
  std::vector<std::string> parts;
  for (const auto& [name, n] : applied) parts.push_back(absl::StrCat(name, " x", n));
  return absl::StrCat("optimized ", nodes_before, " -> ", nodes_after, " op nodes",
                      parts.empty() ? "" : ": ", absl::StrJoin(parts, ", "));
}

absl::StatusOr<OptimizeReport> OptimizeForInference(
    Graph* graph, absl::flat_hash_map<std::string, Tensor>* constants,
    const OptimizeOptions& options) {
  PassContext pc;
  pc.max_fold_bytes = options.max_fold_bytes;
  RILL_RETURN_IF_ERROR(CheckRewriteNames(options.disabled));
  for (const RewriteInfo& w : kRewrites) {
    if (static_cast<int>(w.level) > static_cast<int>(options.level)) continue;
    if (std::find(options.disabled.begin(), options.disabled.end(), w.name) !=
        options.disabled.end())
      continue;
    pc.on[w.name] = 0;
  }
  RILL_RETURN_IF_ERROR(graph->status());
  if (absl::StatusOr<StreamExecutor*> exec = ExecutorFor(options.context, options.engine);
      exec.ok()) {
    absl::StatusOr<const ops::OpDef*> def = ops::OpRegistry::Global().Find(op_names::kFusedConv2d);
    pc.fused_conv_runs = def.ok() && ops::OpRegistry::Choose(**def, *exec).ok();
  }
  OptimizeReport report;
  report.nodes_before = CountOps(*graph);
  using Pass = absl::Status (*)(Rebuild&, PassContext&);
  const std::pair<Pass, std::vector<const char*>> passes[] = {
      {internal::FoldAndClean, {"fold_constants", "remove_identity"}},
      {internal::FuseConvolutions,
       {"fold_conv_affine", "fuse_conv_residual", "fuse_conv_activation", "constant_filters"}},
      {internal::FusePatterns, {"fuse_gelu", "fuse_layer_norm"}},
      {internal::ToNhwc, {"nhwc_layout"}},
  };
  for (const auto& [pass, names] : passes) {
    bool any = false;
    for (const char* name : names) any = any || pc.On(name);
    if (!any) continue;
    Rebuild r(*graph, *constants);
    if (!r.status().ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot optimize the graph: ", r.status().message()));
    }
    RILL_RETURN_IF_ERROR(pass(r, pc));
    absl::flat_hash_map<std::string, Tensor> next;
    RILL_ASSIGN_OR_RETURN(Graph g, r.Finish(&next));
    *graph = std::move(g);
    *constants = std::move(next);
  }
  report.nodes_after = CountOps(*graph);
  for (const RewriteInfo& w : kRewrites) {
    auto it = pc.on.find(w.name);
    if (it != pc.on.end() && it->second > 0) report.applied.emplace_back(w.name, it->second);
  }
  return report;
}

}  // namespace rill::graph
