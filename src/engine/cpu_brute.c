/*
 * cpu_brute.c
 *		Blocked all-pairs join on the CPU, for high dimensions where no grid
 *		prunes.
 *
 * A work item is a block of TC_BRUTE_ROWS points of a, compared with every
 * point of b (self-join: every later point) one tile at a time.  A tile is
 * copied into a per-worker buffer transposed to dimension-major float8, so
 * TC_GROUP points of b are summed side by side in SIMD lanes: each lane
 * still adds its own terms in index order, so every sum is bit for bit the
 * contract's.  The tile stays in cache while the block's rows pass over it.
 * Items come in order of decreasing work (in a self-join the first block
 * meets the most points), which keeps the tail of the work queue short.
 *
 * From TC_FILTER_MIN_DIMS dimensions on, a float32 filter with a proven
 * margin (cpu_filter.c) first drops the pairs that are surely too far, and
 * only the rest are summed exactly, one pair at a time.  The dot-product
 * metrics' filter is int8 (cpu_dot_filter_lp.c) on CPUs with AVX-512 VNNI,
 * where its proof's range holds, else float32 (cpu_dot_filter.c).
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_filter.h"
#include "distance.h"
#include "engine_int.h"

#define TC_BRUTE_ROWS 32
#define TC_LANES 4				/* float8 lanes of one vector */
#define TC_CHAINS 4				/* independent vectors: hides add latency */
#define TC_GROUP (TC_LANES * TC_CHAINS)	/* tile columns summed per call */
#define TC_TILE_BYTES (128 * 1024)	/* a transposed tile: fits in L2 */
#define TC_TILE_MAX_COLS 256

typedef double v4d __attribute__((vector_size(TC_LANES * sizeof(double))));
typedef long long v4l __attribute__((vector_size(TC_LANES * sizeof(long long))));

/*
 * Per-worker buffers: the transposed tile, then the current rows of a (two
 * under a dot-product metric), or with the filter only its verdicts.  At
 * most 8 max(TC_TILE_BYTES / 8, TC_GROUP d) + 16 d + TC_BRUTE_ROWS
 * TC_TILE_MAX_COLS bytes a worker (README.md, "Memory a join takes").
 */
typedef struct BruteScratch
{
	int			cols;			/* tile width, a multiple of TC_GROUP */
	double	   *tile;			/* d x cols; NULL with the filter */
	double	   *row;			/* 2 d; NULL with the filter */
	uint8_t    *keep;			/* TC_BRUTE_ROWS x cols, the filter's verdicts */
} BruteScratch;

/* The back end's state: the filter, where it applies; cosine's norms. */
typedef struct BruteState
{
	TcFilter   *filter;
	TcDotFilter *dot_filter;	/* cosine and inner product, where it applies */
	TcDotFilterLp *dot_lp;		/* their int8 filter, in its place where it applies */
	double	   *norm_a;			/* the contract's squared norms (dot-product metrics) */
	double	   *norm_b;			/* norm_a in a self-join */
} BruteState;

static int
tile_cols(int d)
{
	int			cols = TC_TILE_BYTES / (int) sizeof(double) / d;

	if (cols > TC_TILE_MAX_COLS)
		cols = TC_TILE_MAX_COLS;
	cols -= cols % TC_GROUP;
	return cols < TC_GROUP ? TC_GROUP : cols;
}

static BruteScratch *
get_scratch(TcWorker *w, int d, bool filtered)
{
	BruteScratch *bs = w->scratch;

	if (bs == NULL)
	{
		int			cols = tile_cols(d);
		/* The filtered path reads the caller's rows: no tile to hold. */
		size_t		tile = filtered ? 0 : (size_t) d * cols + 2 * (size_t) d;
		double	   *base;

		bs = malloc(sizeof(BruteScratch) + sizeof(double) * tile + 64 +
					(size_t) TC_BRUTE_ROWS * cols);
		if (bs == NULL)
			return NULL;
		bs->cols = cols;
		/* Vector loads want 32-byte alignment. */
		base = (double *) (((uintptr_t) (bs + 1) + 31) & ~(uintptr_t) 31);
		bs->tile = filtered ? NULL : base;
		bs->row = filtered ? NULL : base + (size_t) d * cols;
		bs->keep = (uint8_t *) (base + tile);
		w->scratch = bs;
	}
	return bs;
}

