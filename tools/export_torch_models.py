#!/usr/bin/python3
"""Exports real PyTorch models to ONNX, with PyTorch's outputs as reference
data, to check Rill's ONNX import (graph/onnx/) against PyTorch.

  /usr/bin/python3 tools/export_torch_models.py --out DIR [--only a,b]
      [--opsets 13,17] [--dynamic-batch] [--fold] [--verbose] [--list]

Needs /usr/bin/python3 (torch 1.13, torchvision 0.14, onnx 1.12). Writes, as
the ONNX model zoo does, DIR/<name>_op<opset>/model.onnx and
DIR/<name>_op<opset>/test_data_set_0/{input,output}_<i>.pb (serialized
TensorProtos named as the graph's inputs/outputs), and DIR/index.json: per
model its dir, opset, inputs and outputs (name, shape, dtype, declared ONNX
shape), sorted op types, node count and onnx.checker (full_check) verdict;
plus the failures. A model that fails to export is reported in one line and
skipped (exit status 1 at the end).

Models run in eval mode with random weights (torch.manual_seed(0)); the
BatchNorms get random affine parameters and running statistics measured on
one random batch in train mode, so that deep random nets keep O(1)
activations and mean/var are far from 0/1. The batch axis is static unless
--dynamic-batch (then it is the symbol "batch" on every input and output).
torch's constant folding is off unless --fold, so that the shape arithmetic
torch emits (Shape/Gather/Concat/...) reaches Rill's importer. No ONNX
simplifier runs.
"""
import argparse
import json
import math
import os
import shutil
import sys
import time
import warnings

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from onnx import numpy_helper


# ---------------------------------------------------------------- models --
# MODELS maps a name to a builder returning (module, inputs, input_names,
# output_names, batch_axes); batch_axes maps a value name to its batch axis
# where it is not 0. Nested tuple outputs are flattened in order.

