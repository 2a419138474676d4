/*
 * test_datasets.c
 *		Self-joins checked against the naive reference on generated data:
 *		eps choices, the data set runner, and the sections built on them
 *		(tiny inputs, every dimension and size, every distribution, and the
 *		randomized sweep from the run's fresh seed).
 */
#include "test_harness.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- eps choices */

const char *const eps_kind_names[EPS_KINDS] = {
	"zero", "boundary", "below-boundary", "tiny", "subnormal", "medium",
	"large", "nearest", "huge", "dbl-max"
};

int
cmp_double(const void *x, const void *y)
{
	double		a = *(const double *) x,
				b = *(const double *) y;

	return (a > b) - (a < b);
}

/*
 * Pick eps values from the data: a boundary pair near the distance that
 * gives each point about ten neighbours, a medium eps between two sampled
 * distances, and fixed extremes.  Returns how many were written.
 */
int
choose_eps(const RefTable *t, Rng *r, EpsChoice *out)
{
	int			count = 0;
	int64_t		n = t->na;
	int64_t		nb = t->nb;
	bool		self = (t->b == NULL);
	size_t		npairs = ref_table_size(t);

	out[count++] = (EpsChoice) {EPS_ZERO, 0.0, -1, -1};
	out[count++] = (EpsChoice) {EPS_TINY, 1e-300, -1, -1};
	out[count++] = (EpsChoice) {EPS_SUBNORMAL, DBL_TRUE_MIN, -1, -1};
	out[count++] = (EpsChoice) {EPS_HUGE, 1e200, -1, -1};
	out[count++] = (EpsChoice) {EPS_MAX, DBL_MAX, -1, -1};
	if (npairs == 0)
		return count;

	enum
	{
	NSAMPLE = 2048};
	double		dist[NSAMPLE];
	int64_t		si[NSAMPLE],
				sj[NSAMPLE];
	int			m = 0;

	for (; m < NSAMPLE && (size_t) m < 4 * npairs; m++)
	{
		int64_t		i = (int64_t) rng_below(r, (uint64_t) n);
		int64_t		j = (int64_t) rng_below(r, (uint64_t) nb);

		if (self && i == j)
			j = (i + 1) % n;
		si[m] = i;
		sj[m] = j;
		dist[m] = ref_table_get(t, i, j);
	}

	double		sorted[NSAMPLE];

	memcpy(sorted, dist, sizeof(double) * (size_t) m);
	qsort(sorted, (size_t) m, sizeof(double), cmp_double);

	double		q = 20.0 / (double) (n > nb ? n : nb);

	if (q > 0.5)
		q = 0.5;
	int			k = (int) (q * m);

	if (k >= m)
		k = m - 1;

	/* Boundary: the sampled pair closest to the target quantile, finite and > 0. */
	double		target = sorted[k];
	int			best = -1;

	for (int s = 0; s < m; s++)
	{
		if (!(dist[s] > 0.0) || isinf(dist[s]))
			continue;
		if (best < 0 || fabs(dist[s] - target) < fabs(dist[best] - target))
			best = s;
	}
	if (best >= 0)
	{
		out[count++] = (EpsChoice) {EPS_BOUND, dist[best], si[best], sj[best]};
		out[count++] = (EpsChoice) {EPS_BELOW, nextafter(dist[best], 0.0),
		si[best], sj[best]};
	}

	/* Medium: halfway between two neighbouring samples, if both finite. */
	int			k2 = k + 1 < m ? k + 1 : k;

	if (isfinite(sorted[k2]))
		out[count++] = (EpsChoice) {EPS_MEDIUM, sorted[k] / 2 + sorted[k2] / 2, -1, -1};

	/*
	 * Nearest: the smallest positive distance from one point.  On lattice
	 * data many pairs lie at exactly this distance, at cell boundaries.
	 */
	{
		int64_t		i = (int64_t) rng_below(r, (uint64_t) n);
		int64_t		bj = -1;
		double		best_d = INFINITY;

		for (int64_t j = 0; j < nb; j++)
		{
			double		dj;

			if (self && j == i)
				continue;
			dj = ref_table_get(t, i, j);
			if (dj > 0.0 && dj < best_d)
			{
				best_d = dj;
				bj = j;
			}
		}
		if (bj >= 0 && isfinite(best_d))
			out[count++] = (EpsChoice) {EPS_NEAREST, best_d, i, bj};
	}

	/* Large: about 30 % of all pairs. */
	int			k3 = (int) (0.3 * m);

	if (isfinite(sorted[k3]) && sorted[k3] > 0.0)
		out[count++] = (EpsChoice) {EPS_LARGE, sorted[k3], -1, -1};
	return count;
}

/* ------------------------------------------------------ data set runner */

/* Result sizes above which fewer runs are made; see test_dataset. */
#define MANY_PAIRS	50000
#define BIG_RESULT	300000

