#!/usr/bin/python3
"""
A model of the exact recheck's row reads through L2, to predict how many
bytes each candidate order brings from DRAM: grouped by first point, or
by blocks of second rows (an order measured on the GPU and dropped: DRAM
was not what bounded the recheck; docs/performance.md).
Candidates are a random neighbour graph, as on Gaussian data, where the
ordering puts a point's neighbours anywhere. L2 is an LRU cache of whole rows,
read in the candidates' order. A group's first row counts once (it stays in
L1 while the group's lanes share it). The GPU reads tens of thousands of
candidates at once, not one after another. A block holds hundreds of
thousands, so the order is what the model keeps.

    test/bench/lab/recheck-l2-model.py [N CANDIDATES ROW_BYTES L2_MB]
        (defaults 100096 7270000 4096 50: 100,000 x 1,024 float4 at 64 neighbours)
"""
import sys
from collections import OrderedDict

import numpy as np


def dram_gb(first, second, key, cap_rows, row_bytes):
    order = np.argsort(key, kind="stable")
    cache = OrderedDict()
    miss = 0
    prev = -1
    for a, b in zip(first[order].tolist(), second[order].tolist()):
        for r in ((b,) if a == prev else (a, b)):
            if r in cache:
                cache.move_to_end(r)
            else:
                miss += 1
                cache[r] = True
                if len(cache) > cap_rows:
                    cache.popitem(last=False)
        prev = a
    return miss * row_bytes / 1e9


def main():
    args = [float(v) for v in sys.argv[1:]] + [100096, 7270000, 4096, 50][len(sys.argv) - 1:]
    n, m, row_bytes, l2_mb = int(args[0]), int(args[1]), int(args[2]), args[3]
    rng = np.random.default_rng(1)
    i = rng.integers(0, n, m)
    j = rng.integers(0, n, m)
    keep = i != j
    first, second = np.minimum(i, j)[keep], np.maximum(i, j)[keep]
    cap = int(l2_mb * 2 ** 20 / row_bytes)
    print("%d candidates over %d positions, rows of %d bytes, L2 of %g MB (%d rows)"
          % (len(first), n, row_bytes, l2_mb, cap))
    print("  grouped by first point (the default): %.1f GB from DRAM"
          % dram_gb(first, second, first, cap, row_bytes))
    for mb in (8, 16, 32):
        shift = int(np.floor(np.log2(mb * 2 ** 20 / row_bytes)))
        key = (second >> shift).astype(np.int64) * n + first
        print("  by blocks of %d MB of second rows (%d positions), then first point: %.1f GB"
              % (mb, 1 << shift, dram_gb(first, second, key, cap, row_bytes)))


if __name__ == "__main__":
    main()
