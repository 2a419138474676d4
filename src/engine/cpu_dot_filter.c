/*
 * cpu_dot_filter.c
 *		A float32 filter with a proven margin for the dot-product metrics
 *		(cosine, inner product): it rejects pairs that are surely out, and
 *		every pair it keeps is decided by the contract's exact formula.
 *
 * The range: every coordinate is 0 or of magnitude in [2^-56, 2^56] (else
 * no filter).  Then a float8 coordinate rounds to float32 with relative
 * error at most u = 2^-24 (float4 ones are exact), every product of two
 * rounded coordinates is a normal float32 and float8 number, and no sum of
 * at most 16,384 of them overflows; a sum that falls below the normal
 * range is exact.  With p_k = a_k b_k (real), T = sum p_k:
 *
 *	 - the filter's dot32 (the rounded coordinates' products, rounded, summed
 *	   in float32 in any order over dp >= d terms, the padding exact zeros):
 *	   |dot32 - T| <= c32 sum |p_k|, c32 = r + g32 (1 + r), r = 2u + u^2
 *	   (0 for float4), g32 = dp u / (1 - dp u);
 *	 - the contract's dot_c (float8, index order): |dot_c - T| <= g64 sum |p_k|,
 *	   g64 = d 2^-53 / (1 - d 2^-53);
 *	 - sum |p_k| <= |a| |b| (Cauchy-Schwarz), and the contract's squared norm
 *	   na >= (1 - g64) |a|^2, so |a| |b| <= sqrt(na nb) / (1 - g64).
 *
 * So dot_c <= dot32 + B with B = K sqrt(na) sqrt(nb), K = (c32 + g64) /
 * (1 - g64) (1 + 2^-40) (the last factor covers the roundings of the
 * square roots and products).  U = dot32 + B + 2^-50 (|dot32| + B),
 * evaluated in float8, is then at least dot_c: the extra term exceeds the
 * rounding of the sums.
 *
 *	 - inner product: the pair is in iff -dot_c <= eps, iff dot_c >= -eps; so
 *	   U < -eps puts it out.
 *	 - cosine: the contract's sim = fl(dot_c / q), q = fl(sqrt(fl(na nb))),
 *	   computed here the same way, bit for bit; a rounded division by q > 0
 *	   is monotone, and so are the clamp and fl(1 - s) (decreasing): so
 *	   dist_c >= fl(1 - clamp(fl(U / q))), and that above eps puts it out.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_filter.h"
#include "distance.h"
#include "engine_int.h"

#define TC_DOT_FILTER_ALIGN 32

struct TcDotFilter
{
	int			dp;				/* d padded to a multiple of 8 */
	TcMetric	metric;
	double		eps;
	double		K;				/* the bound's factor (above) */
	double		cos_out;		/* cosine, eps <= 0.99: the quick test's factor (may_keep); else 0 */
	float	   *fa;				/* n_a x dp float32 */
	float	   *fb;				/* == fa in a self-join */
	double	   *sa;				/* sqrt of the contract's squared norms */
	double	   *sb;
	const double *na;			/* the contract's squared norms (the caller's) */
	const double *nb;
	void	   *blocks[4];
};

void
tc_dot_filter_free(TcDotFilter *f)
{
	if (f == NULL)
		return;
	for (int i = 0; i < 4; i++)
		free(f->blocks[i]);
	free(f);
}

bool
tc_coords_in_range(TcJoin *join, const TcPoints *p, double lo, double hi, bool *stopped)
{
	const int64_t rows = tc_check_rows(p->d);

	for (int64_t i = 0; i < p->n; i++)
	{
		if (i % rows == 0 && !tc_poll(join))
		{
			*stopped = true;
			return false;
		}
		for (int k = 0; k < p->d; k++)
		{
			double		x = fabs(tc_coord(p, i, k));

			if (x != 0.0 && !(x >= lo && x <= hi))
				return false;
		}
	}
	return true;
}

bool
tc_dot_range_ok(TcJoin *join, const TcPoints *p, bool *stopped)
{
	if (p->d > TC_DOT_RANGE_DIMS)
		return false;
	/* float4's values, subnormals included, all lie within it */
	if (p->type == TC_FLOAT4)
		return true;
	return tc_coords_in_range(join, p, TC_DOT_RANGE_LO, TC_DOT_RANGE_HI, stopped);
}

/* One set as float32 rows and the square roots of its norms.  False: stop or no memory. */
static TcStatus
build_set(TcJoin *join, TcDotFilter *f, const TcPoints *p, const double *norm, int slot,
		  float **rows, double **sq)
{
	const int64_t check = tc_check_rows(p->d);
	void	   *mem = NULL;

	if (posix_memalign(&mem, TC_DOT_FILTER_ALIGN,
					   sizeof(float) * (size_t) f->dp * (size_t) (p->n > 0 ? p->n : 1)) != 0)
		return TC_ERR_NOMEM;
	f->blocks[slot] = *rows = mem;
	f->blocks[slot + 1] = *sq = malloc(sizeof(double) * (size_t) (p->n > 0 ? p->n : 1));
	if (*sq == NULL)
		return TC_ERR_NOMEM;
	for (int64_t i = 0; i < p->n; i++)
	{
		float	   *row = *rows + (size_t) i * f->dp;

		if (i % check == 0 && !tc_poll(join))
			return TC_STOPPED;
		for (int k = 0; k < p->d; k++)
			row[k] = (float) tc_coord(p, i, k);
		for (int k = p->d; k < f->dp; k++)
			row[k] = 0.0f;
		(*sq)[i] = sqrt(norm[i]);
	}
	return TC_OK;
}

