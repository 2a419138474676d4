/*
 * cosine_grid.c
 *		Cosine in few dimensions through the Euclidean grid: the grid join
 *		of the unit vectors, with a threshold proven to keep every pair the
 *		cosine contract returns, then the contract's exact formula for each
 *		pair it yields.
 *
 * With every nonzero coordinate of magnitude in [2^-400, 2^400] and d <=
 * TC_COSINE_GRID_PROOF_DIMS (so that (d + 10) 2^-53 < 1e-14; no square
 * underflows or overflows):
 *	 - the contract's sim (float8 sums, the rounded quotient) is within 1e-13
 *	   of the true cosine s, so dist_c <= eps implies 1 - s <= eps + 1e-12;
 *	 - for the true unit vectors, |a/|a| - b/|b||^2 = 2 - 2 s <= 2 (eps + 1e-12);
 *	 - each computed unit vector (each coordinate over the rounded square
 *	   root of the contract's squared norm) is within 1e-13 of the true one;
 *	 - the Euclidean contract's sum on the computed unit vectors is at most
 *	   their distance times 1 + (d + 6) 2^-53 (a difference that underflows
 *	   only makes it smaller).
 * So the grid join at eps_g = (sqrt(2 (eps + 1e-12)) + 2e-12) (1 + 1e-12)
 * returns every such pair, and the exact formula decides each.
 */
#include <math.h>
#include <stdlib.h>

#include "engine_int.h"

/* The proof's reach ((d + 10) 2^-53 < 1e-14), and auto's choice below it */
#define TC_COSINE_GRID_PROOF_DIMS 64
#define TC_COSINE_GRID_MAX_DIMS 12
/* beyond this eps the unit vectors' grid prunes little: brute force */
#define TC_COSINE_GRID_MAX_EPS 0.5

typedef struct CosineGrid
{
	double	   *unit_a;			/* n_a x d unit vectors */
	double	   *unit_b;			/* == unit_a in a self-join */
	double	   *norm_a;			/* the contract's squared norms */
	double	   *norm_b;
	TcJoin	   *inner;			/* the Euclidean join of the unit vectors */
	TcJoin	   *outer;
	TcPair		out[512];		/* pairs kept, for the caller's sink */
	size_t		nout;
	uint64_t	candidates;
} CosineGrid;

static bool
in_range(const TcPoints *p)
{
	for (int64_t i = 0; i < p->n; i++)
		for (int k = 0; k < p->d; k++)
		{
			double		x = fabs(tc_coord(p, i, k));

			if (x != 0.0 && !(x >= 0x1p-400 && x <= 0x1p400))
				return false;
		}
	return true;
}

bool
tc_cosine_grid_applies(const TcJoin *join)
{
	if (join->params.metric != TC_METRIC_COSINE || join->a.n == 0 ||
		join->params.method == TC_METHOD_BRUTE)
		return false;
	if (join->params.method == TC_METHOD_AUTO &&
		(join->a.d > TC_COSINE_GRID_MAX_DIMS || join->params.eps > TC_COSINE_GRID_MAX_EPS))
		return false;
	/* outside the proof's reach: brute force decides every pair */
	return join->a.d <= TC_COSINE_GRID_PROOF_DIMS && in_range(&join->a) &&
		(join->self || in_range(&join->b));
}

void
tc_cosine_grid_free(TcJoin *join)
{
	CosineGrid *cg = join->cosine_grid;

	if (cg == NULL)
		return;
	tc_join_destroy(cg->inner);
	if (cg->unit_b != cg->unit_a)
		free(cg->unit_b);
	free(cg->unit_a);
	if (cg->norm_b != cg->norm_a)
		free(cg->norm_b);
	free(cg->norm_a);
	free(cg);
	join->cosine_grid = NULL;
}

/* The contract's squared norms and the unit vectors of p; false on a zero vector. */
static TcStatus
units(TcJoin *join, const TcPoints *p, int set, double **norm, double **unit, TcError *err)
{
	const int64_t rows = tc_check_rows(p->d);

	*norm = malloc(sizeof(double) * (size_t) p->n);
	*unit = malloc(sizeof(double) * (size_t) p->n * (size_t) p->d);
	if (*norm == NULL || *unit == NULL)
	{
		tc_set_error(err, TC_ERR_NOMEM, "out of memory");
		return TC_ERR_NOMEM;
	}
	for (int64_t i = 0; i < p->n; i++)
	{
		double		s = 0.0,
					r;

		if (i % rows == 0 && !tc_poll(join))
			return TC_STOPPED;
		for (int k = 0; k < p->d; k++)
			s += tc_coord(p, i, k) * tc_coord(p, i, k);
		if (!(s > 0.0))
		{
			tc_set_error(err, TC_ERR_INVALID,
						 "a zero vector has no cosine distance (point %lld of set %c)",
						 (long long) i, set == 0 ? 'a' : 'b');
			err->point = i;
			err->point_set = set;
			return TC_ERR_INVALID;
		}
		(*norm)[i] = s;
		r = sqrt(s);
		for (int k = 0; k < p->d; k++)
			(*unit)[i * p->d + k] = tc_coord(p, i, k) / r;
	}
	return TC_OK;
}

