#!/usr/bin/env python3
"""PyTorch DistributedDataParallel (Gloo, CPU) peer of Rill's data-parallel
training over MPI ranks (`mpirun -np N rill-demo train --batch=64 ...`).

The model is train/convnet.cc's Fashion-MNIST convnet:

  conv 5x5x32 pad 2 -> relu -> maxpool 2 -> conv 5x5x64 pad 2 -> relu ->
  maxpool 2 -> flatten -> dense 1024 -> relu -> dropout 0.4 -> dense 10

with mean softmax cross-entropy, PyTorch's default Conv2d/Linear init
(weights and biases uniform in +-1/sqrt(fan_in), as InitConvNetParams), and
Adam with train/trainer.h's TrainOptions defaults (lr 1e-3, betas 0.9/0.999,
eps 1e-8, no weight decay). Images are pixel/255 (io::DataIterOptions
defaults: mean 0, stddev 1). The global batch is split evenly over the ranks
(per-rank batch = batch / world); DDP averages the gradients, so a step is the
single-process step on the whole global batch, as in Rill.

Launch (also with --nproc_per_node=1):

  /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2 \
      --master_addr=127.0.0.1 --master_port=29511 \
      bench/dist/ddp_fashion.py --batch=64 --steps=200 --threads=1

torch 1.13's torch.distributed.run is broken under Debian's Python 3.11
(Std.from_str("0") returns None because Python 3.11 no longer iterates a
zero IntFlag member, so the default --redirects=0 --tee=0 crash with
"'NoneType' object has no attribute 'get'"). Either pass both as non-zero
(stdout is then tee'd with a "[default0]:" prefix, stderr goes to the log
folder it names):

  /usr/bin/python3 -m torch.distributed.run --redirects=2 --tee=1 --nproc_per_node=2 \
      --master_addr=127.0.0.1 --master_port=29511 bench/dist/ddp_fashion.py --batch=64 ...

or let the script start its ranks itself (the same RANK/WORLD_SIZE/
LOCAL_RANK/MASTER_ADDR/MASTER_PORT environment the launcher gives):

  /usr/bin/python3 bench/dist/ddp_fashion.py --nproc=2 --batch=64 --steps=200 --threads=1

Rank 0 prints at the end:

  RESULT world=N images_per_second_per_rank=X images_per_second=Y step_ms=Z comm_ms_per_step=W ...

  * step_ms: wall time of the timed steps (after --warmup untimed steps)
    divided by --steps, the slowest rank's (all ranks start the timed
    region after a barrier);
  * images_per_second = global batch * steps / that time;
    images_per_second_per_rank = per-rank batch * steps / that time;
  * comm_ms_per_step: see CommTimer - the wall time per step during which a
    gradient allreduce was in flight, averaged over the ranks.

Run with Debian's /usr/bin/python3 (python3-torch 1.13, Gloo). Needs no
network beyond loopback and downloads nothing.
"""
import argparse
import datetime
import gzip
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler


def read_idx(path):
    """An IDX file (gzip-compressed or not) as a uint8 numpy array."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    elif not os.path.exists(path) and path.endswith(".gz") and os.path.exists(path[:-3]):
        path = path[:-3]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    if magic >> 8 != 0x08:  # 0x0000 08 NN: unsigned bytes, NN dimensions
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {magic:#x})")
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class ConvNet(nn.Module):
    """train/convnet.cc with ConvNetOptions defaults."""

    def __init__(self, conv1=32, conv2=64, hidden=1024, dropout=0.4, rows=28, cols=28, classes=10):
        super().__init__()
        self.dropout = dropout
        self.conv1 = nn.Conv2d(1, conv1, 5, padding=2)
        self.conv2 = nn.Conv2d(conv1, conv2, 5, padding=2)
        self.fc1 = nn.Linear(conv2 * (rows // 4) * (cols // 4), hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        x = F.dropout(x, self.dropout, self.training)
        return self.fc2(x)


class CommTimer:
    """A DDP comm hook: the default allreduce (sum, then divide by world
    size), with each bucket's interval from the hook's call (the bucket's
    gradients are ready and the Gloo allreduce is launched) to its future's
    completion (the averaged bucket is back) recorded.

    What it measures, per step: the wall time during which at least one
    gradient allreduce was in flight (the union of the buckets' intervals).
    That includes waiting for the slower rank to reach the same bucket and
    Gloo's queueing, and it overlaps the rest of backward (earlier buckets
    are launched while later layers still compute) - so it is communication
    time, not the time communication added to the step. With one rank it is
    the cost of a local (no-peer) allreduce.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.intervals = []
        self.enabled = False

    def hook(self, process_group, bucket):
        t0 = time.perf_counter()
        fut = default_hooks.allreduce_hook(process_group, bucket)

        def done(f):
            t1 = time.perf_counter()
            if self.enabled:
                with self.lock:
                    self.intervals.append((t0, t1))
            return f.value()

        return fut.then(done)

    def take_step(self):
        """The union of the intervals recorded since the last call, in s."""
        with self.lock:
            iv = sorted(self.intervals)
            self.intervals = []
        total, end = 0.0, None
        for a, b in iv:
            if end is None or a > end:
                total += b - a
                end = b
            elif b > end:
                total += b - end
                end = b
        return total, len(iv)


