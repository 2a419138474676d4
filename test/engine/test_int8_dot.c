/*
 * test_int8_dot.c
 *		The int8 filter of the dot-product metrics on the CPU
 *		(cpu_dot_filter_lp.c).  Its proof, on any CPU: the plain C form of
 *		the instruction's arithmetic (the same integers) gives, for every
 *		pair, a bound at least the contract's dot product, computed here on
 *		its own; every pair a block rejects is out under the contract, on
 *		data built against the bound (every coordinate half a step off its
 *		integer, the errors of a pair aligned), at large and tiny magnitudes,
 *		d from 1 to 3,001 and n not a multiple of the vector width.  Where
 *		the CPU has AVX-512 VNNI the instructions' verdicts and the plain C
 *		ones are the same.  Then whole joins at eps on a pair's dist and one
 *		ulp either side, through each form, and which filter the dispatch
 *		picks (dot_filter=float32 forces the fallback).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_harness.h"
#include "cpu_filter.h"
#include "engine_int.h"

typedef enum
{
	LP_NORMAL,					/* normal coordinates */
	LP_HALF_STEPS,				/* one coordinate 127, the rest odd halves: half a step off each */
	LP_ALIGNED,					/* near copies of one half-step vector: errors aligned */
	LP_MIXED,					/* magnitudes 2^-50 to 2^50 within a vector */
	LP_SPARSE,					/* mostly zeros, a few large */
	LP_KINDS
} LpKind;

static const char *const kind_names[] = {"normal", "half steps", "aligned errors", "mixed magnitudes", "sparse"};

/* The contract's dot product, in float8, in index order (no FMA: -ffp-contract=off). */
static double
contract_dot(const TcPoints *a, int64_t i, const TcPoints *b, int64_t j)
{
	double		s = 0.0;

	for (int k = 0; k < a->d; k++)
		s += points_get(a, i, k) * points_get(b, j, k);
	return s;
}

static double
contract_dist(TcMetric m, const TcPoints *a, int64_t i, const TcPoints *b, int64_t j)
{
	double		dot = contract_dot(a, i, b, j);
	double		sim;

	if (m == TC_METRIC_INNER_PRODUCT)
		return -dot;
	sim = dot / sqrt(contract_dot(a, i, a, i) * contract_dot(b, j, b, j));
	return 1.0 - (sim > 1.0 ? 1.0 : sim < -1.0 ? -1.0 : sim);
}

/* n points of kind, scaled by scale; float4 values are rounded by points_set. */
static void
lp_points(TcPoints *p, int64_t n, int d, TcElemType type, LpKind kind, double scale, Rng *r)
{
	double	   *base = malloc(sizeof(double) * d);

	points_alloc(p, n, d, type);
	/* the half-step vector every LP_ALIGNED point copies */
	for (int k = 0; k < d; k++)
		base[k] = k == 0 ? 127.0 : (2.0 * (double) rng_below(r, 127) + 1.0) / 2.0 * (rng_below(r, 2) ? 1 : -1);
	for (int64_t i = 0; i < n; i++)
	{
		double		f = ldexp(1.0, (int) rng_below(r, 5)) * (1.0 + rng_uniform(r));

		for (int k = 0; k < d; k++)
		{
			double		v;

			switch (kind)
			{
				case LP_HALF_STEPS:
					v = k == (int) (i % d) ? 127.0 :
						(2.0 * (double) rng_below(r, 127) + 1.0) / 2.0 * (rng_below(r, 2) ? 1 : -1);
					v *= f;
					break;
				case LP_ALIGNED:
					/* the same direction, its errors the same in every copy; a few nudged */
					v = base[k] * f * (i % 3 == 0 ? 1.0 + 1e-7 * rng_normal(r) : 1.0);
					break;
				case LP_MIXED:
					v = (1.0 + rng_uniform(r)) * ldexp(rng_below(r, 2) ? 1 : -1, (int) rng_below(r, 101) - 50);
					break;
				case LP_SPARSE:
					v = rng_below(r, 8) == 0 ? (1.0 + rng_uniform(r)) * 1e3 : 0.0;
					break;
				default:
					/* away from 0, so that the scales keep every coordinate in range */
					v = rng_normal(r);
					v = fabs(v) < 0x1p-10 ? 0x1p-10 : v;
					break;
			}
			points_set(p, i, k, v * scale);
		}
		if (kind == LP_SPARSE)
			points_set(p, i, (int) (i % d), 1.0 * scale);
	}
	free(base);
}

/*
 * The filter built on a (with b, or alone) as the brute force builds it,
 * its portable and (where the CPU has it) its VNNI form: every pair's bound
 * at least the contract's dot, every rejection out under the contract, both
 * forms' verdicts the same.  Returns the pairs rejected.
 */