/*
 * Generate a data set, compute all pairwise distances once, then check the
 * engine for each chosen eps and method.  Threads and include_self rotate
 * across cases so that every combination is met somewhere in the suite.
 * kinds_mask selects eps kinds (bit per EpsKind); methods: all three unless
 * the expected result is big.
 */
void
test_dataset(const DataSpec *ds, unsigned kinds_mask)
{
	Rng			r;
	TcPoints	pts;
	RefTable	table;
	EpsChoice	eps[EPS_KINDS + 2];
	int			neps;
	PairVec		want = {0},
				want_self = {0};
	static const TcMethod methods[] = {TC_METHOD_GRID, TC_METHOD_BRUTE, TC_METHOD_AUTO};
	bool		big_done = false;
	double		t_start = now_seconds();

	rng_seed(&r, ds->seed);
	points_generate(&pts, ds->dist, ds->n, ds->d, ds->type, &r);
	ref_table_build(&table, &pts, NULL);
	neps = choose_eps(&table, &r, eps);

	for (int e = 0; e < neps; e++)
	{
		if (!(kinds_mask & (1u << eps[e].kind)))
			continue;

		ref_table_pairs(&table, eps[e].eps, false, &want);
		with_self_pairs(&want, pts.n, &want_self);

		/* Sanity of the reference itself at the boundary. */
		if (eps[e].kind == EPS_BOUND || eps[e].kind == EPS_BELOW)
		{
			double		bd = ref_table_get(&table, eps[e].bi, eps[e].bj);
			bool		in = bd <= eps[e].eps;

			if (in != (eps[e].kind == EPS_BOUND))
			{
				printf("FAIL internal: boundary pair misclassified by the reference\n");
				g_failed++;
			}
		}

		int			nmethods = 3;
		int			first = 0;

		/*
		 * Near-complete results say little about the index and cost much:
		 * one method each (rotating), and at most one huge one per data set.
		 */
		if (want.n > BIG_RESULT)
		{
			if (big_done)
				continue;
			big_done = true;
		}
		if (want.n > MANY_PAIRS)
		{
			nmethods = 1;
			first = (int) (g_rotate % 3);
		}
		for (int mi = 0; mi < nmethods; mi++)
		{
			TcMethod	method = methods[(first + mi) % 3];
			unsigned	rot = g_rotate++;
			int			threads = thread_choices[rot % 4];
			bool		include_self = ((rot / 4) % 2) == 1;
			TcJoinParams params = make_params(eps[e].eps, method, threads, include_self);

			if (eps[e].bi >= 0)
				case_begin("%s dist=%s n=%" PRId64 " d=%d %s eps=%s %.17g (%a) of pair (%" PRId64 ",%" PRId64 ") method=%s threads=%d self=%d data_seed=0x%016" PRIx64,
						   ds->section, dist_name(ds->dist), ds->n, ds->d,
						   type_name(ds->type), eps_kind_names[eps[e].kind],
						   eps[e].eps, eps[e].eps, eps[e].bi, eps[e].bj,
						   method_name(method), threads, include_self, ds->seed);
			else
				case_begin("%s dist=%s n=%" PRId64 " d=%d %s eps=%s %.17g (%a) method=%s threads=%d self=%d data_seed=0x%016" PRIx64,
						   ds->section, dist_name(ds->dist), ds->n, ds->d,
						   type_name(ds->type), eps_kind_names[eps[e].kind],
						   eps[e].eps, eps[e].eps,
						   method_name(method), threads, include_self, ds->seed);
			join_case(&pts, NULL, &params, include_self ? &want_self : &want);
			case_end();
		}
	}
	pairvec_free(&want);
	pairvec_free(&want_self);
	ref_table_free(&table);
	points_free(&pts);
	if (g_verbose && now_seconds() - t_start > 0.5)
		printf("#   slow data set %s dist=%s n=%" PRId64 " d=%d %s: %.2f s\n",
			   ds->section, dist_name(ds->dist), ds->n, ds->d,
			   type_name(ds->type), now_seconds() - t_start);
}

/* ----------------------------------------------------------- the sections */

/* n = 0, 1, 2 spelled out, independent of the generic machinery. */
void
test_tiny_inputs(void)
{
	double		coords[4] = {0.25, -1.0, 3.25, 3.0};	/* dist 5 exactly */

	for (int m = TC_METHOD_AUTO; m <= TC_METHOD_BRUTE; m++)
		for (int self = 0; self <= 1; self++)
			for (int n = 0; n <= 2; n++)
				for (int ti = 0; ti < 4; ti++)
				{
					TcPoints	p = {coords, n, 2, TC_FLOAT8};
					TcJoinParams params = make_params(5.0, (TcMethod) m,
													  thread_choices[ti], self);
					PairVec		want = {0};

					if (self)
						for (int i = 0; i < n; i++)
							pairvec_push(&want, i, i, 0.0);
					if (n == 2)
						pairvec_push(&want, 0, 1, 5.0);
					pairvec_sort(&want, true, n);
					case_begin("tiny input n=%d method=%s threads=%d self=%d",
							   n, method_name((TcMethod) m), thread_choices[ti], self);
					join_case(&p, NULL, &params, &want);
					case_end();
					pairvec_free(&want);
				}
}

