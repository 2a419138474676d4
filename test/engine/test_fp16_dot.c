/*
 * test_fp16_dot.c
 *		The FP16 filter of the dot-product metrics (fp16_filter.h), on the
 *		CPU: the inner product's own q, and cosine as the Euclidean filter of
 *		the unit vectors at tc_cosine_unit_eps.  No pair the contract keeps
 *		is dropped, whatever adder the tensor cores use, at eps on a pair's
 *		own dist (negative ones too), on planted near duplicates and on every
 *		distribution within the metrics' range; on spread data the filter
 *		does drop what lies clearly beyond eps.
 *
 * The contract's dist is computed here on its own: the dot product and
 * squared norms in float8 in index order (this file is built with
 * -ffp-contract=off).
 */
#include "test_harness.h"
#include "distance.h"
#include "fp16_filter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum
{
	DOT_IP,
	DOT_COSINE
} DotMetric;

static double
dot_of(const double *a, const double *b, int d)
{
	double		s = 0.0;

	for (int k = 0; k < d; k++)
		s += a[k] * b[k];
	return s;
}

/* The contract's dist of a and b: -dot, or 1 - clamp(dot / sqrt(na nb)). */
static double
contract_dist(DotMetric m, const double *a, const double *b, int d)
{
	double		dot = dot_of(a, b, d);
	double		sim;

	if (m == DOT_IP)
		return -dot;
	sim = dot / sqrt(dot_of(a, a, d) * dot_of(b, b, d));
	return 1.0 - (sim > 1.0 ? 1.0 : sim < -1.0 ? -1.0 : sim);
}

/*
 * The points as float8 rows: a distribution's, the last quarter replaced
 * by near duplicates of the first points (scaled by powers of two and by
 * 3, and nudged in one coordinate), so that dists at and near 0 (cosine)
 * and pairs along one direction (inner product) are there.  False where a
 * coordinate lies outside the metrics' range (distance.h), or a row is zero
 * under cosine: the GPU does not take such sets there.
 */
static bool
make_points(DotMetric m, Dist dist, int64_t n, int d, Rng *r, double *x)
{
	TcPoints	p;
	bool		ok = true;

	points_generate(&p, dist, n, d, (n + d) % 2 ? TC_FLOAT4 : TC_FLOAT8, r);
	for (int64_t i = 0; i < n; i++)
		for (int k = 0; k < d; k++)
			x[i * d + k] = points_get(&p, i, k);
	points_free(&p);
	for (int64_t i = n - n / 4, j = 0; i < n; i++, j++)
	{
		static const double scale[] = {2.0, 0.25, 3.0, 1.0};

		for (int k = 0; k < d; k++)
			x[i * d + k] = x[j * d + k] * scale[j % 4];
		if (j % 4 == 3)
			x[i * d + (int) (j % d)] = nextafter(x[i * d + (int) (j % d)], INFINITY);
	}
	for (int64_t i = 0; i < n && ok; i++)
	{
		for (int k = 0; k < d; k++)
		{
			double		a = fabs(x[i * d + k]);

			if (a != 0.0 && !(a >= TC_DOT_RANGE_LO && a <= TC_DOT_RANGE_HI))
				ok = false;
		}
		if (m == DOT_COSINE && !(dot_of(x + i * d, x + i * d, d) > 0.0))
			ok = false;
	}
	return ok;
}

/*
 * The filter's view: per point its FP16 row h and filter values, as the GPU
 * makes them (prepare.cu): under the inner product the points themselves;
 * under cosine their unit vectors, centred on their mean.
 */
static void
filter_points(DotMetric m, const double *x, int64_t n, int d, double eps, bool prefix,
			  double *h, TcF16Point *pt)
{
	double	   *y = malloc(sizeof(double) * n * d);
	double	   *c = calloc(d, sizeof(double));
	double		maxabs = 0.0;
	TcF16Plan	plan;

	for (int64_t i = 0; i < n; i++)
	{
		double		root = sqrt(dot_of(x + i * d, x + i * d, d));

		for (int k = 0; k < d; k++)
			y[i * d + k] = m == DOT_COSINE ? x[i * d + k] / root : x[i * d + k];
	}
	if (m == DOT_COSINE)
		for (int64_t i = 0; i < n; i++)
			for (int k = 0; k < d; k++)
				c[k] += y[i * d + k] / (double) n;
	for (int64_t i = 0; i < n * d; i++)
	{
		y[i] -= c[i % d];
		maxabs = fmax(maxabs, fabs(y[i]));
	}
	tc_f16_plan(&plan, d, m == DOT_COSINE ? tc_f16_cosine_thr(tc_cosine_unit_eps(eps, d)) : 0.0, maxabs);
	tc_f16_use_prefix(&plan, prefix);
	for (int64_t i = 0; i < n; i++)
	{
		if (m == DOT_COSINE)
			tc_f16_point(&plan, y + i * d, d, h + i * d, &pt[i]);
		else
			tc_f16_ip_point(&plan, y + i * d, d, tc_f16_ip_half(&plan, eps), h + i * d, &pt[i]);
	}
	free(y);
	free(c);
}

