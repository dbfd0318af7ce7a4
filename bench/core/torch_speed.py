#!/usr/bin/python3
"""torch_speed.py - the same net and training step as `pdl speed` in Debian's PyTorch
(python3-torch): C32 C32 P C64 P C128 P F256 F256 S10 on 28x28x1 inputs, 3x3 convs with
padding 1, leaky ReLU 0.01, softmax cross-entropy, SGD with momentum 0.9. Prints one JSON line
with img_per_s (median of timed windows after a warm-up window), min and max."""
import json, statistics, sys, time
import torch
import torch.nn as nn

def build_net():
    """the speed reference net (pdl's ppasgd-cifar preset); also bench/scaling/torch_ddp.py's"""
    act = lambda: nn.LeakyReLU(0.01)
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), act(), nn.Conv2d(32, 32, 3, padding=1), act(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), act(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), act(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(128 * 3 * 3, 256), act(), nn.Linear(256, 256), act(), nn.Linear(256, 10))

def main():
    batch, threads, repeats = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    net = build_net()
    opt = torch.optim.SGD(net.parameters(), lr=1e-4, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    window = 0.5 if batch >= 32 else 0.25
    rates = []
    for rep in range(-1, repeats):
        steps, t0 = 0, time.perf_counter()
        while True:
            opt.zero_grad(set_to_none=True)
            loss_fn(net(x), y).backward()
            opt.step()
            steps += 1
            el = time.perf_counter() - t0
            if el >= window:
                break
        if rep >= 0:
            rates.append(steps * batch / el)
    print(json.dumps({"event": "speed", "impl": "pytorch", "torch": torch.__version__, "batch": batch,
                      "threads": threads, "img_per_s": statistics.median(rates),
                      "img_per_s_min": min(rates), "img_per_s_max": max(rates)}))

if __name__ == "__main__":
    main()
