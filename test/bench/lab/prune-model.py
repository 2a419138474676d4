#!/usr/bin/python3
"""
A model, in NumPy, of the FP16 brute force's point ordering and tile
pruning (cuda/brute/brute_join.cu: dir_kernel, proj_kernel, bounds_kernel,
prune_kernel), to ask on any machine how many tile pairs pruning would keep
on a data set, and how compact its tiles are, before a GPU run measures it.

The ordering halves segments of whole tiles down to one tile (128 points),
sorting each segment by its projection on p2 - p1 (p1 the farthest of 256
sampled points from the segment's first, p2 the farthest from p1); a tile's
bound is its mean and the largest distance from it; a tile pair is kept
iff |c_a - c_b| <= r_a + r_b + eps.  The model leaves out the engine's
float4 rounding margins (so it keeps a little less than the engine does),
and its tie-breaking may differ.

    test/bench/lab/prune-model.py FILE D EPS [N]     (raw float32, N x D; N: the first N rows)
"""
import sys
import time

import numpy as np

BT = 128


def order_points(x):
    n = len(x)
    nt = (n + BT - 1) // BT
    seg_tiles = 1
    while seg_tiles < nt:
        seg_tiles *= 2
    order = np.arange(n)
    while seg_tiles > 1:
        seg = seg_tiles * BT
        for s0 in range(0, n, seg):
            idx = order[s0:s0 + seg]
            if len(idx) <= 1:
                continue
            sample = idx[::max(1, len(idx) // 256)][:256]
            p1 = sample[np.argmax(((x[sample] - x[idx[0]]) ** 2).sum(1))]
            p2 = sample[np.argmax(((x[sample] - x[p1]) ** 2).sum(1))]
            key = x[idx].astype(np.float32) @ (x[p2] - x[p1]).astype(np.float32)
            order[s0:s0 + seg] = idx[np.argsort(key, kind="stable")]
        seg_tiles //= 2
    return order


def tile_bounds(x, order):
    nt = (len(x) + BT - 1) // BT
    cen = np.zeros((nt, x.shape[1]))
    rad = np.zeros(nt)
    for t in range(nt):
        p = x[order[t * BT:(t + 1) * BT]]
        cen[t] = p.mean(0)
        rad[t] = np.sqrt(((p - cen[t]) ** 2).sum(1).max())
    return cen, rad


def kept_share(cen, rad, eps):
    """Tile pairs kept, the diagonal included, as a share of the upper triangle."""
    sq = (cen ** 2).sum(1)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * cen @ cen.T, 0))
    nt = len(rad)
    iu = np.triu_indices(nt, 1)
    keep = dist[iu] <= rad[iu[0]] + rad[iu[1]] + eps
    return (keep.sum() + nt) / (len(keep) + nt)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, d, eps = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    x = np.fromfile(path, dtype=np.float32).reshape(-1, d)
    if len(sys.argv) > 4:
        x = x[:int(sys.argv[4])]
    x = x.astype(np.float64)
    t0 = time.time()
    cen, rad = tile_bounds(x, order_points(x))
    spread = np.sqrt(((cen - cen.mean(0)) ** 2).sum(1)).mean()
    print("n %d d %d eps %.6g: tile pairs kept %.1f%%, tile radius median %.4g, "
          "tile centres' mean distance from their mean %.4g (%.1f s)"
          % (len(x), d, eps, 100 * kept_share(cen, rad, eps), np.median(rad), spread, time.time() - t0))


if __name__ == "__main__":
    main()
