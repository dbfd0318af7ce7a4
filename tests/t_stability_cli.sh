#!/usr/bin/env bash
# t_stability_cli.sh — `pdl stability` (E1, EASGD paper Sec. 4): flags, exit codes, the JSONL it
# writes (sweep, --iterate, --check) and the numbers in it, on small grids.
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
T=$(mktemp -d /tmp/pdl-t-stability.XXXXXX)
trap 'rm -rf "$T"' EXIT

expect "help" $PDL stability --help
$PDL stability --help | grep -q -- '--check' && ok "help names --check" || notok "help names --check" "no --check in --help"

# bad flags and values: exit 2 with a one-line reason
expect_exit 2 "unknown flag" $PDL stability --bogus
expect_exit 2 "bad method" $PDL stability --method sgd
expect_exit 2 "p out of range" $PDL stability --p 0
expect_exit 2 "p not a number" $PDL stability --p three
expect_exit 2 "eta max below min" $PDL stability --eta 1:0:5
expect_exit 2 "eta malformed" $PDL stability --eta 0:1
expect_exit 2 "eta N not integer" $PDL stability --eta 0:1:x
expect_exit 2 "alpha with admm" $PDL stability --method admm --alpha 0:1:3
expect_exit 2 "alpha and rho" $PDL stability --method easgd --alpha 0:1:3 --rho 0:1:3
expect_exit 2 "grid too small" $PDL stability --check --grid 5
expect_exit 2 "check with method" $PDL stability --check --method admm
expect_exit 2 "iterate without method" $PDL stability --iterate --eta 0.001 --rho 2.5
expect_exit 2 "iterate with a range" $PDL stability --iterate --method admm --eta 0:1:3 --rho 2.5
expect_exit 2 "json without value" $PDL stability --json
out=$($PDL stability --method foo 2>&1); echo "$out" | grep -q -- '--method' \
  && ok "usage error names the flag" || notok "usage error names the flag" "$out"
expect_exit 1 "unwritable json path" $PDL stability --p 2 --eta 0.001 --rho 2.5 --json /dev/null/x.jsonl

# ADMM sweep: one config line + N points; (0.001, 2.5) is unstable for p = 3
expect "admm sweep" $PDL stability --method admm --p 3 --eta 0.001:0.002:2 --rho 2.5:5:3 --json "$T/admm.jsonl"
python3 - "$T/admm.jsonl" <<'EOF' && ok "admm sweep JSONL" || notok "admm sweep JSONL" "see above"
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
assert L[0]["kind"] == "config" and L[0]["eigensolver"] == "LAPACKE_dgeev" and L[0]["simulated"] is False, L[0]
pts = [l for l in L if l["kind"] == "point"]
assert len(L) == 7 and len(pts) == 6, len(L)
p0 = [q for q in pts if q["eta"] == 0.001 and q["rho"] == 2.5][0]
assert p0["radius"] > 1 and p0["stable"] is False, p0
EOF
expect "sweep re-run" $PDL stability --method admm --p 3 --eta 0.001:0.002:2 --rho 2.5:5:3 --json "$T/admm.jsonl"
[ "$(wc -l < "$T/admm.jsonl")" -eq 7 ] && [ ! -e "$T/admm.jsonl.tmp" ] && ok "re-run replaces the file" \
  || notok "re-run replaces the file" "$(wc -l < "$T/admm.jsonl") lines"

# EASGD sweep over alpha: numeric agrees with analytic away from the boundary; --rho gives alpha = eta*rho
expect "easgd sweep" $PDL stability --method easgd --p 8 --eta 0.1:2.3:12 --alpha 0.05:1.15:12 --json "$T/easgd.jsonl"
python3 - "$T/easgd.jsonl" <<'EOF' && ok "easgd analytic vs numeric" || notok "easgd analytic vs numeric" "see above"
import json, sys
pts = [json.loads(l) for l in open(sys.argv[1])][1:]
assert len(pts) == 144
far = [q for q in pts if q["gap"] >= 0.005]
bad = [q for q in far if q["stable"] != q["analytic"]]
assert len(far) > 100 and not bad, bad[:3]
assert any(q["stable"] for q in far) and any(not q["stable"] for q in far)
EOF
expect "easgd sweep over rho" $PDL stability --method easgd --p 3 --eta 0.5 --rho 0.2:1:3 --json "$T/easgd-rho.jsonl"
python3 - "$T/easgd-rho.jsonl" <<'EOF' && ok "easgd alpha = eta*rho" || notok "easgd alpha = eta*rho" "see above"
import json, sys
pts = [json.loads(l) for l in open(sys.argv[1])][1:]
assert [round(q["alpha"], 12) for q in pts] == [0.1, 0.3, 0.5], pts
EOF

# --iterate: ADMM from x = 1000 at eta = 0.001, rho = 2.5 diverges (after a transient decay to
# ~70 near round 2600, so the default 20000 rounds), growth matches the radius
out=$($PDL stability --iterate --method admm --p 3 --eta 0.001 --rho 2.5 --json "$T/it.jsonl")
echo "$out" | grep -q 'diverges' && ok "admm iterate diverges" || notok "admm iterate diverges" "$out"
python3 - "$T/it.jsonl" <<'EOF' && ok "iterate JSONL" || notok "iterate JSONL" "see above"
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
s = L[-1]
assert s["kind"] == "iterate" and s["rounds"] == 20000 and s["norm0"] == 1000, s
assert s["norm_final"] > 1000 and abs(s["growth_per_round"] - s["radius"]) < 1e-4, s
tr = [l for l in L if l["kind"] == "trajectory"]
assert tr[0]["round"] == 1 and tr[-1]["round"] == 20000 and len(tr) > 50, len(tr)
EOF
out=$($PDL stability --iterate --method easgd --p 3 --rounds 5000)
echo "$out" | grep -q 'converges' && echo "$out" | grep -q 'eta=0.001 alpha=0.0025' && ok "easgd iterate (paper defaults) converges" \
  || notok "easgd iterate (paper defaults) converges" "$out"

# --check on a coarse grid: every row passes, the JSON has one line per row
expect "check (coarse)" $PDL stability --check --grid 41 --json "$T/check.jsonl"
python3 - "$T/check.jsonl" <<'EOF' && ok "check JSONL" || notok "check JSONL" "see above"
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
names = [(l["check"], l["p"]) for l in L]
assert ("easgd-region", 3) in names and ("easgd-region", 8) in names and ("admm-region", 8) in names, names
assert ("admm-diverge", 3) in names and ("admm-diverge", 8) in names, names
assert all(l["pass"] for l in L), [l for l in L if not l["pass"]]
a = [l for l in L if l["check"] == "admm-region"]
assert all(l["max_radius"] > 1 and 0 < l["above_1"] < l["points"] for l in a), a
EOF
# with no band, p = 8 grid points just beyond the curve (where the composed map is still stable,
# a sliver up to ~2.5e-3 wide) count as disagreements: the check must fail (exit 1) and say so
expect_exit 1 "check fails without a band" $PDL stability --check --grid 41 --band 0 --json "$T/check0.jsonl"
python3 - "$T/check0.jsonl" <<'EOF2' && ok "failing row recorded" || notok "failing row recorded" "see above"
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
r = [l for l in L if l["check"] == "easgd-region" and l["p"] == 8][0]
assert r["pass"] is False and r["disagree_outside_band"] >= 1, r
assert sum(not l["pass"] for l in L) == 1, [l["check"] for l in L if not l["pass"]]
EOF2
finish