/* Copy points [j0, j1) of b into tile[k * cols + j - j0], padding lanes. */
static void
load_tile(const TcPoints *b, int64_t j0, int64_t j1, BruteScratch *bs)
{
	const int	d = b->d;
	const int	cols = bs->cols;
	int64_t		width = j1 - j0;
	int64_t		padded = (width + TC_GROUP - 1) / TC_GROUP * TC_GROUP;

	for (int64_t j = 0; j < padded; j++)
	{
		int64_t		src = j0 + (j < width ? j : width - 1);

		if (b->type == TC_FLOAT4)
		{
			const float *p = (const float *) b->data + src * d;

			for (int k = 0; k < d; k++)
				bs->tile[(size_t) k * cols + j] = (double) p[k];
		}
		else
		{
			const double *p = (const double *) b->data + src * d;

			for (int k = 0; k < d; k++)
				bs->tile[(size_t) k * cols + j] = p[k];
		}
	}
}

/*
 * Sums of one row against TC_GROUP tile columns starting at jj, in
 * TC_CHAINS independent vectors, with the early exit once every lane is
 * past thr.  Built for AVX2 and for the baseline, chosen at load time,
 * where the compiler supports it.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void
group_sums(const double *row, const double *tile, int cols, int d, double thr,
		   double *out)
{
	v4d			s[TC_CHAINS] = {{0}};
	int			k = 0;

	for (; k + TC_EXIT_STRIDE <= d; k += TC_EXIT_STRIDE)
	{
		v4l			past = {-1, -1, -1, -1};

		for (int u = 0; u < TC_EXIT_STRIDE; u++)
		{
			const v4d  *t = (const v4d *) (tile + (size_t) (k + u) * cols);

			for (int c = 0; c < TC_CHAINS; c++)
			{
				v4d			diff = row[k + u] - t[c];

				s[c] += diff * diff;
			}
		}
		for (int c = 0; c < TC_CHAINS; c++)
			past &= s[c] > thr;
		if (past[0] & past[1] & past[2] & past[3])
			break;
	}
	if (k + TC_EXIT_STRIDE > d)
		for (; k < d; k++)
		{
			const v4d  *t = (const v4d *) (tile + (size_t) k * cols);

			for (int c = 0; c < TC_CHAINS; c++)
			{
				v4d			diff = row[k] - t[c];

				s[c] += diff * diff;
			}
		}
	memcpy(out, s, sizeof(s));
}

/*
 * Dot products of two rows with TC_GROUP tile columns starting at jj, each
 * lane adding its own products in index order (no early exit: a dot
 * product's partial sums do not grow monotonically); each tile load serves
 * both rows.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void
group_dots2(const double *r0, const double *r1, const double *tile, int cols, int d,
			double *out0, double *out1)
{
	v4d			s0[TC_CHAINS] = {{0}};
	v4d			s1[TC_CHAINS] = {{0}};

	for (int k = 0; k < d; k++)
	{
		const v4d  *t = (const v4d *) (tile + (size_t) k * cols);

		for (int c = 0; c < TC_CHAINS; c++)
		{
			v4d			tv = t[c];

			s0[c] += r0[k] * tv;
			s1[c] += r1[k] * tv;
		}
	}
	memcpy(out0, s0, sizeof(s0));
	memcpy(out1, s1, sizeof(s1));
}

/* dist of points i of a and j of b from their dot product (README's contract). */
static inline double
dot_metric_dist(const TcJoin *join, const BruteState *state, int64_t i, int64_t j, double dot)
{
	if (join->params.metric == TC_METRIC_INNER_PRODUCT)
		return -dot;
	return tc_cosine_dist(dot, state->norm_a[i], state->norm_b[j]);
}

