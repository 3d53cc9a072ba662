#!/usr/bin/python3
"""The models of bench/onnx_bench.sh, their ONNX export, and the PyTorch
side of the benchmark (eager inference).

  /usr/bin/python3 bench/onnx_bench_torch.py export --model=resnet50 --batch=8 --out=DIR
  /usr/bin/python3 bench/onnx_bench_torch.py time --model=resnet50 --batch=8 \
      [--weights=DIR/weights.pt] [--threads=2] [--runs=20] [--warmup=3]

Needs /usr/bin/python3 (Debian's torch 1.13, torchvision 0.14, onnx 1.12).

Models (random weights, torch.manual_seed(0), eval mode, static shapes):
  resnet50      torchvision ResNet-50, input [batch, 3, 224, 224]
  mobilenet_v2  torchvision MobileNetV2, input [batch, 3, 224, 224]
  bert_encoder  4 post-LayerNorm encoder layers of BERT-base's shape (hidden
                768, 12 heads, FFN 3072, exact GELU), input the embedded
                sequence [batch, 128, 768] as float
The BatchNorms get random affine parameters and running statistics
measured in train mode on random batches (cumulative average), so that
the folded scale and shift are far from 1 and 0 and activations stay O(1);
the LayerNorms get random affine parameters too.

`export` writes DIR/model.onnx (opset 13, torch's constant folding on),
DIR/test_data_set_0/{input,output}_0.pb (serialized TensorProtos named as
the graph's input and output, as tools/export_torch_models.py and the ONNX
model zoo write them), and DIR/weights.pt (the calibrated state dict, so
that `time` runs the very weights that were exported without calibrating
again). `time` prints one line:
  TORCH median_ms=12.345 min_ms=12.0 runs=20 warmup=3 threads=2 torch=1.13.0
"""
import argparse
import math
import os
import statistics
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 13


class EncoderLayer(nn.Module):
    """BERT's post-LayerNorm encoder layer written out with plain ops (no
    nn.MultiheadAttention fast path), so that it exports at opset 13 as
    MatMul/Add/Reshape/Transpose/Softmax/Erf and LayerNorm's
    decomposition. The reshapes use the static sequence length and -1 for
    the batch, so the graph has no shape arithmetic."""

    def __init__(self, seq, d, heads, ffn):
        super().__init__()
        self.seq, self.d, self.heads = seq, d, heads
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x):
        t, d, h = self.seq, self.d, self.heads
        hd = d // h
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (y.reshape(-1, t, h, hd).transpose(1, 2) for y in (q, k, v))
        att = F.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(-1, t, d)
        x = self.ln1(x + self.proj(y))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class BertEncoder(nn.Module):
    def __init__(self, layers=4, seq=128, d=768, heads=12, ffn=3072):
        super().__init__()
        self.layers = nn.Sequential(*(EncoderLayer(seq, d, heads, ffn)
                                      for _ in range(layers)))

    def forward(self, x):
        return self.layers(x)


def _torchvision(name):
    import torchvision  # Only the convnets need it.
    return getattr(torchvision.models, name)(weights=None)


# name -> (constructor, input shape without the batch, input name, output name)
MODELS = {
    "resnet50": (lambda: _torchvision("resnet50"), (3, 224, 224), "input", "logits"),
    "mobilenet_v2": (lambda: _torchvision("mobilenet_v2"), (3, 224, 224), "input", "logits"),
    "bert_encoder": (BertEncoder, (128, 768), "input", "output"),
}


def _calibrate(model, in_shape):
    """Random affine parameters for every BatchNorm and LayerNorm; BatchNorm
    running statistics as the cumulative average (momentum None) over three
    random batches of 8 in train mode."""
    g = torch.Generator().manual_seed(1)
    norms = [m for m in model.modules()
             if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm))]
    bns = [m for m in norms if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        for m in norms:
            if m.weight is not None:
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn((8,) + in_shape, generator=g))
    for m in bns:
        m.momentum = 0.1


def build(name, weights=None):
    """The model in eval mode: the seeded construction, then either the
    exported state dict (`weights`) or a fresh calibration (the same
    values: every random draw is seeded)."""
    ctor, in_shape, _, _ = MODELS[name]
    torch.manual_seed(0)
    model = ctor()
    if weights:
        model.load_state_dict(torch.load(weights))
    else:
        _calibrate(model, in_shape)
    return model.eval()


def export(args):
    import onnx
    from onnx import numpy_helper
    _, in_shape, in_name, out_name = MODELS[args.model]
    model = build(args.model)
    x = torch.randn((args.batch,) + in_shape, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        y = model(x)
    d = args.out
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    path = os.path.join(d, "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), path, opset_version=OPSET,
                          input_names=[in_name], output_names=[out_name],
                          do_constant_folding=True)
    onnx.checker.check_model(path)
    for kind, name, t in (("input", in_name, x), ("output", out_name, y)):
        with open(os.path.join(d, "test_data_set_0", f"{kind}_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(t.numpy(), name).SerializeToString())
    torch.save(model.state_dict(), os.path.join(d, "weights.pt"))
    nodes = len(onnx.load(path, load_external_data=False).graph.node)
    print(f"exported {args.model} batch {args.batch}: {nodes} nodes, "
          f"{os.path.getsize(path) / 2**20:.1f} MiB, output {list(y.shape)}")


def time_forward(args):
    torch.set_num_threads(args.threads)
    _, in_shape, _, _ = MODELS[args.model]
    model = build(args.model, args.weights)
    x = torch.rand((args.batch,) + in_shape) * 2 - 1
    times = []
    with torch.no_grad():
        for _ in range(args.warmup):
            model(x)
        for _ in range(args.runs):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    print(f"TORCH median_ms={statistics.median(times):.3f} min_ms={min(times):.3f} "
          f"runs={args.runs} warmup={args.warmup} threads={torch.get_num_threads()} "
          f"torch={torch.__version__}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=("export", "time"))
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--out", help="export: the model's directory")
    p.add_argument("--weights", help="time: the exported weights.pt (default: calibrate)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    args = p.parse_args()
    if args.batch < 1 or args.runs < 1 or args.warmup < 0 or args.threads < 1:
        p.error("--batch, --runs and --threads must be positive, --warmup not negative")
    if args.command == "export":
        if not args.out:
            p.error("export needs --out")
        torch.set_num_threads(max(1, os.cpu_count() or 1))
        export(args)
    else:
        time_forward(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
