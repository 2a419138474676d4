/*
 * test_plan.c
 *		The grid plan's parts against naive references: the extent fold
 *		(every type, width and range), the cost sample's hits (one set and
 *		two), and the plan itself the same whatever the thread count.
 */
#include "test_harness.h"

#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

/* n x d random points of a type, some negative, a few of a huge magnitude. */
static void *
random_points(Rng *r, int64_t n, int d, TcElemType type)
{
	void	   *x = malloc((size_t) (n > 0 ? n : 1) * (size_t) d * (size_t) type);

	for (int64_t i = 0; x != NULL && i < n * d; i++)
	{
		double		v = (rng_uniform(r) - 0.5) * 200.0;

		if (rng_below(r, 50) == 0)
			v *= 1e30;
		if (type == TC_FLOAT4)
			((float *) x)[i] = (float) v;
		else
			((double *) x)[i] = v;
	}
	return x;
}

static void
extent_cases(Rng *r)
{
	static const int widths[] = {1, 2, 3, 4, 5, 9, 64};

	case_begin("plan: the extent fold against a naive min and max");
	for (int rep = 0; rep < 40; rep++)
		for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++)
			for (int ti = 0; ti < 2; ti++)
			{
				const int	d = widths[w];
				const TcElemType type = ti == 0 ? TC_FLOAT4 : TC_FLOAT8;
				int64_t		n = (int64_t) rng_below(r, 300);
				TcPoints	p = {0};
				int64_t		lo = n > 0 ? (int64_t) rng_below(r, (uint64_t) n) : 0;
				int64_t		hi = lo + (int64_t) rng_below(r, (uint64_t) (n - lo + 1));
				bool		first = rng_below(r, 2) == 0;
				double		mn[64],
							mx[64],
							want_mn[64],
							want_mx[64];

				p.data = random_points(r, n, d, type);
				p.n = n;
				p.d = d;
				p.type = type;
				/* folded into what is there already, or started by the range's first row */
				for (int j = 0; j < d; j++)
				{
					mn[j] = want_mn[j] = first ? 0.0 : (rng_uniform(r) - 0.5) * 100.0;
					mx[j] = want_mx[j] = first ? 0.0 : mn[j] + rng_uniform(r) * 10.0;
				}
				for (int64_t i = lo; i < hi; i++)
					for (int j = 0; j < d; j++)
					{
						double		v = tc_coord(&p, i, j);

						if ((first && i == lo) || v < want_mn[j])
							want_mn[j] = v;
						if ((first && i == lo) || v > want_mx[j])
							want_mx[j] = v;
					}
				tc_extent_fold(&p, lo, hi, first, mn, mx);
				for (int j = 0; j < d; j++)
					CHECK(mn[j] == want_mn[j] && mx[j] == want_mx[j],
						  "%s d %d rows [%lld, %lld) of %lld, first %d, dim %d: [%g, %g], want [%g, %g]",
						  type_name(type), d, (long long) lo, (long long) hi, (long long) n, first, j,
						  mn[j], mx[j], want_mn[j], want_mx[j]);
				free((void *) p.data);
			}
	case_end();
}