/*
 * Rows [i0, i1) of a against columns [j0, j1) of b through the filter:
 * the pairs it keeps are summed exactly.  Returns false to stop.
 */
#define TC_DEFINE_FILTERED(NAME, ELEM, WITHIN) \
static bool \
NAME(TcWorker *w, const TcJoin *join, const uint8_t *keep, int64_t i0, \
	 int64_t i1, int64_t j0, int64_t j1) \
{ \
	const int	d = join->a.d; \
	const ELEM *A = (const ELEM *) join->a.data; \
	const ELEM *B = (const ELEM *) join->b.data; \
	\
	for (int64_t i = i0; i < i1; i++) \
	{ \
		int64_t		jb = join->self && j0 <= i ? i + 1 : j0; \
		\
		if (jb < j1) \
			w->candidates += (uint64_t) (j1 - jb); \
		for (int64_t j = jb; j < j1; j++) \
		{ \
			double		dist; \
			\
			if (!keep[(i - i0) * (j1 - j0) + (j - j0)]) \
				continue; \
			w->rechecked++; \
			if (WITHIN(A + i * d, B + j * d, d, join->thr, &dist) && \
				!tc_emit(w, i, j, dist)) \
				return false; \
		} \
	} \
	return true; \
}

TC_DEFINE_FILTERED(filtered_f4, float, tc_within_f4)
TC_DEFINE_FILTERED(filtered_f8, double, tc_within_f8)

/*
 * Rows [i0, i1) of a against columns [j0, j1) of b under a dot-product
 * metric, through its filter: the pairs it keeps are summed exactly.
 */
static bool
dot_filtered(TcWorker *w, const TcJoin *join, const BruteState *state, const uint8_t *keep,
			 int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
	for (int64_t i = i0; i < i1; i++)
	{
		int64_t		jb = join->self && j0 <= i ? i + 1 : j0;
		const uint8_t *kr = keep + (i - i0) * (j1 - j0) - j0;

		if (jb < j1)
			w->candidates += (uint64_t) (j1 - jb);
		for (int64_t j = jb; j < j1; j++)
		{
			double		dist;
			uint64_t	word;

			/* most verdicts are 0: eight at a time */
			if (j + 8 <= j1)
			{
				memcpy(&word, kr + j, 8);
				if (word == 0)
				{
					j += 7;
					continue;
				}
			}
			if (!kr[j])
				continue;
			w->rechecked++;
			dist = dot_metric_dist(join, state, i, j, tc_point_dot(&join->a, i, &join->b, j));
			if (dist <= join->thr && !tc_emit(w, i, j, dist))
				return false;
		}
	}
	return true;
}

/* Point i of a, as float8, into row. */
static void
load_row(const TcPoints *a, int64_t i, double *row)
{
	if (a->type == TC_FLOAT4)
		for (int k = 0; k < a->d; k++)
			row[k] = (double) ((const float *) a->data)[i * a->d + k];
	else
		memcpy(row, (const double *) a->data + i * a->d, sizeof(double) * a->d);
}

/*
 * Rows [i0, i1) of a against tile columns [j0, j1) (self-join: j > i)
 * under a dot-product metric, two rows at a time.  Returns false to stop.
 */
