/*
 * cpu_grid.c
 *		Exact epsilon-grid join on the CPU.
 *
 * Points are binned into cells of width w >= eps on the k highest-variance
 * dimensions (k <= TC_GRID_MAX_DIMS, chosen by a cost estimate), sorted by
 * cell, and each point is compared only with points of its own and the
 * adjacent cells.  In a self-join each pair of adjacent cells is visited
 * once, from the cell with the smaller key ("unidirectional").
 *
 * The plan (dimensions, widths) and the proof that no pair is lost are in
 * grid_plan.c.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distance.h"
#include "engine_int.h"
#include "grid_plan.h"

#define TC_GRID_ITEM_POINTS 64	/* points of a per work item */

/* One point set binned and sorted by cell. */
typedef struct GridSet
{
	void	   *pts;			/* n x d, in cell order */
	int64_t    *perm;			/* sorted position -> caller's index */
	uint64_t   *cell_key;		/* ncells, ascending */
	int64_t    *cell_start;		/* ncells + 1 */
	int64_t		ncells;
	int64_t		n;

	/*
	 * Scratch of the set's build, owned here so that a longjmp out of a
	 * poll leaks nothing: free_set frees whatever is set.
	 */
	uint64_t   *tmp_keys;
	uint64_t   *tmp_keys2;
	int64_t    *tmp_idx2;
} GridSet;

/* A work item: cells [c0, c1) of a, or points [p0, p1) of cell c0. */
typedef struct GridItem
{
	int64_t		c0;
	int64_t		c1;
	int64_t		p0;				/* -1: whole cells */
	int64_t		p1;
} GridItem;

typedef struct Grid
{
	TcGridPlan	p;

	GridSet		a;
	GridSet		b;				/* self-join: unused, a serves */

	/* Neighbour rows: offsets on the first k-1 dimensions. */
	int			noffs;
	int8_t		(*offs)[TC_GRID_MAX_DIMS];
	int64_t    *off_delta;		/* key difference of each offset */

	GridItem   *items;

	/* A two-set join's b, built on a thread of its own while the caller builds a. */
	pthread_t	b_thread;
	bool		b_started;
	atomic_bool b_done;
	TcStatus	b_status;
	TcJoin	   *join;
} Grid;

static void
free_scratch(GridSet *s)
{
	tc_free_huge(s->tmp_keys);
	tc_free_huge(s->tmp_keys2);
	tc_free_huge(s->tmp_idx2);
	s->tmp_keys = s->tmp_keys2 = NULL;
	s->tmp_idx2 = NULL;
}

static void
free_set(GridSet *s)
{
	free_scratch(s);
	tc_free_huge(s->pts);
	tc_free_huge(s->perm);
	tc_free_huge(s->cell_key);
	tc_free_huge(s->cell_start);
	memset(s, 0, sizeof(*s));
}

/* b's build thread, joined (it sees the join's stop flag within a few milliseconds). */
static void
join_b_thread(Grid *g)
{
	if (g->b_started)
	{
		pthread_join(g->b_thread, NULL);
		g->b_started = false;
	}
}

static void
grid_free_state(TcJoin *join)
{
	Grid	   *g = join->state;

	if (g == NULL)
		return;
	join_b_thread(g);			/* the join's stop is set: it ends soon */
	free_set(&g->a);
	free_set(&g->b);
	free(g->offs);
	free(g->off_delta);
	free(g->items);
	free(g);
	join->state = NULL;
}

/*
 * Whether the build goes on: on the caller's thread a poll of the sink
 * (which may longjmp), on b's build thread the join's stop flag.
 */
static inline bool
build_poll(TcJoin *join, bool caller)
{
	return caller ? tc_poll(join) : !tc_should_stop(join);
}

#define RADIX_BITS 11
#define RADIX_SIZE (1 << RADIX_BITS)

/*
 * LSD radix sort of (key, index) by key, 11 bits a pass from bit shift0,
 * skipping passes in which every key has the same digit.  Stable, O(n)
 * per pass.  idx NULL: each key holds its index in its bits below shift0
 * (build_set), so that a pass moves 8 bytes an entry, not 16.  Returns
 * TC_STOPPED if the join is to stop.
 */
