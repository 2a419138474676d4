/*
 * test_fp16_filter.c
 *		The FP16 filter of the brute force (fp16_filter.h), on the CPU: its
 *		rounding to FP16, and that no pair within eps is dropped whatever
 *		adder the tensor cores use, while on spread data the filter does drop
 *		what lies clearly beyond eps.
 */
#include "test_harness.h"
#include "fp16_filter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * tc_f16_round against the compiler's own conversion to _Float16 (round to
 * nearest even), on random magnitudes, exact ties and the range's edges.
 */
void
test_f16_round(void)
{
	Rng			r;
	int			bad = 0;
	double		first_bad = 0;

	case_begin("fp16 rounding");
	rng_seed(&r, mix_seed(FIXED_SEED, 0xf16));
	for (int i = 0; i < 200000; i++)
	{
		double		x;
		double		want;

		if (i % 3 == 0)
		{
			/* an exact tie between two FP16 neighbours, or next to one */
			int			e = (int) rng_below(&r, 40) - 25;
			double		ulp = ldexp(1.0, e - 10 < -24 ? -24 : e - 10);
			double		m = (double) rng_below(&r, 2048);

			x = (m + 0.5) * ulp;
			if (i % 2)
				x = nextafter(x, i % 4 ? INFINITY : 0.0);
		}
		else
			x = ldexp(rng_uniform(&r) + 0.5, (int) rng_below(&r, 60) - 40);
		if (rng_below(&r, 2))
			x = -x;
#ifdef __FLT16_MANT_DIG__
		want = (double) (_Float16) x;
#else
		want = tc_f16_round(x);
#endif
		/* no subnormal results: below 2^-14, the nearer of 0 and 2^-14 */
		if (fabs(x) < 0x1p-14)
			want = fabs(x) > 0x1p-15 ? copysign(0x1p-14, x) : copysign(0.0, x);
		if (tc_f16_round(x) != want && !(isinf(want) && isinf(tc_f16_round(x))))
		{
			if (bad++ == 0)
				first_bad = x;
		}
	}
	CHECK(bad == 0, "%d values round differently, first %.17g", bad, first_bad);
	CHECK(tc_f16_round(65504.0) == 65504.0 && isinf(tc_f16_round(65520.0)) &&
		  tc_f16_round(65519.99) == 65504.0 && tc_f16_round(0x1p-25) == 0.0 &&
		  tc_f16_round(0x1.8p-25) == 0.0 && tc_f16_round(-0.0) == 0.0 &&
		  tc_f16_round(0x1p-15) == 0.0 && tc_f16_round(0x1.0001p-15) == 0x1p-14 &&
		  tc_f16_round(-0x1.ffp-15) == -0x1p-14 && tc_f16_round(0x1p-14) == 0x1p-14,
		  "edges of the FP16 range");
	{
		/* data below 2^-1008: the scale stops at 2^1023 rather than overflow */
		TcF16Plan	pl;

		tc_f16_plan(&pl, 4, 0.0, 0x1p-1070);
		CHECK(pl.sigma == 0x1p1023 && isfinite(pl.e_half), "scale %g for the largest |y| 2^-1070",
			  pl.sigma);
		tc_f16_plan(&pl, 4, 0.0, 3.0);
		CHECK(pl.sigma == 0x1p13, "scale %g for the largest |y| 3", pl.sigma);
	}
	case_end();
}

/* float4 sum rounded toward zero: the tensor cores' truncating adder. */
static float
add_rz(double x)
{
	float		f = (float) x;

	if (fabs((double) f) > fabs(x))
		f = nextafterf(f, 0.0f);
	return f;
}

/*
 * acc = h_a . h_b as the tensor cores might compute it: FP16 products
 * (exact), summed in float4 by one of several adders (how: 0 to
 * F16_ADDERS - 1; 3 takes the steps out of index order).
 */