static bool
dot_block(TcWorker *w, TcJoin *join, const BruteState *state, BruteScratch *bs,
		  int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
	double	   *rows[2] = {bs->row, bs->row + join->a.d};

	for (int64_t i = i0; i < i1; i += 2)
	{
		int			nr = i + 1 < i1 ? 2 : 1;
		int64_t		jb[2] = {j1, j1};
		int64_t		jmin;

		/* two rows meet the tile's cols x d coordinates: d may be huge */
		if (tc_should_stop(join))
			return false;
		for (int r = 0; r < nr; r++)
		{
			jb[r] = join->self && j0 <= i + r ? i + r + 1 : j0;
			if (jb[r] < j1)
				w->candidates += (uint64_t) (j1 - jb[r]);
			load_row(&join->a, i + r, rows[r]);
		}
		jmin = jb[0] < jb[1] ? jb[0] : jb[1];
		for (int64_t jj = (jmin - j0) / TC_GROUP * TC_GROUP; j0 + jj < j1; jj += TC_GROUP)
		{
			double		s[2][TC_GROUP];

			group_dots2(rows[0], rows[nr - 1], bs->tile + jj, bs->cols, join->a.d, s[0], s[1]);
			for (int r = 0; r < nr; r++)
				for (int l = 0; l < TC_GROUP; l++)
				{
					int64_t		j = j0 + jj + l;
					double		dist;

					if (j < jb[r] || j >= j1)
						continue;
					dist = dot_metric_dist(join, state, i + r, j, s[r][l]);
					if (dist <= join->thr && !tc_emit(w, i + r, j, dist))
						return false;
				}
		}
	}
	return true;
}

/* Item i: rows [i TC_BRUTE_ROWS, (i + 1) TC_BRUTE_ROWS) of a, each row in one item (TcSink.reduce). */
static void
brute_run_item(TcJoin *join, TcWorker *w, int64_t item)
{
	const BruteState *state = join->state;
	const int	d = join->a.d;
	const double thr = join->thr;
	int64_t		i0 = item * TC_BRUTE_ROWS;
	int64_t		i1 = i0 + TC_BRUTE_ROWS;
	int64_t		nb = join->b.n;
	bool		filtered = state->filter || state->dot_filter || state->dot_lp;
	BruteScratch *bs = get_scratch(w, d, filtered);

	if (bs == NULL)
	{
		atomic_store(&join->worker_error, TC_ERR_NOMEM);
		atomic_store(&join->stop, true);
		return;
	}
	if (i1 > join->a.n)
		i1 = join->a.n;
	if (join->self && join->params.include_self)
	{
		for (int64_t i = i0; i < i1; i++)
		{
			double		dist = tc_self_dist(join, i);

			if (dist <= thr && !tc_emit(w, i, i, dist))
				return;
		}
	}
	for (int64_t j0 = join->self ? i0 : 0; j0 < nb; j0 += bs->cols)
	{
		int64_t		j1 = j0 + bs->cols < nb ? j0 + bs->cols : nb;

		if (tc_should_stop(join))
			return;
		if (filtered)
		{
			/*
			 * Rows by pairs (the filter's own unit, so no verdict
			 * changes), as many as keep a stop within TC_CHECK_COORDS.
			 */
			int64_t		rstep = tc_check_rows((int64_t) bs->cols * d);

			rstep += rstep % 2;
			for (int64_t r0 = i0; r0 < i1; r0 += rstep)
			{
				int64_t		r1 = i1 - r0 > rstep ? r0 + rstep : i1;
				bool		go;

				if (r0 > i0 && tc_should_stop(join))
					return;
				if (state->dot_filter || state->dot_lp)
				{
					if (state->dot_lp)
						tc_dot_filter_lp_block(state->dot_lp, r0, r1, j0, j1, bs->keep);
					else
						tc_dot_filter_block(state->dot_filter, r0, r1, j0, j1, bs->keep);
					go = dot_filtered(w, join, state, bs->keep, r0, r1, j0, j1);
				}
				else
				{
					tc_filter_block(state->filter, r0, r1, j0, j1, bs->keep);
					go = join->a.type == TC_FLOAT4 ?
						filtered_f4(w, join, bs->keep, r0, r1, j0, j1) :
						filtered_f8(w, join, bs->keep, r0, r1, j0, j1);
				}
				if (!go)
					return;
			}
			continue;
		}
		load_tile(&join->b, j0, j1, bs);
		if (join->params.metric != TC_METRIC_EUCLIDEAN)
		{
			if (!dot_block(w, join, state, bs, i0, i1, j0, j1))
				return;
			continue;
		}
		for (int64_t i = i0; i < i1; i++)
		{
			/* In a self-join only j > i. */
			int64_t		jb = join->self && j0 <= i ? i + 1 : j0;

			if (jb >= j1)
				continue;
			/* A row meets the tile's cols x d coordinates: d may be huge. */
			if (tc_should_stop(join))
				return;
			w->candidates += (uint64_t) (j1 - jb);
			load_row(&join->a, i, bs->row);

			for (int64_t jj = (jb - j0) / TC_GROUP * TC_GROUP; j0 + jj < j1; jj += TC_GROUP)
			{
				double		s[TC_GROUP];

				group_sums(bs->row, bs->tile + jj, bs->cols, d, thr, s);

				for (int l = 0; l < TC_GROUP; l++)
				{
					int64_t		j = j0 + jj + l;

					if (j >= jb && j < j1 && s[l] <= thr &&
						!tc_emit(w, i, j, sqrt(s[l])))
						return;
				}
			}
		}
	}
}

