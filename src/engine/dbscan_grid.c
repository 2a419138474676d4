/*
 * dbscan_grid.c
 *		DBSCAN in two and three dimensions (Euclidean, on the CPU) without
 *		enumerating the eps-graph.
 *
 * The points are binned into cells of side eps / sqrt(d) and sorted by
 * cell.  A cell whose bounding box is within eps corner to corner, by the
 * contract's own arithmetic, holds only pairs within eps: rounding is
 * monotone, so no pair's |a_k - b_k|, square or partial sum can exceed the
 * box's.  Such a "tight" cell of at least min_points points is all core
 * without a distance computed, and its cores are one cluster.  Two cells
 * can share a pair within eps only if the gap between their boxes, by the
 * same arithmetic, is within eps (the gap bounds every pair's terms from
 * below); the cells that pass are each cell's neighbours.  Then:
 *
 *	 - a point of any other cell counts its neighbours exactly, stopping at
 *	   min_points - 1;
 *	 - two neighbouring cells' cores are linked by the first pair within eps
 *	   found between two points not yet linked (one pair suffices between
 *	   two tight cells);
 *	 - a non-core point takes every core within eps as a candidate, and the
 *	   graph keeps the nearest (ties: the smaller id), as from the join.
 *
 * Every decision is the contract's distance or a bound proven from it, so
 * the clusters are those of the joins' DBSCAN (graph.c numbers them).  Where
 * the grid would be too fine for its keys (a tiny eps over a wide extent)
 * or eps is 0, the caller runs the joins instead.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dbscan_grid.h"
#include "distance.h"
#include "engine_int.h"

/* A thread's view: its own count of distances toward its next poll. */
typedef struct DgCtx
{
	DbGrid	   *gr;
	uint64_t	work;
	uint64_t	next_poll;
	bool		main;			/* the caller's thread, the only one that polls */
} DgCtx;

static void
grid_free(DbGrid *gr)
{
	tc_free_huge(gr->x);
	tc_free_huge(gr->idx);
	tc_free_huge(gr->key);
	tc_free_huge(gr->cstart);
	tc_free_huge(gr->ckey);
	tc_free_huge(gr->lo);
	tc_free_huge(gr->hi);
	free(gr->tight);
	free(gr->astart);
	tc_free_huge(gr->adj);
	free(gr->core);
	tc_free_huge(gr->ncore);
}

/* The caller's poll, now; true: stop (dbscan_grid.h). */
bool
dg_poll_now(DbGrid *gr)
{
	if (atomic_load(&gr->stop))
		return true;			/* told once is enough */
	if (gr->poll && gr->poll(gr->poll_arg) != 0)
		atomic_store(&gr->stop, true);
	return atomic_load(&gr->stop);
}

/* Whether cells a and b may hold a pair within eps: their boxes' gap, by the contract's arithmetic. */
static inline bool
boxes_near(const DbGrid *gr, int64_t a, int64_t b)
{
	int			d = gr->d;
	double		t[3];

	for (int k = 0; k < d; k++)
	{
		double		g1 = gr->lo[b * d + k] - gr->hi[a * d + k];
		double		g2 = gr->lo[a * d + k] - gr->hi[b * d + k];

		t[k] = g1 > 0 ? g1 : g2 > 0 ? g2 : 0.0;
	}
	return dg_sq_sum(t, d) <= gr->thr;
}

/* Helpers with every signal blocked, by tc_start_thread (dbscan_grid.h). */
int
dg_start_helpers(pthread_t *th, int n, void *(*fn) (void *), char *args, size_t stride)
{
	int			started = 0;

	for (int t = 1; t < n; t++)
	{
		if (tc_start_thread(&th[t], fn, args + (size_t) t * stride) != 0)
			break;
		started = t;
	}
	return started;
}

