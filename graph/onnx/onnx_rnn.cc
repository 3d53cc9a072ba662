// LSTM, GRU and RNN (opsets 7-17), unrolled over the sequence at import: the
// input projection of all steps is one matmul per direction, then each step
// is a matmul with the recurrent weights and the gate arithmetic. The
// sequence length must be static; in return the cell runs on every device
// with the ops it already has, and trains (its gradient is the ops').

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/graph/onnx/onnx_lowering.h"
#include "rill/ops/op_names.h"

namespace rill::graph {
namespace {

using L = NodeLowering;

enum class Cell { kLstm, kGru, kRnn };

struct RnnShape {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  int gates = 4;  // LSTM i, o, f, c; GRU z, r, h; RNN one.
};

// The activation functions as ops (default for LSTM: Sigmoid, Tanh, Tanh;
// GRU: Sigmoid, Tanh), per direction.
absl::StatusOr<std::vector<const char*>> Activations(L& l, Cell cell, int64_t dirs) {
  const std::vector<std::string> defaults =
      cell == Cell::kLstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                           : std::vector<std::string>{"Tanh"};
  std::vector<std::string> names;
  if (const auto* a = l.Attr("activations")) {
    names.assign(a->strings().begin(), a->strings().end());
  } else {
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != defaults.size() * dirs) {
    return absl::InvalidArgumentError(
        absl::StrCat("activations has ", names.size(), " names, want ", defaults.size() * dirs));
  }
  std::vector<const char*> ops;
  for (const std::string& n : names) {
    if (n == "Sigmoid") {
      ops.push_back(op_names::kSigmoid);
    } else if (n == "Tanh") {
      ops.push_back(op_names::kTanh);
    } else if (n == "Relu") {
      ops.push_back(op_names::kRelu);
    } else {
      return L::Unsupported(absl::StrCat("activation '", n, "'"));
    }
  }
  return ops;
}

// Rows [k*H, (k+1)*H) of a [G*H, ...] weight, or columns of a [batch, G*H]
// gate block.
Entry Gate(L& l, Entry x, const std::vector<int64_t>& dims, int axis, int k, int64_t h) {
  return SliceAxis(l, x, dims, axis, k * h, (k + 1) * h);
}

absl::Status Rnn(L& l, Cell cell) {
  const bool lstm = cell == Cell::kLstm, rnn = cell == Cell::kRnn;
  const int per_dir = lstm ? 3 : rnn ? 1 : 2;  // Activations per direction.
  RnnShape s;
  s.gates = lstm ? 4 : rnn ? 1 : 3;
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> xd, NeedDims(l, 0, "the sequence is unrolled"));
  if (xd.size() != 3) return absl::InvalidArgumentError("X must have rank 3");
  const bool batch_first = l.Int("layout", 0) != 0;
  s.seq = batch_first ? xd[1] : xd[0];
  s.batch = batch_first ? xd[0] : xd[1];
  s.input = xd[2];
  s.hidden = l.Int("hidden_size", 0);
  const std::string direction = l.String("direction", "forward");
  s.dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return absl::InvalidArgumentError(absl::StrCat("direction '", direction, "'"));
  }
  if (s.hidden <= 0) return absl::InvalidArgumentError("hidden_size must be positive");
  if (s.seq <= 0 || s.seq > 4096) {
    return L::Unsupported(absl::StrCat("a sequence of ", s.seq, " steps (unrolled: 1 to 4096)"));
  }
  if (l.HasAttr("clip")) return L::Unsupported("clip");
  if (lstm && l.Int("input_forget", 0) != 0) return L::Unsupported("input_forget=1");
  if (l.has_input(4)) {
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> lens, l.ConstInts(4, "sequence_lens"));
    for (int64_t n : lens) {
      if (n != s.seq) return L::Unsupported("sequence_lens shorter than the sequence");
    }
  }
  const bool linear_before_reset = !lstm && l.Int("linear_before_reset", 0) != 0;
  RILL_ASSIGN_OR_RETURN(std::vector<const char*> act, Activations(l, cell, s.dirs));
  auto t = l.InType(0);
  if (!t) return L::Unsupported("needs the element type");
  const int64_t G = s.gates, H = s.hidden;

  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  if (batch_first) x = l.Op(op_names::kTranspose, {x}, {{"axes", "(1, 0, 2)"}});
  Entry x2 = l.Op(op_names::kReshape, {x}, {{"shape", IntsAttr({s.seq * s.batch, s.input})}});
  RILL_ASSIGN_OR_RETURN(Entry w, l.In(1));
  RILL_ASSIGN_OR_RETURN(Entry r, l.In(2));
  const std::vector<int64_t> wd = {s.dirs, G * H, s.input}, rd = {s.dirs, G * H, H};
  const std::vector<int64_t> gd = {s.batch, G * H}, hd = {s.batch, H};
  std::vector<Entry> ys, yh, yc;
  for (int64_t d = 0; d < s.dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const char* f = act[d * per_dir];
    const char* g = rnn ? nullptr : act[d * per_dir + 1];
    const char* h_act = lstm ? act[d * 3 + 2] : nullptr;
    // LSTM peepholes P [dirs, 3H]: i, o, f.
    std::optional<Entry> pi, po, pf;
    if (lstm && l.has_input(7)) {
      RILL_ASSIGN_OR_RETURN(Entry p, l.In(7));
      Entry pd = l.Op(op_names::kReshape, {SliceAxis(l, p, {s.dirs, 3 * H}, 0, d, d + 1)},
                      {{"shape", IntsAttr({3 * H})}});
      pi = SliceAxis(l, pd, {3 * H}, 0, 0, H);
      po = SliceAxis(l, pd, {3 * H}, 0, H, 2 * H);
      pf = SliceAxis(l, pd, {3 * H}, 0, 2 * H, 3 * H);
    }
    Entry wdir = l.Op(op_names::kReshape, {SliceAxis(l, w, wd, 0, d, d + 1)},
                      {{"shape", IntsAttr({G * H, s.input})}});
    Entry rdir = l.Op(op_names::kReshape, {SliceAxis(l, r, rd, 0, d, d + 1)},
                      {{"shape", IntsAttr({G * H, H})}});
    // All steps' input projections at once: [seq * batch, G*H] (+ biases).
    Entry xw = l.Op(op_names::kMatmul, {x2, wdir}, {{"transpose_b", "true"}});
    std::optional<Entry> rb_h;  // GRU's Rbh when applied after the reset gate.
    if (l.has_input(3)) {
      RILL_ASSIGN_OR_RETURN(Entry b, l.In(3));
      const std::vector<int64_t> bd = {s.dirs, 2 * G * H};
      Entry bdir = l.Op(op_names::kReshape, {SliceAxis(l, b, bd, 0, d, d + 1)},
                        {{"shape", IntsAttr({2 * G * H})}});
      const std::vector<int64_t> bflat = {2 * G * H};
      Entry wb = SliceAxis(l, bdir, bflat, 0, 0, G * H);
      Entry rb = SliceAxis(l, bdir, bflat, 0, G * H, 2 * G * H);
      if (linear_before_reset) {
        rb_h = SliceAxis(l, rb, {G * H}, 0, 2 * H, 3 * H);
        // Rbz, Rbr join the input bias; Rbh stays inside the reset product.
        OnnxHostTensor mask = OnnxHostTensor::Fill(*t, Shape{G * H}, 1);
        for (int64_t k = 2 * H; k < 3 * H; ++k) {
          if (*t == DType::kF32) reinterpret_cast<float*>(mask.bytes.data())[k] = 0;
          if (*t == DType::kF64) reinterpret_cast<double*>(mask.bytes.data())[k] = 0;
        }
        RILL_ASSIGN_OR_RETURN(Entry m, l.Const(std::move(mask)));
        rb = l.Op(op_names::kMul, {rb, m});
      }
      xw = l.Op(op_names::kAdd, {xw, l.Op(op_names::kAdd, {wb, rb})});
    }
    const std::vector<int64_t> xwd = {s.seq, s.batch, G * H};
    xw = l.Op(op_names::kReshape, {xw}, {{"shape", IntsAttr(xwd)}});
    auto initial = [&](int input) -> absl::StatusOr<Entry> {
      if (!l.has_input(input)) return l.Const(OnnxHostTensor::Fill(*t, Shape(hd), 0));
      RILL_ASSIGN_OR_RETURN(Entry v, l.In(input));
      // [dirs, batch, H], or [batch, dirs, H] with layout=1.
      const int axis = batch_first ? 1 : 0;
      const std::vector<int64_t> vd = batch_first ? std::vector<int64_t>{s.batch, s.dirs, H}
                                                  : std::vector<int64_t>{s.dirs, s.batch, H};
      return l.Op(op_names::kReshape, {SliceAxis(l, v, vd, axis, d, d + 1)},
                  {{"shape", IntsAttr(hd)}});
    };
    RILL_ASSIGN_OR_RETURN(Entry h, initial(5));
    Entry c;
    if (lstm) {
      RILL_ASSIGN_OR_RETURN(c, initial(6));
    }
    std::vector<Entry> steps(s.seq);
    Entry rh_w;  // GRU: the rows of R for the candidate gate.
    if (cell == Cell::kGru) rh_w = Gate(l, rdir, {G * H, H}, 0, 2, H);
    for (int64_t k = 0; k < s.seq; ++k) {
      const int64_t step = reverse ? s.seq - 1 - k : k;
      Entry xt = l.Op(op_names::kReshape, {SliceAxis(l, xw, xwd, 0, step, step + 1)},
                      {{"shape", IntsAttr(gd)}});
      if (rnn) {
        h = l.Op(f, {l.Op(op_names::kAdd,
                          {xt, l.Op(op_names::kMatmul, {h, rdir}, {{"transpose_b", "true"}})})});
      } else if (lstm) {
        Entry z = l.Op(op_names::kAdd,
                       {xt, l.Op(op_names::kMatmul, {h, rdir}, {{"transpose_b", "true"}})});
        auto peep = [&](Entry pre, const std::optional<Entry>& p, Entry cell_state) {
          return p ? l.Op(op_names::kAdd, {pre, l.Op(op_names::kMul, {*p, cell_state})}) : pre;
        };
        Entry i = l.Op(f, {peep(Gate(l, z, gd, 1, 0, H), pi, c)});
        Entry fg = l.Op(f, {peep(Gate(l, z, gd, 1, 2, H), pf, c)});
        Entry cc = l.Op(g, {Gate(l, z, gd, 1, 3, H)});
        c = l.Op(op_names::kAdd, {l.Op(op_names::kMul, {fg, c}), l.Op(op_names::kMul, {i, cc})});
        Entry o = l.Op(f, {peep(Gate(l, z, gd, 1, 1, H), po, c)});
        h = l.Op(op_names::kMul, {o, l.Op(h_act, {c})});
      } else {
        const std::vector<int64_t> zr = {s.batch, 2 * H};
        Entry rzr = SliceAxis(l, rdir, {G * H, H}, 0, 0, 2 * H);
        Entry zrs =
            l.Op(op_names::kAdd, {SliceAxis(l, xt, gd, 1, 0, 2 * H),
                                  l.Op(op_names::kMatmul, {h, rzr}, {{"transpose_b", "true"}})});
        Entry z = l.Op(f, {SliceAxis(l, zrs, zr, 1, 0, H)});
        Entry rg = l.Op(f, {SliceAxis(l, zrs, zr, 1, H, 2 * H)});
        Entry hh;
        if (linear_before_reset) {
          hh = l.Op(op_names::kMatmul, {h, rh_w}, {{"transpose_b", "true"}});
          if (rb_h) hh = l.Op(op_names::kAdd, {hh, *rb_h});
          hh = l.Op(op_names::kMul, {rg, hh});
        } else {
          hh = l.Op(op_names::kMatmul, {l.Op(op_names::kMul, {rg, h}), rh_w},
                    {{"transpose_b", "true"}});
        }
        Entry n = l.Op(g, {l.Op(op_names::kAdd, {Gate(l, xt, gd, 1, 2, H), hh})});
        // (1 - z) * n + z * h = n + z * (h - n).
        h = l.Op(op_names::kAdd, {n, l.Op(op_names::kMul, {z, l.Op(op_names::kSub, {h, n})})});
      }
      steps[step] = l.Op(op_names::kReshape, {h}, {{"shape", IntsAttr({1, 1, s.batch, H})}});
    }
    ys.push_back(l.Op(op_names::kConcat, steps, {{"axis", "0"}}));  // [seq, 1, batch, H]
    yh.push_back(l.Op(op_names::kReshape, {h}, {{"shape", IntsAttr({1, s.batch, H})}}));
    if (lstm) yc.push_back(l.Op(op_names::kReshape, {c}, {{"shape", IntsAttr({1, s.batch, H})}}));
  }
  auto join = [&](const std::vector<Entry>& v, int axis) {
    return v.size() == 1 ? v[0] : l.Op(op_names::kConcat, v, {{"axis", absl::StrCat(axis)}});
  };
  Entry y = join(ys, 1);  // [seq, dirs, batch, H]
  Entry y_h = join(yh, 0), y_c = lstm ? join(yc, 0) : Entry{};
  if (batch_first) {
    y = l.Op(op_names::kTranspose, {y}, {{"axes", "(2, 0, 1, 3)"}});
    y_h = l.Op(op_names::kTranspose, {y_h}, {{"axes", "(1, 0, 2)"}});
    if (lstm) y_c = l.Op(op_names::kTranspose, {y_c}, {{"axes", "(1, 0, 2)"}});
  }
  l.SetOutput(0, y);
  l.SetOutput(1, y_h);
  if (lstm) l.SetOutput(2, y_c);
  return absl::OkStatus();
}

absl::Status Lstm(L& l) { return Rnn(l, Cell::kLstm); }
absl::Status Gru(L& l) { return Rnn(l, Cell::kGru); }
absl::Status SimpleRnn(L& l) { return Rnn(l, Cell::kRnn); }

}  // namespace

void AddRnnConverters(ConverterTable& t) {
  t.insert({{"GRU", {Gru, kFloatTypes}},
            {"LSTM", {Lstm, kFloatTypes}},
            {"RNN", {SimpleRnn, kFloatTypes}}});
}

}  // namespace rill::graph
