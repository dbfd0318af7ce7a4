#!/usr/bin/env python3
"""calib_share.py PDL NET B OUT — runs `PDL calibrate --net NET --batch B --threads 1 --out OUT` and
prints "X s L X0" for bench/runtimes/validate.sh:
  X   GFLOP/s that calibrate measured (one thread, on whatever share of a core it got);
  s   that share: calibrate's CPU seconds / wall seconds;
  L   other users' busy sessions. This machine is shared, and Linux's autogroup scheduler
      (/proc/sys/kernel/sched_autogroup_enabled = 1 here) shares the CPUs fairly among sessions,
      not processes: with C cores and L other busy sessions, our session gets C/(1+L) cores'
      worth however many processes it runs, and one busy thread gets s = min(1, C/(1+L)).
      So L = C/s - 1 when s < 0.97; when s is ~1 the share cannot tell L in 0..C-1 apart, and L
      is the mean number of other sessions with a runnable thread (sampled from /proc every
      0.1 s while calibrate runs), at most C - 1;
  X0  X / s, the rate of a core of its own.
The sim platform machine:ranks=R,gflops=X0,load=L then gives the R ranks C/(1+L) cores together."""
import glob, json, os, resource, subprocess, sys, threading, time

pdl, net, batch, out = sys.argv[1:5]
C = os.cpu_count() or 1
samples, stop = [], threading.Event()

def autogroup(pid):
    try:
        with open("/proc/%s/autogroup" % pid) as f:
            return f.read().split()[0]
    except OSError:
        return None

mine = autogroup("self")

def busy_sessions():
    groups = set()
    for st in glob.glob("/proc/[0-9]*/task/[0-9]*/stat"):
        try:
            with open(st) as f:
                txt = f.read()
        except OSError:
            continue
        if txt[txt.rindex(")") + 2] == "R":
            g = autogroup(st.split("/")[2])
            if g and g != mine:
                groups.add(g)
    return len(groups)

def sample():
    while not stop.is_set():
        samples.append(busy_sessions())
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
else:
    L = min(C - 1.0, sum(samples) / len(samples)) if samples else 0.0
print("%.6g %.4f %.3f %.6g" % (X, s, L, X / s))
