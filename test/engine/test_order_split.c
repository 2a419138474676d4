/*
 * test_order_split.c
 *		Several GPUs sharing the brute force's order (src/common/order_split.h):
 *		the rows each GPU takes and the round from which it bisects them alone,
 *		checked without a GPU.
 *
 * The round is checked against a search of its own over every round (the
 * rows of each part summed segment by segment), and the ranges against
 * what the GPUs rely on: in order, together every row, each starting on a
 * segment's boundary.  Then a model of the bisection (each round a stable
 * sort of every segment by a key of the segment's own) runs whole and
 * split, the split one's parts each on its own rows from the chosen round,
 * and the two orders must be the same.
 */
#include "test_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "order_split.h"

/* The cheapest round by a search of its own: 0 where none saves a whole round. */
static uint32_t
reference_round(uint32_t n, uint32_t seg_tiles, int parts, int tile)
{
	int			total = 0;
	double		best_cost;
	uint32_t	best = 0;

	for (uint32_t s = seg_tiles; s > 1; s /= 2)
		total++;
	best_cost = total - 1.0;
	for (int r = 0; r < total; r++)
	{
		const uint32_t s = seg_tiles >> r;
		const uint64_t seg = (uint64_t) s * tile;
		const uint64_t nseg = (n + seg - 1) / seg;
		uint64_t	most = 0;
		double		cost;

		if (nseg < (uint64_t) parts || parts < 2)
			continue;
		for (int i = 0; i < parts; i++)
		{
			uint64_t	rows = 0;

			/* part i's segments, each full but the set's last */
			for (uint64_t k = nseg * i / parts; k < nseg * (i + 1) / parts; k++)
				rows += (k + 1) * seg <= n ? seg : n - k * seg;
			most = rows > most ? rows : most;
		}
		cost = r + (total - r) * (double) most / (double) n;
		if (cost < best_cost)
		{
			best_cost = cost;
			best = s;
		}
	}
	return best;
}

/* A position's key in its segment: its row's value against the segment's first row's. */
static uint32_t
seg_key(const uint32_t *val, uint32_t row, uint32_t first)
{
	uint32_t	h = val[row] ^ (val[first] * 2654435761u);

	return (h ^ (h >> 13)) * 0x5bd1e995u;
}

/* One round of the model over positions [lo, hi) in segments of seg: a stable sort of each. */
static void
model_round(const uint32_t *val, uint32_t *order, uint32_t lo, uint32_t hi, uint64_t seg)
{
	for (uint64_t s0 = lo; s0 < hi; s0 += seg)
	{
		const uint32_t s1 = (uint32_t) (s0 + seg < hi ? s0 + seg : hi);
		const uint32_t first = order[s0];

		/* insertion sort: stable, and the segments here are small */
		for (uint32_t p = (uint32_t) s0; p < s1; p++)
		{
			uint32_t	v = order[p],
						k = seg_key(val, v, first);
			uint32_t	q = p;

			while (q > s0 && seg_key(val, order[q - 1], first) > k)
			{
				order[q] = order[q - 1];
				q--;
			}
			order[q] = v;
		}
	}
}

