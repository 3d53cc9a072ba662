// The convolution fusions: a conv2d (or fused_conv2d) is held back while
// the nodes after it fold into it -- per-channel affine ops into its weight
// and bias, an add into its residual input, an activation -- and is made
// as one fused_conv2d when something else reads it.

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/graph/optimize_rebuild.h"
#include "rill/ops/nn/fused_conv.h"
#include "rill/ops/op_names.h"

namespace rill::graph::internal {
namespace {

namespace n = op_names;

std::string Ints(const std::vector<int64_t>& v) {
  return absl::StrCat("(", absl::StrJoin(v, ", "), ")");
}

// A convolution held back, standing for the old entry it is keyed by.
struct Pending {
  int conv = -1;                 // The old conv node.
  Entry x, weight_old;           // New data entry; old weight entry.
  std::optional<Tensor> weight;  // The constant weight (its old value), when constant.
  std::optional<Tensor> home;    // A constant folded in: new constants go to its engine.
  std::vector<float> w;          // Folded weight values; empty: unchanged.
  std::vector<float> bias;       // Output channels values.
  bool has_bias = false;
  ops::FusedConvParams p;
  std::optional<Entry> residual;  // New entry.
  int fused = 0;                  // Rewrites folded into it.
  int64_t out_channels = 0;
};

class ConvFuser {
 public:
  ConvFuser(Rebuild& r, PassContext& pc) : r_(r), pc_(pc) {
    r_.hook = [this](Entry old) -> std::optional<Entry> {
      auto it = pending_.find(old);
      if (it == pending_.end()) return std::nullopt;
      Pending p = std::move(it->second);
      pending_.erase(it);
      Entry e = Make(p);
      r_.Set(old, e);
      return e;
    };
  }
  ~ConvFuser() { r_.hook = nullptr; }

  absl::Status Run() {
    for (int id : r_.order()) {
      const Node& node = r_.in().node(id);
      if (node.is_variable()) continue;
      if (Start(id)) continue;
      if (Extend(id)) continue;
      r_.Copy(id);
    }
    // Graph outputs still held back are made now, while the hook is set.
    for (const Entry& e : r_.in().outputs()) r_.Map(e);
    return absl::OkStatus();
  }

 private:
  // A conv2d, or a fused_conv2d with nothing after the bias, becomes pending.
  bool Start(int id) {
    if (!pc_.fused_conv_runs) return false;
    const Node& node = r_.in().node(id);
    const std::string& op = node.op->name();
    const EntryType& out = r_.type(Entry{id, 0});
    if (!out.known() || *out.dtype != DType::kF32) return false;
    Pending p;
    if (op == n::kConv2d) {
      const auto& c = *static_cast<const ops::ConvParams*>(node.params.get());
      p.p.stride = c.stride;
      p.p.pad = c.pad;
      p.p.dilation = c.dilation;
      p.p.num_group = c.num_group;
    } else if (op == n::kFusedConv2d) {
      p.p = *static_cast<const ops::FusedConvParams*>(node.params.get());
      if (!p.p.act.empty() || p.p.residual || p.p.filter_id != 0) return false;
      std::optional<Tensor> b = r_.ConstOf(node.inputs[2]);
      if (!b) return false;
      absl::StatusOr<std::vector<float>> bv = b->ToHost<float>();
      if (!bv.ok()) return false;
      p.bias = *std::move(bv);
      p.has_bias = true;
    } else {
      return false;
    }
    p.conv = id;
    p.out_channels = (*out.shape)[1];
    if (p.bias.empty()) p.bias.assign(p.out_channels, 0.f);
    p.x = r_.Map(node.inputs[0]);
    p.weight_old = node.inputs[1];
    p.weight = r_.ConstOf(p.weight_old);
    pending_[Entry{id, 0}] = std::move(p);
    return true;
  }

  // Node `id` reads a pending convolution it can fold in.
  bool Extend(int id) {
    const Node& node = r_.in().node(id);
    for (size_t side = 0; side < node.inputs.size() && side < 2; ++side) {
      const Entry e = node.inputs[side];
      auto it = pending_.find(e);
      if (it == pending_.end() || r_.consumers(e) != 1) continue;
      Pending p = std::move(it->second);
      pending_.erase(it);
      if (!Fold(id, static_cast<int>(side), p)) {
        pending_[e] = std::move(p);
        return false;
      }
      ++p.fused;
      pending_[Entry{id, 0}] = std::move(p);
      return true;
    }
    return false;
  }