static void
brute_free_state(TcJoin *join)
{
	BruteState *state = join->state;

	if (state == NULL)
		return;
	tc_filter_free(state->filter);
	tc_dot_filter_free(state->dot_filter);
	tc_dot_filter_lp_free(state->dot_lp);
	if (state->norm_b != state->norm_a)
		free(state->norm_b);
	free(state->norm_a);
	free(state);
	join->state = NULL;
}

static const TcBackend brute_backend = {
	.name = "brute",
	.run_item = brute_run_item,
	.free_state = brute_free_state,
};

/*
 * The contract's squared norms of points i .. i + 3 of p (past n: 0), each
 * summed in index order as tc_point_dot sums it: four chains at once hide
 * the additions' latency.
 */
#define TC_NORMS4(ELEM) \
	do { \
		const ELEM *x0 = (const ELEM *) p->data + i * d; \
		const ELEM *x1 = x0 + (i + 1 < p->n ? d : 0); \
		const ELEM *x2 = x0 + (i + 2 < p->n ? 2 * d : 0); \
		const ELEM *x3 = x0 + (i + 3 < p->n ? 3 * d : 0); \
		\
		for (int k = 0; k < d; k++) \
		{ \
			s[0] += (double) x0[k] * (double) x0[k]; \
			s[1] += (double) x1[k] * (double) x1[k]; \
			s[2] += (double) x2[k] * (double) x2[k]; \
			s[3] += (double) x3[k] * (double) x3[k]; \
		} \
	} while (0)

static void
squared_norms4(const TcPoints *p, int64_t i, double *s)
{
	const int64_t d = p->d;

	s[0] = s[1] = s[2] = s[3] = 0.0;
	if (p->type == TC_FLOAT4)
		TC_NORMS4(float);
	else
		TC_NORMS4(double);
}

/*
 * Squared norms of p's points into *out, polling; a zero norm (a zero
 * vector, or one whose squares all underflow) has no cosine distance.
 */
TcStatus
tc_squared_norms(TcJoin *join, const TcPoints *p, int set, double **out, TcError *err)
{
	bool		cosine = join->params.metric == TC_METRIC_COSINE;
	const int64_t rows = (tc_check_rows(p->d) + 3) / 4 * 4;

	*out = malloc(sizeof(double) * (size_t) (p->n > 0 ? p->n : 1));
	if (*out == NULL)
	{
		tc_set_error(err, TC_ERR_NOMEM, "out of memory");
		return TC_ERR_NOMEM;
	}
	for (int64_t i = 0; i < p->n; i++)
	{
		if (i % 4 == 0)
		{
			double		s[4];

			if (i % rows == 0 && !tc_poll(join))
				return TC_STOPPED;
			squared_norms4(p, i, s);
			for (int c = 0; c < 4 && i + c < p->n; c++)
				(*out)[i + c] = s[c];
		}
		if (cosine && !((*out)[i] > 0.0))
		{
			tc_set_error(err, TC_ERR_INVALID,
						 "a zero vector has no cosine distance (point %lld of set %c)",
						 (long long) i, set == 0 ? 'a' : 'b');
			err->point = i;
			err->point_set = set;
			return TC_ERR_INVALID;
		}
	}
	return TC_OK;
}

