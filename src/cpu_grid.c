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
 * Why no pair is lost.  A pair is returned iff its float8 sum s satisfies
 * s <= thr.  Each term t_j <= s, so |a_j - b_j| <= E = max(eps, 2^-530) *
 * (1 + 4u) (u = 2^-53; the 2^-530 covers terms that underflow to zero).
 * Cell coordinates are floor(fl(fl(x - lo) / w)), off from (x - lo) / w by
 * at most 2.01u * Q with Q = range / w <= 2^20.  With w >= max(eps, 2^-530)
 * * (1 + 1e-8), two such points differ by at most E / w + 4.02u * Q < 1 in
 * unrounded cell coordinate, so their cells are equal or adjacent.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "distance.h"
#include "engine_int.h"

#define TC_GRID_MAX_DIMS	6
#define TC_GRID_MAX_CELLS_PER_DIM (1 << 20)
#define TC_GRID_SAMPLE		1024	/* points sampled for the cost model */
#define TC_GRID_ITEM_POINTS 64	/* points of a per work item */
#define TC_COST_LOOKUP		6.0 /* per neighbour-row probe of a cell */
#define TC_COST_POINT		40.0	/* per point: keys, sort, copy */

/* One point set binned and sorted by cell. */
typedef struct GridSet
{
	void	   *pts;			/* n x d, in cell order */
	int64_t    *perm;			/* sorted position -> caller's index */
	uint64_t   *cell_key;		/* ncells, ascending */
	int64_t    *cell_start;		/* ncells + 1 */
	int64_t		ncells;
	int64_t		n;
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
	int			k;
	int			dims[TC_GRID_MAX_DIMS];
	double		lo[TC_GRID_MAX_DIMS];
	double		w[TC_GRID_MAX_DIMS];
	int64_t		ncell[TC_GRID_MAX_DIMS];
	uint64_t	stride[TC_GRID_MAX_DIMS];

	GridSet		a;
	GridSet		b;				/* self-join: unused, a serves */

	/* Neighbour rows: offsets on the first k-1 dimensions. */
	int			noffs;
	int8_t		(*offs)[TC_GRID_MAX_DIMS];
	int64_t    *off_delta;		/* key difference of each offset */

	GridItem   *items;

	/*
	 * Scratch of the index build, owned here so that a longjmp out of a
	 * poll leaks nothing: grid_free_state frees whatever is set.
	 */
	uint64_t   *tmp_keys;
	uint64_t   *tmp_keys2;
	int64_t    *tmp_idx2;
	void	   *tmp_dims;
	int64_t    *tmp_sample[2];
	int64_t    *tmp_coords[2];
} Grid;

/* Points between two polls of the caller while building the index. */
#define TC_POLL_POINTS (1 << 18)

static inline double
coord_at(const TcPoints *p, int64_t i, int dim)
{
	if (p->type == TC_FLOAT4)
		return (double) ((const float *) p->data)[i * p->d + dim];
	return ((const double *) p->data)[i * p->d + dim];
}

static inline int64_t
cell_coord(const Grid *g, int j, double x)
{
	int64_t		c = (int64_t) floor((x - g->lo[j]) / g->w[j]);

	/* Rounding may put the largest value one past the end. */
	if (c >= g->ncell[j])
		c = g->ncell[j] - 1;
	if (c < 0)
		c = 0;
	return c;
}