  // Folds node `id` (reading the pending conv on input `side`) into `p`.
  bool Fold(int id, int side, Pending& p) {
    const Node& node = r_.in().node(id);
    const std::string& op = node.op->name();
    const EntryType& out = r_.type(Entry{id, 0});
    const EntryType& conv_out = r_.type(Entry{p.conv, 0});
    if (!out.known() || *out.shape != *conv_out.shape || *out.dtype != DType::kF32) return false;
    const bool plain = !p.residual && p.p.act.empty();
    if (node.inputs.size() == 2) {
      const Entry other = node.inputs[1 - side];
      if (plain && pc_.On("fold_conv_affine") && FoldAffine(op, side, other, p)) {
        pc_.Count("fold_conv_affine");
        return true;
      }
      const EntryType& ot = r_.type(other);
      if (op == n::kAdd && plain && pc_.On("fuse_conv_residual") && ot.known() &&
          *ot.shape == *out.shape && *ot.dtype == DType::kF32) {
        p.residual = r_.Map(other);
        pc_.Count("fuse_conv_residual");
        return true;
      }
      return false;
    }
    if (!pc_.On("fuse_conv_activation")) return false;
    std::string act;
    double clip = 0;
    if (op == n::kRelu) {
      act = "relu";
    } else if (op == n::kSigmoid || op == n::kTanh) {
      act = op;
    } else if (op == n::kActivation) {
      act = static_cast<const ops::ActivationParams*>(node.params.get())->act_type;
    } else if (op == n::kMaximumScalar || op == n::kMinimumScalar) {
      const double s = ScalarOperand(node);
      if (op == n::kMaximumScalar && s == 0) act = "relu";
      if (op == n::kMinimumScalar && p.p.act == "relu" && s > 0) {
        act = "clipped_relu";
        clip = s;
      }
    }
    if (act.empty()) return false;
    if (!p.p.act.empty() && act != "clipped_relu") return false;
    p.p.act = act;
    p.p.clip = act == "clipped_relu" ? clip : 6;
    pc_.Count("fuse_conv_activation");
    return true;
  }

  // conv + k, k + conv, conv - k, conv * k, k * conv, conv / k with k a
  // constant of one value or one per output channel ([C, 1, 1], [1, C, 1, 1]).
  bool FoldAffine(const std::string& op, int side, Entry other, Pending& p) {
    const bool add = op == n::kAdd, sub = op == n::kSub && side == 0, mul = op == n::kMul,
               div = op == n::kDiv && side == 0;
    if (!add && !sub && !mul && !div) return false;
    std::optional<Tensor> c = r_.ConstOf(other);
    if (!c || c->dtype() != DType::kF32) return false;
    const Shape& s = c->shape();
    const int64_t count = s.NumElements();
    if (count != 1) {
      if (count != p.out_channels || s.rank() < 3 || s.rank() > 4) return false;
      if (s[s.rank() - 1] != 1 || s[s.rank() - 2] != 1) return false;
    }
    absl::StatusOr<std::vector<float>> k = c->ToHost<float>();
    if (!k.ok()) return false;
    if (!p.home) p.home = c;
    auto at = [&](int64_t o) { return (*k)[count == 1 ? 0 : o]; };
    if ((mul || div) && p.w.empty()) {
      if (!p.weight) return false;
      absl::StatusOr<std::vector<float>> w = p.weight->ToHost<float>();
      if (!w.ok()) return false;
      p.w = *std::move(w);
    }
    if (div) {
      for (int64_t o = 0; o < p.out_channels; ++o)
        if (at(o) == 0) return false;
    }
    const int64_t per = p.w.empty() ? 0 : static_cast<int64_t>(p.w.size()) / p.out_channels;
    for (int64_t o = 0; o < p.out_channels; ++o) {
      const float v = at(o);
      if (add) p.bias[o] += v;
      if (sub) p.bias[o] -= v;
      if (mul || div) {
        const float f = mul ? v : 1 / v;
        p.bias[o] *= f;
        for (int64_t i = 0; i < per; ++i) p.w[o * per + i] *= f;
      }
    }
    p.has_bias = true;
    return true;
  }

  // The pending convolution as a node of the new graph.
  Entry Make(Pending& p) {
    const Node& conv = r_.in().node(p.conv);
    const bool ids = pc_.On("constant_filters") && p.weight.has_value();
    if (p.fused == 0 && !ids && !p.has_bias) return r_.Copy(p.conv);
    const std::optional<Tensor>& home = p.weight ? p.weight : p.home;
    const engine::Context ctx = home ? home->context() : engine::Context::Cpu();
    engine::Engine* const eng = home ? home->engine() : nullptr;
    Entry w;
    if (!p.w.empty()) {
      absl::StatusOr<Tensor> t = Tensor::FromHost<float>(p.w, p.weight->shape(), ctx, eng);
      if (!t.ok()) return r_.Copy(p.conv);
      w = r_.AddConst(conv.name + "/weight", *std::move(t));
    } else {
      w = r_.Map(p.weight_old);
    }
    absl::StatusOr<Tensor> b = Tensor::FromHost<float>(p.bias, Shape{p.out_channels}, ctx, eng);
    if (!b.ok()) return r_.Copy(p.conv);
    std::vector<Entry> inputs = {p.x, w, r_.AddConst(conv.name + "/bias", *std::move(b))};
    if (p.residual) inputs.push_back(*p.residual);
    ops::Attrs attrs = {{"num_group", absl::StrCat(p.p.num_group)},
                        {"residual", p.residual ? "true" : "false"}};
    if (!p.p.stride.empty()) attrs.emplace_back("stride", Ints(p.p.stride));
    if (!p.p.pad.empty()) attrs.emplace_back("pad", Ints(p.p.pad));
    if (!p.p.dilation.empty()) attrs.emplace_back("dilation", Ints(p.p.dilation));
    if (!p.p.act.empty()) attrs.emplace_back("act", p.p.act);
    if (p.p.act == "clipped_relu") attrs.emplace_back("clip", absl::StrCat(p.p.clip));
    if (ids) {
      attrs.emplace_back("filter_id", absl::StrCat(ops::NewConstantFilterId()));
      pc_.Count("constant_filters");
    }
    return r_.out().Op1(n::kFusedConv2d, std::move(inputs), attrs, conv.name, conv.group);
  }

