#!/usr/bin/python3
"""
A model, in NumPy, of the FP16 filter's band (src/common/fp16_filter.h): of the
pairs of Gaussian points (each coordinate N(0, 1), as tcbench --gen gauss)
that the filter keeps for the exact recheck, the share beyond eps, under
the whole-dot bound (override filter_bound=whole), under the prefix bound
(the default) and with no accumulation term at all (what no bound of the
tensor cores' rounding can beat).  It predicts the recheck's candidates before a GPU run
counts them.

M sample points against all N; eps so that the sample has K neighbours a
point (the pooled K M-th distance).  The filter's test is the exact one of
fp16_filter.h without its float4 roundings: kept iff |h_a - h_b|^2 <=
(R_a + R_b)^2 + the accumulation term, with the bound's own constants.

    test/bench/lab/band-model.py D [N (30000) M (300) K (64)]
"""
import sys

import numpy as np


def main():
    d = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 30000
    m = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    k = float(sys.argv[4]) if len(sys.argv) > 4 else 64
    u = 2.0 ** -23
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, d)).astype(np.float32).astype(np.float64)
    y = x - x.mean(0)
    sigma = 2.0 ** (15 - np.frexp(np.abs(y).max())[1])
    sy = sigma * y
    h = sy.astype(np.float16).astype(np.float64)
    hn = (h * h).sum(1)
    r = np.sqrt(((h - sy) ** 2).sum(1))
    kpad = (d + 15) // 16 * 16
    kappa = (1.25 * kpad + 24) * u
    # A: over the K / 16 steps, the h^2 before each
    steps = kpad // 16
    hp = np.zeros((n, kpad))
    hp[:, :d] = h
    prefix = np.cumsum((hp * hp).reshape(n, steps, 16).sum(2), 1)
    a = prefix[:, :-1].sum(1)

    q = np.arange(m)
    x2 = (x * x).sum(1)
    d2 = x2[q, None] + x2[None, :] - 2 * x[q] @ x.T
    d2[np.arange(m), q] = np.inf
    eps = np.sqrt(np.sort(d2.ravel())[int(k * m) - 1])
    within = int((d2 <= eps * eps).sum())
    h2 = hn[q, None] + hn[None, :] - 2 * h[q] @ h.T
    radius = sigma * eps / 2 + r
    t2 = (radius[q, None] + radius[None, :]) ** 2
    hsum = hn[q, None] + hn[None, :]
    terms = [
        ("whole-dot bound", kappa * hsum),
        ("prefix bound", 20 * u * (a[q, None] + a[None, :]) + 44 * u * hsum),
        ("no accumulation term", 0.0),
    ]
    print("d %d, n %d, %d sample points, eps %.6g: %d pairs within eps; A / (K/16 |h|^2), median %.3f"
          % (d, n, m, eps, within, np.median(a / (steps * hn))))
    print("%-22s %10s %14s %16s" % ("bound", "kept", "beyond eps", "against whole-dot"))
    base = None
    for name, acc in terms:
        kept = int((h2 <= t2 + acc).sum())
        base = base or kept
        print("%-22s %10d %13.1f%% %15.1f%%" % (name, kept, 100.0 * (kept - within) / kept,
                                                100.0 * (kept - base) / base))


if __name__ == "__main__":
    main()