/* One thread's part of the neighbour sweep: cells [c0, c1), its pairs. */
typedef struct SweepPart
{
	DbGrid	   *gr;
	const int64_t *off;			/* the rows' key offsets */
	int			rows;
	bool		main;			/* the caller's thread: it polls */
	int64_t		c0;
	int64_t		c1;
	int64_t    *pa;				/* pairs (c, j), j after c in key order */
	int64_t		m;
	int64_t		cap;
	bool		failed;			/* out of memory */
} SweepPart;

/* The first cell whose key is at least key. */
static int64_t
first_cell_from(const DbGrid *gr, uint64_t key)
{
	int64_t		lo = 0,
				hi = gr->ncells;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (gr->ckey[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * For each row of cells at a fixed offset ahead, a pointer that only moves
 * forward as the part's cells come in key order (cells are padded, so no
 * row wraps into the next).
 */
static void *
sweep_part(void *arg)
{
	SweepPart  *sp = arg;
	DbGrid	   *gr = sp->gr;
	int64_t		ptr[(2 * DG_REACH + 1) * (2 * DG_REACH + 1)];

	if (sp->c0 >= sp->c1)
		return NULL;
	for (int r = 0; r < sp->rows; r++)
		ptr[r] = first_cell_from(gr, r == 0 ? gr->ckey[sp->c0] + 1 :
								 (uint64_t) ((int64_t) gr->ckey[sp->c0] + sp->off[r] - DG_REACH));
	for (int64_t c = sp->c0; c < sp->c1; c++)
	{
		if (sp->main && ((c - sp->c0) & 0xffff) == 0 && dg_poll_now(gr))
			return NULL;
		if (!sp->main && atomic_load_explicit(&gr->stop, memory_order_relaxed))
			return NULL;
		for (int r = 0; r < sp->rows; r++)
		{
			uint64_t	lo_key = (uint64_t) ((int64_t) gr->ckey[c] + sp->off[r] - DG_REACH);
			uint64_t	hi_key = (uint64_t) ((int64_t) gr->ckey[c] + sp->off[r] + DG_REACH);

			if (r == 0)
				lo_key = gr->ckey[c] + 1;
			while (ptr[r] < gr->ncells && gr->ckey[ptr[r]] < lo_key)
				ptr[r]++;
			for (int64_t j = ptr[r]; j < gr->ncells && gr->ckey[j] <= hi_key; j++)
			{
				if (!boxes_near(gr, c, j))
					continue;
				if (sp->m == sp->cap)
				{
					int64_t    *grown = tc_realloc_huge(sp->pa, sizeof(int64_t) * (size_t) sp->cap * 2,
												sizeof(int64_t) * (size_t) sp->cap * 4);

					if (grown == NULL)
					{
						sp->failed = true;
						return NULL;
					}
					sp->pa = grown;
					sp->cap *= 2;
				}
				sp->pa[2 * sp->m] = c;
				sp->pa[2 * sp->m + 1] = j;
				sp->m++;
			}
		}
	}
	return NULL;
}

/*
 * Each cell's neighbour cells (boxes within eps).  The sweep finds the
 * pairs of cells with the second after the first in key order, the cells
 * split into ranges over the join's threads; each pair then goes into both
 * cells' lists.  False: out of memory, or stopped.
 */
static bool
find_neighbours(DbGrid *gr)
{
	int64_t		off[(2 * DG_REACH + 1) * (2 * DG_REACH + 1)];
	int			rows = 0;
	int			parts = gr->threads;
	SweepPart	sp[DG_MAX_THREADS];
	pthread_t	th[DG_MAX_THREADS];
	int			started = 0;
	int64_t		m = 0;
	bool		ok = true;

	/* the rows ahead: dz > 0 any dy; dz = 0, dy >= 0 (dy 0: cells after, by key) */
	for (int dz = 0; dz <= (gr->d == 3 ? DG_REACH : 0); dz++)
		for (int dy = dz > 0 ? -DG_REACH : 0; dy <= DG_REACH; dy++)
			off[rows++] = dy * (int64_t) gr->span[0] +
				(gr->d == 3 ? dz * (int64_t) (gr->span[0] * gr->span[1]) : 0);
	if (parts > gr->ncells / 4096 + 1)
		parts = (int) (gr->ncells / 4096 + 1);
	parts = parts < 1 ? 1 : parts > DG_MAX_THREADS ? DG_MAX_THREADS : parts;
	memset(sp, 0, sizeof(sp));
	for (int t = 0; t < parts; t++)
	{
		sp[t].gr = gr;
		sp[t].off = off;
		sp[t].rows = rows;
		sp[t].main = t == 0;
		sp[t].c0 = gr->ncells * t / parts;
		sp[t].c1 = gr->ncells * (t + 1) / parts;
		sp[t].cap = (sp[t].c1 - sp[t].c0) * 4 + 1024;
		sp[t].pa = tc_malloc_huge(sizeof(int64_t) * (size_t) sp[t].cap * 2);
		ok &= sp[t].pa != NULL;
	}
	if (ok)
	{
		started = dg_start_helpers(th, parts, sweep_part, (char *) sp, sizeof(SweepPart));
		sweep_part(&sp[0]);
		/* parts whose helper did not start: the caller's thread's, polling */
		for (int t = started + 1; t < parts; t++)
		{
			sp[t].main = true;
			sweep_part(&sp[t]);
		}
		for (int t = 1; t <= started; t++)
			pthread_join(th[t], NULL);
	}
	for (int t = 0; t < parts; t++)
	{
		ok &= !sp[t].failed;
		m += sp[t].m;
	}
	if (ok && !atomic_load(&gr->stop))
	{
		gr->astart = calloc((size_t) gr->ncells + 1, sizeof(int64_t));
		gr->adj = tc_malloc_huge(sizeof(int64_t) * (size_t) (2 * m + 1));
		ok = gr->astart != NULL && gr->adj != NULL;
	}
	if (ok && !atomic_load(&gr->stop))
	{
		int64_t    *fill = tc_malloc_huge(sizeof(int64_t) * (size_t) (gr->ncells + 1));

		ok = fill != NULL;
		for (int t = 0; ok && t < parts; t++)
			for (int64_t i = 0; i < sp[t].m; i++)
			{
				gr->astart[sp[t].pa[2 * i] + 1]++;
				gr->astart[sp[t].pa[2 * i + 1] + 1]++;
			}
		for (int64_t c = 0; ok && c < gr->ncells; c++)
			gr->astart[c + 1] += gr->astart[c];
		if (ok)
			memcpy(fill, gr->astart, sizeof(int64_t) * (size_t) (gr->ncells + 1));
		for (int t = 0; ok && t < parts; t++)
			for (int64_t i = 0; i < sp[t].m; i++)
			{
				int64_t		a = sp[t].pa[2 * i],
							b = sp[t].pa[2 * i + 1];

				gr->adj[fill[a]++] = b;
				gr->adj[fill[b]++] = a;
			}
		tc_free_huge(fill);
	}
	for (int t = 0; t < parts; t++)
		tc_free_huge(sp[t].pa);
	return ok && !atomic_load(&gr->stop);
}

static inline bool
within(DgCtx *cx, int64_t s, int64_t t, double *dist)
{
	const DbGrid *gr = cx->gr;

	cx->work++;
	return tc_within_f8(gr->x + s * gr->d, gr->x + t * gr->d, gr->d, gr->thr, dist);
}

/*
 * Whether to stop: on the caller's thread, its poll about every
 * DG_POLL_WORK distances (a point counts one), so that a cancel never
 * waits long, even where a few points meet huge cells; elsewhere, what it
 * said.
 */
static bool
should_stop(DgCtx *cx)
{
	if (++cx->work >= cx->next_poll)
	{
		cx->next_poll = cx->work + DG_POLL_WORK;
		if (cx->main)
			return dg_poll_now(cx->gr);
	}
	return atomic_load_explicit(&cx->gr->stop, memory_order_relaxed);
}

/* Cell c's core points: a tight cell of min_points or more whole; any other point by counting. */
static void
find_cores(DgCtx *cx, int64_t min_points, int64_t c)
{
	DbGrid	   *gr = cx->gr;
	int64_t		s0 = gr->cstart[c],
				s1 = gr->cstart[c + 1];

	gr->ncore[c] = 0;
	for (int64_t s = s0; s < s1; s++)
	{
		int64_t		need = min_points - 1;
		int64_t		cnt = 0;
		double		dist;

		if (should_stop(cx))
			return;
		if (gr->tight[c])
			cnt = s1 - s0 - 1;
		else
			for (int64_t t = s0; t < s1 && cnt < need; t++)
				cnt += t != s && within(cx, s, t, &dist);
		for (int64_t a = gr->astart[c]; a < gr->astart[c + 1] && cnt < need; a++)
		{
			int64_t		o = gr->adj[a];

			for (int64_t t = gr->cstart[o]; t < gr->cstart[o + 1] && cnt < need; t++)
				cnt += within(cx, s, t, &dist);
		}
		gr->core[s] = cnt >= need;
		gr->ncore[c] += gr->core[s];
	}
}

/* A cell's first core (its cores' set, where the cell is tight), or -1. */
static inline int64_t
first_core(const DbGrid *gr, int64_t c)
{
	if (gr->ncore[c] == 0)
		return -1;
	for (int64_t s = gr->cstart[c];; s++)
		if (gr->core[s])
			return s;
}

/*
 * Cores linked within each cell, in the cores' union-find over the points'
 * sorted positions (tc_uf_find, tc_uf_unite: a cell's points lie together,
 * so finds stay in cache; the graph takes the finished forest): a tight
 * cell's all at once, any other's pair by pair.  Cells are independent here (their points' sets are their
 * own until the links across), so threads share them.
 */
static void
link_within(DgCtx *cx, _Atomic int64_t *up, int64_t c)
{
	DbGrid	   *gr = cx->gr;
	int64_t		first = first_core(gr, c);
	double		dist;

	if (first < 0)
		return;
	for (int64_t s = first + 1; s < gr->cstart[c + 1]; s++)
	{
		if (!gr->core[s] || should_stop(cx))
			continue;
		if (gr->tight[c])
			atomic_store_explicit(&up[s], first, memory_order_relaxed);	/* its own set until now */
		else
			for (int64_t t = first; t < s; t++)
				if (gr->core[t] && tc_uf_find(up, s) != tc_uf_find(up, t) &&
					within(cx, s, t, &dist))
					tc_uf_unite(up, s, t);
	}
}

/*
 * Cores linked to each neighbour cell after c: one pair within eps joins
 * two tight cells.  After every cell's links within (a tight cell's cores
 * are set under its first core at once, which would undo a link made to
 * one of them before); threads share the cells, the union-find is theirs.
 */
static void
link_across(DgCtx *cx, _Atomic int64_t *up, int64_t c)
{
	DbGrid	   *gr = cx->gr;
	int64_t		first = first_core(gr, c);
	double		dist;

	if (first < 0)
		return;
	for (int64_t a = gr->astart[c]; a < gr->astart[c + 1]; a++)
	{
		int64_t		o = gr->adj[a];
		int64_t		fo;
		bool		both_tight;
		bool		linked = false;

		if (o < c || (fo = first_core(gr, o)) < 0)
			continue;
		both_tight = gr->tight[c] && gr->tight[o];
		if (both_tight && tc_uf_find(up, first) == tc_uf_find(up, fo))
			continue;
		for (int64_t s = first; s < gr->cstart[c + 1] && !linked; s++)
		{
			if (!gr->core[s] || should_stop(cx))
				continue;
			for (int64_t t = fo; t < gr->cstart[o + 1] && !linked; t++)
				if (gr->core[t] && (both_tight || tc_uf_find(up, s) != tc_uf_find(up, t)) &&
					within(cx, s, t, &dist))
				{
					tc_uf_unite(up, s, t);
					linked = both_tight;
				}
		}
	}
}

/* A non-core point's cores within eps, each a candidate for its nearest. */
static void
border_candidates(DgCtx *cx, TcGraph *g, int64_t c)
{
	DbGrid	   *gr = cx->gr;

	for (int64_t s = gr->cstart[c]; s < gr->cstart[c + 1]; s++)
	{
		double		dist;

		if (gr->core[s] || should_stop(cx))
			continue;
		for (int64_t a = gr->astart[c] - 1; a < gr->astart[c + 1]; a++)
		{
			int64_t		o = a < gr->astart[c] ? c : gr->adj[a];

			if (gr->ncore[o] == 0)
				continue;
			for (int64_t t = gr->cstart[o]; t < gr->cstart[o + 1]; t++)
				if (gr->core[t] && within(cx, s, t, &dist))
					tc_graph_dbscan_pair(g, gr->idx[s], gr->idx[t], dist);
		}
	}
}

/* Each core of cell c under its root, by original index, in the graph's forest. */
static void
set_parents(DbGrid *gr, TcGraph *g, _Atomic int64_t *up, int64_t c)
{
	for (int64_t s = gr->cstart[c]; s < gr->cstart[c + 1]; s++)
		if (gr->core[s])
			tc_graph_dbscan_set_parent(g, gr->idx[s], gr->idx[tc_uf_find(up, s)]);
}

/*
 * A phase over the cells (the cores, the links, the forest, the border
 * candidates),
 * shared by threads taking DG_CHUNK cells at a time.  The helpers start
 * with every signal blocked and never poll; the caller's thread takes its
 * share, then polls while it waits for them.
 */
typedef enum DgPhaseKind
{
	DG_CORES,					/* each point's core flag */
	DG_LINKS_WITHIN,			/* the cores linked within their cells */
	DG_LINKS_ACROSS,			/* and across neighbouring cells */
	DG_PARENTS,					/* the forest to the graph */
	DG_BORDERS					/* each non-core point's candidates */
} DgPhaseKind;

typedef struct DgPhase
{
	DbGrid	   *gr;
	TcGraph    *g;
	int64_t		min_points;
	DgPhaseKind kind;
	_Atomic int64_t *up;		/* the links' union-find over sorted positions */
	/* the threads' counters on a line of their own: the fields above are read a cell */
	_Alignas(64) atomic_llong next;	/* the next chunk's first cell */
	atomic_int	running;		/* helpers not yet done */
} DgPhase;

static void
phase_share(DgPhase *ph, DgCtx *cx)
{
	DbGrid	   *gr = ph->gr;
	TcGraph    *g = ph->g;
	const DgPhaseKind kind = ph->kind;
	const int64_t min_points = ph->min_points;
	_Atomic int64_t *up = ph->up;
	const int64_t ncells = gr->ncells;

	for (;;)
	{
		int64_t		c0 = atomic_fetch_add(&ph->next, DG_CHUNK);
		int64_t		c1 = c0 + DG_CHUNK < ncells ? c0 + DG_CHUNK : ncells;

		if (c0 >= ncells || atomic_load(&gr->stop))
			return;
		for (int64_t c = c0; c < c1; c++)
		{
			switch (kind)
			{
				case DG_CORES:
					find_cores(cx, min_points, c);
					break;
				case DG_LINKS_WITHIN:
					link_within(cx, up, c);
					break;
				case DG_LINKS_ACROSS:
					link_across(cx, up, c);
					break;
				case DG_PARENTS:
					set_parents(gr, g, up, c);
					break;
				case DG_BORDERS:
					border_candidates(cx, g, c);
					break;
			}
		}
	}
}

static void *
phase_main(void *arg)
{
	DgPhase    *ph = arg;
	DgCtx		cx = {ph->gr, 0, DG_POLL_WORK, false};

	phase_share(ph, &cx);
	atomic_fetch_sub(&ph->running, 1);
	return NULL;
}

static void
run_phase(DgPhase *ph, DgCtx *cx)
{
	pthread_t	th[DG_MAX_THREADS];
	int			helpers = cx->gr->threads - 1;
	int			started;

	atomic_store(&ph->next, 0);
	/* counted before they start, so that none can finish uncounted */
	atomic_store(&ph->running, helpers);
	started = dg_start_helpers(th, helpers + 1, phase_main, (char *) ph, 0);
	atomic_fetch_sub(&ph->running, helpers - started);
	phase_share(ph, cx);
	while (atomic_load(&ph->running) > 0)
	{
		struct timespec ms = {0, 500000};

		nanosleep(&ms, NULL);
		dg_poll_now(cx->gr);
	}
	for (int t = 1; t <= started; t++)
		pthread_join(th[t], NULL);
}

TcStatus
tc_graph_dbscan_grid(TcGraph *g, const TcPoints *p, double eps, int64_t min_points,
					 int threads, int (*poll) (void *arg), void *poll_arg, bool *done,
					 TcError *err)
{
	DbGrid		gr;
	DgCtx		cx = {&gr, 0, 0, true};
	DgPhase		ph;
	bool		fit;
	bool	   *core = NULL;
	_Atomic int64_t *up = NULL;

	*done = false;
	if ((p->d != 2 && p->d != 3) || !(eps > 0) || p->n < 1)
		return TC_OK;
	memset(&gr, 0, sizeof(gr));
	atomic_init(&gr.stop, false);
	memset(&ph, 0, sizeof(ph));
	atomic_init(&ph.next, 0);
	atomic_init(&ph.running, 0);
	gr.d = p->d;
	gr.n = p->n;
	gr.thr = tc_sq_threshold(eps);
	gr.threads = threads > 0 ? (threads < DG_MAX_THREADS ? threads : DG_MAX_THREADS) : 1;
	gr.poll = poll;
	gr.poll_arg = poll_arg;
	if (!dg_build_cells(&gr, p, eps, &fit))
	{
		grid_free(&gr);
		if (!fit)
			return TC_OK;
		if (atomic_load(&gr.stop))
			return TC_STOPPED;
		goto nomem;
	}
	gr.core = malloc(sizeof(bool) * (size_t) gr.n);
	gr.ncore = tc_malloc_huge(sizeof(int64_t) * (size_t) gr.ncells);
	core = malloc(sizeof(bool) * (size_t) gr.n);
	up = tc_malloc_huge(sizeof(int64_t) * (size_t) gr.n);
	if (!find_neighbours(&gr) || gr.core == NULL || gr.ncore == NULL || core == NULL || up == NULL)
	{
		if (atomic_load(&gr.stop))
			goto stopped;
		goto nomem_free;
	}
	ph.gr = &gr;
	ph.g = g;
	ph.min_points = min_points;
	ph.kind = DG_CORES;
	run_phase(&ph, &cx);
	if (atomic_load(&gr.stop))
		goto stopped;
	/* one thread: threads' scattered writes of bytes would share their lines */
	for (int64_t s = 0; s < gr.n; s++)
	{
		core[gr.idx[s]] = gr.core[s];
		atomic_init(&up[s], s);
	}
	if (!tc_graph_dbscan_set_cores(g, core))
		goto nomem_free;
	/* the links within every cell before any across (link_across), then the forest to the graph */
	ph.up = up;
	for (DgPhaseKind k = DG_LINKS_WITHIN; k <= DG_PARENTS; k++)
	{
		ph.kind = k;
		run_phase(&ph, &cx);
		if (atomic_load(&gr.stop))
			goto stopped;
	}
	/* each border point's candidates written by one thread: its own entry of the graph */
	ph.kind = DG_BORDERS;
	run_phase(&ph, &cx);
	if (atomic_load(&gr.stop))
		goto stopped;
	*done = true;
	grid_free(&gr);
	free(core);
	tc_free_huge((void *) up);
	return TC_OK;

stopped:
	grid_free(&gr);
	free(core);
	tc_free_huge((void *) up);
	return TC_STOPPED;

nomem_free:
	grid_free(&gr);
	free(core);
	tc_free_huge((void *) up);
nomem:
	err->status = TC_ERR_NOMEM;
	strcpy(err->message, "out of memory for DBSCAN's grid");
	return TC_ERR_NOMEM;
}