/* splitmix64: a fixed, seeded sample keeps plans reproducible. */
static uint64_t
next_rand(uint64_t *state)
{
	uint64_t	z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void
free_set(GridSet *s)
{
	free(s->pts);
	free(s->perm);
	free(s->cell_key);
	free(s->cell_start);
	memset(s, 0, sizeof(*s));
}

static void
free_scratch(Grid *g)
{
	free(g->tmp_keys);
	free(g->tmp_keys2);
	free(g->tmp_idx2);
	free(g->tmp_dims);
	for (int i = 0; i < 2; i++)
	{
		free(g->tmp_sample[i]);
		free(g->tmp_coords[i]);
	}
	g->tmp_keys = g->tmp_keys2 = NULL;
	g->tmp_idx2 = NULL;
	g->tmp_dims = NULL;
	for (int i = 0; i < 2; i++)
		g->tmp_sample[i] = g->tmp_coords[i] = NULL;
}

static void
grid_free_state(TcJoin *join)
{
	Grid	   *g = join->state;

	if (g == NULL)
		return;
	free_scratch(g);
	free_set(&g->a);
	free_set(&g->b);
	free(g->offs);
	free(g->off_delta);
	free(g->items);
	free(g);
	join->state = NULL;
}

/*
 * LSD radix sort of (key, index) by key, 8 bits a pass, skipping passes in
 * which every key has the same digit.  Stable, O(n) per pass.  Returns
 * TC_STOPPED if the caller asked to stop.
 */
static TcStatus
radix_sort(TcJoin *join, Grid *g, uint64_t *keys, int64_t *idx, int64_t n,
		   uint64_t maxkey)
{
	uint64_t   *ks = keys,
			   *kd;
	int64_t    *is = idx,
			   *id;

	g->tmp_keys2 = malloc(sizeof(uint64_t) * (n > 0 ? n : 1));
	g->tmp_idx2 = malloc(sizeof(int64_t) * (n > 0 ? n : 1));
	if (g->tmp_keys2 == NULL || g->tmp_idx2 == NULL)
		return TC_ERR_NOMEM;
	kd = g->tmp_keys2;
	id = g->tmp_idx2;
	for (int shift = 0; shift < 64 && (maxkey >> shift) != 0; shift += 8)
	{
		int64_t		count[257] = {0};

		if (!tc_poll(join))
			return TC_STOPPED;
		for (int64_t i = 0; i < n; i++)
			count[((ks[i] >> shift) & 0xff) + 1]++;
		if (count[((ks[0] >> shift) & 0xff) + 1] == n)
			continue;
		for (int b = 0; b < 256; b++)
			count[b + 1] += count[b];
		for (int64_t i = 0; i < n; i++)
		{
			int64_t		pos = count[(ks[i] >> shift) & 0xff]++;

			kd[pos] = ks[i];
			id[pos] = is[i];
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
	if (ks != keys)
	{
		memcpy(keys, ks, sizeof(uint64_t) * n);
		memcpy(idx, is, sizeof(int64_t) * n);
	}
	free(g->tmp_keys2);
	free(g->tmp_idx2);
	g->tmp_keys2 = NULL;
	g->tmp_idx2 = NULL;
	return TC_OK;
}

/* Bin, sort and copy one point set. */
static TcStatus
build_set(TcJoin *join, Grid *g, const TcPoints *p, GridSet *s)
{
	int64_t		n = p->n;
	size_t		rowbytes = (size_t) p->d * (size_t) p->type;
	uint64_t   *keys;
	uint64_t	maxkey = 0;
	int64_t		nc = 0;
	TcStatus	st;

	s->n = n;
	s->perm = malloc(sizeof(int64_t) * (n > 0 ? n : 1));
	s->pts = malloc(rowbytes * (n > 0 ? n : 1));
	keys = g->tmp_keys = malloc(sizeof(uint64_t) * (n > 0 ? n : 1));
	if (keys == NULL || s->perm == NULL || s->pts == NULL)
		return TC_ERR_NOMEM;

	for (int64_t i = 0; i < n; i++)
	{
		uint64_t	key = 0;

		if (i % TC_POLL_POINTS == 0 && !tc_poll(join))
			return TC_STOPPED;
		for (int j = 0; j < g->k; j++)
			key += (uint64_t) cell_coord(g, j, coord_at(p, i, g->dims[j])) * g->stride[j];
		keys[i] = key;
		s->perm[i] = i;
		if (key > maxkey)
			maxkey = key;
	}
	if (n > 0 && (st = radix_sort(join, g, keys, s->perm, n, maxkey)) != TC_OK)
		return st;

	for (int64_t i = 0; i < n; i++)
		if (i == 0 || keys[i] != keys[i - 1])
			nc++;
	s->ncells = nc;
	s->cell_key = malloc(sizeof(uint64_t) * (nc > 0 ? nc : 1));
	s->cell_start = malloc(sizeof(int64_t) * (nc + 1));
	if (s->cell_key == NULL || s->cell_start == NULL)
		return TC_ERR_NOMEM;
	nc = 0;
	for (int64_t i = 0; i < n; i++)
	{
		if (i % TC_POLL_POINTS == 0 && !tc_poll(join))
			return TC_STOPPED;
		if (i == 0 || keys[i] != keys[i - 1])
		{
			s->cell_key[nc] = keys[i];
			s->cell_start[nc] = i;
			nc++;
		}
		memcpy((char *) s->pts + (size_t) i * rowbytes,
			   (const char *) p->data + (size_t) s->perm[i] * rowbytes, rowbytes);
	}
	s->cell_start[nc] = n;
	free(g->tmp_keys);
	g->tmp_keys = NULL;
	return TC_OK;
}

/*
 * Offsets of the neighbour rows: every vector in {-1,0,1}^(k-1) over the
 * first k-1 grid dimensions; for a self-join only the lexicographically
 * positive ones (the zero row is handled as "same cell, next cell").
 */
static bool
build_offsets(Grid *g, bool self)
{
	int			m = g->k - 1;
	int			total = 1;

	for (int j = 0; j < m; j++)
		total *= 3;
	g->offs = malloc(sizeof(*g->offs) * total);
	g->off_delta = malloc(sizeof(int64_t) * total);
	if (g->offs == NULL || g->off_delta == NULL)
		return false;
	g->noffs = 0;
	for (int code = 0; code < total; code++)
	{
		int8_t		v[TC_GRID_MAX_DIMS] = {0};
		int			c = code;
		int			sign = 0;
		int64_t		delta = 0;

		for (int j = m - 1; j >= 0; j--)
		{
			v[j] = (int8_t) (c % 3 - 1);
			c /= 3;
		}
		for (int j = 0; j < m && sign == 0; j++)
			sign = v[j];
		if (self && sign <= 0)
			continue;
		for (int j = 0; j < m; j++)
			delta += (int64_t) v[j] * (int64_t) g->stride[j];
		memcpy(g->offs[g->noffs], v, sizeof(v));
		g->off_delta[g->noffs] = delta;
		g->noffs++;
	}
	return true;
}

/* Work items of at most TC_GRID_ITEM_POINTS points of a. */
static bool
build_items(TcJoin *join, Grid *g)
{
	const GridSet *s = &g->a;
	int64_t		cap = s->ncells + s->n / TC_GRID_ITEM_POINTS + 1;
	int64_t		n = 0;
	int64_t		c = 0;

	g->items = malloc(sizeof(GridItem) * cap);
	if (g->items == NULL)
		return false;
	while (c < s->ncells)
	{
		int64_t		size = s->cell_start[c + 1] - s->cell_start[c];

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
	return true;
}

/*
 * Points i in [i0, i1) of a against points [j0, j1) of b; tri: a self-join
 * within one cell, only j > i.  Returns false to stop.
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
	\
	for (int64_t i = i0; i < i1; i++) \
	{ \
		const ELEM *ai = A + i * d; \
		int64_t		jb = tri ? i + 1 : j0; \
		\
		if (jb < j1) \
			w->candidates += (uint64_t) (j1 - jb); \
		for (int64_t j = jb; j < j1; j++) \
		{ \
			double		dist; \
			\
			if (WITHIN(ai, B + j * d, d, thr, &dist) && \
				!tc_emit(w, g->a.perm[i], bs->perm[j], dist)) \
				return false; \
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

static void
grid_run_item(TcJoin *join, TcWorker *w, int64_t item)
{
	Grid	   *g = join->state;
	const GridItem *it = &g->items[item];
	const GridSet *as = &g->a;
	const GridSet *bs = join->self ? &g->a : &g->b;
	const int	k = g->k;
	const int	last = k - 1;
	int64_t		cursor[243];	/* one per neighbour row: 3^(6-1) at most */

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
			cc[j] = (int64_t) (((uint64_t) key / g->stride[j]) % (uint64_t) g->ncell[j]);

		if (join->self)
		{
			if (join->params.include_self)
				for (int64_t i = i0; i < i1; i++)
					if (!tc_emit(w, as->perm[i], as->perm[i], 0.0))
						return;
			/* Same cell, then the next cell of the same row. */
			if (!grid_block(w, join, g, i0, i1, i0, as->cell_start[c + 1], true))
				return;
			if (k > 0 && cc[last] + 1 < g->ncell[last] && c + 1 < as->ncells &&
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
				inside = cc[j] + v[j] >= 0 && cc[j] + v[j] < g->ncell[j];
			if (!inside)
				continue;
			lo_key = key + g->off_delta[o] - (cc[last] > 0 ? 1 : 0);
			hi_key = key + g->off_delta[o] + (cc[last] + 1 < g->ncell[last] ? 1 : 0);
			while (cursor[o] < bs->ncells && (int64_t) bs->cell_key[cursor[o]] < lo_key)
				cursor[o]++;
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

/* Per-dimension extent and sample variance. */
typedef struct DimInfo
{
	int			dim;
	double		lo;
	double		hi;
	double		var;
} DimInfo;

static int
cmp_var_desc(const void *x, const void *y)
{
	const DimInfo *a = x,
			   *b = y;

	if (a->var != b->var)
		return a->var < b->var ? 1 : -1;
	return a->dim - b->dim;
}

static bool
extent(TcJoin *join, const TcPoints *p, DimInfo *di, bool first)
{
	for (int64_t i = 0; i < p->n; i++)
	{
		if (i % TC_POLL_POINTS == 0 && !tc_poll(join))
			return false;
		for (int j = 0; j < p->d; j++)
		{
			double		x = coord_at(p, i, j);

			if ((first && i == 0) || x < di[j].lo)
				di[j].lo = x;
			if ((first && i == 0) || x > di[j].hi)
				di[j].hi = x;
		}
	}
	return true;
}

/* Indices of a reproducible sample of at most m points of p. */
static int64_t
sample_points(const TcPoints *p, int64_t *out, int64_t m, uint64_t seed)
{
	uint64_t	state = seed;

	if (p->n <= m)
	{
		for (int64_t i = 0; i < p->n; i++)
			out[i] = i;
		return p->n;
	}
	for (int64_t i = 0; i < m; i++)
		out[i] = (int64_t) (next_rand(&state) % (uint64_t) p->n);
	return m;
}

TcStatus
tc_grid_prepare(TcJoin *join, bool allow_brute, TcError *err)
{
	const int	d = join->a.d;
	const double eps = join->params.eps;
	Grid	   *g = calloc(1, sizeof(Grid));
	DimInfo    *di;
	int64_t    *sa,
			   *sb,
			   *cca,
			   *ccb;
	int64_t		ma,
				mb;
	int			kmax = 0;
	double		hits[TC_GRID_MAX_DIMS + 1] = {0};
	double		sample_pairs;
	double		na = (double) join->a.n;
	double		nb = (double) join->b.n;
	double		all_pairs = join->self ? na * (na - 1) / 2 : na * nb;
	double		best_cost;
	int			best_k = 0;
	double		reach = (eps > 0x1p-530 ? eps : 0x1p-530) * (1.0 + 1e-8);
	TcStatus	st;

	if (g == NULL)
		goto nomem;
	join->state = g;
	join->backend = &grid_backend;
	di = g->tmp_dims = calloc(d, sizeof(DimInfo));
	sa = g->tmp_sample[0] = malloc(sizeof(int64_t) * TC_GRID_SAMPLE);
	sb = g->tmp_sample[1] = malloc(sizeof(int64_t) * TC_GRID_SAMPLE);
	if (di == NULL || sa == NULL || sb == NULL)
		goto nomem;

	/* Extent of every dimension over both sets; variance from a sample. */
	for (int j = 0; j < d; j++)
		di[j].dim = j;
	if (!extent(join, &join->a, di, true) ||
		(!join->self && !extent(join, &join->b, di, join->a.n == 0)))
		return TC_STOPPED;
	ma = sample_points(&join->a, sa, TC_GRID_SAMPLE, 0x5eed);
	mb = join->self ? ma : sample_points(&join->b, sb, TC_GRID_SAMPLE, 0xb5eed);
	if (join->self)
		memcpy(sb, sa, sizeof(int64_t) * ma);
	for (int j = 0; j < d; j++)
	{
		double		mean = 0,
					m2 = 0;

		for (int64_t i = 0; i < ma; i++)
		{
			double		x = coord_at(&join->a, sa[i], j);
			double		delta = x - mean;

			mean += delta / (double) (i + 1);
			m2 += delta * (x - mean);
		}
		di[j].var = isfinite(m2) ? m2 : DBL_MAX;
	}
	qsort(di, d, sizeof(DimInfo), cmp_var_desc);

	/*
	 * Candidate grid dimensions, by decreasing variance: a finite extent
	 * of at least three cells, and a key space that still fits in 62 bits.
	 */
	{
		double		keyspace = 1.0;

		for (int j = 0; j < d && kmax < TC_GRID_MAX_DIMS; j++)
		{
			double		range = di[j].hi - di[j].lo;
			double		w;
			int64_t		nc;

			if (!isfinite(range) || !(range > 0))
				continue;
			w = fmax(reach, range / TC_GRID_MAX_CELLS_PER_DIM);
			nc = (int64_t) floor(range / w) + 1;
			if (nc < 3 || keyspace * (double) nc > 0x1p62)
				continue;
			keyspace *= (double) nc;
			g->dims[kmax] = di[j].dim;
			g->lo[kmax] = di[j].lo;
			g->w[kmax] = w;
			g->ncell[kmax] = nc;
			kmax++;
		}
	}

	/*
	 * Cost model.  From a sample of pairs, the share that are neighbours on
	 * the first k grid dimensions estimates the candidates of a k-dim grid;
	 * probes grow as 3^(k-1) per cell.  k = 0 is brute force.
	 */
	if (kmax > 0)
	{
		cca = g->tmp_coords[0] = malloc(sizeof(int64_t) * ma * kmax + 1);
		ccb = g->tmp_coords[1] = malloc(sizeof(int64_t) * mb * kmax + 1);
		if (cca == NULL || ccb == NULL)
			goto nomem;
		for (int64_t i = 0; i < ma; i++)
			for (int j = 0; j < kmax; j++)
				cca[i * kmax + j] = cell_coord(g, j, coord_at(&join->a, sa[i], g->dims[j]));
		for (int64_t i = 0; i < mb; i++)
			for (int j = 0; j < kmax; j++)
				ccb[i * kmax + j] = cell_coord(g, j, coord_at(&join->b, sb[i], g->dims[j]));
		for (int64_t i = 0; i < ma; i++)
			for (int64_t l = join->self ? i + 1 : 0; l < mb; l++)
			{
				int			depth = 0;

				while (depth < kmax &&
					   llabs(cca[i * kmax + depth] - ccb[l * kmax + depth]) <= 1)
					depth++;
				hits[depth] += 1;
			}
	}
	sample_pairs = join->self ? (double) ma * (double) (ma - 1) / 2 : (double) ma * (double) mb;
	best_cost = allow_brute ? tc_brute_cost(join) : INFINITY;
	{
		double		within = sample_pairs;	/* sample pairs neighbouring on k dims */
		double		cells = 1.0;
		double		probes = 1.0;

		for (int k = 1; k <= kmax; k++)
		{
			double		frac,
						cost;

			within -= hits[k - 1];
			cells *= (double) g->ncell[k - 1];
			if (k > 1)
				probes *= 3.0;
			frac = sample_pairs > 0 ? fmax(within, 0.5) / sample_pairs : 1.0;
			cost = frac * all_pairs * (TC_COST_PAIR + TC_COST_DIM * d) +
				fmin(na, cells) * (join->self ? probes / 2 + 1 : probes) * TC_COST_LOOKUP +
				(na + nb) * (TC_COST_POINT + d);
			if (cost < best_cost)
			{
				best_cost = cost;
				best_k = k;
			}
		}
	}
	free_scratch(g);

	if (best_k == 0 && allow_brute)
	{
		grid_free_state(join);
		return tc_brute_prepare(join, err);
	}

	/*
	 * best_k == 0 with a forced grid: no usable dimension (every extent is
	 * zero, infinite or under three cells), so one cell holds everything.
	 */
	g->k = best_k;
	if (g->k > 0)
	{
		/* Key strides: the last grid dimension varies fastest. */
		g->stride[g->k - 1] = 1;
		for (int j = g->k - 2; j >= 0; j--)
			g->stride[j] = g->stride[j + 1] * (uint64_t) g->ncell[j + 1];
	}
	if ((st = build_set(join, g, &join->a, &g->a)) != TC_OK ||
		(!join->self && (st = build_set(join, g, &join->b, &g->b)) != TC_OK))
	{
		if (st == TC_ERR_NOMEM)
			goto nomem;
		return st;
	}
	if ((g->k > 0 && !build_offsets(g, join->self)) || !build_items(join, g))
		goto nomem;

	join->stats.grid_dims = g->k;
	for (int j = 0; j < g->k; j++)
		join->stats.grid_dim_ids[j] = g->dims[j];
	join->stats.cells = g->a.ncells;
	return TC_OK;

nomem:
	tc_set_error(err, TC_ERR_NOMEM, "out of memory building the grid index");
	return TC_ERR_NOMEM;
}
