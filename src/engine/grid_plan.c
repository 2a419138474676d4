/*
 * grid_plan.c
 *		Choosing the epsilon grid: its dimensions, cell widths and size.
 *
 * Why no pair is lost.  A pair is returned iff its float8 sum s satisfies
 * s <= thr.  Each term t_j <= s, so |a_j - b_j| <= E = max(eps, 2^-530) *
 * (1 + 4u) (u = 2^-53; the 2^-530 covers terms that underflow to zero).
 * Cell coordinates are floor(fl(fl(x - lo) / w)), off from (x - lo) / w by
 * at most 2.01u * Q with Q = range / w <= 2^20.  With w >= max(eps, 2^-530)
 * * (1 + 1e-8), two such points differ by at most E / w + 4.02u * Q < 1 in
 * unrounded cell coordinate, so their cells are equal or adjacent.  Every
 * back end bins with tc_cell_coord (grid_plan.h) and this plan, so the
 * argument holds for all of them.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "choose.h"
#include "engine_int.h"

#define TC_GRID_MAX_CELLS_PER_DIM (1 << 20)
#define TC_GRID_SAMPLE		1024	/* points sampled for the cost model */
#define TC_EXTENT_CHUNK		(1 << 21)	/* coordinates a thread reads between polls */
#define TC_EXTENT_PART		(1 << 17)	/* coordinates a helper thread is worth */
#define TC_EXTENT_THREADS	16		/* the extent's threads at most */

/* Per-dimension extent and sample variance. */
typedef struct DimInfo
{
	int			dim;
	double		lo;
	double		hi;
	double		var;
} DimInfo;

/* The planner's scratch, owned by the join so a longjmp leaks nothing. */
enum
{
	SCRATCH_DIMS, SCRATCH_SAMPLE_A, SCRATCH_SAMPLE_B, SCRATCH_COORDS_A,
	SCRATCH_COORDS_B, SCRATCH_EXTENT
};