static int64_t
check_filter(const TcPoints *a, const TcPoints *b, TcMetric m, double eps, bool *built)
{
	const TcPoints *bb = b ? b : a;
	TcJoinParams params = make_params(eps, TC_METHOD_BRUTE, 1, false);
	TcError		err;
	TcJoin	   *join;
	double	   *na = NULL,
			   *nb = NULL;
	TcDotFilterLp *f[2] = {NULL, NULL};
	int			forms = tc_cpu_has_int8_dot() ? 2 : 1;
	int64_t		rejected = 0,
				low = 0;
	uint8_t    *keep[2];

	params.metric = m;
	memset(&err, 0, sizeof(err));
	*built = false;
	join = tc_join_create(a, b, &params, &err);
	CHECK(join != NULL, "tc_join_create: %s", err.message);
	if (join == NULL)
		return 0;
	if (tc_squared_norms(join, &join->a, 0, &na, &err) != TC_OK ||
		(b && tc_squared_norms(join, &join->b, 1, &nb, &err) != TC_OK))
	{
		check_fail("norms: %s", err.message);
		goto done;
	}
	for (int form = 0; form < forms; form++)
		CHECK(tc_dot_filter_lp_build(join, na, b ? nb : na, form == 0, &f[form]) == TC_OK,
			  "build failed");
	*built = f[0] != NULL;
	if (f[0] == NULL)
		goto done;
	/* the bound itself, pair by pair */
	for (int64_t i = 0; i < a->n; i++)
		for (int64_t j = 0; j < bb->n; j++)
		{
			double		U = tc_dot_filter_lp_upper(f[0], i, j);
			double		dot = contract_dot(a, i, bb, j);

			if (!(U >= dot))
			{
				low++;
				if (low <= 3)
					check_fail("pair (%lld, %lld): bound %.17g below the contract's dot %.17g",
							   (long long) i, (long long) j, U, dot);
			}
		}
	/* the blocks' verdicts, in the brute force's shape (columns from multiples of 16) */
	keep[0] = malloc((size_t) a->n * bb->n + 1);
	keep[1] = malloc((size_t) a->n * bb->n + 1);
	for (int form = 0; form < forms; form++)
		for (int64_t i0 = 0; i0 < a->n; i0 += 32)
			for (int64_t j0 = 0; j0 < bb->n; j0 += 48)
			{
				int64_t		i1 = i0 + 32 < a->n ? i0 + 32 : a->n;
				int64_t		j1 = j0 + 48 < bb->n ? j0 + 48 : bb->n;
				uint8_t		blk[32 * 48];

				tc_dot_filter_lp_block(f[form], i0, i1, j0, j1, blk);
				for (int64_t i = i0; i < i1; i++)
					for (int64_t j = j0; j < j1; j++)
						keep[form][i * bb->n + j] = blk[(i - i0) * (j1 - j0) + (j - j0)];
			}
	for (int64_t i = 0; i < a->n; i++)
		for (int64_t j = 0; j < bb->n; j++)
		{
			uint8_t		k = keep[0][i * bb->n + j];

			if (forms == 2 && keep[1][i * bb->n + j] != k)
				check_fail("pair (%lld, %lld): VNNI kept %d, plain C %d", (long long) i,
						   (long long) j, keep[1][i * bb->n + j], k);
			if (!k)
			{
				double		dist = contract_dist(m, a, i, bb, j);

				rejected++;
				if (dist <= eps)
					check_fail("pair (%lld, %lld) rejected, but its dist %.17g is within eps %.17g",
							   (long long) i, (long long) j, dist, eps);
			}
		}
	free(keep[0]);
	free(keep[1]);
done:
	tc_dot_filter_lp_free(f[0]);
	tc_dot_filter_lp_free(f[1]);
	free(na);
	free(nb);
	tc_join_destroy(join);
	return rejected;
}

/*
 * eps: a pair's own dist, moved by ulps ulps: a random pair's, or half the
 * time (and under cosine always, whose filter stops at eps 0.99) the
 * closest pair's.
 */
static double
eps_at_pair(TcMetric m, const TcPoints *a, const TcPoints *b, int ulps, Rng *r)
{
	const TcPoints *bb = b ? b : a;
	int64_t		i = (int64_t) rng_below(r, (uint64_t) a->n);
	int64_t		j = (int64_t) rng_below(r, (uint64_t) bb->n);
	double		eps;

	if (!b && i == j)
		j = (i + 1) % bb->n;
	eps = contract_dist(m, a, i, bb, j);
	if (m == TC_METRIC_COSINE || rng_below(r, 2) == 0)
		for (int64_t x = 0; x < a->n; x++)
			for (int64_t y = b ? 0 : x + 1; y < bb->n; y++)
				eps = fmin(eps, contract_dist(m, a, x, bb, y));
	for (; ulps > 0; ulps--)
		eps = nextafter(eps, INFINITY);
	for (; ulps < 0; ulps++)
		eps = nextafter(eps, -INFINITY);
	return m == TC_METRIC_COSINE && eps < 0 ? 0 : eps;
}