static TcStatus
radix_sort(TcJoin *join, GridSet *s, bool caller, uint64_t *keys, int64_t *idx, int64_t n,
		   int shift0, uint64_t maxkey)
{
	uint64_t   *ks = keys,
			   *kd;
	int64_t    *is = idx,
			   *id;
	int64_t    *count;

	s->tmp_keys2 = tc_malloc_huge(sizeof(uint64_t) * (n > 0 ? n : 1));
	s->tmp_idx2 = idx != NULL ? tc_malloc_huge(sizeof(int64_t) * (n + 1)) : NULL;
	count = malloc(sizeof(int64_t) * (RADIX_SIZE + 1));
	if (s->tmp_keys2 == NULL || (idx != NULL && s->tmp_idx2 == NULL) || count == NULL)
	{
		free(count);
		return TC_ERR_NOMEM;
	}
	kd = s->tmp_keys2;
	id = s->tmp_idx2;
	for (int shift = shift0; shift < 64 && (maxkey >> shift) != 0; shift += RADIX_BITS)
	{
		memset(count, 0, sizeof(int64_t) * (RADIX_SIZE + 1));
		/* A pass over a large n takes long: polls within it, by chunks. */
		for (int64_t c0 = 0; c0 < n; c0 += TC_CHECK_COORDS)
		{
			int64_t		c1 = c0 + TC_CHECK_COORDS < n ? c0 + TC_CHECK_COORDS : n;

			if (!build_poll(join, caller))
			{
				free(count);
				return TC_STOPPED;
			}
			for (int64_t i = c0; i < c1; i++)
				count[((ks[i] >> shift) & (RADIX_SIZE - 1)) + 1]++;
		}
		if (count[((ks[0] >> shift) & (RADIX_SIZE - 1)) + 1] == n)
			continue;
		for (int b = 0; b < RADIX_SIZE; b++)
			count[b + 1] += count[b];
		for (int64_t c0 = 0; c0 < n; c0 += TC_CHECK_COORDS)
		{
			int64_t		c1 = c0 + TC_CHECK_COORDS < n ? c0 + TC_CHECK_COORDS : n;

			if (!build_poll(join, caller))
			{
				free(count);
				return TC_STOPPED;
			}
			if (idx == NULL)
				for (int64_t i = c0; i < c1; i++)
					kd[count[(ks[i] >> shift) & (RADIX_SIZE - 1)]++] = ks[i];
			else
				for (int64_t i = c0; i < c1; i++)
				{
					int64_t		pos = count[(ks[i] >> shift) & (RADIX_SIZE - 1)]++;

					kd[pos] = ks[i];
					id[pos] = is[i];
				}
		}
		{
			uint64_t   *tk = ks;
			int64_t    *ti = is;

			ks = kd;
			kd = tk;
			is = id;
			id = ti;
		}
	}
	free(count);
	if (ks != keys)
	{
		memcpy(keys, ks, sizeof(uint64_t) * n);
		if (idx != NULL)
			memcpy(idx, is, sizeof(int64_t) * n);
	}
	/* tmp_keys2 and tmp_idx2 stay: the cells' arrays reuse their pages */
	return TC_OK;
}

/*
 * Row perm[i] of src to row i of dst, for i in [i0, i1): whole 8-byte
 * words where the rows are (float8, or float4 of even d) without a call a
 * row, the row some iterations ahead prefetched (the rows come in cell
 * order, scattered over the input).
 */
static void
gather_rows(void *dst, const void *src, const int64_t *perm, int64_t i0, int64_t i1,
			int64_t n, size_t rowbytes)
{
	const int	ahead = 8;

	if (rowbytes % 8 != 0)
	{
		for (int64_t i = i0; i < i1; i++)
			memcpy((char *) dst + (size_t) i * rowbytes,
				   (const char *) src + (size_t) perm[i] * rowbytes, rowbytes);
		return;
	}
	for (int64_t i = i0; i < i1; i++)
	{
		const uint64_t *from = (const uint64_t *) ((const char *) src + (size_t) perm[i] * rowbytes);
		uint64_t   *to = (uint64_t *) ((char *) dst + (size_t) i * rowbytes);

		if (i + ahead < n)
			__builtin_prefetch((const char *) src + (size_t) perm[i + ahead] * rowbytes);
		for (size_t w = 0; w < rowbytes / 8; w++)
			to[w] = from[w];
	}
}

