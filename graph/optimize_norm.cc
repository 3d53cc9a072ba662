// fuse_layer_norm's pattern: the ops a LayerNorm lowers to, read back from
// its last node.
//
//   m = mean(x, axes a.., keepdims)        d = x - m
//   v = mean(d^2, same axes, keepdims)     (d^2: pow(d, 2), square(d), d * d)
//   n = d / sqrt(v + eps)                  (or d * (1 / sqrt(v + eps)))
//   z = n * gamma + beta                   (either operand order)
//
// torch.onnx writes the first form at opset 13; Rill's own lowering of
// LayerNormalization (opset 17) the second. Every inner entry must be read
// only inside the pattern.

#include <algorithm>
#include <optional>

#include "rill/graph/optimize_rebuild.h"
#include "rill/ops/op_names.h"
#include "rill/ops/reduce/reduce.h"

namespace rill::graph::internal {
namespace {

namespace n = op_names;

// mean(x) over trailing axes with keepdims: x and the first axis.
std::optional<std::pair<Entry, int64_t>> TrailingMean(const Rebuild& r, Entry e) {
  std::optional<Entry> x = Unary(r, e, n::kMean);
  if (!x) return std::nullopt;
  const EntryType& t = r.type(*x);
  if (!t.known()) return std::nullopt;
  const auto& p = *static_cast<const ops::ReduceParams*>(r.in().node(e.node).params.get());
  const int64_t rank = t.shape->rank();
  if (!p.keepdims || p.axes.empty()) return std::nullopt;
  std::vector<int64_t> axes;
  for (int64_t a : p.axes) axes.push_back(a < 0 ? a + rank : a);
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i)) return std::nullopt;
  }
  return std::make_pair(*x, axes[0]);
}

}  // namespace

std::optional<LayerNormMatch> LayerNormOf(const Rebuild& r, Entry z) {
  auto once = [&](Entry v) { return r.consumers(v) == 1; };
  std::optional<std::pair<Entry, Entry>> add = Binary(r, z, n::kAdd);
  if (!add) return std::nullopt;
  for (int swap = 0; swap < 2; ++swap) {
    const Entry y = swap ? add->second : add->first, beta = swap ? add->first : add->second;
    std::optional<std::pair<Entry, Entry>> mul = Binary(r, y, n::kMul);
    if (!once(y) || !mul) continue;
    for (int swap2 = 0; swap2 < 2; ++swap2) {
      const Entry nrm = swap2 ? mul->second : mul->first, gamma = swap2 ? mul->first : mul->second;
      if (!once(nrm)) continue;
      // n = d / s, or d * rdiv_scalar(s, 1).
      Entry d, s;
      if (auto div = Binary(r, nrm, n::kDiv)) {
        d = div->first;
        s = div->second;
      } else if (auto m2 = Binary(r, nrm, n::kMul)) {
        std::optional<Entry> inv;
        for (Entry c : {m2->first, m2->second}) {
          std::optional<Entry> in = Unary(r, c, n::kRdivScalar);
          if (in && once(c) && ScalarOperand(r.in().node(c.node)) == 1.0) {
            inv = in;
            d = c == m2->first ? m2->second : m2->first;
          }
        }
        if (!inv) continue;
        s = *inv;
      } else {
        continue;
      }
      std::optional<Entry> e = Unary(r, s, n::kSqrt);
      if (!once(s) || !e || !once(*e)) continue;
      // e = v + eps.
      std::optional<double> eps;
      Entry v;
      if (auto a = Binary(r, *e, n::kAdd)) {
        for (Entry c : {a->first, a->second}) {
          if (std::optional<double> k = ScalarConst(r, c)) {
            eps = k;
            v = c == a->first ? a->second : a->first;
          }
        }
      } else if (auto a1 = Unary(r, *e, n::kAddScalar)) {
        eps = ScalarOperand(r.in().node(e->node));
        v = *a1;
      }
      if (!eps || !(*eps > 0) || !once(v)) continue;
      std::optional<std::pair<Entry, int64_t>> var = TrailingMean(r, v);
      if (!var) continue;
      const Entry p = var->first;
      // p = d^2.
      int d_readers = 2;
      std::optional<Entry> sq;
      if (auto pw = Binary(r, p, n::kPow); pw && ScalarConst(r, pw->second) == 2.0) {
        sq = pw->first;
      } else if (auto ps = Unary(r, p, n::kPowScalar);
                 ps && ScalarOperand(r.in().node(p.node)) == 2.0) {
        sq = ps;
      } else if (auto q = Unary(r, p, n::kSquare)) {
        sq = q;
      } else if (auto dd = Binary(r, p, n::kMul); dd && dd->first == dd->second) {
        sq = dd->first;
        d_readers = 3;
      }
      if (!once(p) || !sq || !(*sq == d) || r.consumers(d) != d_readers) continue;
      // d = x - mean(x).
      std::optional<std::pair<Entry, Entry>> sub = Binary(r, d, n::kSub);
      if (!sub || !once(sub->second)) continue;
      std::optional<std::pair<Entry, int64_t>> mean = TrailingMean(r, sub->second);
      if (!mean || !(mean->first == sub->first) || mean->second != var->second) continue;
      const EntryType& xt = r.type(sub->first);
      const EntryType& gt = r.type(gamma);
      const EntryType& bt = r.type(beta);
      if (!xt.known() || *xt.dtype != DType::kF32 || !gt.known() || !bt.known()) continue;
      const Shape tail(
          std::vector<int64_t>(xt.shape->span().begin() + mean->second, xt.shape->span().end()));
      if (*gt.shape != tail || *bt.shape != tail) continue;
      return LayerNormMatch{sub->first, gamma, beta, mean->second, *eps};
    }
  }
  return std::nullopt;
}

}  // namespace rill::graph::internal
