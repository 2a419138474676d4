/*
 * dbscan_cells.c
 *		The grid's DBSCAN, its first step: the points binned into cells of
 *		side eps / sqrt(d), sorted by cell, and each cell's bounding box.
 *
 * The keys, the sort's passes and the gather of the coordinates are shared
 * by the join's threads, each a contiguous range of the points; the sort
 * stays stable (a digit's bucket takes the ranges in order), so the order,
 * and all that follows from it, is the one a single thread makes.  Helpers
 * never poll: the caller's thread polls between the steps, each a few
 * milliseconds a million points.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dbscan_grid.h"
#include "engine_int.h"

#define DG_SORT_PARTS 16		/* threads of the sort at most */
#define DG_DIGIT_BITS 11		/* digits of at most 11 bits keep a pass's counts in cache */
#define DG_BUCKETS (1 << DG_DIGIT_BITS)
#define DG_ROUND (INT64_C(1) << 22)	/* points of a part between two polls */

typedef enum DgStep
{
	DG_KEYS,					/* each point's cell key */
	DG_COUNT,					/* a pass's counts of its digit */
	DG_SCATTER,					/* a pass's moves */
	DG_GATHER					/* the coordinates in cell order */
} DgStep;

/* One thread's range of the points, and what the step needs. */
typedef struct DgPart
{
	DbGrid	   *gr;
	const TcPoints *p;
	const double *mn;
	double		inv;
	DgStep		step;
	int64_t		i0;				/* the part's range */
	int64_t		i1;
	int64_t		r0;				/* this round's share of it */
	int64_t		r1;
	int			lo;				/* the pass's digit: bits lo .. lo + width - 1 */
	uint64_t	mask;
	int64_t    *count;			/* DG_BUCKETS: the counts, then the first slot of each */
	uint64_t   *k2;				/* the pass's destination */
	int64_t    *i2;
} DgPart;

static void
part_step(DgPart *pt)
{
	DbGrid	   *gr = pt->gr;
	const int	d = gr->d;

	switch (pt->step)
	{
		case DG_KEYS:
			for (int64_t i = pt->r0; i < pt->r1; i++)
			{
				uint64_t	key = 0;

				for (int k = d - 1; k >= 0; k--)
				{
					int64_t		c = (int64_t) ((tc_coord(pt->p, i, k) - pt->mn[k]) * pt->inv) + DG_REACH;

					c = c < DG_REACH ? DG_REACH : c > (int64_t) gr->span[k] - 1 - DG_REACH ?
						(int64_t) gr->span[k] - 1 - DG_REACH : c;
					key = key * gr->span[k] + (uint64_t) c;
				}
				gr->key[i] = key;
				gr->idx[i] = i;
			}
			break;
		case DG_COUNT:
			for (int64_t i = pt->r0; i < pt->r1; i++)
				pt->count[(gr->key[i] >> pt->lo) & pt->mask]++;
			break;
		case DG_SCATTER:
			for (int64_t i = pt->r0; i < pt->r1; i++)
			{
				int64_t		to = pt->count[(gr->key[i] >> pt->lo) & pt->mask]++;

				pt->k2[to] = gr->key[i];
				pt->i2[to] = gr->idx[i];
			}
			break;
		case DG_GATHER:
			for (int64_t s = pt->r0; s < pt->r1; s++)
				for (int k = 0; k < d; k++)
					gr->x[s * d + k] = tc_coord(pt->p, gr->idx[s], k);
			break;
	}
}

static void *
part_main(void *arg)
{
	part_step(arg);
	return NULL;
}

/*
 * Every part's step, in rounds of at most DG_ROUND points a part: parts
 * 1 .. n - 1 on helpers, part 0 and any whose helper did not start on the
 * caller's thread, which polls after each round.  False: stop.
 */
static bool
run_parts(DgPart *pts, int n, DgStep step)
{
	for (int64_t done = 0;; done += DG_ROUND)
	{
		bool		more = false;

		for (int t = 0; t < n; t++)
		{
			pts[t].step = step;
			pts[t].r0 = pts[t].i0 + done < pts[t].i1 ? pts[t].i0 + done : pts[t].i1;
			pts[t].r1 = pts[t].r0 + DG_ROUND < pts[t].i1 ? pts[t].r0 + DG_ROUND : pts[t].i1;
			more |= pts[t].r1 < pts[t].i1;
		}
		tc_run_parts(part_main, pts, sizeof(DgPart), n);
		if (dg_poll_now(pts[0].gr))
			return false;
		if (!more)
			return true;
	}
}

