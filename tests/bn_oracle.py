#!/usr/bin/env python3
"""tests/bn_oracle.py — batch normalization in float64 from its definition (Ioffe & Szegedy 2015,
Algorithm 1 and the chain rule of Section 3), independent of pdl's reference: reads one dump of
`test_fullnet --bn-dump` (pdl's inputs and float32 outputs) on stdin and checks pdl's outputs.
Exit 0 when every output is within bound, 1 (with the worst one named) when not, 2 on a bad dump.

Definition, per channel over the mini-batch of m = B*HW values x_i:
  mu = 1/m sum x_i;  s2 = 1/m sum (x_i - mu)^2;  xhat_i = (x_i - mu) / sqrt(s2 + eps);  y_i = gamma xhat_i + beta
Inference (train = 0): mu, s2 replaced by the running mean and variance.
Running statistics (not in the paper, whose inference uses the population mean and the unbiased
m/(m-1) E[s2] over many batches): PyTorch's and Chainer's moving averages with momentum M,
  rmean <- (1 - M) rmean + M mu,  rvar <- (1 - M) rvar + M s2 m / max(m - 1, 1).
Backward (the paper's Section 3):
  dxhat = dy gamma
  ds2   = sum dxhat (x - mu) (-1/2) (s2 + eps)^(-3/2)
  dmu   = sum dxhat (-1 / sqrt(s2 + eps)) + ds2 sum(-2 (x - mu)) / m
  dx    = dxhat / sqrt(s2 + eps) + ds2 2 (x - mu) / m + dmu / m
  dgamma = sum dy xhat,  dbeta = sum dy

Bounds: pdl computes in float32 with its sums in double, a handful of roundings (2^-24 each) per
value; an output is judged against the size of the terms it is made of (a float computation's error
scales with its terms, not with its result: dx cancels almost entirely at m = 2), with 1e-5 of
that size, ~40x what a few roundings give, while a wrong formula gives O(1).
"""
import math
import sys

TOL = 1e-5


def main():
    d = {}
    for line in sys.stdin:
        f = line.split()
        if f:
            d[f[0]] = f[1:]
    try:
        B, C, HW, train = (int(v) for v in d["shape"][:4])
        eps, mom = float(d["shape"][4]), float(d["shape"][5])
        get = lambda k: [float(v) for v in d[k]]
        x, gamma, beta, rm0, rv0, dy = (get(k) for k in ("x", "gamma", "beta", "rmean0", "rvar0", "dy"))
        y, rm, rv = get("y"), get("rmean"), get("rvar")
        if train:
            dx, dg, db = get("dx"), get("dgamma"), get("dbeta")
    except (KeyError, ValueError) as e:
        print("bn_oracle: bad dump: %s" % e)
        return 2
    m = B * HW
    worst = (0.0, "")

    def check(name, got, want, size):
        nonlocal worst
        e = abs(got - want) / size if size > 0 else abs(got - want)
        if not e <= worst[0]:
            worst = (e if e == e else math.inf, "%s: pdl %.9g, float64 %.12g (term size %.3g)" % (name, got, want, size))

    def at(b, c, p):
        return (b * C + c) * HW + p

    for c in range(C):
        xs = [x[at(b, c, p)] for b in range(B) for p in range(HW)]
        if train:
            mu = sum(xs) / m
            s2 = sum((v - mu) ** 2 for v in xs) / m
            check("rmean[%d]" % c, rm[c], (1 - mom) * rm0[c] + mom * mu, max(abs(rm0[c]), abs(mu), 1e-30))
            rvw = (1 - mom) * rv0[c] + mom * s2 * m / max(m - 1, 1)
            check("rvar[%d]" % c, rv[c], rvw, max(abs(rvw), 1e-30))
        else:
            mu, s2 = rm0[c], rv0[c]
            check("rmean[%d]" % c, rm[c], rm0[c], max(abs(rm0[c]), 1e-30))
            check("rvar[%d]" % c, rv[c], rv0[c], max(abs(rv0[c]), 1e-30))
        sd = math.sqrt(s2 + eps)
        xh = [(v - mu) / sd for v in xs]
        size_y = abs(gamma[c]) * max(1.0, max(abs(v) for v in xh)) + abs(beta[c])
        i = 0
        for b in range(B):
            for p in range(HW):
                check("y[%d,%d,%d]" % (b, c, p), y[at(b, c, p)], gamma[c] * xh[i] + beta[c], size_y)
                i += 1
        if not train:
            continue
        dys = [dy[at(b, c, p)] for b in range(B) for p in range(HW)]
        dxh = [g * gamma[c] for g in dys]
        ds2 = sum(dxh[i] * (xs[i] - mu) for i in range(m)) * -0.5 * (s2 + eps) ** -1.5
        dmu = sum(-v / sd for v in dxh) + ds2 * sum(-2 * (v - mu) for v in xs) / m
        size_dx = abs(gamma[c]) / sd * max(abs(v) for v in dys) * 3   # the three terms of dx
        i = 0
        for b in range(B):
            for p in range(HW):
                want = dxh[i] / sd + ds2 * 2 * (xs[i] - mu) / m + dmu / m
                check("dx[%d,%d,%d]" % (b, c, p), dx[at(b, c, p)], want, size_dx)
                i += 1
        dgw = sum(dys[i] * xh[i] for i in range(m))
        dbw = sum(dys)
        size_g = sum(abs(dys[i] * xh[i]) for i in range(m))
        check("dgamma[%d]" % c, dg[c], dgw, max(size_g, 1e-30))
        check("dbeta[%d]" % c, db[c], dbw, max(sum(abs(v) for v in dys), 1e-30))
    if worst[0] > TOL:
        print("bn_oracle: B=%d C=%d HW=%d train=%d: %.3g of the term size > %g: %s" % (B, C, HW, train, worst[0], TOL, worst[1]))
        return 1
    print("bn_oracle: B=%d C=%d HW=%d train=%d: worst %.3g of the term size (bound %g)" % (B, C, HW, train, worst[0], TOL))
    return 0


if __name__ == "__main__":
    sys.exit(main())