/* Bin, sort and copy one point set (caller: on the caller's thread, which polls the sink). */
static TcStatus
build_set(TcJoin *join, const Grid *g, const TcPoints *p, GridSet *s, bool caller)
{
	int64_t		n = p->n;
	size_t		rowbytes = (size_t) p->d * (size_t) p->type;
	uint64_t   *keys;
	uint64_t	maxkey = 0;
	int64_t		nc = 0;
	TcStatus	st;
	const int64_t key_rows = tc_check_rows(g->p.k);
	const int64_t copy_rows = tc_check_rows(p->d);
	int			ibits = 0,		/* an index's bits: packed below the key where both fit */
				kbits = 0;
	bool		packed;

	s->n = n;
	s->perm = tc_malloc_huge(sizeof(int64_t) * (n > 0 ? n : 1));
	s->pts = tc_malloc_huge(rowbytes * (n > 0 ? n : 1));
	/* n + 1: packed, the cells' starts take its place (below) */
	keys = s->tmp_keys = tc_malloc_huge(sizeof(uint64_t) * (n + 1));
	if (keys == NULL || s->perm == NULL || s->pts == NULL)
		return TC_ERR_NOMEM;

	for (int64_t i = 0; i < n; i++)
	{
		uint64_t	key = 0;

		if (i % key_rows == 0 && !build_poll(join, caller))
			return TC_STOPPED;
		for (int j = 0; j < g->p.k; j++)
			key += (uint64_t) tc_cell_coord(&g->p, j, tc_coord(p, i, g->p.dims[j])) * g->p.stride[j];
		keys[i] = key;
		if (key > maxkey)
			maxkey = key;
	}
	while (ibits < 63 && ((uint64_t) 1 << ibits) < (uint64_t) n)
		ibits++;
	while (kbits < 64 && (maxkey >> kbits) != 0)
		kbits++;
	packed = ibits + kbits <= 64;
	if (!packed)
		ibits = 0;				/* below: a key is keys[i] >> ibits either way */
	for (int64_t i = 0; i < n; i++)
	{
		if (packed)
			keys[i] = keys[i] << ibits | (uint64_t) i;
		else
			s->perm[i] = i;
	}
	/* packed: the sort's digits start at ibits, and the largest word has every index bit set */
	if (n > 0 && (st = radix_sort(join, s, caller, keys, packed ? NULL : s->perm, n, ibits,
								  maxkey << ibits | (((uint64_t) 1 << ibits) - 1))) != TC_OK)
		return st;
	if (packed)
		for (int64_t i = 0; i < n; i++)
			s->perm[i] = (int64_t) (keys[i] & (((uint64_t) 1 << ibits) - 1));

	for (int64_t i = 0; i < n; i++)
	{
		if (i % TC_CHECK_COORDS == 0 && !build_poll(join, caller))
			return TC_STOPPED;
		if (i == 0 || keys[i] >> ibits != keys[i - 1] >> ibits)
			nc++;
	}
	s->ncells = nc;

	/*
	 * The cells' arrays in the sort's scratch (n and n + 1 entries, its
	 * pages present already: fresh ones cost more to fault than to fill),
	 * kept at that size (kept buffers come back whole).  Packed, the
	 * starts go into the keys themselves: cell c's start is written at c,
	 * never past the key just read.
	 */
	if (n == 0 && (s->tmp_keys2 = tc_malloc_huge(sizeof(uint64_t))) == NULL)
		return TC_ERR_NOMEM;
	if (n == 0 && !packed && (s->tmp_idx2 = tc_malloc_huge(sizeof(int64_t))) == NULL)
		return TC_ERR_NOMEM;
	s->cell_key = s->tmp_keys2;
	s->cell_start = packed ? (int64_t *) keys : s->tmp_idx2;
	s->tmp_keys2 = NULL;
	s->tmp_idx2 = NULL;
	if (packed)
		s->tmp_keys = NULL;		/* now the cells' starts */
	nc = 0;
	{
		uint64_t	prev = 0;

		for (int64_t i0 = 0; i0 < n; i0 += copy_rows)
		{
			int64_t		i1 = i0 + copy_rows < n ? i0 + copy_rows : n;

			if (!build_poll(join, caller))
				return TC_STOPPED;
			for (int64_t i = i0; i < i1; i++)
			{
				const uint64_t key = keys[i] >> ibits;

				if (i == 0 || key != prev)
				{
					s->cell_key[nc] = key;
					s->cell_start[nc] = i;
					nc++;
				}
				prev = key;
			}
			gather_rows(s->pts, p->data, s->perm, i0, i1, n, rowbytes);
		}
	}
	s->cell_start[nc] = n;
	if (!packed)
		tc_free_huge(s->tmp_keys);
	s->tmp_keys = NULL;
	return TC_OK;
}

