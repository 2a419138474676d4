/*
 * order_split.h
 *		Several GPUs ordering one set by recursive bisection (the FP16 brute
 *		force's order, cuda/brute/order.cu): from which round each GPU
 *		bisects only its share of the segments, and which rows those are.
 *
 * Below the first rounds the segments are independent (each round's
 * direction, keys and sort are a segment's own), so once every GPU has
 * whole segments of its own, each bisects them alone and the order is
 * the one a GPU alone makes.  Plain C: the CUDA host code includes it,
 * and the engine tests check it without a GPU.
 */
#ifndef TCJOIN_ORDER_SPLIT_H
#define TCJOIN_ORDER_SPLIT_H

#include <stdint.h>

/*
 * Rows [*lo, *hi) of n that part i of parts takes: whole segments of seg
 * rows, the parts' ranges in order, together all of [0, n).  lo is a
 * multiple of seg, so the segments of seg and of every smaller power of
 * two within a part are the whole set's.
 */
static inline void
tc_order_share_rows(uint32_t n, uint64_t seg, int i, int parts, uint32_t *lo, uint32_t *hi)
{
	const uint64_t nseg = (n + seg - 1) / seg;
	const uint64_t a = nseg * (uint64_t) i / (uint64_t) parts * seg;
	const uint64_t b = nseg * (uint64_t) (i + 1) / (uint64_t) parts * seg;

	*lo = (uint32_t) (a < n ? a : n);
	*hi = (uint32_t) (b < n ? b : n);
}

/*
 * The segment size, in tiles of tile rows, from whose round on each of
 * parts bisects only its share of the segments (tc_order_share_rows); 0
 * for every round on every part.  The rounds run from seg_tiles (a power
 * of two) down to 2, each over every row it touches; a split costs the
 * rounds before it plus, for each round from it, the largest part's share
 * of the rows, and must save at least one whole round.  A split needs a
 * segment for every part.
 */
static inline uint32_t
tc_order_split_round(uint32_t n, uint32_t seg_tiles, int parts, int tile)
{
	int			total = 0,
				before = 0;
	uint32_t	best = 0;
	double		best_cost;

	for (uint32_t s = seg_tiles; s > 1; s /= 2)
		total++;
	best_cost = total - 1.0;
	for (uint32_t s = seg_tiles; s > 1 && parts > 1 && n > 0; s /= 2, before++)
	{
		const uint64_t seg = (uint64_t) s * (uint64_t) tile;
		uint32_t	most = 0;
		double		cost;

		if ((n + seg - 1) / seg < (uint64_t) parts)
			continue;
		for (int i = 0; i < parts; i++)
		{
			uint32_t	lo,
						hi;

			tc_order_share_rows(n, seg, i, parts, &lo, &hi);
			most = hi - lo > most ? hi - lo : most;
		}
		cost = before + (total - before) * (double) most / (double) n;
		if (cost < best_cost)
		{
			best_cost = cost;
			best = s;
		}
	}
	return best;
}

#endif							/* TCJOIN_ORDER_SPLIT_H */
