#!/usr/bin/python3
"""torch_ddp.py - PyTorch DistributedDataParallel on the CPU (gloo) beside pdl's SSGD in
bench/scaling/run.sh: the speed reference net of bench/core/torch_speed.py (pdl's ppasgd-cifar),
WORLD processes on this host (torch.multiprocessing), one thread each, BATCH random 28x28x1
images per process per step, cross-entropy, SGD with momentum 0.9; DDP averages the gradients
with gloo's allreduce, overlapped with the backward pass. Each timed window is STEPS steps of
every process between two barriers (every step is a collective, so the processes run the same
count); one warm-up window first. Rank 0 prints one JSON line: img_per_s over all processes (the
median of the windows), min and max.
usage: torch_ddp.py WORLD BATCH STEPS REPEATS"""
import json, os, socket, statistics, sys, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core"))
from torch_speed import build_net


def worker(rank, world, batch, steps, repeats, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world)
    torch.manual_seed(1)   # the same initial parameters on every process (DDP also broadcasts rank 0's)
    net = nn.parallel.DistributedDataParallel(build_net())
    opt = torch.optim.SGD(net.parameters(), lr=1e-4, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(rank + 1)
    x = torch.randn(batch, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    rates = []
    for rep in range(-1, repeats):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss_fn(net(x), y).backward()
            opt.step()
        dist.barrier()
        el = time.perf_counter() - t0
        if rep >= 0:
            rates.append(world * batch * steps / el)
    if rank == 0:
        print(json.dumps({"event": "scaling", "impl": "pytorch-ddp", "backend": "gloo", "torch": torch.__version__,
                          "ranks": world, "threads": 1, "batch": batch, "steps": steps, "repeats": repeats,
                          "img_per_s": statistics.median(rates), "img_per_s_min": min(rates),
                          "img_per_s_max": max(rates)}), flush=True)
    dist.destroy_process_group()


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: torch_ddp.py WORLD BATCH STEPS REPEATS")
    try:
        world, batch, steps, repeats = (int(a) for a in sys.argv[1:])
    except ValueError:
        sys.exit("torch_ddp.py: WORLD BATCH STEPS REPEATS must be integers, got %s" % " ".join(sys.argv[1:]))
    if min(world, batch, steps, repeats) < 1:
        sys.exit("torch_ddp.py: WORLD BATCH STEPS REPEATS must be >= 1")
    if not dist.is_available():
        sys.exit("torch_ddp.py: this PyTorch has no torch.distributed")
    with socket.socket() as s:   # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(world, batch, steps, repeats, port), nprocs=world, join=True)


if __name__ == "__main__":
    main()
