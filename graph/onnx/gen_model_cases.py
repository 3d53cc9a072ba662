# Writes small ONNX models of the patterns real exporters (torch.onnx) emit
# -- LSTM/GRU, attention blocks, embeddings, padding and pooling, shape
# arithmetic, Resize -- in the ONNX model-zoo layout:
#   OUT/<case>/model.onnx, OUT/<case>/test_data_set_0/{input,output}_<i>.pb
# input_<i> feeds the i-th graph input that is not an initializer. Expected
# outputs come from the NumPy reference implementations below (float64,
# following the ONNX operator specs), independent of Rill. Every model
# passes onnx.checker with full_check (strict shape inference, so the
# declared output shapes agree with ONNX's). Cases named grad_*_f64 are
# float64 models that graph_onnx_model_cases_test also differentiates.
# Needs onnx (1.12) and numpy only:  /usr/bin/python3 gen_model_cases.py -o OUT_DIR
import argparse
import math
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

F32, F64, I64 = np.float32, np.float64, np.int64
INT64_MAX, INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
CASES = []


def model(opset=13):
    """Decorator: a case named after f, which f(c) fills."""
    return lambda f: CASES.append(lambda: Case(f.__name__, opset).filled_by(f))


class Case:
    """One model: nodes, fed inputs (with their data), initializers, outputs."""

    def __init__(self, name, opset=13):
        self.name, self.opset = name, opset
        self.rng = np.random.default_rng(sum(map(ord, name)))
        self.nodes, self.inits, self.ins, self.outs = [], [], [], []
        self.feeds, self.expected = [], []
        self.v = {}  # Value name -> its reference value (floats in float64).

    def filled_by(self, f):
        f(self)
        return self

    def keep(self, name, value):
        value = np.asarray(value)
        self.v[name] = value.astype(F64) if value.dtype.kind == "f" else value
        return value

    def rand(self, *shape, dtype=F32, lo=-1.0, hi=1.0):
        return self.rng.uniform(lo, hi, shape).astype(dtype)

    def input(self, name, value, dims=None):
        """A fed graph input; `dims` may name symbolic axes (strings)."""
        t = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[value.dtype]
        self.ins.append(helper.make_tensor_value_info(name, t, dims or list(value.shape)))
        self.feeds.append(numpy_helper.from_array(value, name))
        return self.keep(name, value)

    def init(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return self.keep(name, value)

    def const(self, name, value):
        """A Constant node (as torch.onnx emits for indices and shapes)."""
        self.node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name))
        return self.keep(name, value)

    def node(self, op, ins, outs, **attrs):
        self.nodes.append(helper.make_node(op, ins, outs, name=f"{op}_{len(self.nodes)}", **attrs))

    def op(self, op, ins, out, fn, **attrs):
        """A one-output node and its reference value fn(*input values)."""
        self.node(op, ins, [out], **attrs)
        return self.keep(out, fn(*[self.v.get(i) for i in ins]))

    def consts(self, dtype, **values):
        for name, v in values.items():
            self.const(name, np.array(v, dtype))

    def output(self, *names, value=None, dtype=F32):
        """Graph outputs: their reference values (`value`, or computed)."""
        for name in names:
            v = np.asarray(self.v[name] if value is None else value)
            v = v.astype(dtype) if v.dtype.kind == "f" else v
            t = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype]
            self.outs.append(helper.make_tensor_value_info(name, t, list(v.shape)))
            self.expected.append(numpy_helper.from_array(v, name))

    def save(self, out):
        graph = helper.make_graph(self.nodes, self.name, self.ins, self.outs, self.inits)
        model = helper.make_model(graph, producer_name="rill gen_model_cases.py",
                                  opset_imports=[helper.make_opsetid("", self.opset)])
        onnx.checker.check_model(model, full_check=True)
        data = os.path.join(out, self.name, "test_data_set_0")
        os.makedirs(data)
        onnx.save(model, os.path.join(out, self.name, "model.onnx"))
        for kind, tensors in (("input", self.feeds), ("output", self.expected)):
            for i, t in enumerate(tensors):
                with open(os.path.join(data, f"{kind}_{i}.pb"), "wb") as f:
                    f.write(t.SerializeToString())


# ------------------------------------------- references (for Case.op: input values -> value)
sigmoid = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
erf = np.vectorize(math.erf)
mm = np.matmul
take = lambda v, k: v[k]  # noqa: E731 (Gather on axis 0)
unsqueeze0 = lambda v, _: v.reshape(1)  # noqa: E731 (of a scalar)
concat = lambda *v: np.concatenate(v)  # noqa: E731
reshape = lambda v, shape: v.reshape(shape)  # noqa: E731
shape_of = lambda x: np.array(x.shape, I64)  # noqa: E731