static int
cmp_dbl(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* One metric, data set and eps: every pair within eps kept by every adder; spread data pruned. */
static void
dot_case(DotMetric m, Dist dist, const double *x, int64_t n, int d, const double *dd, double eps,
		 double spread, bool prefix)
{
	double	   *h = malloc(sizeof(double) * n * d);
	TcF16Point *pt = malloc(sizeof(TcF16Point) * n);
	int64_t		in = 0,
				dropped_in = 0,
				far = 0,
				far_dropped = 0;

	case_begin("fp16 %s filter%s %s d=%d n=%lld eps=%.17g", m == DOT_IP ? "inner-product" : "cosine",
			   prefix ? " (prefix bound)" : "", dist_name(dist), d, (long long) n, eps);
	filter_points(m, x, n, d, eps, prefix, h, pt);
	for (int64_t i = 0, t = 0; i < n; i++)
		for (int64_t j = i + 1; j < n; j++, t++)
		{
			bool		within = dd[t] <= eps;
			unsigned	by = f16_dropping_adders(h + i * d, h + j * d, d, &pt[i], &pt[j], prefix);
			bool		dropped = by != 0;
			bool		dropped_rn = by & 1;	/* by adder 0 */

			if (within && dropped && dropped_in == 0)
				check_fail("pair (%lld, %lld) at %.17g <= eps dropped (adder %d)",
						   (long long) i, (long long) j, dd[t], __builtin_ctz(by));
			in += within;
			dropped_in += within && dropped;
			/* clearly beyond: a twentieth of the data's spread of dists past eps */
			if (dd[t] > eps + spread / 20)
			{
				far++;
				far_dropped += dropped_rn;
			}
		}
	CHECK(dropped_in == 0, "%lld of %lld pairs within eps dropped", (long long) dropped_in, (long long) in);
	/*
	 * Uniform data: the band is a small share of the spread, so the filter
	 * prunes (where the dists do spread: one dimension's unit vectors are
	 * all at 0 or 2).
	 */
	if ((dist == DIST_UNIFORM || dist == DIST_NEGATIVE) && far > 0 && spread > 1e-6)
		CHECK(far_dropped >= far * 95 / 100, "only %lld of %lld pairs clearly beyond eps dropped",
			  (long long) far_dropped, (long long) far);
	case_end();
	free(h);
	free(pt);
}

void
test_f16_dot(void)
{
	static const int dims[] = {1, 2, 3, 16, 17, 64, 100, 384, 784, 4096};
	int			ncase = 0;

	for (int m = DOT_IP; m <= DOT_COSINE; m++)
		for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
			for (int dist = 0; dist < DIST_COUNT; dist++)
			{
				int			d = dims[di];
				int64_t		n = d >= 784 ? 40 : 100;
				int64_t		npairs = n * (n - 1) / 2;
				double	   *x = malloc(sizeof(double) * n * d);
				double	   *dd = malloc(sizeof(double) * npairs);
				double	   *sorted = malloc(sizeof(double) * npairs);
				Rng			r;

				if (g_quick && d > 100)
					goto next;
				rng_seed(&r, mix_seed(g_fresh_seed, 0xd070000 + m * 10000 + di * 100 + dist));
				if (!make_points((DotMetric) m, (Dist) dist, n, d, &r, x))
					goto next;
				for (int64_t i = 0, t = 0; i < n; i++)
					for (int64_t j = i + 1; j < n; j++)
						dd[t++] = contract_dist((DotMetric) m, x + i * d, x + j * d, d);
				memcpy(sorted, dd, sizeof(double) * npairs);
				qsort(sorted, npairs, sizeof(double), cmp_dbl);
				/*
				 * eps: the smallest dist, a pair's at 2% and 30%, the largest;
				 * cosine also 0 (the duplicates' own); the inner product's are
				 * negative where dots are large.  Each under both accumulation
				 * bounds.
				 */
				for (int e = 0; e < 10; e++)
				{
					int			q = e % 5;
					double		eps = q == 0 ? sorted[0] : q == 1 ? sorted[npairs / 50] :
						q == 2 ? sorted[npairs * 3 / 10] : q == 3 ? sorted[npairs - 1] : 0.0;

					if (q == 4 && m == DOT_IP)
						continue;
					if (m == DOT_COSINE && eps < 0.0)
						eps = 0.0;
					dot_case((DotMetric) m, (Dist) dist, x, n, d, dd, eps,
							 sorted[npairs - 1] - sorted[0], e >= 5);
					ncase++;
				}
		next:
				free(x);
				free(dd);
				free(sorted);
			}
	if (g_verbose)
		printf("fp16 dot filter: %d cases\n", ncase);
}
