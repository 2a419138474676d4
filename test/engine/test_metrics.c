/*
 * test_metrics.c
 *		The dot-product metrics (cosine, inner product) against a scalar
 *		reference written from the README's contract, on fresh random data:
 *		every pair and its dist bit for bit, with eps at a pair's own dist
 *		and at the next float8 below it; self-joins (include_self too) and
 *		two sets, float4 and float8, threads; and the metrics' errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_harness.h"

static const char *
metric_name(TcMetric m)
{
	return m == TC_METRIC_COSINE ? "cosine" : m == TC_METRIC_INNER_PRODUCT ? "inner_product" : "euclidean";
}

/*
 * The contract, one pair at a time: the dot product and both squared norms
 * summed in float8 in index order; inner product -dot; cosine
 * 1 - clamp(dot / sqrt(na nb), -1, 1).
 */
double
metric_ref(TcMetric m, const TcPoints *a, int64_t i, const TcPoints *b, int64_t j)
{
	double		dot = 0.0,
				na = 0.0,
				nb = 0.0,
				sim;

	for (int k = 0; k < a->d; k++)
		dot += points_get(a, i, k) * points_get(b, j, k);
	if (m == TC_METRIC_INNER_PRODUCT)
		return -dot;
	for (int k = 0; k < a->d; k++)
		na += points_get(a, i, k) * points_get(a, i, k);
	for (int k = 0; k < b->d; k++)
		nb += points_get(b, j, k) * points_get(b, j, k);
	sim = dot / sqrt(na * nb);
	sim = sim > 1.0 ? 1.0 : sim < -1.0 ? -1.0 : sim;
	return 1.0 - sim;
}

static void
metric_ref_join(TcMetric m, const TcPoints *a, const TcPoints *b, double eps,
				bool include_self, PairVec *out)
{
	const TcPoints *bb = b ? b : a;

	memset(out, 0, sizeof(*out));
	for (int64_t i = 0; i < a->n; i++)
		for (int64_t j = b ? 0 : i; j < bb->n; j++)
		{
			double		dist;

			if (!b && j == i && !include_self)
				continue;
			dist = metric_ref(m, a, i, bb, j);
			if (dist <= eps)
				pairvec_push(out, i, j, dist);
		}
	pairvec_sort(out, b == NULL, a->n);
}

/*
 * Points with near-duplicates planted: normal coordinates, and every
 * fourth point a small perturbation of an earlier one, so that some pairs
 * lie close under every metric.
 */
/* Coordinates' scale: the float32 filter's range ends at 2^-56 and 2^56. */
static double g_scale = 1.0;

static void
metric_points(TcPoints *p, int64_t n, int d, TcElemType type, Rng *r)
{
	points_alloc(p, n, d, type);
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		src = i >= 4 && i % 4 == 0 ? (int64_t) rng_below(r, (uint64_t) i) : -1;

		for (int k = 0; k < d; k++)
		{
			double		v = src >= 0 ? points_get(p, src, k) + 1e-3 * g_scale * rng_normal(r) : rng_normal(r);

			points_set(p, i, k, src >= 0 ? v : v * g_scale);
		}
	}
}

/* eps: the dist of a random pair (so that a pair lies on it), or the next float8 below it */
static double
pick_eps(TcMetric m, const TcPoints *a, const TcPoints *b, Rng *r, bool below)
{
	const TcPoints *bb = b ? b : a;
	int64_t		i = (int64_t) rng_below(r, (uint64_t) a->n);
	int64_t		j = (int64_t) rng_below(r, (uint64_t) bb->n);
	double		eps;

	if (!b && j == i)
		j = (i + 1) % a->n;
	eps = metric_ref(m, a, i, bb, j);
	/* or, half the time, one of the closest pairs' (cosine's grid takes small eps) */
	if (rng_below(r, 2) == 0 && a->n * bb->n <= 200000)
	{
		double		best[6];
		int			nb = 0;

		for (int64_t x = 0; x < a->n; x++)
			for (int64_t y = b ? 0 : x + 1; y < bb->n; y++)
			{
				double		v = metric_ref(m, a, x, bb, y);
				int			at = nb < 6 ? nb++ : 5;

				if (at == 5 && nb == 6 && v >= best[5])
					continue;
				best[at] = v;
				for (; at > 0 && best[at] < best[at - 1]; at--)
				{
					double		t = best[at];

					best[at] = best[at - 1];
					best[at - 1] = t;
				}
			}
		if (nb > 0)
			eps = best[nb - 1];
	}
	/* cosine's eps must not be negative; 1 - sim is never below 0 */
	return below ? nextafter(eps, -INFINITY) : eps;
}

static void
metric_case(TcMetric m, int64_t n, int64_t nb, int d, TcElemType type, bool self,
			bool include_self, bool below, int threads, Rng *r)
{
	TcPoints	a,
				b;
	TcJoinParams params;
	PairVec		want;
	double		eps;

	metric_points(&a, n, d, type, r);
	if (!self)
		metric_points(&b, nb, d, type, r);
	eps = pick_eps(m, &a, self ? NULL : &b, r, below);
	if (m == TC_METRIC_COSINE && eps < 0)
		eps = 0;
	case_begin("metrics: %s, %s %lld%s%lld x %d, eps %.17g%s%s, %d threads", metric_name(m),
			   type_name(type), (long long) n, self ? "" : " with ", self ? 0LL : (long long) nb,
			   d, eps, below ? " (a pair's dist less one ulp)" : " (a pair's dist)",
			   include_self ? ", include_self" : "", threads);
	params = make_params(eps, g_rotate % 3 == 1 ? TC_METHOD_BRUTE :
						 g_rotate % 3 == 2 && m == TC_METRIC_COSINE && d <= 64 &&
						 g_scale <= 1.0 ? TC_METHOD_GRID : TC_METHOD_AUTO,
						 threads, self && include_self);
	params.metric = m;
	g_rotate++;
	metric_ref_join(m, &a, self ? NULL : &b, eps, self && include_self, &want);
	join_case(&a, self ? NULL : &b, &params, &want);
	case_end();
	pairvec_free(&want);
	points_free(&a);
	if (!self)
		points_free(&b);
}