/* Every dimension count, every size, both types, plain uniform data. */
void
test_dims_matrix(void)
{
	static const int32_t dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 64, 100, 300};
	static const int64_t sizes[] = {0, 1, 2, 50, 500, 3000};
	uint64_t	idx = 0;

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (size_t ni = 0; ni < sizeof(sizes) / sizeof(sizes[0]); ni++)
			for (int t = 0; t < 2; t++)
			{
				DataSpec	ds = {"[dims]", DIST_UNIFORM, sizes[ni], dims[di],
				t ? TC_FLOAT8 : TC_FLOAT4, mix_seed(FIXED_SEED, idx++)};
				unsigned	kinds = ALL_KINDS;

				if (g_quick && (ds.n > 500 || (dims[di] > 16 && dims[di] != 300)))
					continue;
				if (ds.n == 3000)
				{
					/*
					 * Keep the naive reference and brute force affordable: no
					 * high d, one element type per d, a huge eps only at d = 2.
					 */
					if (ds.d > 16 || (int) (di & 1) != t)
						continue;
					kinds = KIND(EPS_ZERO) | KIND(EPS_BOUND) | KIND(EPS_BELOW) |
						KIND(EPS_MEDIUM) | KIND(EPS_NEAREST) | (ds.d == 2 ? KIND(EPS_HUGE) : 0);
				}
				else if (ds.n == 500 && ds.d > 16)
					kinds = KIND(EPS_ZERO) | KIND(EPS_BOUND) | KIND(EPS_BELOW) |
						KIND(EPS_MEDIUM) | KIND(EPS_NEAREST) | KIND(EPS_HUGE);
				/* Mix in negative coordinates half of the time. */
				if ((idx & 1) == 0)
					ds.dist = DIST_NEGATIVE;
				test_dataset(&ds, kinds);
			}
}

/* Every distribution over a spread of dimensions and sizes. */
void
test_distributions(void)
{
	static const int32_t dims[] = {1, 2, 3, 5, 8, 31, 100};
	static const int64_t sizes[] = {50, 500, 3000};
	uint64_t	idx = 1000000;

	for (int dist = 0; dist < DIST_COUNT; dist++)
		for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
			for (size_t ni = 0; ni < sizeof(sizes) / sizeof(sizes[0]); ni++)
				for (int t = 0; t < 2; t++)
				{
					DataSpec	ds = {"[dist]", (Dist) dist, sizes[ni], dims[di],
					t ? TC_FLOAT8 : TC_FLOAT4, mix_seed(FIXED_SEED, idx++)};
					unsigned	kinds = ALL_KINDS;

					if (g_quick && (ds.n > 500 || ds.d > 8 || ds.d == 1))
						continue;
					if (ds.n == 3000)
					{
						/* Low d only, one element type each. */
						if (ds.d > 3 || (dist + (int) di) % 2 != t)
							continue;
						kinds = KIND(EPS_ZERO) | KIND(EPS_BOUND) | KIND(EPS_BELOW) |
							KIND(EPS_MEDIUM) | KIND(EPS_NEAREST);
					}
					else if (ds.d > 8)
						kinds = KIND(EPS_ZERO) | KIND(EPS_BOUND) | KIND(EPS_BELOW) |
							KIND(EPS_MEDIUM) | KIND(EPS_NEAREST) | KIND(EPS_HUGE);
					test_dataset(&ds, kinds);
				}
}

/* Randomized configurations from the fresh seed: new data on every run. */
void
test_random_sweep(void)
{
	static const int32_t dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 64, 100, 300};
	Rng			r;
	int			ncases = g_quick ? 20 : 120;

	rng_seed(&r, g_fresh_seed);
	for (int c = 0; c < ncases; c++)
	{
		DataSpec	ds;
		int64_t		n;

		switch (rng_below(&r, 4))
		{
			case 0:
				n = (int64_t) rng_below(&r, 4);
				break;
			case 1:
				n = 4 + (int64_t) rng_below(&r, 60);
				break;
			default:
				n = 64 + (int64_t) rng_below(&r, 700);
				break;
		}
		ds.section = "[random]";
		ds.dist = (Dist) rng_below(&r, DIST_COUNT);
		ds.d = dims[rng_below(&r, sizeof(dims) / sizeof(dims[0]))];
		ds.n = n;
		ds.type = (rng_next(&r) & 1) ? TC_FLOAT8 : TC_FLOAT4;
		ds.seed = rng_next(&r);
		/* One or two eps kinds per data set; the methods all run. */
		unsigned	kinds = KIND(rng_below(&r, EPS_KINDS)) | KIND(rng_below(&r, EPS_KINDS));

		g_rotate += (unsigned) rng_below(&r, 8);
		test_dataset(&ds, kinds);
	}
}