/* b's build thread. */
static void *
build_b_main(void *arg)
{
	Grid	   *g = arg;

	g->b_status = build_set(g->join, g, &g->join->b, &g->b, false);
	atomic_store(&g->b_done, true);
	return NULL;
}

/*
 * Both sets of a two-set join: b on a thread of its own (where one starts)
 * while the caller's thread builds a, then polls until b is done.
 */
static TcStatus
build_two_sets(TcJoin *join, Grid *g)
{
	TcStatus	st;

	g->join = join;
	atomic_init(&g->b_done, false);
	/* a second thread only where the join may take one (tcjoin.cpu_threads) */
	g->b_started = join->params.threads > 1 && tc_start_thread(&g->b_thread, build_b_main, g) == 0;
	if (!g->b_started)
	{
		if ((st = build_set(join, g, &join->a, &g->a, true)) != TC_OK)
			return st;
		return build_set(join, g, &join->b, &g->b, true);
	}
	st = build_set(join, g, &join->a, &g->a, true);
	if (st != TC_OK)
		atomic_store(&join->stop, true);	/* b's build ends too */
	while (!atomic_load(&g->b_done))
	{
		struct timespec ms = {0, 1000000};

		if (st == TC_OK && !tc_poll(join))
			st = TC_STOPPED;
		nanosleep(&ms, NULL);
	}
	join_b_thread(g);
	return st != TC_OK ? st : g->b_status;
}

/* The neighbour rows (grid_plan.c); a self-join needs the positive ones. */
static bool
build_offsets(Grid *g, bool self)
{
	g->offs = malloc(sizeof(*g->offs) * TC_GRID_MAX_ROWS);
	g->off_delta = malloc(sizeof(int64_t) * TC_GRID_MAX_ROWS);
	if (g->offs == NULL || g->off_delta == NULL)
		return false;
	g->noffs = tc_grid_rows(&g->p, self, g->offs, g->off_delta);
	return true;
}

/*
 * Work items of at most TC_GRID_ITEM_POINTS points of a, each point in one
 * item: a two-set join's reduce sees a point's pairs on one thread (TcSink).
 */
static TcStatus
build_items(TcJoin *join, Grid *g)
{
	const GridSet *s = &g->a;
	int64_t		cap = s->ncells + s->n / TC_GRID_ITEM_POINTS + 1;
	int64_t		n = 0;
	int64_t		c = 0;

	g->items = malloc(sizeof(GridItem) * cap);
	if (g->items == NULL)
		return TC_ERR_NOMEM;
	for (int64_t iter = 0; c < s->ncells; iter++)
	{
		int64_t		size = s->cell_start[c + 1] - s->cell_start[c];

		if (iter % TC_CHECK_COORDS == 0 && !tc_poll(join))
			return TC_STOPPED;

		if (size > TC_GRID_ITEM_POINTS)
		{
			for (int64_t p = s->cell_start[c]; p < s->cell_start[c + 1];
				 p += TC_GRID_ITEM_POINTS)
			{
				GridItem   *it = &g->items[n++];

				it->c0 = c;
				it->c1 = c + 1;
				it->p0 = p;
				it->p1 = p + TC_GRID_ITEM_POINTS < s->cell_start[c + 1] ?
					p + TC_GRID_ITEM_POINTS : s->cell_start[c + 1];
			}
			c++;
		}
		else
		{
			GridItem   *it = &g->items[n++];
			int64_t		pts = 0;

			it->c0 = c;
			it->p0 = it->p1 = -1;
			while (c < s->ncells &&
				   pts + (s->cell_start[c + 1] - s->cell_start[c]) <= TC_GRID_ITEM_POINTS)
			{
				pts += s->cell_start[c + 1] - s->cell_start[c];
				c++;
			}
			it->c1 = c;
		}
	}
	join->nitems = n;
	return TC_OK;
}