/*
 * Sort the points by key, least significant digits first, over the bits
 * the keys use, the parts' ranges in order within each digit (stable).
 * gr->idx comes out as the points' indices in key order.
 */
static bool
sort_points(DbGrid *gr, DgPart *pts, int n, uint64_t range)
{
	int			bits = 0;
	int			passes;
	uint64_t   *k2 = tc_malloc_huge(sizeof(uint64_t) * (size_t) gr->n);
	int64_t    *i2 = tc_malloc_huge(sizeof(int64_t) * (size_t) gr->n);
	bool		ok = k2 != NULL && i2 != NULL;

	while (bits < 64 && ((range - 1) >> bits) != 0)
		bits++;
	passes = (bits + DG_DIGIT_BITS - 1) / DG_DIGIT_BITS;
	for (int pass = 0, lo = 0; ok && pass < passes; pass++)
	{
		int			width = (bits - lo + (passes - pass) - 1) / (passes - pass);
		int64_t		sum = 0;

		for (int t = 0; t < n; t++)
		{
			pts[t].lo = lo;
			pts[t].mask = ((uint64_t) 1 << width) - 1;
			pts[t].k2 = k2;
			pts[t].i2 = i2;
			memset(pts[t].count, 0, sizeof(int64_t) * DG_BUCKETS);
		}
		if (!run_parts(pts, n, DG_COUNT))
		{
			ok = false;
			break;
		}
		/* each bucket's slots: the parts' in order */
		for (uint64_t b = 0; b <= pts[0].mask; b++)
			for (int t = 0; t < n; t++)
			{
				int64_t		c = pts[t].count[b];

				pts[t].count[b] = sum;
				sum += c;
			}
		if (!run_parts(pts, n, DG_SCATTER))
		{
			ok = false;
			break;
		}
		{
			uint64_t   *tk = gr->key;
			int64_t    *ti = gr->idx;

			gr->key = k2;
			k2 = tk;
			gr->idx = i2;
			i2 = ti;
		}
		lo += width;
	}
	tc_free_huge(k2);
	tc_free_huge(i2);
	return ok;
}

/*
 * One thread's share of the sorted points for the cells: [s0, s1), which
 * starts at a cell's first point, so that each cell is one part's.
 */
typedef struct CellPart
{
	DbGrid	   *gr;
	int64_t		s0;
	int64_t		s1;
	int64_t		c0;				/* its first cell's number (the fill) */
	int64_t		nc;				/* its cells (the count) */
	bool		fill;
} CellPart;

/* The part's cells counted, or each one's start, key, box and tightness set. */
static void *
cell_part_main(void *arg)
{
	CellPart   *cp = arg;
	DbGrid	   *gr = cp->gr;
	const int	d = gr->d;
	int64_t		c = cp->c0 - 1;

	if (!cp->fill)
	{
		int64_t		nc = 0;

		for (int64_t s = cp->s0; s < cp->s1; s++)
			nc += s == cp->s0 || gr->key[s] != gr->key[s - 1];
		cp->nc = nc;
		return NULL;
	}
	for (int64_t s = cp->s0; s < cp->s1; s++)
	{
		const double *xs = gr->x + s * d;

		if (s == cp->s0 || gr->key[s] != gr->key[s - 1])
		{
			c++;
			gr->cstart[c] = s;
			gr->ckey[c] = gr->key[s];
			memcpy(gr->lo + c * d, xs, sizeof(double) * d);
			memcpy(gr->hi + c * d, xs, sizeof(double) * d);
		}
		for (int k = 0; k < d; k++)
		{
			gr->lo[c * d + k] = xs[k] < gr->lo[c * d + k] ? xs[k] : gr->lo[c * d + k];
			gr->hi[c * d + k] = xs[k] > gr->hi[c * d + k] ? xs[k] : gr->hi[c * d + k];
		}
	}
	for (c = cp->c0; c < cp->c0 + cp->nc; c++)
	{
		double		t[3];

		for (int k = 0; k < d; k++)
			t[k] = gr->hi[c * d + k] - gr->lo[c * d + k];
		gr->tight[c] = dg_sq_sum(t, d) <= gr->thr;
	}
	return NULL;
}

/*
 * Each cell's start, key and bounding box, and whether it is tight, by
 * nparts threads: each counts its part's cells, then fills them.
 */