class OutOnly(nn.Module):
    """torchvision segmentation models return a dict: export its 'out'."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class FpnSmall(nn.Module):
    """Four stride-2 conv stages and an FPN top-down path upsampling by
    nearest x2, bilinear x2 (align_corners=False), and nearest to the
    lateral's size (as torchvision's FeaturePyramidNetwork does)."""

    def __init__(self, ch=16, widths=(8, 16, 24, 32)):
        super().__init__()
        ins = (3,) + widths[:-1]
        self.stages = nn.ModuleList(
            nn.Sequential(nn.Conv2d(i, w, 3, stride=2, padding=1),
                          nn.BatchNorm2d(w), nn.ReLU())
            for i, w in zip(ins, widths))
        self.lateral = nn.ModuleList(nn.Conv2d(w, ch, 1) for w in widths)
        self.smooth = nn.ModuleList(nn.Conv2d(ch, ch, 3, padding=1)
                                    for _ in widths)

    def forward(self, x):
        feats = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        c2, c3, c4, p5 = [l(f) for l, f in zip(self.lateral, feats)]
        p4 = c4 + F.interpolate(p5, scale_factor=2, mode="nearest")
        p3 = c3 + F.interpolate(p4, scale_factor=2, mode="bilinear",
                                align_corners=False)
        p2 = c2 + F.interpolate(p3, size=c2.shape[-2:], mode="nearest")
        return tuple(s(p) for s, p in zip(self.smooth, (p2, p3, p4, p5)))


class TransformerEncoderLM(nn.Module):
    def __init__(self, vocab=1000, d=64, max_len=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, max_len, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, 4, dim_feedforward=128,
                                           batch_first=True, activation="gelu")
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.tok(ids) + self.pos[:, :ids.size(1)]
        return self.head(self.norm(self.enc(x)))


class TransformerDecoderLM(nn.Module):
    def __init__(self, d=64, max_len=32):
        super().__init__()
        layer = nn.TransformerDecoderLayer(d, 4, dim_feedforward=128,
                                           batch_first=True)
        self.dec = nn.TransformerDecoder(layer, 2)
        # -inf above the diagonal, sliced to the target length at run time
        # (building it in forward needs Trilu, which opset 13 lacks).
        self.register_buffer(
            "causal", nn.Transformer.generate_square_subsequent_mask(max_len),
            persistent=False)

    def forward(self, tgt, memory):
        t = tgt.size(1)
        return self.dec(tgt, memory, tgt_mask=self.causal[:t, :t])


class GptBlock(nn.Module):
    """nanoGPT-style block; `use_chunk` picks qkv.chunk() over qkv.split()."""

    def __init__(self, d, heads, max_len, use_chunk):
        super().__init__()
        self.heads, self.use_chunk = heads, use_chunk
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc_out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len))
                             .view(1, 1, max_len, max_len), persistent=False)

    def attn(self, x):
        b, t, c = x.size()
        qkv = self.qkv(x)
        q, k, v = qkv.chunk(3, dim=2) if self.use_chunk else qkv.split(c, 2)
        hs = c // self.heads
        q, k, v = (y.view(b, t, self.heads, hs).transpose(1, 2)
                   for y in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GptTiny(nn.Module):
    def __init__(self, vocab=1000, d=64, heads=4, max_len=32):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.blocks = nn.Sequential(GptBlock(d, heads, max_len, False),
                                    GptBlock(d, heads, max_len, True))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        _, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        return self.head(self.ln(self.blocks(self.tok(idx) + self.pos(pos))))


class LstmClassifier(nn.Module):
    def __init__(self, vocab=1000, emb=32, hidden=64, classes=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, ids):
        return self.fc(self.lstm(self.emb(ids))[0][:, -1, :])


class PadModes(nn.Module):
    def forward(self, x):
        return (F.pad(x, (1, 2, 3, 1), mode="reflect"),
                F.pad(x, (2, 0, 1, 3), mode="replicate"),
                F.pad(x, (1, 1, 0, 2), mode="constant", value=0.5))


class ChannelShuffle(nn.Module):
    """ShuffleNetV2 unit: chunk, branch conv, concat, channel shuffle."""

    def __init__(self, ch=16, groups=2):
        super().__init__()
        self.groups = groups
        self.branch = nn.Sequential(nn.Conv2d(ch // 2, ch // 2, 1),
                                    nn.BatchNorm2d(ch // 2), nn.ReLU())

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        x = torch.cat((a, self.branch(b)), dim=1)
        n, c, h, w = x.size()
        x = x.view(n, self.groups, c // self.groups, h, w)
        return torch.transpose(x, 1, 2).contiguous().view(n, -1, h, w)


class PoolCeil(nn.Module):
    def __init__(self, ch=4):
        super().__init__()
        self.maxp = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.avgp = nn.AvgPool2d(3, 2, padding=1, ceil_mode=True,
                                 count_include_pad=False)
        self.conv = nn.Conv2d(ch, 8, 3, stride=2)

    def forward(self, x):  # the last: TF-style asymmetric "SAME" padding
        return self.maxp(x), self.avgp(x), self.conv(F.pad(x, (0, 1, 0, 1)))


def _m(module_fn, shapes, in_names, out_names, axes=None):
    """Builder of module_fn() on random inputs: a shape tuple is float32,
    ("ids", shape) int64 token ids in [0, 1000)."""
    def build():
        xs = tuple(torch.randint(0, 1000, s[1]) if s[0] == "ids"
                   else torch.randn(s) for s in shapes)
        return module_fn(), xs, in_names, out_names, axes or {}
    return build


def _classifier(ctor, size=64, **kw):
    return _m(lambda: ctor(weights=None, **kw), [(1, 3, size, size)],
              ["input"], ["logits"])


def _rnn(cls, bidir, batch_first):
    layers = 2 if (cls is nn.LSTM and not bidir) else 1
    outs = ["output", "h_n"] + (["c_n"] if cls is nn.LSTM else [])
    axes = {n: 1 for n in outs[1:]}  # h/c: (layers*dirs, batch, hidden)
    if not batch_first:
        axes.update(input=1, output=1)
    return _m(lambda: cls(16, 32, layers, batch_first=batch_first,
                          bidirectional=bidir),
              [(2, 10, 16) if batch_first else (10, 2, 16)], ["input"], outs,
              axes)


tvm = torchvision.models
MODELS = {
    "resnet18": _classifier(tvm.resnet18),
    "mobilenet_v3_small": _classifier(tvm.mobilenet_v3_small),
    "densenet121": _classifier(tvm.densenet121),
    "googlenet": _classifier(tvm.googlenet, aux_logits=False,
                             init_weights=True),
    "inception_v3": _classifier(tvm.inception_v3, size=75, aux_logits=False,
                                init_weights=True),
    "shufflenet_v2_x0_5": _classifier(tvm.shufflenet_v2_x0_5),
    "squeezenet1_1": _classifier(tvm.squeezenet1_1),
    "efficientnet_b0": _classifier(tvm.efficientnet_b0),
    "mnasnet0_5": _classifier(tvm.mnasnet0_5),
    "regnet_y_400mf": _classifier(tvm.regnet_y_400mf),
    "deeplabv3_mobilenet_v3_large": _m(
        lambda: OutOnly(tvm.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, aux_loss=False)),
        [(1, 3, 64, 64)], ["input"], ["out"]),
    "fpn_small": _m(FpnSmall, [(1, 3, 64, 64)], ["input"],
                    ["p2", "p3", "p4", "p5"]),
    "transformer_encoder": _m(TransformerEncoderLM, [("ids", (1, 16))],
                              ["ids"], ["logits"]),
    "transformer_decoder": _m(TransformerDecoderLM, [(1, 8, 64), (1, 12, 64)],
                              ["tgt", "memory"], ["output"]),
    "mha": _m(lambda: nn.MultiheadAttention(32, 4, batch_first=True),
              [(1, 5, 32), (1, 7, 32), (1, 7, 32)], ["query", "key", "value"],
              ["attn_output", "attn_weights"]),  # weights: head-averaged
    "gpt_tiny": _m(GptTiny, [("ids", (1, 16))], ["ids"], ["logits"]),
    "lstm": _rnn(nn.LSTM, bidir=False, batch_first=True),
    "lstm_bidir": _rnn(nn.LSTM, bidir=True, batch_first=True),
    "gru": _rnn(nn.GRU, bidir=False, batch_first=False),
    "gru_bidir": _rnn(nn.GRU, bidir=True, batch_first=False),
    "lstm_classifier": _m(LstmClassifier, [("ids", (2, 10))], ["ids"],
                          ["logits"]),
    "pad_reflect": _m(PadModes, [(1, 3, 8, 8)], ["input"],
                      ["reflect", "replicate", "constant"]),
    "channel_shuffle": _m(ChannelShuffle, [(1, 16, 8, 8)], ["input"],
                          ["output"]),
    "pool_ceil": _m(PoolCeil, [(1, 4, 10, 10)], ["input"],
                    ["maxpool", "avgpool", "padconv"]),
}


# ---------------------------------------------------------------- export --

def _calibrate_batchnorm(model, inputs, axes, in_names):
    """Random affine parameters, and running statistics measured in train
    mode on a random batch of 16: the BatchNorms do normalize (activations
    stay O(1) through deep random nets) and mean/var are far from 0/1."""
    bns = [m for m in model.modules()
           if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    g = torch.Generator().manual_seed(1)
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the calibration pass
        if m.affine:
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    batch = []
    for n, x in zip(in_names, inputs):
        shape = list(x.shape)
        shape[axes.get(n, 0)] = 16
        batch.append(torch.randn(shape, generator=g) if x.is_floating_point()
                     else torch.randint(0, 1000, shape, generator=g))
    model.train()
    with torch.no_grad():
        model(*batch)
    for m in bns:
        m.momentum = 0.1


def _flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in _flatten(o)]


def _first_line(e):
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"


def export_one(name, opset, args):
    """Exports one model at one opset; returns its index entry."""
    torch.manual_seed(0)
    model, inputs, in_names, out_names, axes = MODELS[name]()
    _calibrate_batchnorm(model, inputs, axes, in_names)
    model.eval()
    with torch.no_grad():
        outputs = [t.numpy() for t in _flatten(model(*inputs))]
    assert len(outputs) == len(out_names), (name, len(outputs))

    dynamic = None
    if args.dynamic_batch:
        dynamic = {n: {axes.get(n, 0): "batch"} for n in in_names + out_names}

    d = os.path.join(args.out, f"{name}_op{opset}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    path = os.path.join(d, "model.onnx")
    with warnings.catch_warnings():
        if not args.verbose:
            warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, path, opset_version=opset,
                          input_names=in_names, output_names=out_names,
                          dynamic_axes=dynamic,
                          do_constant_folding=args.fold)

    proto = onnx.load(path)
    graph = proto.graph
    inits = {i.name for i in graph.initializer}
    # torch drops inputs the outputs do not depend on
    g_inputs = [vi for vi in graph.input if vi.name not in inits]
    g_outputs = list(graph.output)
    try:
        onnx.checker.check_model(proto, full_check=True)
        checker = "ok"
    except Exception as e:  # noqa: BLE001 - any checker failure is reported
        checker = _first_line(e)
        print(f"WARNING: {name} opset {opset}: onnx.checker: {checker}")

    entry = {"name": name, "opset": opset, "dir": os.path.basename(d),
             "checker": checker}
    by_name = dict(zip(in_names, (x.numpy() for x in inputs)))
    assert len(g_outputs) == len(outputs), (name, [o.name for o in g_outputs])
    for kind, vis, arrays in (
            ("input", g_inputs, [by_name[vi.name] for vi in g_inputs]),
            ("output", g_outputs, outputs)):
        entry[kind + "s"] = []
        for i, (vi, arr) in enumerate(zip(vis, arrays)):
            pb = os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb")
            with open(pb, "wb") as f:
                f.write(numpy_helper.from_array(arr, vi.name)
                        .SerializeToString())
            dims = [x.dim_value if x.HasField("dim_value") else
                    (x.dim_param or None)
                    for x in vi.type.tensor_type.shape.dim]
            entry[kind + "s"].append({"name": vi.name, "shape": list(arr.shape),
                                      "dtype": str(arr.dtype),
                                      "onnx_shape": dims})
    entry["ops"] = sorted({n.op_type for n in graph.node})
    entry["nodes"] = len(graph.node)
    entry["bytes"] = os.path.getsize(path)
    return entry


def main():
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="output directory")
    p.add_argument("--only", default="",
                   help="comma-separated model names (default: all)")
    p.add_argument("--opsets", default=[13, 17], help="e.g. 13,17 (default)",
                   type=lambda v: [int(o) for o in v.split(",") if o])
    p.add_argument("--dynamic-batch", action="store_true",
                   help='make the batch axis the symbolic dimension "batch"')
    p.add_argument("--fold", action="store_true",
                   help="let torch fold constants (do_constant_folding=True)")
    p.add_argument("--verbose", action="store_true",
                   help="show torch's export warnings")
    p.add_argument("--list", action="store_true", help="list model names")
    args = p.parse_args()
    if args.list:
        print("\n".join(MODELS))
        return 0
    if not args.out:
        p.error("--out is required")
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        p.error(f"unknown model(s): {', '.join(unknown)} (see --list)")

    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    exported, failed = [], []
    t_all = time.time()
    for name in names:
        for opset in args.opsets:
            t0 = time.time()
            try:
                e = export_one(name, opset, args)
            except Exception as ex:  # noqa: BLE001 - report and go on
                msg = _first_line(ex)
                print(f"WARNING: {name} opset {opset} failed to export: {msg}")
                failed.append({"name": name, "opset": opset, "error": msg})
                shutil.rmtree(os.path.join(args.out, f"{name}_op{opset}"),
                              ignore_errors=True)
                continue
            exported.append(e)
            print(f"{e['dir']:<36} {e['nodes']:5d} nodes "
                  f"{e['bytes'] / 2**20:7.1f} MiB {time.time() - t0:6.1f} s")

    index = {"torch": torch.__version__, "torchvision": torchvision.__version__,
             "onnx": onnx.__version__, "dynamic_batch": args.dynamic_batch,
             "constant_folding": args.fold, "models": exported,
             "failed": failed}
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print(f"{len(exported)} exported, {len(failed)} failed, "
          f"{time.time() - t_all:.1f} s -> {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
