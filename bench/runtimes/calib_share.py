#!/usr/bin/env python3
"""calib_share.py PDL NET B OUT — runs `PDL calibrate --net NET --batch B --threads 1 --out OUT` and
prints "X s L X0" for bench/runtimes/validate.sh:
  X   GFLOP/s that calibrate measured (one thread, on whatever share of a core it got);
  s   that share: calibrate's CPU seconds / wall seconds (this machine is shared with others);
  L   other users' busy processes: with C cores a busy single thread gets s = min(1, C/(1 + L)),
      so L = C/s - 1 when s < 0.97; when s is ~1 the share cannot tell L in 0..C-1 apart, and L is
      the mean count of other runnable tasks (procs_running of /proc/stat sampled every 0.1 s,
      minus calibrate and the sampler), capped at C - 1;
  X0  X / s, the rate of a core of its own."""
import json, os, resource, subprocess, sys, threading, time

pdl, net, batch, out = sys.argv[1:5]
C = os.cpu_count() or 1
samples, stop = [], threading.Event()

def sample():
    while not stop.is_set():
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("procs_running"):
                    samples.append(int(line.split()[1]))
        stop.wait(0.1)

th = threading.Thread(target=sample, daemon=True)
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.monotonic()
th.start()
p = subprocess.run([pdl, "calibrate", "--net", net, "--batch", batch, "--threads", "1", "--repeats", "5",
                    "--out", out], stdout=subprocess.PIPE, text=True)
t1 = time.monotonic()
stop.set(); th.join()
if p.returncode:
    sys.exit(p.returncode)
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
X = json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])["gflops"]
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
s = min(1.0, cpu / (t1 - t0))
if s < 0.97:
    L = C / s - 1
else:  # minus 2: calibrate and this sampler are running while it reads
    L = min(C - 1.0, max(0.0, sum(samples) / len(samples) - 2)) if samples else 0.0
print("%.6g %.4f %.3f %.6g" % (X, s, L, X / s))