static void
bound_cases(Rng *r)
{
	static const int dims[] = {1, 2, 5, 47, 48, 63, 65, 130, 383, 385, 1000, 3001};
	static const double scales[] = {1.0, 0x1p40, 0x1p-45, 0x1p-20, 3e10};

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (int kind = 0; kind < LP_KINDS; kind++)
		{
			int			d = dims[di];
			int64_t		n = d >= 1000 ? 21 : 45;
			TcMetric	m = rng_below(r, 2) ? TC_METRIC_COSINE : TC_METRIC_INNER_PRODUCT;
			TcElemType	type = rng_below(r, 2) ? TC_FLOAT4 : TC_FLOAT8;
			double		scale = scales[rng_below(r, 5)];
			bool		two = rng_below(r, 3) == 0;
			TcPoints	a,
						b;
			bool		built;
			int			ulps = (int) rng_below(r, 3) - 1;
			double		eps;
			int64_t		rej;

			if (kind == LP_MIXED)
				scale = 1.0;
			lp_points(&a, n, d, type, (LpKind) kind, scale, r);
			if (two)
				lp_points(&b, 19, d, type, (LpKind) kind, scale, r);
			eps = eps_at_pair(m, &a, two ? &b : NULL, ulps, r);
			case_begin("int8-dot: bound, %s, %s, %s %lld%s x %d, scale %g, eps %.17g (a pair's %+d ulp)",
					   m == TC_METRIC_COSINE ? "cosine" : "inner product", kind_names[kind],
					   type_name(type), (long long) n, two ? " with 19" : "", d, scale, eps, ulps);
			rej = check_filter(&a, two ? &b : NULL, m, eps, &built);
			/* cosine past eps 0.99 is the float32 filter's */
			CHECK(built == (m == TC_METRIC_INNER_PRODUCT || eps <= 0.99),
				  "the filter was%s built", built ? "" : " not");
			(void) rej;
			case_end();
			points_free(&a);
			if (two)
				points_free(&b);
		}
}

/* The filter is not vacuous: on spread unit-like data it drops nearly every pair. */
static void
tightness_case(Rng *r)
{
	TcPoints	a;
	bool		built;
	int64_t		rej;

	lp_points(&a, 200, 384, TC_FLOAT4, LP_NORMAL, 1.0, r);
	case_begin("int8-dot: 200 x 384 normal points, cosine eps 0.02: the filter drops most pairs");
	rej = check_filter(&a, NULL, TC_METRIC_COSINE, 0.02, &built);
	CHECK(built && rej >= 200 * 200 * 95 / 100, "rejected %lld of %d", (long long) rej, 200 * 200);
	case_end();
	points_free(&a);
}

/* Past the range (2^60) and past d 16,384 no filter is built. */
static void
range_cases(Rng *r)
{
	TcPoints	a;
	bool		built;

	lp_points(&a, 9, 64, TC_FLOAT8, LP_NORMAL, 0x1p60, r);
	case_begin("int8-dot: coordinates near 2^60, past the range: no filter");
	check_filter(&a, NULL, TC_METRIC_INNER_PRODUCT, 1.0, &built);
	CHECK(!built, "built past its range");
	case_end();
	points_free(&a);
	lp_points(&a, 3, 16385, TC_FLOAT4, LP_NORMAL, 1.0, r);
	case_begin("int8-dot: 16,385 dimensions, past the int32 bound: no filter");
	check_filter(&a, NULL, TC_METRIC_INNER_PRODUCT, 1.0, &built);
	CHECK(!built, "built past 16,384 dimensions");
	case_end();
	points_free(&a);
}

/* A whole join through the given filter, against the contract; the filter stats says ran. */
static void
join_through(const TcPoints *a, const TcPoints *b, TcMetric m, double eps, TcDotFilterKind kind,
			 const char *want_filter, int threads)
{
	const TcPoints *bb = b ? b : a;
	TcJoinParams params = make_params(eps, TC_METHOD_BRUTE, threads, false);
	Collector	c;
	TcSink		sink = {collect_emit, collect_poll, &c, 0, NULL, NULL, NULL};
	TcJoinStats st;
	TcError		err;
	TcJoin	   *join;
	PairVec		want;

	params.metric = m;
	params.overrides.dot_filter = kind;
	memset(&want, 0, sizeof(want));
	for (int64_t i = 0; i < a->n; i++)
		for (int64_t j = b ? 0 : i + 1; j < bb->n; j++)
		{
			double		dist = contract_dist(m, a, i, bb, j);

			if (dist <= eps)
				pairvec_push(&want, i, j, dist);
		}
	pairvec_sort(&want, b == NULL, a->n);
	join_case(a, b, &params, &want);
	pairvec_free(&want);
	/* and which filter ran */
	memset(&c, 0, sizeof(c));
	c.owner = pthread_self();
	memset(&err, 0, sizeof(err));
	join = tc_join_create(a, b, &params, &err);
	if (join && tc_join_run(join, &sink, &err) == TC_OK)
	{
		memset(&st, 0, sizeof(st));
		tc_join_get_stats(join, &st);
		CHECK(st.filter && strcmp(st.filter, want_filter) == 0, "filter %s, want %s",
			  st.filter ? st.filter : "NULL", want_filter);
	}
	else
		check_fail("join failed: %s", err.message);
	tc_join_destroy(join);
	pairvec_free(&c.pairs);
}

