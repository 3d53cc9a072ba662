#!/usr/bin/env python3
"""The Fashion-MNIST convnet of the dataset's benchmark in PyTorch, trained
the way `rill-demo train` trains it (same architecture, initialization
family, batch size, Adam settings, thread count, data files), for
bench/train_bench.sh. Prints one line:

  TORCH train_images_per_second=... inference_images_per_second=... test_accuracy=... threads=...

Run with Debian's /usr/bin/python3 (python3-torch 1.13).
"""
import argparse
import gzip
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(64 * 7 * 7, 1024)
        self.fc2 = nn.Linear(1024, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        x = F.dropout(x, 0.4, self.training)
        return self.fc2(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--train_limit", type=int, default=0)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    d = a.data_dir
    xtr = read_idx(f"{d}/train-images-idx3-ubyte.gz")
    ytr = read_idx(f"{d}/train-labels-idx1-ubyte.gz")
    xte = read_idx(f"{d}/t10k-images-idx3-ubyte.gz")
    yte = read_idx(f"{d}/t10k-labels-idx1-ubyte.gz")
    if a.train_limit > 0:
        xtr, ytr = xtr[:a.train_limit], ytr[:a.train_limit]
    xtr = torch.from_numpy(xtr.astype(np.float32) / 255.0).unsqueeze(1)
    ytr = torch.from_numpy(ytr.astype(np.int64))
    xte = torch.from_numpy(xte.astype(np.float32) / 255.0).unsqueeze(1)
    yte = torch.from_numpy(yte.astype(np.int64))

    model = ConvNet()
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    n = (len(xtr) // a.batch) * a.batch  # the last partial batch is dropped, as in Rill
    order = torch.randperm(len(xtr))[:n]
    model.train()
    start = time.perf_counter()
    for i in range(0, n, a.batch):
        idx = order[i:i + a.batch]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
        loss.backward()
        opt.step()
    train_s = time.perf_counter() - start

    model.eval()
    correct = 0
    start = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(xte), 500):
            correct += (model(xte[i:i + 500]).argmax(1) == yte[i:i + 500]).sum().item()
    infer_s = time.perf_counter() - start
    print(f"TORCH train_images_per_second={n / train_s:.1f} inference_images_per_second={len(xte) / infer_s:.1f} "
          f"test_accuracy={correct / len(xte):.4f} threads={torch.get_num_threads()} torch={torch.__version__}",
          flush=True)


if __name__ == "__main__":
    main()