/* splitmix64: a fixed, seeded sample keeps plans reproducible. */
static uint64_t
next_rand(uint64_t *state)
{
	uint64_t	z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int
cmp_var_desc(const void *x, const void *y)
{
	const DimInfo *a = x,
			   *b = y;

	if (a->var != b->var)
		return a->var < b->var ? 1 : -1;
	return a->dim - b->dim;
}

static void *
scratch_alloc(TcJoin *join, int slot, size_t bytes)
{
	free(join->scratch[slot]);
	join->scratch[slot] = calloc(1, bytes > 0 ? bytes : 1);
	return join->scratch[slot];
}

/* One thread's part of a set's extent: rows [lo, hi), folded into mn and mx. */
typedef struct ExtentPart
{
	const TcPoints *p;
	int64_t		lo;
	int64_t		hi;
	bool		seen;			/* mn and mx hold a row already */
	double	   *mn;				/* d each */
	double	   *mx;
} ExtentPart;

/*
 * n rows of d values folded into mn and mx.  For the grid's usual few
 * dimensions (d <= 4, a constant where inlined) the running values live in
 * locals that the unrolled loop keeps in registers; past that, in place,
 * where the loop over a row vectorizes.  Widening float4 to float8 keeps
 * the order, so the extremes are the same either way.
 */
#define EXTENT_ROWS(name, T) \
static inline __attribute__((always_inline)) void \
name(const T *restrict x, int64_t n, int d, double *restrict mn, double *restrict mx) \
{ \
	double		lmn[4], \
				lmx[4]; \
\
	if (d > 4) \
	{ \
		for (int64_t i = 0; i < n; i++) \
			for (int j = 0; j < d; j++) \
			{ \
				double		v = x[i * d + j]; \
\
				mn[j] = v < mn[j] ? v : mn[j]; \
				mx[j] = v > mx[j] ? v : mx[j]; \
			} \
		return; \
	} \
	for (int j = 0; j < d; j++) \
		lmn[j] = mn[j], lmx[j] = mx[j]; \
	for (int64_t i = 0; i < n; i++) \
		_Pragma("GCC unroll 4") \
		for (int j = 0; j < d; j++) \
		{ \
			double		v = x[i * d + j]; \
\
			lmn[j] = v < lmn[j] ? v : lmn[j]; \
			lmx[j] = v > lmx[j] ? v : lmx[j]; \
		} \
	for (int j = 0; j < d; j++) \
		mn[j] = lmn[j], mx[j] = lmx[j]; \
}
EXTENT_ROWS(extent_f4, float)
EXTENT_ROWS(extent_f8, double)

void
tc_extent_fold(const TcPoints *p, int64_t lo, int64_t hi, bool first, double *mn, double *mx)
{
	const int	d = p->d;

	if (lo >= hi)
		return;
	if (first)
	{
		/* the first row starts both */
		for (int j = 0; j < d; j++)
			mn[j] = mx[j] = tc_coord(p, lo, j);
		lo++;
	}
#define EXTENT_CASE(D) \
	case D: \
		if (p->type == TC_FLOAT4) \
			extent_f4((const float *) p->data + lo * D, hi - lo, D, mn, mx); \
		else \
			extent_f8((const double *) p->data + lo * D, hi - lo, D, mn, mx); \
		break
	switch (d)
	{
			EXTENT_CASE(1);
			EXTENT_CASE(2);
			EXTENT_CASE(3);
			EXTENT_CASE(4);
		default:
			if (p->type == TC_FLOAT4)
				extent_f4((const float *) p->data + lo * d, hi - lo, d, mn, mx);
			else
				extent_f8((const double *) p->data + lo * d, hi - lo, d, mn, mx);
	}
#undef EXTENT_CASE
}

static void *
extent_part(void *arg)
{
	ExtentPart *part = arg;

	tc_extent_fold(part->p, part->lo, part->hi, !part->seen, part->mn, part->mx);
	part->seen |= part->lo < part->hi;
	return NULL;
}

/*
 * Every dimension's extent of p into di (first: di holds nothing yet).
 * Large sets are read by up to the join's threads at once, in rounds of
 * TC_EXTENT_CHUNK coordinates a thread; the caller's thread polls only
 * between rounds, with every helper joined, since a poll may longjmp.
 */
static TcStatus
extent(TcJoin *join, const TcPoints *p, DimInfo *di, bool first)
{
	const int	d = p->d;
	const int64_t coords = p->n * (int64_t) d;
	int64_t		chunk_rows = TC_EXTENT_CHUNK / d > 0 ? TC_EXTENT_CHUNK / d : 1;
	int			nth = join->params.threads;
	ExtentPart *parts;
	double	   *vals;

	if (p->n == 0)
		return TC_OK;
	/* a helper for every TC_EXTENT_PART coordinates at least: fewer start no faster */
	nth = tc_parts_for(coords, TC_EXTENT_PART, nth, TC_EXTENT_THREADS);
	if (chunk_rows > (p->n + nth - 1) / nth)
		chunk_rows = (p->n + nth - 1) / nth;
	parts = scratch_alloc(join, SCRATCH_EXTENT,
						  (sizeof(ExtentPart) + 2 * sizeof(double) * d) * nth);
	if (parts == NULL)
		return TC_ERR_NOMEM;
	vals = (double *) (parts + nth);
	for (int t = 0; t < nth; t++)
	{
		parts[t].p = p;
		parts[t].mn = vals + 2 * (size_t) d * t;
		parts[t].mx = parts[t].mn + d;
	}
	for (int64_t r = 0; r < p->n; r += chunk_rows * nth)
	{
		for (int t = 0; t < nth; t++)
		{
			parts[t].lo = r + chunk_rows * t < p->n ? r + chunk_rows * t : p->n;
			parts[t].hi = parts[t].lo + chunk_rows < p->n ? parts[t].lo + chunk_rows : p->n;
		}
		tc_run_parts(extent_part, parts, sizeof(ExtentPart), nth);
		if (!tc_poll(join))
			return TC_STOPPED;
	}
	for (int t = 0; t < nth; t++)
	{
		if (!parts[t].seen)
			continue;
		for (int j = 0; j < d; j++)
		{
			if (first || parts[t].mn[j] < di[j].lo)
				di[j].lo = parts[t].mn[j];
			if (first || parts[t].mx[j] > di[j].hi)
				di[j].hi = parts[t].mx[j];
		}
		first = false;
	}
	return TC_OK;
}

/*
 * The plan's grid dimensions from its costs, and the keys' strides.  k == 0
 * with a forced grid: no usable dimension (every extent is zero, infinite
 * or under three cells) or none cheaper, so one cell holds everything.
 */
static void
pick(TcGridPlan *plan, bool allow_brute)
{
	plan->k = tc_grid_pick(plan, allow_brute);
	plan->brute = allow_brute && plan->k == 0;
	if (plan->k > 0)
	{
		/* Key strides: the last grid dimension varies fastest. */
		plan->stride[plan->k - 1] = 1;
		for (int j = plan->k - 2; j >= 0; j--)
			plan->stride[j] = plan->stride[j + 1] * (uint64_t) plan->ncell[j + 1];
	}
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

void
tc_free_scratch(TcJoin *join)
{
	for (int i = 0; i < TC_SCRATCH_SLOTS; i++)
	{
		free(join->scratch[i]);
		join->scratch[i] = NULL;
	}
}

/* A sample point of b by its first grid coordinate. */
typedef struct CellOrder
{
	int64_t		c0;
	int64_t		l;
} CellOrder;

static int
cmp_cell_order(const void *x, const void *y)
{
	const CellOrder *a = x,
			   *b = y;

	if (a->c0 != b->c0)
		return a->c0 < b->c0 ? -1 : 1;
	return a->l < b->l ? -1 : a->l > b->l;
}

/* The first of order[0, m) whose c0 is at least c. */
static int64_t
first_at_least(const CellOrder *order, int64_t m, int64_t c)
{
	int64_t		lo = 0,
				hi = m;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (order[mid].c0 < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * hits[k]: the sample pairs (a's i, b's l) whose cell coordinates are
 * within one on exactly the first k grid dimensions.  Only pairs within
 * one on the first are walked further, found by b's sample sorted on it;
 * the rest count at depth 0.  A self-join counts its pairs i < l: every
 * ordered pair i != l is walked, which counts each twice.  No poll comes
 * between its allocation and its free, so it needs no scratch slot.
 */
bool
tc_grid_sample_hits(const int64_t *cca, int64_t ma, const int64_t *ccb, int64_t mb, int kmax,
					bool self, double *hits)
{
	int64_t		counts[TC_GRID_MAX_DIMS + 1] = {0};
	CellOrder  *order = malloc(sizeof(CellOrder) * (size_t) (mb > 0 ? mb : 1));

	if (order == NULL)
		return false;
	for (int64_t l = 0; l < mb; l++)
	{
		order[l].c0 = ccb[l * kmax];
		order[l].l = l;
	}
	qsort(order, mb, sizeof(CellOrder), cmp_cell_order);
	for (int64_t i = 0; i < ma; i++)
	{
		const int64_t *ci = cca + i * kmax;
		int64_t		from = first_at_least(order, mb, ci[0] - 1);
		int64_t		to = first_at_least(order, mb, ci[0] + 2);
		int64_t		near = 0;

		for (int64_t o = from; o < to; o++)
		{
			const int64_t *cl = ccb + order[o].l * kmax;
			int			depth = 1;

			if (self && order[o].l == i)
				continue;
			while (depth < kmax && llabs(ci[depth] - cl[depth]) <= 1)
				depth++;
			counts[depth]++;
			near++;
		}
		counts[0] += (self ? mb - 1 : mb) - near;
	}
	for (int k = 0; k <= kmax; k++)
		hits[k] = self ? (double) (counts[k] / 2) : (double) counts[k];
	free(order);
	return true;
}

TcStatus
tc_grid_plan(TcJoin *join, bool allow_brute, TcGridPlan *plan, TcError *err)
{
	const int	d = join->a.d;
	const double eps = join->params.eps;
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
	double		reach = (eps > 0x1p-530 ? eps : 0x1p-530) * (1.0 + 1e-8);
	TcStatus	st;

	/* Made once a join: the device's choice may have needed it already. */
	if (join->have_plan)
	{
		*plan = join->plan;
		pick(plan, allow_brute);
		return TC_OK;
	}
	memset(plan, 0, sizeof(*plan));
	di = scratch_alloc(join, SCRATCH_DIMS, sizeof(DimInfo) * d);
	sa = scratch_alloc(join, SCRATCH_SAMPLE_A, sizeof(int64_t) * TC_GRID_SAMPLE);
	sb = scratch_alloc(join, SCRATCH_SAMPLE_B, sizeof(int64_t) * TC_GRID_SAMPLE);
	if (di == NULL || sa == NULL || sb == NULL)
		goto nomem;

	/* Extent of every dimension over both sets; variance from a sample. */
	for (int j = 0; j < d; j++)
		di[j].dim = j;
	st = extent(join, &join->a, di, true);
	if (st == TC_OK && !join->self)
		st = extent(join, &join->b, di, join->a.n == 0);
	if (st == TC_ERR_NOMEM)
		goto nomem;
	if (st != TC_OK)
		return st;
	ma = sample_points(&join->a, sa, TC_GRID_SAMPLE, 0x5eed);
	mb = join->self ? ma : sample_points(&join->b, sb, TC_GRID_SAMPLE, 0xb5eed);
	if (join->self)
		memcpy(sb, sa, sizeof(int64_t) * ma);
	for (int j = 0; j < d; j++)
	{
		double		mean = 0,
					m2 = 0;

		/* d may be large: the sample's columns are n x d's too. */
		if (j % tc_check_rows(ma) == 0 && !tc_poll(join))
			return TC_STOPPED;
		for (int64_t i = 0; i < ma; i++)
		{
			double		x = tc_coord(&join->a, sa[i], j);
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
			plan->dims[kmax] = di[j].dim;
			plan->lo[kmax] = di[j].lo;
			plan->w[kmax] = w;
			plan->ncell[kmax] = nc;
			kmax++;
		}
	}

	/*
	 * For the cost model (choose.c): how many sample pairs are neighbours
	 * on exactly the first k grid dimensions.
	 */
	if (kmax > 0)
	{
		cca = scratch_alloc(join, SCRATCH_COORDS_A, sizeof(int64_t) * ma * kmax);
		ccb = scratch_alloc(join, SCRATCH_COORDS_B, sizeof(int64_t) * mb * kmax);
		if (cca == NULL || ccb == NULL)
			goto nomem;
		for (int64_t i = 0; i < ma; i++)
			for (int j = 0; j < kmax; j++)
				cca[i * kmax + j] = tc_cell_coord(plan, j, tc_coord(&join->a, sa[i], plan->dims[j]));
		for (int64_t i = 0; i < mb; i++)
			for (int j = 0; j < kmax; j++)
				ccb[i * kmax + j] = tc_cell_coord(plan, j, tc_coord(&join->b, sb[i], plan->dims[j]));
		if (!tc_grid_sample_hits(cca, ma, ccb, mb, kmax, join->self, hits))
			goto nomem;
	}
	sample_pairs = join->self ? (double) ma * (double) (ma - 1) / 2 : (double) ma * (double) mb;
	tc_grid_costs(join, plan, kmax, hits, sample_pairs);
	tc_free_scratch(join);
	join->plan = *plan;
	join->have_plan = true;
	pick(plan, allow_brute);
	return TC_OK;

nomem:
	tc_set_error(err, TC_ERR_NOMEM, "out of memory planning the grid");
	return TC_ERR_NOMEM;
}

int
tc_grid_rows(const TcGridPlan *p, bool positive_only,
			 int8_t (*offs)[TC_GRID_MAX_DIMS], int64_t *delta)
{
	int			m = p->k > 0 ? p->k - 1 : 0;
	int			total = 1;
	int			n = 0;

	for (int j = 0; j < m; j++)
		total *= 3;
	for (int code = 0; code < total; code++)
	{
		int8_t		v[TC_GRID_MAX_DIMS] = {0};
		int			c = code;
		int			sign = 0;
		int64_t		dl = 0;

		for (int j = m - 1; j >= 0; j--)
		{
			v[j] = (int8_t) (c % 3 - 1);
			c /= 3;
		}
		for (int j = 0; j < m && sign == 0; j++)
			sign = v[j];
		if (positive_only && sign <= 0)
			continue;
		for (int j = 0; j < m; j++)
			dl += (int64_t) v[j] * (int64_t) p->stride[j];
		memcpy(offs[n], v, sizeof(v));
		delta[n] = dl;
		n++;
	}
	return n;
}