float
f16_emulated_dot(const double *ha, const double *hb, int d, int how)
{
	float		acc = 0.0f;

	switch (how)
	{
		case 0:				/* in order, round to nearest */
			for (int k = 0; k < d; k++)
				acc = acc + (float) (ha[k] * hb[k]);
			break;
		case 1:				/* per 16 terms: exact block, truncated add */
			for (int k0 = 0; k0 < d; k0 += 16)
			{
				double		blk = 0.0;

				for (int k = k0; k < k0 + 16 && k < d; k++)
					blk += ha[k] * hb[k];
				acc = add_rz((double) acc + blk);
			}
			break;
		case 2:				/* every add truncated */
			for (int k = 0; k < d; k++)
				acc = add_rz((double) acc + ha[k] * hb[k]);
			break;
		case 3:				/* backwards, round to nearest */
			for (int k = d - 1; k >= 0; k--)
				acc = acc + (float) (ha[k] * hb[k]);
			break;
		default:
			{
				/*
				 * The model's worst (fp16_filter.h (3)): in index order, each
				 * 16-term step loses all of its 18 units of 2^-23 of |acc| +
				 * the step's sum of |products|, downward; float4 at the end.
				 */
				double		a = 0.0;

				for (int k0 = 0; k0 < d; k0 += 16)
				{
					double		blk = 0.0,
								mag = 0.0;

					for (int k = k0; k < k0 + 16 && k < d; k++)
					{
						blk += ha[k] * hb[k];
						mag += fabs(ha[k] * hb[k]);
					}
					a = a + blk - 18.0 * 0x1p-23 * (fabs(a) + mag);
				}
				acc = (float) a;
				if ((double) acc > a)
					acc = nextafterf(acc, -INFINITY);
			}
			break;
	}
	return acc;
}

/*
 * The adders that drop the pair of FP16 rows ha, hb (points pa, pb): bit
 * how set for each; under the prefix bound adder 3, which takes the steps
 * out of index order, is outside the model and not asked.
 */
unsigned
f16_dropping_adders(const double *ha, const double *hb, int d, const TcF16Point *pa,
					const TcF16Point *pb, bool prefix)
{
	unsigned	m = 0;

	for (int how = 0; how < F16_ADDERS; how++)
		if (!(prefix && how == 3) &&
			tc_f16_drop(f16_emulated_dot(ha, hb, d, how), pa->q, pb->q, pa->rc, pb->rc))
			m |= 1u << how;
	return m;
}

/*
 * No pair within eps is dropped by the filter, whatever the adder (under
 * the prefix bound, whatever the adder that takes the steps in index order,
 * as the tensor cores do: it does not cover the backward one), on every
 * distribution (offsets of 1e9, mixed magnitudes, underflow, duplicates
 * included), at eps 0, at a pair's exact distance and beyond; and on
 * well-spread data the filter does drop what lies clearly beyond eps.
 */