static bool
find_cells(DbGrid *gr, int nparts)
{
	CellPart	cp[DG_SORT_PARTS];

	for (int t = 0; t < nparts; t++)
	{
		int64_t		s0 = gr->n * t / nparts;

		/* a part starts where a cell does */
		while (s0 > 0 && s0 < gr->n && gr->key[s0] == gr->key[s0 - 1])
			s0++;
		cp[t].gr = gr;
		cp[t].s0 = s0;
		cp[t].fill = false;
		if (t > 0)
			cp[t - 1].s1 = s0;
	}
	cp[nparts - 1].s1 = gr->n;
	tc_run_parts(cell_part_main, cp, sizeof(CellPart), nparts);
	gr->ncells = 0;
	for (int t = 0; t < nparts; t++)
	{
		cp[t].c0 = gr->ncells;
		cp[t].fill = true;
		gr->ncells += cp[t].nc;
	}
	gr->cstart = tc_malloc_huge(sizeof(int64_t) * (size_t) (gr->ncells + 1));
	gr->ckey = tc_malloc_huge(sizeof(uint64_t) * (size_t) (gr->ncells + 1));
	gr->lo = tc_malloc_huge(sizeof(double) * (size_t) (gr->ncells + 1) * gr->d);
	gr->hi = tc_malloc_huge(sizeof(double) * (size_t) (gr->ncells + 1) * gr->d);
	gr->tight = malloc(sizeof(bool) * (size_t) (gr->ncells + 1));
	if (gr->cstart == NULL || gr->ckey == NULL || gr->lo == NULL || gr->hi == NULL ||
		gr->tight == NULL)
		return false;
	tc_run_parts(cell_part_main, cp, sizeof(CellPart), nparts);
	gr->cstart[gr->ncells] = gr->n;
	return true;
}

/*
 * Bin and sort the points, then the cells and their boxes.  A cell's key
 * is its coordinates in row-major order over a grid padded by DG_REACH
 * cells on every side, so that a neighbour's key is the cell's plus fixed
 * offsets.
 */
bool
dg_build_cells(DbGrid *gr, const TcPoints *p, double eps, bool *fit)
{
	int			d = gr->d;
	double		mn[3],
				mx[3];
	double		w = eps / sqrt((double) d);
	double		inv = 1.0 / w;
	double		range = 1.0;
	int			nparts = gr->threads < DG_SORT_PARTS ? gr->threads : DG_SORT_PARTS;
	DgPart		pts[DG_SORT_PARTS];
	int64_t    *counts;
	bool		ok;

	*fit = false;
	for (int k = 0; k < d; k++)
	{
		mn[k] = INFINITY;
		mx[k] = -INFINITY;
	}
	tc_extent_fold(p, 0, gr->n, false, mn, mx);
	/* the keys must fit 62 bits (cell coordinates are rounded: any cell will do) */
	for (int k = 0; k < d; k++)
	{
		double		cells = floor((mx[k] - mn[k]) * inv) + 1 + 2 * DG_REACH;

		if (!(w > 0) || !(inv < INFINITY) || !(cells < 0x1p40))
			return false;
		gr->span[k] = (uint64_t) cells;
		range *= cells;
	}
	if (!(range < 0x1p62))
		return false;
	*fit = true;

	gr->key = tc_malloc_huge(sizeof(uint64_t) * (size_t) gr->n);
	gr->idx = tc_malloc_huge(sizeof(int64_t) * (size_t) gr->n);
	gr->x = tc_malloc_huge(sizeof(double) * (size_t) gr->n * d);
	counts = malloc(sizeof(int64_t) * DG_BUCKETS * (size_t) (nparts > 0 ? nparts : 1));
	if (gr->key == NULL || gr->idx == NULL || gr->x == NULL || counts == NULL || nparts < 1)
	{
		free(counts);
		return false;
	}
	nparts = tc_parts_for(gr->n, 65536, nparts, DG_SORT_PARTS);
	for (int t = 0; t < nparts; t++)
	{
		pts[t].gr = gr;
		pts[t].p = p;
		pts[t].mn = mn;
		pts[t].inv = inv;
		pts[t].i0 = gr->n * t / nparts;
		pts[t].i1 = gr->n * (t + 1) / nparts;
		pts[t].count = counts + (size_t) t * DG_BUCKETS;
	}
	ok = !dg_poll_now(gr) && run_parts(pts, nparts, DG_KEYS) &&
		sort_points(gr, pts, nparts, (uint64_t) range) && run_parts(pts, nparts, DG_GATHER) &&
		!dg_poll_now(gr);
	free(counts);
	return ok && find_cells(gr, nparts);
}
