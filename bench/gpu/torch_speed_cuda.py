#!/usr/bin/env python3
"""torch_speed_cuda.py - pdl speed's net and training step (bench/core/torch_speed.py) in PyTorch on
a CUDA device: C32 C32 P C64 P C128 P F256 F256 S10 on 28x28x1, 3x3 convs with padding 1, leaky
ReLU 0.01, softmax cross-entropy, SGD lr 1e-4 with momentum 0.9. FP32 with TF32 off (cuBLAS and
cuDNN), cudnn.benchmark on. Its best case: the batch stays on the device (pdl speed --device cuda
uploads it every step). Modes: eager, and graph (the whole step captured once as a CUDA graph and
replayed). Usage: torch_speed_cuda.py BATCH MODE REPEATS. Prints one JSON line: img_per_s (median
of 0.5 s windows after a warm-up window, each ended by a synchronize), min, max."""
import json, statistics, sys, time
import torch
import torch.nn as nn

def main():
    batch, mode, repeats = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    assert mode in ("eager", "graph"), mode
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(1)
    dev = torch.device("cuda")
    act = lambda: nn.LeakyReLU(0.01)
    net = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), act(), nn.Conv2d(32, 32, 3, padding=1), act(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), act(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), act(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(128 * 3 * 3, 256), act(), nn.Linear(256, 256), act(), nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=1e-4, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss

    run = step
    if mode == "graph":
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up on a side stream, as the CUDA graphs docs ask
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        run = g.replay
    rates = []
    for rep in range(-1, repeats):
        torch.cuda.synchronize()
        steps, t0 = 0, time.perf_counter()
        while True:
            run()
            steps += 1
            if steps % 8 == 0 and time.perf_counter() - t0 >= 0.5:
                break
        torch.cuda.synchronize()
        el = time.perf_counter() - t0
        if rep >= 0:
            rates.append(steps * batch / el)
    print(json.dumps({"event": "speed", "impl": "pytorch-" + mode, "torch": torch.__version__, "batch": batch,
                      "gpu": torch.cuda.get_device_name(), "img_per_s": statistics.median(rates),
                      "img_per_s_min": min(rates), "img_per_s_max": max(rates)}))

if __name__ == "__main__":
    main()