def launch(a):
    """Starts --nproc copies of this script as ranks 0..N-1 on this machine
    and waits; the first rank to fail ends the others. Returns the exit code."""
    port = a.master_port
    if port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    procs = []
    for r in range(a.nproc):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(a.nproc),
                   LOCAL_WORLD_SIZE=str(a.nproc), GROUP_RANK="0", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS=str(a.threads))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
                                      env=env))
    rc = 0
    try:
        while procs:
            for p in list(procs):
                code = p.poll()
                if code is None:
                    continue
                procs.remove(p)
                if code != 0 and rc == 0:
                    rc = code if code > 0 else 128 - code
                    print(f"ddp_fashion: a rank exited with {code}; stopping the others",
                          file=sys.stderr, flush=True)
                    for q in procs:
                        q.terminate()
            time.sleep(0.05)
    except KeyboardInterrupt:
        for q in procs:
            q.terminate()
        rc = 130
    for q in procs:
        q.wait()
    return rc


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=64, help="global batch, split over the ranks")
    p.add_argument("--steps", type=int, default=200, help="timed steps")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps before the timed ones")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per rank")
    p.add_argument("--train_limit", type=int, default=0, help="use the first N training images (0: all)")
    p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--epsilon", type=float, default=1e-8)
    p.add_argument("--dropout", type=float, default=0.4)
    p.add_argument("--timeout_s", type=float, default=300, help="Gloo collective timeout")
    p.add_argument("--nproc", type=int, default=0,
                   help="start this many ranks on this machine (instead of torch.distributed.run)")
    p.add_argument("--master_port", type=int, default=0, help="with --nproc (0: a free port)")
    a = p.parse_args()

    if a.nproc > 0 and "RANK" not in os.environ:
        sys.exit(launch(a))
    if "RANK" not in os.environ:  # plain `python3 ddp_fashion.py`: one rank
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29511")
    if os.environ.get("MASTER_ADDR") in ("127.0.0.1", "localhost"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=a.timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()

    def fail(msg):
        if rank == 0:
            print(f"ddp_fashion: {msg}", file=sys.stderr, flush=True)
        dist.destroy_process_group()
        sys.exit(2)

    if a.batch <= 0 or a.batch % world != 0:
        fail(f"--batch={a.batch} does not split evenly over {world} ranks")
    if a.steps <= 0 or a.warmup < 0:
        fail("--steps must be positive and --warmup not negative")
    local = a.batch // world

    x = read_idx(os.path.join(a.data_dir, "train-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(a.data_dir, "train-labels-idx1-ubyte.gz"))
    if a.train_limit > 0:
        x, y = x[:a.train_limit], y[:a.train_limit]
    rows, cols = x.shape[1], x.shape[2]
    x = torch.from_numpy(x.astype(np.float32) / np.float32(255.0)).unsqueeze(1).contiguous()
    y = torch.from_numpy(y.astype(np.int64))
    # Each rank's share of an epoch: DistributedSampler's order (a fixed-seed
    # permutation per epoch, rank r taking every world-th index from r).
    sampler = DistributedSampler(range(len(x)), num_replicas=world, rank=rank, shuffle=True,
                                 seed=a.seed, drop_last=True)
    per_epoch = len(sampler) // local  # the last partial batch is dropped, as in Rill
    if per_epoch == 0:
        fail(f"{len(x)} images give no batch of {a.batch} over {world} ranks")

    torch.manual_seed(a.seed)  # the same initial model everywhere (DDP broadcasts rank 0's anyway)
    model = ConvNet(dropout=a.dropout, rows=rows, cols=cols)
    ddp = DDP(model)
    timer = CommTimer()
    ddp.register_comm_hook(None, timer.hook)
    opt = torch.optim.Adam(ddp.parameters(), lr=a.lr, betas=(a.beta1, a.beta2), eps=a.epsilon)
    torch.manual_seed(a.seed + 1 + rank)  # dropout, different per rank (Rill: seed + 1 + replica)

    def batches():
        epoch = 0
        while True:
            sampler.set_epoch(epoch)
            idx = torch.tensor(list(iter(sampler)), dtype=torch.int64)
            for b in range(per_epoch):
                sel = idx[b * local:(b + 1) * local]
                yield x[sel], y[sel]
            epoch += 1

    ddp.train()
    it = batches()
    loss_sum = torch.zeros(())

    def step():
        xb, yb = next(it)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(xb), yb)
        loss.backward()  # returns once every bucket's allreduce is done
        opt.step()
        return loss.detach()

    for _ in range(a.warmup):
        step()
    timer.take_step()
    timer.enabled = True
    dist.barrier()
    comm_s, buckets = 0.0, 0
    start = time.perf_counter()
    for _ in range(a.steps):
        loss_sum += step()
        c, n = timer.take_step()
        comm_s += c
        buckets += n
    elapsed = time.perf_counter() - start
    timer.enabled = False

    # Slowest rank's time; mean communication time and loss over the ranks.
    t = torch.tensor([elapsed], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    s = torch.tensor([comm_s, float(loss_sum)], dtype=torch.float64)
    dist.all_reduce(s)
    elapsed = float(t[0])
    comm_ms = float(s[0]) / world / a.steps * 1e3
    mean_loss = float(s[1]) / world / a.steps
    if rank == 0:
        print(f"RESULT world={world} images_per_second_per_rank={local * a.steps / elapsed:.1f} "
              f"images_per_second={a.batch * a.steps / elapsed:.1f} "
              f"step_ms={elapsed / a.steps * 1e3:.3f} comm_ms_per_step={comm_ms:.3f} "
              f"batch={a.batch} per_rank_batch={local} threads={torch.get_num_threads()} "
              f"steps={a.steps} warmup={a.warmup} buckets_per_step={buckets / a.steps:.1f} "
              f"loss={mean_loss:.4f} torch={torch.__version__}", flush=True)
    # Every rank has the result: leave without Gloo's teardown, which was
    # seen spinning forever in one rank after the other had exited.
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