/*
 * Points i in [i0, i1) of a against points [j0, j1) of b; tri: a self-join
 * within one cell, only j > i.  Returns false to stop.  A cell may hold
 * most of the data and yield no pair, so the stop flag is read every
 * TC_CHECK_COORDS coordinates, not only when a batch fills.
 */
#define TC_DEFINE_GRID_BLOCK(NAME, ELEM, WITHIN) \
static bool \
NAME(TcWorker *w, const TcJoin *join, const Grid *g, int64_t i0, int64_t i1, \
	 int64_t j0, int64_t j1, bool tri) \
{ \
	const int	d = join->a.d; \
	const ELEM *A = (const ELEM *) g->a.pts; \
	const GridSet *bs = join->self ? &g->a : &g->b; \
	const ELEM *B = (const ELEM *) bs->pts; \
	const double thr = join->thr; \
	const int64_t step = tc_check_rows(d); \
	\
	for (int64_t i = i0; i < i1; i++) \
	{ \
		const ELEM *ai = A + i * d; \
		int64_t		jb = tri ? i + 1 : j0; \
		\
		if (jb < j1) \
			w->candidates += (uint64_t) (j1 - jb); \
		for (int64_t jc = jb; jc < j1; jc += step) \
		{ \
			int64_t		je = j1 - jc > step ? jc + step : j1; \
			\
			if (tc_should_stop(join)) \
				return false; \
			for (int64_t j = jc; j < je; j++) \
			{ \
				double		dist; \
				\
				if (WITHIN(ai, B + j * d, d, thr, &dist) && \
					!tc_emit(w, g->a.perm[i], bs->perm[j], dist)) \
					return false; \
			} \
		} \
	} \
	return true; \
}

TC_DEFINE_GRID_BLOCK(grid_block_f4, float, tc_within_f4)
TC_DEFINE_GRID_BLOCK(grid_block_f8, double, tc_within_f8)

static inline bool
grid_block(TcWorker *w, const TcJoin *join, const Grid *g, int64_t i0,
		   int64_t i1, int64_t j0, int64_t j1, bool tri)
{
	if (join->a.type == TC_FLOAT4)
		return grid_block_f4(w, join, g, i0, i1, j0, j1, tri);
	return grid_block_f8(w, join, g, i0, i1, j0, j1, tri);
}