def lstm_ref(x, w, r, b, h0, c0, reverse):
    """ONNX LSTM, layout 0, default activations, gates i, o, f, c; reverse[d]
    says whether direction d runs backwards."""
    seq, batch, _ = x.shape
    dirs, hidden = w.shape[0], w.shape[1] // 4
    y = np.zeros((seq, dirs, batch, hidden))
    yh, yc = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        h, c = h0[d], c0[d]
        for t in (reversed(range(seq)) if reverse[d] else range(seq)):
            g = x[t] @ w[d].T + h @ r[d].T + b[d, :4 * hidden] + b[d, 4 * hidden:]
            i, o, f, cc = np.split(g, 4, axis=1)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
            h = sigmoid(o) * np.tanh(c)
            y[t, d] = h
        yh[d], yc[d] = h, c
    return y, yh, yc


def gru_ref(x, w, r, b, h0, reverse, linear_before_reset):
    """ONNX GRU, layout 0, default activations, gates z, r, h."""
    seq, batch, _ = x.shape
    dirs, hidden = w.shape[0], w.shape[1] // 3
    y, yh = np.zeros((seq, dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        h = h0[d]
        wz, wr, wh = np.split(w[d], 3)
        rz, rr, rh = np.split(r[d], 3)
        wbz, wbr, wbh, rbz, rbr, rbh = np.split(b[d], 6)
        for t in (reversed(range(seq)) if reverse[d] else range(seq)):
            z = sigmoid(x[t] @ wz.T + h @ rz.T + wbz + rbz)
            rt = sigmoid(x[t] @ wr.T + h @ rr.T + wbr + rbr)
            if linear_before_reset:
                n = np.tanh(x[t] @ wh.T + rt * (h @ rh.T + rbh) + wbh)
            else:
                n = np.tanh(x[t] @ wh.T + (rt * h) @ rh.T + rbh + wbh)
            h = (1 - z) * n + z * h
            y[t, d] = h
        yh[d] = h
    return y, yh


def rnn_case(name, cell, opset=13, seq=4, batch=2, inp=3, hidden=5, direction="forward",
             layout=0, bias=True, initial=True, seq_lens=False, lbr=0, outputs=3, dtype=F32):
    """An LSTM/GRU node with its inputs and the reference outputs."""
    c = Case(name, opset)
    dirs, gates = (2 if direction == "bidirectional" else 1), (4 if cell == "LSTM" else 3)
    x = c.input("X", c.rand(*((batch, seq, inp) if layout else (seq, batch, inp)), dtype=dtype))
    w = c.init("W", c.rand(dirs, gates * hidden, inp, dtype=dtype))
    r = c.init("R", c.rand(dirs, gates * hidden, hidden, dtype=dtype))
    b = c.init("B", c.rand(dirs, 2 * gates * hidden, dtype=dtype)) if bias else None
    c.init("sequence_lens", np.full(batch, seq, np.int32)) if seq_lens else None
    hs = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    h0 = c.input("initial_h", c.rand(*hs, dtype=dtype)) if initial else None
    c0 = c.input("initial_c", c.rand(*hs, dtype=dtype)) if initial and cell == "LSTM" else None
    ins = ["X", "W", "R", "B" if bias else "", "sequence_lens" if seq_lens else "",
           "initial_h" if initial else ""] + (["initial_c"] if c0 is not None else [])
    names = ["Y", "Y_h", "Y_c"][:outputs if cell == "LSTM" else min(outputs, 2)]
    attrs = {"hidden_size": hidden, "direction": direction, **({"layout": 1} if layout else {})}
    attrs.update({"linear_before_reset": lbr} if cell == "GRU" else {})
    c.node(cell, ins, names, **attrs)
    # The reference in layout 0 and float64.
    layout0 = lambda v: (v.transpose(1, 0, 2) if layout else v).astype(F64)  # noqa: E731
    b64 = b.astype(F64) if bias else np.zeros((dirs, 2 * gates * hidden))
    zero = np.zeros((dirs, batch, hidden))
    h64 = layout0(h0) if initial else zero
    reverse = [direction == "reverse", True][:dirs]
    if cell == "LSTM":
        c64 = layout0(c0) if initial else zero
        res = lstm_ref(layout0(x), w.astype(F64), r.astype(F64), b64, h64, c64, reverse)
    else:
        res = gru_ref(layout0(x), w.astype(F64), r.astype(F64), b64, h64, reverse, lbr)
    if layout:
        res = [res[0].transpose(2, 0, 1, 3)] + [v.transpose(1, 0, 2) for v in res[1:]]
    for n, v in zip(names, res):
        c.output(n, value=v, dtype=dtype)
    return c


def cases(make, rows):
    """One case per row: make(*row)."""
    for row in rows:
        CASES.append(lambda row=row: make(*row))


# ---------------------------------------------------------------- RNNs
cases(lambda name, cell, kw: rnn_case(name, cell, **kw), [
    ("lstm_forward_bias_initial", "LSTM", {}),
    ("lstm_bidirectional", "LSTM", dict(direction="bidirectional", initial=False, outputs=2)),
    ("lstm_layout1", "LSTM", dict(opset=14, layout=1)),
    ("lstm_no_bias", "LSTM", dict(bias=False, outputs=2)),
    ("lstm_reverse", "LSTM", dict(direction="reverse", outputs=1)),
    ("lstm_sequence_lens", "LSTM", dict(seq_lens=True, seq=3, batch=3)),
    ("gru_linear_before_reset0", "GRU", dict(lbr=0)),
    ("gru_linear_before_reset1", "GRU", dict(lbr=1)),
    ("gru_bidirectional", "GRU", dict(direction="bidirectional", lbr=1)),
    ("gru_reverse", "GRU", dict(direction="reverse", initial=False)),
    ("gru_layout1_bidirectional", "GRU", dict(opset=14, layout=1, direction="bidirectional")),
    ("grad_lstm_f64", "LSTM", dict(seq=3, hidden=3, dtype=F64)),
    ("grad_gru_f64", "GRU", dict(seq=3, hidden=3, lbr=1, dtype=F64))])


# ---------------------------------------------------------------- attention
def dims_of(c, x, names):
    """Scalars Shape(x)[i], as torch.onnx writes x.size(i), and their
    Unsqueeze to [1] (named with a "u" added)."""
    c.op("Shape", [x], f"{x}_shape", shape_of)
    for i, n in enumerate(names):
        c.consts(I64, **{f"{n}_i": i, f"{n}_ax": [0]})
        c.op("Gather", [f"{x}_shape", f"{n}_i"], n, take, axis=0)
        c.op("Unsqueeze", [n, f"{n}_ax"], f"{n}u", unsqueeze0)


def softmax(axis):
    def f(x):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    return f


def gelu(c, x, y):
    """GELU through Erf, as torch.onnx writes nn.GELU()."""
    c.consts(F32, **{f"{y}_sqrt2": math.sqrt(2), f"{y}_one": 1, f"{y}_half": 0.5})
    c.op("Div", [x, f"{y}_sqrt2"], f"{y}_a", np.divide)
    c.op("Erf", [f"{y}_a"], f"{y}_b", erf)
    c.op("Add", [f"{y}_b", f"{y}_one"], f"{y}_c", np.add)
    c.op("Mul", [x, f"{y}_c"], f"{y}_d", np.multiply)
    c.op("Mul", [f"{y}_d", f"{y}_half"], y, np.multiply)


def layer_norm_decomposed(c, x, y, d, eps=1e-5):
    """LayerNorm over the last axis as ReduceMean, Sub, Pow, Sqrt, Div."""
    mean = lambda v: v.mean(axis=-1, keepdims=True)  # noqa: E731
    c.init(f"{y}_gamma", c.rand(d, lo=0.5, hi=1.5))
    c.init(f"{y}_beta", c.rand(d))
    c.consts(F32, **{f"{y}_two": 2, f"{y}_eps": eps})
    c.op("ReduceMean", [x], f"{y}_mean", mean, axes=[-1], keepdims=1)
    c.op("Sub", [x, f"{y}_mean"], f"{y}_d", np.subtract)
    c.op("Pow", [f"{y}_d", f"{y}_two"], f"{y}_sq", np.power)
    c.op("ReduceMean", [f"{y}_sq"], f"{y}_var", mean, axes=[-1], keepdims=1)
    c.op("Add", [f"{y}_var", f"{y}_eps"], f"{y}_ve", np.add)
    c.op("Sqrt", [f"{y}_ve"], f"{y}_std", np.sqrt)
    c.op("Div", [f"{y}_d", f"{y}_std"], f"{y}_n", np.divide)
    c.op("Mul", [f"{y}_n", f"{y}_gamma"], f"{y}_s", np.multiply)
    c.op("Add", [f"{y}_s", f"{y}_beta"], y, np.add)


def linear(c, x, y, n_in, n_out):
    """MatMul by [n_in, n_out] weights and Add of a bias, as nn.Linear."""
    c.init(f"{y}_w", c.rand(n_in, n_out, lo=-0.5, hi=0.5))
    c.init(f"{y}_b", c.rand(n_out, lo=-0.1, hi=0.1))
    c.op("MatMul", [x, f"{y}_w"], f"{y}_xw", mm)  # [B,S,D] x [D,E]
    c.op("Add", [f"{y}_xw", f"{y}_b"], y, np.add)


def layer_norm(c, x, y, d, eps=1e-5):
    """LayerNormalization (opset 17) over the last axis."""
    g, b = c.init(f"{y}_gamma", c.rand(d, lo=0.5, hi=1.5)), c.init(f"{y}_beta", c.rand(d))

    def f(v, *_):
        n = (v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + eps)
        return n * g + b
    c.op("LayerNormalization", [x, f"{y}_gamma", f"{y}_beta"], y, f, axis=-1, epsilon=eps)


@model()
def attention_single_head(c):
    b, s, d = 2, 4, 8
    c.input("X", c.rand(b, s, d))
    for n in "qkv":
        c.init(f"W{n}", c.rand(d, d, lo=-0.5, hi=0.5))
        c.op("MatMul", ["X", f"W{n}"], n.upper(), mm)  # [B,S,D] x [D,D]
    c.op("Transpose", ["K"], "Kt", lambda k: k.transpose(0, 2, 1), perm=[0, 2, 1])
    c.op("MatMul", ["Q", "Kt"], "S0", mm)
    c.const("scale", np.array(math.sqrt(d), F32))
    c.op("Div", ["S0", "scale"], "S1", np.divide)
    c.const("causal", np.tril(np.ones((s, s), bool)))
    c.const("neg_inf", np.array(-np.inf, F32))
    c.op("Where", ["causal", "S1", "neg_inf"], "S2", np.where)
    c.op("Softmax", ["S2"], "P", softmax(-1), axis=-1)
    c.op("MatMul", ["P", "V"], "O", mm)
    gelu(c, "O", "G")
    layer_norm_decomposed(c, "G", "Y", d)
    c.output("Y")


@model(17)
def attention_multi_head(c):
    """A transformer encoder layer as torch.onnx (opset 17) writes it."""
    b, s, d, h, f = 2, 5, 8, 2, 16
    c.input("X", c.rand(b, s, d))
    # The [B, S, H, D/H] shape from Shape -> Gather -> Unsqueeze -> Concat.
    dims_of(c, "X", ["nb", "ns"])
    c.const("heads", np.array([h, d // h], I64))
    c.op("Concat", ["nbu", "nsu", "heads"], "hshape", concat, axis=0)
    perms = {"q": [0, 2, 1, 3], "k": [0, 2, 3, 1], "v": [0, 2, 1, 3]}
    for n, perm in perms.items():
        linear(c, "X", f"{n}1", d, d)
        c.op("Reshape", [f"{n}1", "hshape"], f"{n}2", reshape)
        c.op("Transpose", [f"{n}2"], f"{n}h", lambda v, p=perm: v.transpose(p), perm=perm)
    c.op("MatMul", ["qh", "kh"], "S0", mm)  # [B,H,S,Dh] x [B,H,Dh,S]
    c.const("scale", np.array(1 / math.sqrt(d // h), F32))
    c.op("Mul", ["S0", "scale"], "S1", np.multiply)
    c.const("causal", np.tril(np.ones((s, s), bool)))
    c.const("neg", np.array(-1e9, F32))
    c.op("Where", ["causal", "S1", "neg"], "S2", np.where)
    c.op("Softmax", ["S2"], "P", softmax(-1), axis=-1)
    c.op("MatMul", ["P", "vh"], "O0", mm)
    c.op("Transpose", ["O0"], "O1", lambda v: v.transpose(0, 2, 1, 3), perm=[0, 2, 1, 3])
    c.const("merge", np.array([0, 0, -1], I64))
    c.op("Reshape", ["O1", "merge"], "O2", lambda v, _: v.reshape(b, s, d))
    linear(c, "O2", "A1", d, d)
    c.op("Add", ["X", "A1"], "R1", np.add)
    layer_norm(c, "R1", "L1", d)
    linear(c, "L1", "F1", d, f)
    gelu(c, "F1", "F2")
    linear(c, "F2", "F3", f, d)
    c.op("Add", ["L1", "F3"], "R2", np.add)
    layer_norm(c, "R2", "Y", d)
    c.output("Y")


@model()
def attention_broadcast_matmul_softmax_axis1(c):
    c.init("Qc", c.rand(1, 2, 3, 4))
    c.input("K", c.rand(2, 2, 4, 3))
    c.op("MatMul", ["Qc", "K"], "S", mm)  # [1,H,S,D] x [B,H,D,S]
    c.op("Softmax", ["S"], "P", softmax(1), axis=1)
    c.input("X", c.rand(2, 3, 4))
    c.init("W", c.rand(4, 6))
    c.op("MatMul", ["X", "W"], "XW", mm)  # [B,S,D] x [D,E]
    c.init("A", c.rand(3, 4))
    c.input("Z", c.rand(2, 4, 5))
    c.op("MatMul", ["A", "Z"], "AZ", mm)  # [S,D] x [B,D,E]
    c.output("P", "XW", "AZ")


# ---------------------------------------------------------------- embeddings
@model(17)
def embedding_gather(c):
    c.input("ids", np.array([[0, 3, -1, 7, 2], [-8, 5, 5, 1, -3]], I64))
    c.init("table", c.rand(8, 6))
    c.init("pos_table", c.rand(6, 6))
    c.op("Gather", ["table", "ids"], "tok", take, axis=0)
    # Positions: Range(0, Shape(ids)[1], 1), folded at import.
    c.op("Shape", ["ids"], "shp", shape_of)
    c.consts(I64, one=1, zero=0)
    c.op("Gather", ["shp", "one"], "seq", take, axis=0)
    c.op("Range", ["zero", "seq", "one"], "pos", lambda a, b, d: np.arange(a, b, d, dtype=I64))
    c.op("Gather", ["pos_table", "pos"], "pe", take, axis=0)
    c.op("Add", ["tok", "pe"], "E", np.add)
    c.init("pick", np.array([-1, 0, 2], I64))
    c.op("Gather", ["E", "pick"], "picked", lambda e, i: e[:, i], axis=1)
    c.op("Gather", ["E", "zero"], "cls", lambda e, i: e[:, i], axis=1)  # x[:, 0]
    c.output("E", "picked", "cls")


@model()
def grad_embedding_f64(c):
    c.input("ids", np.array([[0, 3, -1, 3], [-6, 5, 5, 1]], I64))
    c.init("table", c.rand(6, 5, dtype=F64))
    c.init("proj", c.rand(5, 3, dtype=F64))
    c.op("Gather", ["table", "ids"], "tok", take, axis=0)
    c.op("MatMul", ["tok", "proj"], "p", mm)
    c.op("Tanh", ["p"], "Y", np.tanh)
    c.output("Y", dtype=F64)


# ---------------------------------------------------------------- padding, pooling, conv
def pad_ref(x, pads, mode, value=0.0):
    """ONNX Pad: negative pads crop (first), positive ones pad."""
    r = x.ndim
    x = x[tuple(slice(max(0, -pads[a]), x.shape[a] - max(0, -pads[a + r])) for a in range(r))]
    width = [(max(0, pads[a]), max(0, pads[a + r])) for a in range(r)]
    if mode == "constant":
        return np.pad(x, width, mode="constant", constant_values=value)
    return np.pad(x, width, mode=mode)


def pad_case(name, pads, mode, value=None, shape=(1, 2, 4, 5), dtype=F32, output=True):
    c = Case(name)
    c.input("x", c.rand(*shape, dtype=dtype))
    c.init("pads", np.array(pads, I64))
    c.consts(dtype, **({"value": value} if value is not None else {}))
    ins = ["x", "pads"] + (["value"] if value is not None else [])
    c.op("Pad", ins, "y", lambda x, *_: pad_ref(x, pads, mode, value or 0.0), mode=mode)
    if output:
        c.output("y")
    return c


cases(pad_case, [  # Negative pads crop.
    ("pad_constant_value", [0, 0, 1, 2, 0, 0, 2, 1], "constant", 1.5),
    ("pad_reflect", [0, 0, 2, 1, 0, 1, 1, 3], "reflect", None),
    ("pad_edge", [0, 0, 3, 0, 0, 0, 1, 2], "edge", None),
    ("pad_negative_constant", [0, 0, -1, 2, 0, -1, 1, -2], "constant", None),
    ("pad_negative_edge", [0, 0, 1, -1, 0, 0, -2, 2], "edge", None)])


def pool_ref(x, kind, k, s, pads, ceil=0, cip=0):
    """2-D pooling with pads [top, left, bottom, right]. With ceil_mode a
    window must start inside the input or its begin pad, and an average
    counting pads divides by the window clipped to input + pads (not the
    ceil overhang): PyTorch's and onnxruntime's rule."""
    n, ch, hw = x.shape[0], x.shape[1], x.shape[2:]
    def out_size(a):
        o = (hw[a] + pads[a] + pads[a + 2] - k[a] + (s[a] - 1 if ceil else 0)) // s[a] + 1
        return o - 1 if ceil and (o - 1) * s[a] >= hw[a] + pads[a] else o
    outs = [out_size(0), out_size(1)]
    y = np.zeros((n, ch, *outs))
    for i in range(outs[0]):
        for j in range(outs[1]):
            b = [i * s[0] - pads[0], j * s[1] - pads[1]]
            e = [min(b[a] + k[a], hw[a] + pads[a + 2]) for a in range(2)]
            win = x[:, :, max(b[0], 0):min(e[0], hw[0]), max(b[1], 0):min(e[1], hw[1])]
            if kind == "MaxPool":
                y[:, :, i, j] = win.max(axis=(2, 3))
            else:
                area = (e[0] - b[0]) * (e[1] - b[1]) if cip else win.shape[2] * win.shape[3]
                y[:, :, i, j] = win.sum(axis=(2, 3)) / area
    return y


def pool_case(name, kind, shape, k, s, pads, ceil=0, cip=None):
    c = Case(name)
    c.input("x", c.rand(*shape))
    attrs = {"kernel_shape": k, "strides": s, "pads": pads, "ceil_mode": ceil}
    attrs.update({"count_include_pad": cip} if cip is not None else {})
    c.op(kind, ["x"], "y", lambda x: pool_ref(x, kind, k, s, pads, ceil, cip or 0), **attrs)
    c.output("y")
    return c


cases(pool_case, [
    ("maxpool_ceil", "MaxPool", (1, 2, 8, 8), [3, 3], [2, 2], [0, 0, 0, 0], 1),
    ("maxpool_ceil_pads", "MaxPool", (1, 2, 8, 7), [3, 3], [2, 2], [1, 1, 1, 1], 1),
    ("avgpool_ceil_cip0", "AveragePool", (1, 2, 8, 8), [3, 3], [2, 2], [1, 1, 1, 1], 1, 0),
    ("avgpool_ceil_cip1", "AveragePool", (1, 2, 8, 8), [3, 3], [2, 2], [1, 1, 1, 1], 1, 1),
    ("avgpool_ceil_nopad_cip1", "AveragePool", (1, 2, 8, 8), [3, 3], [2, 2], [0, 0, 0, 0], 1, 1),
    ("maxpool_asym_pads", "MaxPool", (1, 2, 7, 7), [3, 3], [2, 2], [1, 0, 2, 1]),
    ("avgpool_asym_pads_cip0", "AveragePool", (1, 2, 7, 6), [3, 2], [2, 2], [0, 1, 1, 0], 0, 0),
    ("avgpool_asym_pads_cip1", "AveragePool", (1, 2, 7, 6), [3, 2], [2, 2], [0, 1, 1, 0], 0, 1)])


def conv_ref(x, w, b, s, pads):
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    kh, kw = w.shape[2:]
    oh, ow = (xp.shape[2] - kh) // s[0] + 1, (xp.shape[3] - kw) // s[1] + 1
    y = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * s[0]:i * s[0] + kh, j * s[1]:j * s[1] + kw]
            y[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return y + b[None, :, None, None]


def same_pads(hw, k, s, upper):
    pads = [0] * 4
    for a in range(2):
        total = max(0, (-(-hw[a] // s[a]) - 1) * s[a] + k[a] - hw[a])
        small = total // 2
        pads[a], pads[a + 2] = (small, total - small) if upper else (total - small, small)
    return pads


def conv_case(name, shape, wshape, s, pads=None, auto_pad=None):
    c = Case(name)
    c.input("x", c.rand(*shape))
    c.init("w", c.rand(*wshape, lo=-0.5, hi=0.5))
    c.init("b", c.rand(wshape[0]))
    attrs = {"kernel_shape": list(wshape[2:]), "strides": s}
    attrs.update({"auto_pad": auto_pad} if auto_pad else {"pads": pads})
    pads = pads or same_pads(shape[2:], wshape[2:], s, auto_pad == "SAME_UPPER")
    c.op("Conv", ["x", "w", "b"], "y", lambda x, w, b: conv_ref(x, w, b, s, pads), **attrs)
    c.output("y")
    return c


cases(conv_case, [
    ("conv_asym_pads", (1, 2, 6, 7), (3, 2, 3, 3), [1, 2], [0, 1, 2, 1]),
    ("conv_same_upper_odd", (1, 2, 6, 6), (4, 2, 4, 4), [1, 1], None, "SAME_UPPER"),
    ("conv_same_upper_stride2", (1, 2, 6, 7), (3, 2, 3, 3), [2, 2], None, "SAME_UPPER"),
    ("conv_same_lower_odd", (1, 2, 6, 6), (4, 2, 4, 2), [1, 1], None, "SAME_LOWER")])


def grad_pad_resize_f64():
    c = pad_case("grad_pad_resize_f64", [0, 0, 1, 2, 0, 0, 2, 1], "reflect", dtype=F64,
                 output=False)
    scales = [1, 1, 1.5, 0.5]
    c.const("roi", np.zeros(0, F32))
    c.const("scales", np.array(scales, F32))
    c.op("Resize", ["y", "roi", "scales"], "r",
         lambda y, *_: resize_ref(y, scales, None, "linear", "half_pixel", None), mode="linear",
         coordinate_transformation_mode="half_pixel")
    c.init("w", c.rand(1, 2, 1, 1, dtype=F64))
    c.op("Mul", ["r", "w"], "m", np.multiply)
    c.op("Tanh", ["m"], "Y", np.tanh)
    c.output("Y", dtype=F64)
    return c


CASES.append(grad_pad_resize_f64)


# ---------------------------------------------------------------- shape arithmetic
@model()
def shape_reshape_symbolic_batch(c):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape on a symbolic batch."""
    c.input("x", c.rand(2, 3, 4), dims=["batch", 3, 4])
    dims_of(c, "x", ["d0", "d1", "d2"])
    c.const("m1", np.array([-1], I64))
    c.op("Concat", ["d0u", "m1"], "s1", concat, axis=0)
    c.op("Reshape", ["x", "s1"], "y", reshape)
    c.op("Mul", ["d1", "d2"], "d12", np.multiply)
    c.const("ax0", np.array([0], I64))
    c.op("Unsqueeze", ["d12", "ax0"], "n2", unsqueeze0)
    c.op("Concat", ["d0u", "n2"], "s2", concat, axis=0)
    c.op("Reshape", ["x", "s2"], "y2", reshape)
    c.output("y", "y2")
    for v in c.outs:
        v.type.tensor_type.shape.dim[0].dim_param = "batch"


@model(17)
def shape_split_heads(c):
    """[B, S, D] -> [B, H, S, D/H] with the head size from Shape and Div."""
    c.input("x", c.rand(2, 5, 8))
    dims_of(c, "x", ["d0", "d1", "d2"])
    c.consts(I64, h=2, ax0=[0], hu=[2])
    c.op("Div", ["d2", "h"], "dh", lambda a, b: a // b)
    c.op("Unsqueeze", ["dh", "ax0"], "dhu", unsqueeze0)
    c.op("Concat", ["d0u", "d1u", "hu", "dhu"], "s", concat, axis=0)
    c.op("Reshape", ["x", "s"], "r", reshape)
    c.op("Transpose", ["r"], "y", lambda v: v.transpose(0, 2, 1, 3), perm=[0, 2, 1, 3])
    c.output("y")


@model()
def shape_slice_constant_of_shape(c):
    c.input("x", c.rand(2, 3, 4))
    c.op("Shape", ["x"], "shp", shape_of)
    c.consts(I64, b=[1], e=[INT64_MAX])
    c.op("Slice", ["shp", "b", "e"], "tail", lambda v, *_: v[1:])
    c.op("ConstantOfShape", ["tail"], "fill", lambda t: np.full(t, 2.5),
         value=numpy_helper.from_array(np.array([2.5], F32)))
    c.op("Add", ["x", "fill"], "y", np.add)
    c.output("y")


@model()
def range_constant_inputs(c):
    c.input("x", c.rand(2, 4))
    c.consts(F32, start=1.0, limit=7.0, delta=1.5)
    c.op("Range", ["start", "limit", "delta"], "r", lambda a, b, d: np.arange(a, b, d))
    c.op("Add", ["x", "r"], "y", np.add)
    c.input("x2", c.rand(2, 5))
    c.consts(I64, istart=-1, ilimit=5, idelta=2)
    c.op("Range", ["istart", "ilimit", "idelta"], "ir", lambda a, b, d: np.arange(a, b, d))
    c.op("Gather", ["x2", "ir"], "y2", lambda x, i: x[:, i], axis=1)
    c.output("y", "y2")


@model()
def expand_computed_shape(c):
    c.input("x", c.rand(3, 1))
    c.input("like", c.rand(2, 3, 4))
    c.op("Shape", ["like"], "shp", shape_of)
    c.op("Expand", ["x", "shp"], "y", lambda x, s: np.broadcast_to(x, s))
    c.const("s2", np.array([2, 1, 4], I64))
    c.op("Expand", ["x", "s2"], "y2", lambda x, _: np.broadcast_to(x, (2, 3, 4)))
    c.output("y", "y2")


@model()
def tile(c):
    c.input("x", c.rand(2, 3))
    c.init("reps", np.array([2, 3], I64))
    c.op("Tile", ["x", "reps"], "y", np.tile)
    c.input("x3", c.rand(2, 1, 3))
    c.const("reps3", np.array([1, 2, 1], I64))
    c.op("Tile", ["x3", "reps3"], "y3", np.tile)
    c.output("y", "y3")


@model()
def split_equal_and_sizes(c):
    c.input("x", c.rand(2, 6))
    c.node("Split", ["x"], ["a0", "a1", "a2"], axis=1)
    c.input("z", c.rand(6, 3))
    c.init("sizes", np.array([1, 2, 3], I64))
    c.node("Split", ["z", "sizes"], ["b0", "b1", "b2"], axis=-2)
    values = np.split(c.v["x"], 3, axis=1) + np.split(c.v["z"], [1, 3], axis=0)
    for n, v in zip(["a0", "a1", "a2", "b0", "b1", "b2"], values):
        c.output(n, value=v)


@model()
def slice_steps(c):
    c.input("x", c.rand(5, 6))
    specs = {"flip": ([-1], [INT64_MIN], [0], [-1], lambda x: x[::-1]),
             "step2": ([1], [INT64_MAX], [1], [2], lambda x: x[:, 1::2]),
             "mixed": ([0, 5], [5, 0], [0, 1], [2, -2], lambda x: x[0:5:2, 5:0:-2])}
    for n, (b, e, axes, steps, f) in specs.items():
        c.consts(I64, **{f"{n}_{k}": v for k, v in zip("beas", (b, e, axes, steps))})
        c.op("Slice", ["x"] + [f"{n}_{k}" for k in "beas"], n, lambda x, *_, f=f: f(x))
        c.output(n)


# ---------------------------------------------------------------- Resize
SOURCE_COORD = {  # coordinate_transformation_mode: (o, scale, n_in, n_out) -> input coord.
    "half_pixel": lambda o, s, i, n: (o + 0.5) / s - 0.5,
    "pytorch_half_pixel": lambda o, s, i, n: (o + 0.5) / s - 0.5 if n > 1 else 0.0,
    "align_corners": lambda o, s, i, n: 0.0 if n == 1 else o * (i - 1) / (n - 1),
    "asymmetric": lambda o, s, i, n: o / s}


def resize_ref(x, scales, sizes, mode, coord, nearest):
    """ONNX Resize (opset 13), one axis at a time."""
    for a in range(x.ndim):
        n_in = x.shape[a]
        if sizes is not None:
            n_out, scale = sizes[a], sizes[a] / n_in
        else:
            n_out, scale = int(math.floor(n_in * np.float32(scales[a]))), float(scales[a])
        m = np.zeros((n_out, n_in))
        for o in range(n_out):
            src = SOURCE_COORD[coord](o, scale, n_in, n_out)
            if mode == "nearest":
                fl = math.floor(src)
                i = {"floor": fl, "ceil": math.ceil(src),
                     "round_prefer_floor": fl if src - fl <= 0.5 else fl + 1,
                     "round_prefer_ceil": fl if src - fl < 0.5 else fl + 1}[nearest]
                m[o, min(max(i, 0), n_in - 1)] = 1
            else:
                src = min(max(src, 0.0), n_in - 1.0)
                i0 = math.floor(src)
                m[o, i0] += 1 - (src - i0)
                m[o, min(i0 + 1, n_in - 1)] += src - i0
        x = np.moveaxis(np.tensordot(m, np.moveaxis(x, a, 0), axes=1), 0, a)
    return x


def resize_case(mode, coord, scales=None, sizes=None, nearest="round_prefer_floor"):
    c = Case(f"resize_{mode}_{coord}_{'sizes' if sizes else 'scales'}")
    c.input("x", c.rand(1, 2, 3, 4))
    c.const("roi", np.zeros(0, F32))
    if scales:
        c.const("scales", np.array(scales, F32))
    else:
        c.const("sizes", np.array(sizes, I64))
    attrs = {"mode": mode, "coordinate_transformation_mode": coord}
    attrs.update({"nearest_mode": nearest} if mode == "nearest" else {})
    c.op("Resize", ["x", "roi", "scales" if scales else "", "sizes" if sizes else ""], "y",
         lambda x, *_: resize_ref(x, scales, sizes, mode, coord, nearest), **attrs)
    c.output("y")
    return c


cases(resize_case, [
    ("nearest", "asymmetric", [1, 1, 2, 1.5], None, "floor"),
    ("nearest", "asymmetric", None, [1, 2, 5, 7], "floor"),
    ("nearest", "half_pixel", None, [1, 2, 6, 2]),  # 4 -> 2: ties, prefer floor
    ("nearest", "half_pixel", [1, 1, 0.5, 2.5]),
    ("linear", "half_pixel", [1, 1, 2, 2]),
    ("linear", "half_pixel", None, [1, 2, 2, 3]),
    ("linear", "align_corners", None, [1, 2, 5, 7]),
    ("linear", "align_corners", [1, 1, 2, 0.5]),
    ("linear", "pytorch_half_pixel", None, [1, 2, 1, 6]),  # An axis of 1.
    ("linear", "pytorch_half_pixel", [1, 1, 1.5, 0.75])])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-o", "--out", required=True, help="output directory")
    ap.add_argument("-k", default="", help="only the cases whose name contains this")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    made = [c for c in (make() for make in CASES) if args.k in c.name]
    for c in made:
        c.save(args.out)
    print(f"wrote {len(made)} cases to {args.out}")


if __name__ == "__main__":
    main()
