#!/usr/bin/env python3
"""bench/net/links.py SPEC — reads a network description in the sim's `links:` vocabulary
(src/sim/platform.c) for bench/net/hetnet.sh and prints one line per node: its link rate in bits
per second (an integer), node 0 first. Stdlib only.

  links:k=K,bw=LIST[,lat=L][,rates=..]
  LIST := item ("+" item)*, item := VALUE["*"COUNT]; a single item without COUNT applies to all K
  (k is needed then); k may be left out (the sum of the counts). VALUE takes the sim's bandwidth
  units: Tbps Gbps Mbps Kbps bps (bits), TBps GBps MBps KBps Bps (bytes); a bare number is Gb/s.

What the real network cannot take, and how it is refused (exit 2, one line naming the key):
  lat   the sim adds lat per node link; here a delay would need the netem qdisc, which this
        kernel does not have. lat may be left out, or given up to 0.1 ms (the veth + bridge
        path's own latency is tens of microseconds; nothing is added).
  rate, rates, pcie, pcielat, cpu, cores, membw: the sim's compute and host model; the real ranks
        compute at this machine's speed. They are accepted and ignored, with a note on stderr.
Bounds (traffic stays bounded): 2 to 32 nodes, every link 8 kbit/s to 1 Gbit/s."""
import re
import sys

BW_UNITS = (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("Kbps", 1e3), ("bps", 1.0),
            ("TBps", 8e12), ("GBps", 8e9), ("MBps", 8e6), ("KBps", 8e3), ("Bps", 8.0))
TIME_UNITS = (("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0))
SIM_ONLY = ("rate", "rates", "pcie", "pcielat", "cpu", "cores", "membw")
MAX_LAT_S = 1e-4
MIN_BPS, MAX_BPS = 8e3, 1e9
MAX_K = 32


class SpecError(Exception):
    pass


def qty(tok, units, bare):
    """'2.63Mbps' -> 2.63e6 (units: (suffix, multiplier) pairs; a bare number times `bare`)."""
    m = re.match(r"^([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)(.*)$", tok)
    if not m:
        raise SpecError("bad value %r" % tok)
    v, unit = float(m.group(1)), m.group(2)
    if unit == "":
        return v * bare
    for suf, mult in units:
        if unit == suf:
            return v * mult
    raise SpecError("bad unit in %r (want one of %s)" % (tok, " ".join(s for s, _ in units)))


def parse(spec):
    """(per-node rates in bit/s, notes) for a links: spec; SpecError names what is wrong."""
    if not spec.startswith("links:"):
        raise SpecError("%r: want a links: description (links:k=K,bw=LIST[,lat=L])" % spec)
    kv, notes = {}, []
    for item in spec[len("links:"):].split(","):
        if "=" not in item:
            raise SpecError("%r is not key=value" % item)
        k, v = item.split("=", 1)
        if k in kv:
            raise SpecError("%s given twice" % k)
        kv[k] = v
    for k in kv:
        if k in SIM_ONLY:
            notes.append("%s=%s is the sim's compute model: the real ranks compute at this machine's speed (ignored)" % (k, kv[k]))
        elif k not in ("k", "bw", "lat"):
            raise SpecError("unknown key %r (links: takes k, bw, lat and the sim's %s)" % (k, ", ".join(SIM_ONLY)))
    if "lat" in kv:
        lat = qty(kv["lat"], TIME_UNITS, 1e-3)
        if lat > MAX_LAT_S:
            raise SpecError("lat=%s cannot be applied: a delay needs the netem qdisc, which this kernel does not have; "
                            "leave lat out or give at most 0.1ms (the veth + bridge path's own latency, nothing added)" % kv["lat"])
    if "bw" not in kv:
        raise SpecError("needs bw=LIST (e.g. bw=26.3Mbps*6+2.63Mbps*2)")
    k = None
    if "k" in kv:
        if not kv["k"].isdigit():
            raise SpecError("k=%s is not a node count" % kv["k"])
        k = int(kv["k"])
    items = kv["bw"].split("+")
    rates = []
    for it in items:
        val, star, cnt = it.partition("*")
        if star and not cnt.isdigit():
            raise SpecError("bad count in %r" % it)
        r = qty(val, BW_UNITS, 1e9)
        if len(items) == 1 and not star:
            if k is None:
                raise SpecError("a single bw needs k=K")
            rates += [r] * k
        else:
            rates += [r] * (int(cnt) if star else 1)
    if k is not None and len(rates) != k:
        raise SpecError("the list gives %d nodes but k=%d" % (len(rates), k))
    if not 2 <= len(rates) <= MAX_K:
        raise SpecError("%d nodes: the real network takes 2 to %d" % (len(rates), MAX_K))
    for r in rates:
        if not MIN_BPS <= r <= MAX_BPS:
            raise SpecError("a link of %g bit/s: the real network takes 8 kbit/s to 1 Gbit/s (bounded traffic)" % r)
    return rates, notes


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[0])
        return 0 if len(argv) == 2 else 2
    try:
        rates, notes = parse(argv[1])
    except SpecError as e:
        print("hetnet: %s" % e, file=sys.stderr)
        return 2
    for n in notes:
        print("hetnet: note: %s" % n, file=sys.stderr)
    for r in rates:
        print(int(round(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