/* First cell of s with key >= key, searching from lo. */
static int64_t
lower_bound(const GridSet *s, int64_t lo, uint64_t key)
{
	int64_t		hi = s->ncells;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (s->cell_key[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * A cursor moved to the first cell with key >= key: a few steps, then a
 * search, so that skipping many cells of b costs a logarithm, not a walk.
 */
static int64_t
advance(const GridSet *s, int64_t from, int64_t key)
{
	for (int step = 0; step < 8; step++, from++)
		if (from >= s->ncells || (int64_t) s->cell_key[from] >= key)
			return from;
	return lower_bound(s, from, key > 0 ? (uint64_t) key : 0);
}

/* Points of a named to a sink's prefetch ahead of the cell being joined. */
#define GRID_PREFETCH_AHEAD 8

static void
grid_run_item(TcJoin *join, TcWorker *w, int64_t item)
{
	Grid	   *g = join->state;
	const GridItem *it = &g->items[item];
	const GridSet *as = &g->a;
	const GridSet *bs = join->self ? &g->a : &g->b;
	const int	k = g->p.k;
	const int	last = k - 1;
	int64_t		cursor[TC_GRID_MAX_ROWS];	/* one per neighbour row */
	/* a two-set join's points of a named to the sink's prefetch, up to pf_end */
	int64_t		pf = it->p0 >= 0 ? it->p0 : as->cell_start[it->c0];
	const int64_t pf_end = join->self || w->prefetch == NULL ? pf :
		it->p0 >= 0 ? it->p1 : as->cell_start[it->c1];

	/*
	 * Each row's probe target only grows with the cell key, so a cursor per
	 * row, started by one search at the item's first cell, moves forward.
	 */
	for (int o = 0; o < g->noffs; o++)
	{
		int64_t		t = (int64_t) as->cell_key[it->c0] + g->off_delta[o] - 1;

		cursor[o] = lower_bound(bs, 0, t > 0 ? (uint64_t) t : 0);
	}

	for (int64_t c = it->c0; c < it->c1; c++)
	{
		int64_t		key = (int64_t) as->cell_key[c];
		int64_t		cc[TC_GRID_MAX_DIMS];
		int64_t		i0 = it->p0 >= 0 ? it->p0 : as->cell_start[c];
		int64_t		i1 = it->p0 >= 0 ? it->p1 : as->cell_start[c + 1];

		if (tc_should_stop(join))
			return;
		for (int j = 0; j < k; j++)
			cc[j] = (int64_t) (((uint64_t) key / g->p.stride[j]) % (uint64_t) g->p.ncell[j]);
		/* this cell's points and the next few, ahead of their pairs */
		for (; pf < pf_end && pf < i1 + GRID_PREFETCH_AHEAD; pf++)
			w->prefetch(w->reduce_arg, as->perm[pf]);

		if (join->self)
		{
			if (join->params.include_self)
				for (int64_t i = i0; i < i1; i++)
					if (!tc_emit(w, as->perm[i], as->perm[i], 0.0))
						return;
			/* Same cell, then the next cell of the same row. */
			if (!grid_block(w, join, g, i0, i1, i0, as->cell_start[c + 1], true))
				return;
			if (k > 0 && cc[last] + 1 < g->p.ncell[last] && c + 1 < as->ncells &&
				(int64_t) as->cell_key[c + 1] == key + 1 &&
				!grid_block(w, join, g, i0, i1, as->cell_start[c + 1],
							as->cell_start[c + 2], false))
				return;
		}
		else if (k == 0)
		{
			/* No grid dimension: every point of b is a candidate. */
			if (!grid_block(w, join, g, i0, i1, 0, bs->n, false))
				return;
			continue;
		}

		for (int o = 0; o < g->noffs; o++)
		{
			const int8_t *v = g->offs[o];
			bool		inside = true;
			int64_t		lo_key,
						hi_key;

			for (int j = 0; j < last && inside; j++)
				inside = cc[j] + v[j] >= 0 && cc[j] + v[j] < g->p.ncell[j];
			if (!inside)
				continue;
			lo_key = key + g->off_delta[o] - (cc[last] > 0 ? 1 : 0);
			hi_key = key + g->off_delta[o] + (cc[last] + 1 < g->p.ncell[last] ? 1 : 0);
			cursor[o] = advance(bs, cursor[o], lo_key);
			for (int64_t p = cursor[o];
				 p < bs->ncells && (int64_t) bs->cell_key[p] <= hi_key; p++)
				if (!grid_block(w, join, g, i0, i1, bs->cell_start[p],
								bs->cell_start[p + 1], false))
					return;
		}
	}
}

static const TcBackend grid_backend = {
	.name = "grid",
	.run_item = grid_run_item,
	.free_state = grid_free_state,
};

TcStatus
tc_grid_prepare(TcJoin *join, bool allow_brute, TcError *err)
{
	TcGridPlan	plan;
	Grid	   *g;
	TcStatus	st;

	if ((st = tc_grid_plan(join, allow_brute, &plan, err)) != TC_OK)
		return st;
	if (plan.brute)
		return tc_brute_prepare(join, err);

	g = calloc(1, sizeof(Grid));
	if (g == NULL)
		goto nomem;
	g->p = plan;
	join->state = g;
	join->backend = &grid_backend;
	if ((st = join->self ? build_set(join, g, &join->a, &g->a, true) : build_two_sets(join, g)) != TC_OK)
	{
		if (st == TC_ERR_NOMEM)
			goto nomem;
		return st;
	}
	if (g->p.k > 0 && !build_offsets(g, join->self))
		goto nomem;
	if ((st = build_items(join, g)) != TC_OK)
	{
		if (st == TC_ERR_NOMEM)
			goto nomem;
		return st;
	}

	join->stats.grid_dims = g->p.k;
	for (int j = 0; j < g->p.k; j++)
		join->stats.grid_dim_ids[j] = g->p.dims[j];
	join->stats.cells = g->a.ncells;
	return TC_OK;

nomem:
	tc_set_error(err, TC_ERR_NOMEM, "out of memory building the grid index");
	return TC_ERR_NOMEM;
}