void
test_f16_filter(void)
{
	static const int dims[] = {1, 2, 3, 16, 17, 64, 100, 784, 4096};
	int			ncase = 0;

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (int dist = 0; dist < DIST_COUNT; dist++)
		{
			int			d = dims[di];
			int64_t		n = d >= 784 ? 40 : 120;
			Rng			r;
			TcPoints	p;
			double	   *c,
					   *y,
					   *h,
					   *dd;
			TcF16Point *pt;
			double		maxabs = 0;

			if (g_quick && d > 100)
				continue;
			c = calloc(d, sizeof(double));
			y = malloc(sizeof(double) * n * d);
			h = malloc(sizeof(double) * n * d);
			pt = malloc(sizeof(TcF16Point) * n);
			dd = malloc(sizeof(double) * n * (n - 1) / 2);
			rng_seed(&r, mix_seed(g_fresh_seed, 0xf160000 + di * 100 + dist));
			points_generate(&p, (Dist) dist, n, d, (di + dist) % 2 ? TC_FLOAT4 : TC_FLOAT8, &r);
			for (int64_t i = 0; i < n; i++)
				for (int k = 0; k < d; k++)
					c[k] += points_get(&p, i, k) / (double) n;
			for (int64_t i = 0; i < n; i++)
				for (int k = 0; k < d; k++)
				{
					y[i * d + k] = points_get(&p, i, k) - c[k];
					maxabs = fmax(maxabs, fabs(y[i * d + k]));
				}
			for (int64_t i = 0, t = 0; i < n; i++)
				for (int64_t j = i + 1; j < n; j++)
					dd[t++] = ref_dist(&p, i, &p, j);

			/* eps: 0, a pair's distance (2% and 30% quantiles), the largest */
			for (int e = 0; e < 8; e++)
			{
				/* e >= 4: the same eps under the prefix bound (fp16_filter.h) */
				const bool	prefix = e >= 4;
				int64_t		npairs = n * (n - 1) / 2;
				double	   *sorted = malloc(sizeof(double) * npairs);
				double		eps;
				TcF16Plan	plan;
				int64_t		in = 0,
							dropped_in = 0,
							far = 0,
							far_dropped = 0,
							beyond_kept = 0;

				memcpy(sorted, dd, sizeof(double) * npairs);
				qsort(sorted, npairs, sizeof(double), cmp_double);
				eps = e % 4 == 0 ? 0.0 : e % 4 == 1 ? sorted[npairs / 50] :
					e % 4 == 2 ? sorted[npairs * 3 / 10] : sorted[npairs - 1];
				free(sorted);

				case_begin("fp16 filter%s %s d=%d n=%lld eps=%.17g", prefix ? " (prefix bound)" : "",
						   dist_name((Dist) dist), d, (long long) n, eps);
				tc_f16_plan(&plan, d, tc_sq_threshold(eps), maxabs);
				tc_f16_use_prefix(&plan, prefix);
				for (int64_t i = 0; i < n; i++)
					tc_f16_point(&plan, y + i * d, d, h + i * d, &pt[i]);
				for (int64_t i = 0, t = 0; i < n; i++)
					for (int64_t j = i + 1; j < n; j++, t++)
					{
						bool		within = dd[t] <= eps;
						unsigned	by = f16_dropping_adders(h + i * d, h + j * d, d, &pt[i], &pt[j],
															 prefix);
						bool		dropped = by != 0;
						bool		dropped_rn = by & 1;	/* by adder 0 */

						if (within && dropped && dropped_in == 0)
							check_fail("pair (%lld, %lld) at %.17g <= eps dropped (adder %d)",
									   (long long) i, (long long) j, dd[t], __builtin_ctz(by));
						in += within;
						dropped_in += within && dropped;
						/*
						 * Beyond the band, by the exact FP16 distance: the
						 * test must drop the pair, whatever the data.
						 */
						{
							double		h2 = 0.0,
										T = pt[i].R + pt[j].R;

							for (int k = 0; k < d; k++)
							{
								double		u = h[i * d + k] - h[j * d + k];

								h2 += u * u;
							}
							if (h2 > 2.0 * (T * T + (double) plan.kappa * (pt[i].hn + pt[j].hn)) + 1e-30 &&
								!dropped_rn)
								beyond_kept++;
						}
						/* Spread data: how tight the band is against eps. */
						if (dd[t] > 1.1 * eps && eps > 0)
						{
							far++;
							far_dropped += dropped_rn;
						}
					}
				CHECK(dropped_in == 0, "%lld of %lld pairs within eps dropped",
					  (long long) dropped_in, (long long) in);
				CHECK(beyond_kept == 0, "%lld pairs far beyond the band kept", (long long) beyond_kept);
				/*
				 * Uniform data, eps at a quantile: the band is a few percent
				 * of eps^2, so nearly every pair beyond 1.1 eps goes.  (On
				 * clustered or skewed data the band, which grows with the
				 * distance from the centre, may be wider than eps.)
				 */
				if ((dist == DIST_UNIFORM || dist == DIST_NEGATIVE) && (e % 4 == 1 || e % 4 == 2) && far > 0)
					CHECK(far_dropped >= far * 95 / 100,
						  "only %lld of %lld pairs beyond 1.1 eps dropped",
						  (long long) far_dropped, (long long) far);
				case_end();
				ncase++;
			}
			points_free(&p);
			free(c);
			free(y);
			free(h);
			free(pt);
			free(dd);
		}
	if (g_verbose)
		printf("fp16 filter: %d cases\n", ncase);
}