/* A join that must fail at create or run, with a message containing want. */
static void
metric_error_case(const char *label, const TcPoints *a, const TcPoints *b,
				  const TcJoinParams *params, const char *want, int64_t want_point)
{
	TcError		err;
	TcJoin	   *join;
	TcStatus	st = TC_OK;
	Collector	c;
	TcSink		sink = {collect_emit, collect_poll, &c, 0, NULL, NULL, NULL};

	case_begin("metrics: %s", label);
	memset(&c, 0, sizeof(c));
	c.owner = pthread_self();
	memset(&err, 0, sizeof(err));
	join = tc_join_create(a, b, params, &err);
	if (join != NULL)
		st = tc_join_run(join, &sink, &err);
	CHECK(join == NULL || st != TC_OK, "no error");
	CHECK(strstr(err.message, want) != NULL, "message \"%s\", want \"%s\"", err.message, want);
	if (want_point >= 0)
		CHECK(err.point == want_point, "point %lld, want %lld", (long long) err.point,
			  (long long) want_point);
	tc_join_destroy(join);
	pairvec_free(&c.pairs);
	case_end();
}

static void
metric_errors(void)
{
	TcPoints	p;
	TcJoinParams params = make_params(0.1, TC_METHOD_AUTO, 2, false);
	Rng			r;

	rng_seed(&r, 7);
	metric_points(&p, 40, 5, TC_FLOAT8, &r);

	params.metric = TC_METRIC_COSINE;
	params.eps = -0.1;
	metric_error_case("cosine refuses a negative eps", &p, NULL, &params, "non-negative", -1);
	params.metric = TC_METRIC_EUCLIDEAN;
	metric_error_case("euclidean refuses a negative eps", &p, NULL, &params, "non-negative", -1);
	params.metric = TC_METRIC_COSINE;
	params.eps = INFINITY;
	metric_error_case("an infinite eps", &p, NULL, &params, "eps must be finite", -1);
	params.eps = 0.1;
	params.method = TC_METHOD_GRID;
	params.metric = TC_METRIC_INNER_PRODUCT;
	metric_error_case("method grid with the inner product", &p, NULL, &params,
					  "Euclidean and cosine metrics only", -1);
	params.metric = TC_METRIC_COSINE;
	params.method = TC_METHOD_AUTO;
	params.metric = (TcMetric) 7;
	metric_error_case("an unknown metric", &p, NULL, &params, "unknown metric", -1);
	params.metric = TC_METRIC_COSINE;
	params.device = TC_DEVICE_GPU;
	metric_error_case("cosine on the GPU of a build without one", &p, NULL, &params, "without CUDA support", -1);
	params.device = TC_DEVICE_CPU;

	/* a zero vector (and one whose squares underflow) has no cosine distance */
	for (int k = 0; k < p.d; k++)
		points_set(&p, 17, k, 0.0);
	metric_error_case("a zero vector under cosine names its point", &p, NULL, &params,
					  "zero vector", 17);
	for (int k = 0; k < p.d; k++)
		points_set(&p, 17, k, 1e-170);
	metric_error_case("a vector whose squared norm underflows, under cosine", &p, NULL,
					  &params, "zero vector", 17);
	/* the inner product takes it, and a negative eps */
	{
		PairVec		want;

		params.metric = TC_METRIC_INNER_PRODUCT;
		params.eps = -1.5;
		case_begin("metrics: inner product with a zero vector and eps -1.5");
		metric_ref_join(TC_METRIC_INNER_PRODUCT, &p, NULL, params.eps, false, &want);
		join_case(&p, NULL, &params, &want);
		case_end();
		pairvec_free(&want);
	}
	points_free(&p);
}

void
test_metrics(void)
{
	static const int dims[] = {1, 2, 7, 16, 33, 48, 130, 384};
	static const int64_t sizes[] = {1, 2, 37, 300};
	Rng			r;
	int			rounds = g_quick ? 1 : 2;

	rng_seed(&r, mix_seed(g_fresh_seed, 0x6d657472));
	metric_errors();
	/* at the float32 filter's range ends (2^50, 2^-50: filtered) and past one (2^60: exact only) */
	{
		static const double scales[] = {0x1p50, 0x1p-50, 0x1p60};

		for (size_t si = 0; si < 3; si++)
			for (int m = TC_METRIC_COSINE; m <= TC_METRIC_INNER_PRODUCT; m++)
			{
				g_scale = scales[si];
				metric_case((TcMetric) m, 200, 0, 64, rng_below(&r, 2) ? TC_FLOAT4 : TC_FLOAT8,
							true, false, rng_below(&r, 2) == 0, 2, &r);
			}
		g_scale = 1.0;
	}
	for (int round = 0; round < rounds; round++)
		for (int m = TC_METRIC_COSINE; m <= TC_METRIC_INNER_PRODUCT; m++)
			for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
				for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
				{
					int64_t		n = sizes[si];
					TcElemType	type = rng_below(&r, 2) ? TC_FLOAT4 : TC_FLOAT8;
					bool		self = rng_below(&r, 3) != 0;
					int			threads = thread_choices[rng_below(&r, 4)];

					metric_case((TcMetric) m, n, 1 + (int64_t) rng_below(&r, 200), dims[di], type,
								self, rng_below(&r, 2) == 0, rng_below(&r, 2) == 0, threads, &r);
				}
}