static void
join_cases(Rng *r)
{
	const char *hw = tc_cpu_has_int8_dot() ? "int8" : "float32";
	static const int dims[] = {48, 49, 100, 384, 777};

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (int kind = 0; kind < LP_KINDS; kind++)
			for (int ulps = -1; ulps <= 1; ulps++)
			{
				int			d = dims[di];
				TcMetric	m = (kind + ulps) % 2 ? TC_METRIC_COSINE : TC_METRIC_INNER_PRODUCT;
				bool		two = rng_below(r, 3) == 0;
				TcPoints	a,
							b;
				double		eps;
				TcDotFilterKind fk = rng_below(r, 2) ? TC_DOT_FILTER_AUTO : TC_DOT_FILTER_INT8_PORTABLE;
				const char *want = fk == TC_DOT_FILTER_AUTO ? hw : "int8 (portable)";

				lp_points(&a, 61, d, rng_below(r, 2) ? TC_FLOAT4 : TC_FLOAT8, (LpKind) kind,
						  kind == LP_MIXED ? 1.0 : 0x1p-30, r);
				if (two)
					lp_points(&b, 35, d, a.type, (LpKind) kind, kind == LP_MIXED ? 1.0 : 0x1p-30, r);
				eps = eps_at_pair(m, &a, two ? &b : NULL, ulps, r);
				if (m == TC_METRIC_COSINE && eps > 0.99)
					want = "float32";
				case_begin("int8-dot: join, %s, %s, %d%s x %d, eps %.17g (a pair's %+d ulp), %s",
						   m == TC_METRIC_COSINE ? "cosine" : "inner product", kind_names[kind], 61,
						   two ? " with 35" : "", d, eps, ulps, want);
				join_through(&a, two ? &b : NULL, m, eps, fk, want, thread_choices[rng_below(r, 4)]);
				case_end();
				points_free(&a);
				if (two)
					points_free(&b);
			}
}

/* The dispatch: forced fallback, the CPU's choice, cosine past 0.99, the range. */
static void
dispatch_cases(Rng *r)
{
	const char *hw = tc_cpu_has_int8_dot() ? "int8" : "float32";
	TcPoints	a;

	lp_points(&a, 50, 64, TC_FLOAT4, LP_NORMAL, 1.0, r);
	case_begin("int8-dot: dot_filter=float32 forces the float32 filter");
	join_through(&a, NULL, TC_METRIC_COSINE, 0.5, TC_DOT_FILTER_FLOAT32, "float32", 2);
	case_end();
	case_begin("int8-dot: auto picks %s on this CPU", hw);
	join_through(&a, NULL, TC_METRIC_INNER_PRODUCT, 1.0, TC_DOT_FILTER_AUTO, hw, 2);
	case_end();
	case_begin("int8-dot: dot_filter=int8 picks %s on this CPU", hw);
	join_through(&a, NULL, TC_METRIC_COSINE, 0.3, TC_DOT_FILTER_INT8, hw, 2);
	case_end();
	case_begin("int8-dot: cosine past eps 0.99 takes the float32 filter");
	join_through(&a, NULL, TC_METRIC_COSINE, 0.995, TC_DOT_FILTER_INT8_PORTABLE, "float32", 2);
	case_end();
	case_begin("int8-dot: below 48 dimensions no filter");
	points_free(&a);
	lp_points(&a, 50, 47, TC_FLOAT4, LP_NORMAL, 1.0, r);
	join_through(&a, NULL, TC_METRIC_INNER_PRODUCT, 1.0, TC_DOT_FILTER_INT8_PORTABLE, "none", 2);
	case_end();
	points_free(&a);
}

void
test_int8_dot(void)
{
	Rng			r;

	rng_seed(&r, mix_seed(g_fresh_seed, 0x696e7438));
	bound_cases(&r);
	tightness_case(&r);
	range_cases(&r);
	join_cases(&r);
	dispatch_cases(&r);
}
