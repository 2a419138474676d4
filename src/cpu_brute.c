/*
 * cpu_brute.c
 *		Blocked all-pairs join on the CPU, for high dimensions where no grid
 *		prunes.
 *
 * A work item is a block of TC_BRUTE_ROWS points of a, compared with every
 * point of b (self-join: every later point) in tiles of TC_BRUTE_COLS
 * points, so a tile of b stays in cache while the block's rows pass over
 * it.  Items come in order of decreasing work (in a self-join the first
 * block meets the most points), which keeps the tail of the work queue
 * short.
 */
#include <stdlib.h>

#include "distance.h"
#include "engine_int.h"

#define TC_BRUTE_ROWS 32
#define TC_BRUTE_COLS 128

/*
 * One function per element type: rows [i0, i1) of a against columns
 * [j0, j1) of b; in a self-join only j > i.  Returns false to stop.
 */
#define TC_DEFINE_BRUTE_TILE(NAME, ELEM, WITHIN) \
static bool \
NAME(TcWorker *w, const TcJoin *join, int64_t i0, int64_t i1, \
	 int64_t j0, int64_t j1) \
{ \
	const int	d = join->a.d; \
	const ELEM *A = (const ELEM *) join->a.data; \
	const ELEM *B = (const ELEM *) join->b.data; \
	const double thr = join->thr; \
	uint64_t	cand = 0; \
	\
	for (int64_t i = i0; i < i1; i++) \
	{ \
		const ELEM *ai = A + i * d; \
		int64_t		jb = join->self && j0 <= i ? i + 1 : j0; \
		\
		if (jb < j1) \
			cand += (uint64_t) (j1 - jb); \
		for (int64_t j = jb; j < j1; j++) \
		{ \
			double		dist; \
			\
			if (WITHIN(ai, B + j * d, d, thr, &dist) && \
				!tc_emit(w, i, j, dist)) \
			{ \
				w->candidates += cand; \
				return false; \
			} \
		} \
	} \
	w->candidates += cand; \
	return true; \
}

TC_DEFINE_BRUTE_TILE(brute_tile_f4, float, tc_within_f4)
TC_DEFINE_BRUTE_TILE(brute_tile_f8, double, tc_within_f8)

static void
brute_run_item(TcJoin *join, TcWorker *w, int64_t item)
{
	int64_t		i0 = item * TC_BRUTE_ROWS;
	int64_t		i1 = i0 + TC_BRUTE_ROWS;
	int64_t		nb = join->b.n;

	if (i1 > join->a.n)
		i1 = join->a.n;
	if (join->self && join->params.include_self)
	{
		for (int64_t i = i0; i < i1; i++)
			if (!tc_emit(w, i, i, 0.0))
				return;
	}
	for (int64_t j0 = join->self ? i0 : 0; j0 < nb; j0 += TC_BRUTE_COLS)
	{
		int64_t		j1 = j0 + TC_BRUTE_COLS < nb ? j0 + TC_BRUTE_COLS : nb;
		bool		go;

		if (tc_should_stop(join))
			return;
		if (join->a.type == TC_FLOAT4)
			go = brute_tile_f4(w, join, i0, i1, j0, j1);
		else
			go = brute_tile_f8(w, join, i0, i1, j0, j1);
		if (!go)
			return;
	}
}

static const TcBackend brute_backend = {
	.name = "brute",
	.run_item = brute_run_item,
	.free_state = NULL,
};

double
tc_brute_cost(const TcJoin *join)
{
	double		na = (double) join->a.n;
	double		pairs = join->self ? na * (na - 1) / 2 : na * (double) join->b.n;

	return pairs * (TC_COST_PAIR + TC_COST_DIM * join->a.d);
}

TcStatus
tc_brute_prepare(TcJoin *join, TcError *err)
{
	(void) err;
	join->backend = &brute_backend;
	join->state = NULL;
	join->nitems = (join->a.n + TC_BRUTE_ROWS - 1) / TC_BRUTE_ROWS;
	join->stats.grid_dims = 0;
	join->stats.cells = 0;
	return TC_OK;
}
