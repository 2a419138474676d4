/*
 * cosine_grid.c
 *		Cosine in few dimensions through the Euclidean grid: the grid join
 *		of the unit vectors, with a threshold proven to keep every pair the
 *		cosine contract returns, then the contract's exact formula for each
 *		pair it yields.
 *
 * For points within the dot-product metrics' range (distance.h: every
 * nonzero coordinate of magnitude in [2^-240, 2^240], so that no square,
 * product or sum overflows or underflows, nor na nb), the Euclidean join of
 * the computed unit vectors at tc_cosine_unit_eps(eps, d) returns every
 * pair whose cosine dist is within eps (distance.h has the proof), and the
 * exact formula decides each.  The inner join chooses its device as any
 * Euclidean self-join does (tcjoin.device applies to it).
 */
#include <math.h>
#include <stdlib.h>

#include "distance.h"
#include "engine_int.h"

/* method grid's reach (beyond it the grid prunes nothing), and auto's below it */
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

/* Whether the join takes this path, from its shape alone (the data's range is checked as it runs). */
bool
tc_cosine_grid_applies(const TcJoin *join)
{
	if (join->params.metric != TC_METRIC_COSINE || join->a.n == 0 ||
		join->params.method == TC_METHOD_BRUTE || join->a.d > TC_COSINE_GRID_PROOF_DIMS)
		return false;
	return join->params.method == TC_METHOD_GRID ||
		(join->a.d <= TC_COSINE_GRID_MAX_DIMS && join->params.eps <= TC_COSINE_GRID_MAX_EPS);
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

/* The unit vectors of p (each coordinate over the rounded root of its squared norm), polling. */
static TcStatus
units(TcJoin *join, const TcPoints *p, const double *norm, double **unit, TcError *err)
{
	const int64_t rows = tc_check_rows(p->d);

	*unit = malloc(sizeof(double) * (size_t) p->n * (size_t) p->d);
	if (*unit == NULL)
	{
		tc_set_error(err, TC_ERR_NOMEM, "out of memory");
		return TC_ERR_NOMEM;
	}
	for (int64_t i = 0; i < p->n; i++)
	{
		double		r = sqrt(norm[i]);

		if (i % rows == 0 && !tc_poll(join))
			return TC_STOPPED;
		for (int k = 0; k < p->d; k++)
			(*unit)[i * p->d + k] = tc_coord(p, i, k) / r;
	}
	return TC_OK;
}

/* The contract's cosine dist of a's i and b's j. */
static double
cosine_dist(const CosineGrid *cg, int64_t i, int64_t j)
{
	const TcJoin *join = cg->outer;

	return tc_cosine_dist(tc_point_dot(&join->a, i, &join->b, j), cg->norm_a[i], cg->norm_b[j]);
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
tc_cosine_grid_run(TcJoin *join, bool *ran, TcError *err)
{
	CosineGrid *cg;
	TcJoinParams params = join->params;
	TcPoints	ua,
				ub;
	TcSink		sink;
	TcJoinStats is;
	TcStatus	st;
	bool		stopped = false;
	double		t0 = tc_now();

	/* outside the proof's range: not run, brute force decides every pair */
	*ran = false;
	if (!tc_dot_range_ok(join, &join->a, &stopped) ||
		(!join->self && !tc_dot_range_ok(join, &join->b, &stopped)))
		return stopped ? TC_STOPPED : TC_OK;
	*ran = true;
	cg = join->cosine_grid = calloc(1, sizeof(CosineGrid));	/* freed by tc_join_destroy */
	if (cg == NULL)
	{
		tc_set_error(err, TC_ERR_NOMEM, "out of memory");
		return TC_ERR_NOMEM;
	}
	cg->outer = join;
	if ((st = tc_squared_norms(join, &join->a, 0, &cg->norm_a, err)) != TC_OK ||
		(st = units(join, &join->a, cg->norm_a, &cg->unit_a, err)) != TC_OK)
		return st;
	if (join->self)
	{
		cg->norm_b = cg->norm_a;
		cg->unit_b = cg->unit_a;
	}
	else if ((st = tc_squared_norms(join, &join->b, 1, &cg->norm_b, err)) != TC_OK ||
			 (st = units(join, &join->b, cg->norm_b, &cg->unit_b, err)) != TC_OK)
		return st;

	ua = (TcPoints) {cg->unit_a, join->a.n, join->a.d, TC_FLOAT8};
	ub = (TcPoints) {cg->unit_b, join->b.n, join->b.d, TC_FLOAT8};
	params.metric = TC_METRIC_EUCLIDEAN;
	params.include_self = false;
	params.eps = tc_cosine_unit_eps(join->params.eps, join->a.d);
	cg->inner = tc_join_create(&ua, join->self ? NULL : &ub, &params, err);
	if (cg->inner == NULL)
		return err ? err->status : TC_ERR_INTERNAL;
	join->stats.index_seconds = tc_now() - t0;

	/* a point with itself: cosine dist 0 (the contract's own, computed) */
	if (join->self && join->params.include_self)
		for (int64_t i = 0; i < join->a.n; i++)
		{
			double		dist = tc_self_dist(join, i);

			if (dist <= join->params.eps && add_pair(cg, i, i, dist) != 0)
				return TC_STOPPED;
		}
	sink = (TcSink) {recheck_emit, outer_poll, cg, 0, NULL, NULL, NULL};
	st = tc_join_run(cg->inner, &sink, err);
	if (st == TC_OK && flush(cg) != 0)
		st = TC_STOPPED;
	tc_join_get_stats(cg->inner, &is);
	{
		/* the inner join's device, choice and phases; the outer join's metric, pairs and rechecks */
		const char *metric = join->stats.metric;
		uint64_t	pairs = join->stats.pairs;
		double		index = join->stats.index_seconds;

		join->stats = is;
		join->stats.metric = metric;
		join->stats.pairs = pairs;
		join->stats.filter = "euclidean on unit vectors";
		join->stats.rechecked = cg->candidates;
		join->stats.index_seconds = index + is.index_seconds;
	}
	return st;
}