void
test_order_split(void)
{
	Rng			r;
	int			wrong_round = 0,
				bad_ranges = 0,
				orders_differ = 0,
				splits = 0,
				cases = 0;

	rng_seed(&r, g_fresh_seed ^ 0x0a5e5);
	case_begin("order split: the round against a search of its own, and the ranges");
	for (int t = 0; t < 4000; t++)
	{
		const int	tile = t % 3 == 0 ? 128 : 1 + (int) rng_below(&r, 8);
		const uint32_t n = 1 + (uint32_t) rng_below(&r, t % 2 ? 400000 : 3000);
		const int	parts = 1 + (int) rng_below(&r, 16);
		const uint32_t ntiles = (n + tile - 1) / tile;
		uint32_t	seg_tiles = 1,
					got,
					want;

		while (seg_tiles < ntiles)
			seg_tiles *= 2;
		got = tc_order_split_round(n, seg_tiles, parts, tile);
		want = reference_round(n, seg_tiles, parts, tile);
		cases++;
		if (got != want && wrong_round++ < 3)
			fprintf(stderr, "    n %u, %d parts, tile %d, from %u tiles: round %u, want %u\n", n, parts,
					tile, seg_tiles, got, want);
		if (got == 0)
			continue;
		splits++;
		{
			const uint64_t seg = (uint64_t) got * tile;
			uint32_t	prev = 0;

			for (int i = 0; i < parts; i++)
			{
				uint32_t	lo,
							hi;

				tc_order_share_rows(n, seg, i, parts, &lo, &hi);
				if ((lo != prev || hi <= lo || lo % seg != 0) && bad_ranges++ < 3)
					fprintf(stderr, "    n %u, %d parts, segments of %llu: part %d [%u, %u) after %u\n", n,
							parts, (unsigned long long) seg, i, lo, hi, prev);
				prev = hi;
			}
			if (prev != n && bad_ranges++ < 3)
				fprintf(stderr, "    n %u, %d parts: the ranges end at %u\n", n, parts, prev);
		}
	}
	CHECK(wrong_round == 0 && bad_ranges == 0 && splits > cases / 4,
		  "%d of %d rounds unlike the search's, %d bad ranges, %d splits", wrong_round, cases,
		  bad_ranges, splits);
	case_end();

	case_begin("order split: the model's order split between parts is the whole one's");
	for (int t = 0; t < 300; t++)
	{
		const int	tile = 1 + (int) rng_below(&r, 6);
		const uint32_t n = 1 + (uint32_t) rng_below(&r, 4000);
		const int	parts = 2 + (int) rng_below(&r, 7);
		const uint32_t ntiles = (n + tile - 1) / tile;
		uint32_t	seg_tiles = 1,
					split;
		uint32_t   *val = malloc(sizeof(uint32_t) * n),
				   *whole = malloc(sizeof(uint32_t) * n),
				   *shared = malloc(sizeof(uint32_t) * n),
				   *mine = malloc(sizeof(uint32_t) * n);

		while (seg_tiles < ntiles)
			seg_tiles *= 2;
		split = tc_order_split_round(n, seg_tiles, parts, tile);
		for (uint32_t i = 0; i < n; i++)
		{
			/* few values: ties, which the stable sorts keep in order */
			val[i] = (uint32_t) rng_below(&r, t % 2 ? 5 : 1000000);
			whole[i] = shared[i] = i;
		}
		for (uint32_t s = seg_tiles; s > 1; s /= 2)
			model_round(val, whole, 0, n, (uint64_t) s * tile);
		/* split: the rounds before it over every row, then each part alone, then gathered */
		for (uint32_t s = seg_tiles; s > 1 && s != split; s /= 2)
			model_round(val, shared, 0, n, (uint64_t) s * tile);
		if (split > 0)
			for (int i = 0; i < parts; i++)
			{
				uint32_t	lo,
							hi;

				memcpy(mine, shared, sizeof(uint32_t) * n);
				tc_order_share_rows(n, (uint64_t) split * tile, i, parts, &lo, &hi);
				for (uint32_t s = split; s > 1; s /= 2)
					model_round(val, mine, lo, hi, (uint64_t) s * tile);
				memcpy(shared + lo, mine + lo, sizeof(uint32_t) * (hi - lo));
			}
		if (memcmp(whole, shared, sizeof(uint32_t) * n) != 0 && orders_differ++ < 3)
			fprintf(stderr, "    n %u, %d parts, tile %d: split at %u tiles gives another order\n", n,
					parts, tile, split);
		free(val);
		free(whole);
		free(shared);
		free(mine);
	}
	CHECK(orders_differ == 0, "%d of 300 orders differ", orders_differ);
	case_end();
}