  Rebuild& r_;
  PassContext& pc_;
  absl::flat_hash_map<Entry, Pending> pending_;
};

// Every fused_conv2d with a constant filter that reads or feeds another in
// NHWC (a lone one would only gain two transposes): an input not made by
// one is transposed once (shared by its readers), an output read by
// anything but one is transposed back once.
class NhwcRewriter {
 public:
  NhwcRewriter(Rebuild& r, PassContext& pc) : r_(r), pc_(pc) {
    for (int id : r_.order()) {
      if (!Candidate(id)) continue;
      const Node& node = r_.in().node(id);
      for (size_t i = 0; i < node.inputs.size(); i += 3) {  // Data and residual.
        if (Candidate(node.inputs[i].node)) {
          chained_.insert(id);
          chained_.insert(node.inputs[i].node);
        }
      }
    }
    r_.hook = [this](Entry old) -> std::optional<Entry> {
      auto it = conv_out_.find(old);
      if (it == conv_out_.end()) return std::nullopt;
      const Entry e = Transpose(it->second, "(0, 3, 1, 2)", "/to_nchw", old);
      r_.Set(old, e);  // Made once: Map finds it from now on.
      return e;
    };
  }
  ~NhwcRewriter() { r_.hook = nullptr; }

  absl::Status Run() {
    for (int id : r_.order()) {
      const Node& node = r_.in().node(id);
      if (node.is_variable()) continue;
      if (!Convert(id)) r_.Copy(id);
    }
    for (const Entry& e : r_.in().outputs()) r_.Map(e);
    return absl::OkStatus();
  }

 private:
  Entry Transpose(Entry now, const char* axes, const char* suffix, Entry old) {
    const Node& n = r_.in().node(old.node);
    return r_.out().Op1(n::kTranspose, {now}, {{"axes", axes}}, r_.UniqueName(n.name + suffix),
                        n.group);
  }

  // The NHWC form of old entry `e`.
  Entry Nhwc(Entry e) {
    if (auto it = conv_out_.find(e); it != conv_out_.end()) return it->second;
    if (auto it = nhwc_in_.find(e); it != nhwc_in_.end()) return it->second;
    const Entry t = Transpose(r_.Map(e), "(0, 2, 3, 1)", "/to_nhwc", e);
    nhwc_in_[e] = t;
    return t;
  }

  bool Candidate(int id) const {
    const Node& node = r_.in().node(id);
    if (node.is_variable() || node.op->name() != n::kFusedConv2d) return false;
    const auto& p = *static_cast<const ops::FusedConvParams*>(node.params.get());
    return p.layout == "NCHW" && p.filter_id != 0;
  }

  bool Convert(int id) {
    if (!chained_.contains(id)) return false;
    const Node& node = r_.in().node(id);
    const auto& p = *static_cast<const ops::FusedConvParams*>(node.params.get());
    std::vector<Entry> inputs = {Nhwc(node.inputs[0]), r_.Map(node.inputs[1]),
                                 r_.Map(node.inputs[2])};
    if (p.residual) inputs.push_back(Nhwc(node.inputs[3]));
    ops::Attrs attrs;
    for (const auto& a : node.attrs)
      if (a.first != "layout") attrs.push_back(a);
    attrs.emplace_back("layout", "NHWC");
    conv_out_[Entry{id, 0}] =
        r_.out().Op1(n::kFusedConv2d, std::move(inputs), attrs, node.name, node.group);
    pc_.Count("nhwc_layout");
    return true;
  }

  Rebuild& r_;
  PassContext& pc_;
  absl::flat_hash_set<int> chained_;            // Old conv nodes to convert.
  absl::flat_hash_map<Entry, Entry> conv_out_;  // Old conv output -> new NHWC entry.
  absl::flat_hash_map<Entry, Entry> nhwc_in_;   // Old NCHW entry -> its transpose.
};

}  // namespace

absl::Status FuseConvolutions(Rebuild& r, PassContext& pc) { return ConvFuser(r, pc).Run(); }

absl::Status ToNhwc(Rebuild& r, PassContext& pc) { return NhwcRewriter(r, pc).Run(); }

}  // namespace rill::graph::internal