/*
 * The dot-product metrics' filter from TC_FILTER_MIN_DIMS dimensions: int8
 * where the CPU has AVX-512 VNNI and the int8 proof applies (or where the
 * dot_filter override forces its portable form), else float32; either is
 * left out where its range does not hold.
 */
static TcStatus
dot_filter_build(TcJoin *join, BruteState *state)
{
	TcDotFilterKind kind = join->params.overrides.dot_filter;
	bool		portable = kind == TC_DOT_FILTER_INT8_PORTABLE;
	TcStatus	st;

	if (join->a.d < TC_FILTER_MIN_DIMS)
		return TC_OK;
	if (kind != TC_DOT_FILTER_FLOAT32 && tc_dot_filter_lp_applies(join) &&
		(portable || tc_cpu_has_int8_dot()))
	{
		st = tc_dot_filter_lp_build(join, state->norm_a, state->norm_b, portable, &state->dot_lp);
		if (st != TC_OK || state->dot_lp)
		{
			join->stats.filter = portable ? "int8 (portable)" : "int8";
			return st;
		}
	}
	st = tc_dot_filter_build(join, state->norm_a, state->norm_b, &state->dot_filter);
	if (state->dot_filter)
		join->stats.filter = "float32";
	return st;
}

/*
 * The dot-product metrics: the contract's squared norms (cosine's, and the
 * filter's bound), and from TC_FILTER_MIN_DIMS dimensions a filter
 * (dot_filter_build) where its proof's range holds; every pair it
 * keeps, or every pair without it, summed exactly.
 */
static TcStatus
dot_prepare(TcJoin *join, BruteState *state, TcError *err)
{
	TcStatus	st;

	if (join->params.metric == TC_METRIC_COSINE || join->a.d >= TC_FILTER_MIN_DIMS)
	{
		if ((st = tc_squared_norms(join, &join->a, 0, &state->norm_a, err)) != TC_OK)
			return st;
		if (join->self)
			state->norm_b = state->norm_a;
		else if ((st = tc_squared_norms(join, &join->b, 1, &state->norm_b, err)) != TC_OK)
			return st;
	}
	if ((st = dot_filter_build(join, state)) != TC_OK)
	{
		if (st == TC_ERR_NOMEM)
			tc_set_error(err, st, "out of memory building the brute-force filter");
		return st;
	}
	join->nitems = (join->a.n + TC_BRUTE_ROWS - 1) / TC_BRUTE_ROWS;
	join->stats.grid_dims = 0;
	join->stats.cells = 0;
	return TC_OK;
}

TcStatus
tc_brute_prepare(TcJoin *join, TcError *err)
{
	BruteState *state = calloc(1, sizeof(BruteState));
	TcStatus	st;

	join->backend = &brute_backend;
	join->state = state;
	if (state == NULL)
	{
		tc_set_error(err, TC_ERR_NOMEM, "out of memory");
		return TC_ERR_NOMEM;
	}
	if (join->params.metric != TC_METRIC_EUCLIDEAN)
		return dot_prepare(join, state, err);
	if ((st = tc_filter_build(join, &state->filter)) != TC_OK)
	{
		if (st == TC_ERR_NOMEM)
			tc_set_error(err, st, "out of memory building the brute-force filter");
		return st;
	}
	if (state->filter)
		join->stats.filter = "float32";
	join->nitems = (join->a.n + TC_BRUTE_ROWS - 1) / TC_BRUTE_ROWS;
	join->stats.grid_dims = 0;
	join->stats.cells = 0;
	return TC_OK;
}