TcStatus
tc_dot_filter_build(TcJoin *join, const double *norm_a, const double *norm_b, TcDotFilter **slot)
{
	const TcPoints *a = &join->a;
	const TcPoints *b = join->self ? NULL : &join->b;
	const int	d = a->d;
	bool		stopped = false;
	double		u = 0x1p-24,
				r,
				g32,
				g64;
	TcDotFilter *f;
	TcStatus	st;

	*slot = NULL;
	if (d < TC_FILTER_MIN_DIMS || d > 16384 || a->n == 0)
		return TC_OK;
	if (!tc_coords_in_range(join, a, 0x1p-56, 0x1p56, &stopped) ||
		(b && !tc_coords_in_range(join, b, 0x1p-56, 0x1p56, &stopped)))
		return stopped ? TC_STOPPED : TC_OK;
	/* Owned by the caller from here on, so a longjmp out of a poll leaks nothing. */
	f = *slot = calloc(1, sizeof(TcDotFilter));
	if (f == NULL)
		return TC_ERR_NOMEM;
	f->dp = (d + 7) / 8 * 8;
	f->metric = join->params.metric;
	f->eps = join->params.eps;
	f->na = norm_a;
	f->nb = norm_b;
	r = a->type == TC_FLOAT4 ? 0.0 : 2 * u + u * u;
	g32 = f->dp * u / (1 - f->dp * u);
	g64 = d * 0x1p-53 / (1 - d * 0x1p-53);
	f->K = (r + g32 * (1 + r) + g64) / (1 - g64) * (1 + 0x1p-40);
	f->cos_out = f->metric == TC_METRIC_COSINE && f->eps <= 0.99 ? (1.0 - f->eps) * (1.0 - 0x1p-40) : 0.0;
	if ((st = build_set(join, f, a, norm_a, 0, &f->fa, &f->sa)) != TC_OK)
		return st;
	if (b)
		return build_set(join, f, b, norm_b, 2, &f->fb, &f->sb);
	f->fb = f->fa;
	f->sb = f->sa;
	return TC_OK;
}

/* Whether the pair may be in, from its float32 dot product (the header's proof). */
static inline bool
may_keep(const TcDotFilter *f, int64_t i, int64_t j, float dot32)
{
	double		dt = (double) dot32;
	double		ss = f->sa[i] * f->sb[j];
	double		bound = f->K * ss;
	double		upper = dt + bound + 0x1p-50 * (fabs(dt) + bound);

	if (f->metric == TC_METRIC_INNER_PRODUCT)
		return !(upper < -f->eps);
	/*
	 * Cosine's quick test, without the contract's division and root: ss is
	 * within 6 u of q = fl(sqrt(fl(na nb))), so upper < (1 - eps) (1 -
	 * 2^-40) ss gives fl(upper / q) < (1 - eps) (1 - 2^-42), and with 1 -
	 * eps >= 0.01 its 1 - sim then exceeds eps by more than eps's half ulp.
	 */
	if (f->cos_out > 0 && upper < f->cos_out * ss)
		return false;
	/* the contract's own formula on the upper bound: a lower bound on its dist */
	return !(tc_cosine_dist(upper, f->na[i], f->nb[j]) > f->eps);
}

void
tc_dot_filter_block(const TcDotFilter *f, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
					uint8_t *keep)
{
	int64_t		w = j1 - j0;

	for (int64_t i = i0; i < i1; i += 2)
	{
		int64_t		ib = i + 1 < i1 ? i + 1 : i;

		for (int64_t j = j0; j < j1; j += 4)
		{
			float		dot[8];
			int64_t		jj[4];

			for (int c = 0; c < 4; c++)
				jj[c] = j + c < j1 ? j + c : j1 - 1;
			tc_dots_2x4(f->fa + (size_t) i * f->dp, f->fa + (size_t) ib * f->dp,
						f->fb + (size_t) jj[0] * f->dp, f->fb + (size_t) jj[1] * f->dp,
						f->fb + (size_t) jj[2] * f->dp, f->fb + (size_t) jj[3] * f->dp,
						f->dp, dot);
			for (int rr = 0; rr < 2; rr++)
			{
				int64_t		row = rr == 0 ? i : ib;

				if (rr == 1 && ib == i)
					break;
				for (int c = 0; c < 4 && j + c < j1; c++)
					keep[(row - i0) * w + (j + c - j0)] = may_keep(f, row, jj[c], dot[rr * 4 + c]);
			}
		}
	}
}