static void
hits_cases(Rng *r)
{
	case_begin("plan: the cost sample's hits against every pair walked");
	for (int rep = 0; rep < 300; rep++)
	{
		const int	kmax = 1 + (int) rng_below(r, TC_GRID_MAX_DIMS);
		const bool	self = rng_below(r, 2) == 0;
		const int64_t ma = (int64_t) rng_below(r, 200);
		const int64_t mb = self ? ma : (int64_t) rng_below(r, 200);
		/* few cells a dimension: many pairs within one, at every depth */
		const int64_t span = 1 + (int64_t) rng_below(r, rng_below(r, 2) == 0 ? 6 : 1000);
		int64_t    *cca = malloc(sizeof(int64_t) * (size_t) (ma * kmax + 1));
		int64_t    *ccb = self ? cca : malloc(sizeof(int64_t) * (size_t) (mb * kmax + 1));
		double		hits[TC_GRID_MAX_DIMS + 1] = {0},
					want[TC_GRID_MAX_DIMS + 1] = {0};

		for (int64_t i = 0; i < ma * kmax; i++)
			cca[i] = (int64_t) rng_below(r, (uint64_t) span);
		for (int64_t i = 0; !self && i < mb * kmax; i++)
			ccb[i] = (int64_t) rng_below(r, (uint64_t) span);
		for (int64_t i = 0; i < ma; i++)
			for (int64_t l = self ? i + 1 : 0; l < mb; l++)
			{
				int			depth = 0;

				while (depth < kmax && llabs(cca[i * kmax + depth] - ccb[l * kmax + depth]) <= 1)
					depth++;
				want[depth] += 1;
			}
		CHECK(tc_grid_sample_hits(cca, ma, ccb, mb, kmax, self, hits), "out of memory");
		for (int k = 0; k <= kmax; k++)
			CHECK(hits[k] == want[k], "%s, %lld x %lld, kmax %d, span %lld: hits[%d] %.0f, want %.0f",
				  self ? "one set" : "two sets", (long long) ma, (long long) mb, kmax,
				  (long long) span, k, hits[k], want[k]);
		free(cca);
		if (!self)
			free(ccb);
	}
	case_end();
}

/* The plan of a against b (NULL: a self-join) on a number of threads. */
static bool
plan_on(const TcPoints *a, const TcPoints *b, double eps, int threads, TcGridPlan *out)
{
	TcJoinParams params = make_params(eps, TC_METHOD_GRID, threads, false);
	TcError		err;
	TcJoin	   *j = tc_join_create(a, b, &params, &err);
	bool		ok = j != NULL && tc_grid_plan(j, false, out, &err) == TC_OK;

	tc_join_destroy(j);
	return ok;
}

static bool
same_plan(const TcGridPlan *x, const TcGridPlan *y)
{
	if (x->k != y->k || x->kmax != y->kmax)
		return false;
	for (int j = 0; j < x->kmax; j++)
		if (x->dims[j] != y->dims[j] || x->lo[j] != y->lo[j] || x->w[j] != y->w[j] ||
			x->ncell[j] != y->ncell[j])
			return false;
	for (int k = 0; k <= x->kmax; k++)
		if (x->cost_k[k] != y->cost_k[k] || x->cand_k[k] != y->cand_k[k])
			return false;
	return true;
}

static void
threads_cases(Rng *r)
{
	/* large enough that the extent is read by helpers, in more than one round */
	const int64_t n = g_quick ? 300000 : 1200000;

	for (int ti = 0; ti < 2; ti++)
	{
		const TcElemType type = ti == 0 ? TC_FLOAT4 : TC_FLOAT8;
		TcPoints	a = {0},
					b = {0};
		TcGridPlan	one,
					many;

		case_begin("plan: %s, %lld x 3 points, the same plan on 1, 2, 3 and 16 threads (or the CPUs)",
				   type_name(type), (long long) n);
		a.data = random_points(r, n, 3, type);
		a.n = n;
		a.d = 3;
		a.type = type;
		b.data = random_points(r, n / 3, 3, type);
		b.n = n / 3;
		b.d = 3;
		b.type = type;
		CHECK(plan_on(&a, NULL, 0.5, 1, &one), "plan on one thread");
		for (int t = 2; t <= 16; t += t < 3 ? 1 : 13)
		{
			CHECK(plan_on(&a, NULL, 0.5, t, &many) && same_plan(&one, &many),
				  "one set: the plan on %d threads differs from one thread's", t);
		}
		CHECK(plan_on(&a, &b, 0.5, 1, &one), "two sets, plan on one thread");
		CHECK(plan_on(&a, &b, 0.5, 16, &many) && same_plan(&one, &many),
			  "two sets: the plan on 16 threads differs from one thread's");
		free((void *) a.data);
		free((void *) b.data);
		case_end();
	}
}

void
test_plan(void)
{
	Rng			r;

	rng_seed(&r, mix_seed(g_fresh_seed, 0x9a1a));
	extent_cases(&r);
	hits_cases(&r);
	threads_cases(&r);
}
