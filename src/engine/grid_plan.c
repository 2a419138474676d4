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
	SCRATCH_COORDS_B
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

static bool
extent(TcJoin *join, const TcPoints *p, DimInfo *di, bool first)
{
	const int64_t rows = tc_check_rows(p->d);

	for (int64_t i = 0; i < p->n; i++)
	{
		if (i % rows == 0 && !tc_poll(join))
			return false;
		for (int j = 0; j < p->d; j++)
		{
			double		x = tc_coord(p, i, j);

			if ((first && i == 0) || x < di[j].lo)
				di[j].lo = x;
			if ((first && i == 0) || x > di[j].hi)
				di[j].hi = x;
		}
	}
	return true;
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

static void *
scratch_alloc(TcJoin *join, int slot, size_t bytes)
{
	free(join->scratch[slot]);
	join->scratch[slot] = calloc(1, bytes > 0 ? bytes : 1);
	return join->scratch[slot];
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