/* The contract's cosine dist of a's i and b's j (as cpu_brute.c computes it). */
static double
cosine_dist(const CosineGrid *cg, int64_t i, int64_t j)
{
	const TcJoin *join = cg->outer;
	double		dot = 0.0,
				sim;

	for (int k = 0; k < join->a.d; k++)
		dot += tc_coord(&join->a, i, k) * tc_coord(&join->b, j, k);
	sim = dot / sqrt(cg->norm_a[i] * cg->norm_b[j]);
	if (sim > 1.0)
		sim = 1.0;
	else if (sim < -1.0)
		sim = -1.0;
	return 1.0 - sim;
}

static int
flush(CosineGrid *cg)
{
	const TcSink *sink = cg->outer->sink;
	int			rc = cg->nout > 0 ? sink->emit(sink->arg, cg->out, cg->nout) : 0;

	cg->outer->stats.pairs += cg->nout;
	cg->nout = 0;
	return rc;
}

static int
add_pair(CosineGrid *cg, int64_t i, int64_t j, double dist)
{
	cg->out[cg->nout].a = i;
	cg->out[cg->nout].b = j;
	cg->out[cg->nout].dist = dist;
	if (++cg->nout == sizeof(cg->out) / sizeof(cg->out[0]))
		return flush(cg);
	return 0;
}

/* The inner join's candidates: each decided by the exact formula. */
static int
recheck_emit(void *arg, const TcPair *pairs, size_t count)
{
	CosineGrid *cg = arg;

	cg->candidates += count;
	for (size_t p = 0; p < count; p++)
	{
		double		dist = cosine_dist(cg, pairs[p].a, pairs[p].b);

		if (dist <= cg->outer->params.eps && add_pair(cg, pairs[p].a, pairs[p].b, dist) != 0)
			return 1;
	}
	return 0;
}

static int
outer_poll(void *arg)
{
	CosineGrid *cg = arg;
	const TcSink *sink = cg->outer->sink;

	return sink->poll ? sink->poll(sink->arg) : 0;
}

TcStatus
tc_cosine_grid_run(TcJoin *join, TcError *err)
{
	CosineGrid *cg = calloc(1, sizeof(CosineGrid));
	TcJoinParams params = join->params;
	TcPoints	ua,
				ub;
	TcSink		sink;
	TcJoinStats is;
	TcStatus	st;
	double		t0 = tc_now();

	join->cosine_grid = cg;		/* freed by tc_join_destroy, whatever happens */
	if (cg == NULL)
	{
		tc_set_error(err, TC_ERR_NOMEM, "out of memory");
		return TC_ERR_NOMEM;
	}
	cg->outer = join;
	if ((st = units(join, &join->a, 0, &cg->norm_a, &cg->unit_a, err)) != TC_OK)
		return st;
	if (join->self)
	{
		cg->norm_b = cg->norm_a;
		cg->unit_b = cg->unit_a;
	}
	else if ((st = units(join, &join->b, 1, &cg->norm_b, &cg->unit_b, err)) != TC_OK)
		return st;

	ua = (TcPoints) {cg->unit_a, join->a.n, join->a.d, TC_FLOAT8};
	ub = (TcPoints) {cg->unit_b, join->b.n, join->b.d, TC_FLOAT8};
	params.metric = TC_METRIC_EUCLIDEAN;
	params.device = TC_DEVICE_CPU;
	params.include_self = false;
	params.eps = (sqrt(2 * (join->params.eps + 1e-12)) + 2e-12) * (1 + 1e-12);
	cg->inner = tc_join_create(&ua, join->self ? NULL : &ub, &params, err);
	if (cg->inner == NULL)
		return err ? err->status : TC_ERR_INTERNAL;
	join->stats.index_seconds = tc_now() - t0;

	/* a point with itself: cosine dist 0 (the contract's own, computed) */
	if (join->self && join->params.include_self)
		for (int64_t i = 0; i < join->a.n; i++)
		{
			double		dist = cosine_dist(cg, i, i);

			if (dist <= join->params.eps && add_pair(cg, i, i, dist) != 0)
				return TC_STOPPED;
		}
	sink = (TcSink) {recheck_emit, outer_poll, cg};
	st = tc_join_run(cg->inner, &sink, err);
	if (st == TC_OK && flush(cg) != 0)
		st = TC_STOPPED;
	tc_join_get_stats(cg->inner, &is);
	join->stats.method = is.method;
	join->stats.filter = "euclidean on unit vectors";
	join->stats.threads = is.threads;
	join->stats.grid_dims = is.grid_dims;
	for (int i = 0; i < 8; i++)
		join->stats.grid_dim_ids[i] = is.grid_dim_ids[i];
	join->stats.cells = is.cells;
	join->stats.candidates = is.candidates;
	join->stats.rechecked = cg->candidates;
	join->stats.index_seconds += is.index_seconds;
	join->stats.join_seconds = is.join_seconds;
	return st;
}
