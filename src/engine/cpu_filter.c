/*
 * cpu_filter.c
 *		A float32 filter with a proven margin, for brute force in high
 *		dimensions: it rejects pairs that are surely farther than eps, and
 *		every pair it keeps is decided by the contract's exact formula.
 *
 * The points are centred (minus the mean) and scaled by a power of two so
 * the largest coordinate is near 1, then rounded to float32: a^, with
 * squared norm na (in float8).  For a pair the filter computes
 *		est = na + nb - 2 dot,	dot = a^ . b^ summed in float32,
 * which is |a^ - b^|^2 up to
 *		E = 2 g32 sqrt(na nb) + 4 u (na + nb + 2 |dot|),	g32 = 1.1 d 2^-24
 * (any summation order, at least 48 dimensions; u = 2^-53).  The rounded points lie within
 * r = 2^-24 * 1.01 |a^| + sqrt(d) 2^-149 of the scaled exact ones, so the
 * scaled true distance is at least L = sqrt(est - E) (1 - 2^-50) - ra - rb.
 * The contract's float8 sum s_c is at least s_true (1 - g64) with
 * g64 = (2d + 8) 2^-53 (each term and the sum round down at most that much;
 * eps >= 1e-100 keeps every term clear of underflow that matters), and
 * thr <= eps^2 (1 + 2^-52).  So L > eps_s (1 + g64) implies s_c > thr: the
 * pair is out, whatever the contract computes.  Everything else goes to
 * the exact formula, which also gives every returned dist.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_filter.h"
#include "engine_int.h"

#define TC_FILTER_ALIGN 32

struct TcFilter
{
	int			d;
	int			dp;				/* d padded to a multiple of 8 */
	float	   *fa;				/* n_a x dp, centred, scaled, float32 */
	float	   *fb;				/* == fa in a self-join */
	double	   *na;				/* squared norms of the rows of fa */
	double	   *nb;
	double	   *ra;				/* rounding radius of each row of fa */
	double	   *rb;
	double		eps_s;			/* eps, scaled */
	double		g32;
	double		reject_above;	/* eps_s (1 + g64) */
	void	   *blocks[7];		/* every allocation, for freeing */
};

typedef float v8sf __attribute__((vector_size(8 * sizeof(float))));

void
tc_filter_free(TcFilter *f)
{
	if (f == NULL)
		return;
	for (int i = 0; i < 7; i++)
		free(f->blocks[i]);
	free(f);
}

static void *
aligned(TcFilter *f, int slot, size_t bytes)
{
	void	   *p = NULL;

	if (posix_memalign(&p, TC_FILTER_ALIGN, bytes > 0 ? bytes : TC_FILTER_ALIGN) != 0)
		return NULL;
	f->blocks[slot] = p;
	return p;
}

/* Centre, scale and round one set; its norms and radii.  False: stop. */
static bool
fill(TcJoin *join, const TcPoints *p, const double *mean, int scale, int dp,
	 float *out, double *norm, double *radius)
{
	const int64_t rows = tc_check_rows(p->d);

	for (int64_t i = 0; i < p->n; i++)
	{
		float	   *row = out + (size_t) i * dp;
		double		s = 0;

		if (i % rows == 0 && !tc_poll(join))
			return false;
		for (int k = 0; k < p->d; k++)
		{
			row[k] = (float) ldexp(tc_coord(p, i, k) - mean[k], scale);
			s += (double) row[k] * (double) row[k];
		}
		for (int k = p->d; k < dp; k++)
			row[k] = 0.0f;
		/* The sum of squares is a float8 sum of d terms: allow for it. */
		norm[i] = s;
		radius[i] = 0x1p-24 * 1.01 * sqrt(s * (1 + 1e-12)) + sqrt((double) p->d) * 0x1p-149;
	}
	return true;
}

/* Allocate (in blocks slot .. slot + 2) and fill one set's rows, norms, radii. */
static TcStatus
build_rows(TcJoin *join, TcFilter *f, const TcPoints *p, const double *mean,
		   int scale, int slot, float **rows, double **norm, double **radius)
{
	*rows = aligned(f, slot, sizeof(float) * (size_t) f->dp * p->n);
	*norm = aligned(f, slot + 1, sizeof(double) * p->n);
	*radius = aligned(f, slot + 2, sizeof(double) * p->n);
	if (*rows == NULL || *norm == NULL || *radius == NULL)
		return TC_ERR_NOMEM;
	return fill(join, p, mean, scale, f->dp, *rows, *norm, *radius) ? TC_OK : TC_STOPPED;
}

TcStatus
tc_filter_build(TcJoin *join, TcFilter **slot)
{
	const TcPoints *a = &join->a;
	const TcPoints *b = join->self ? NULL : &join->b;
	const int	d = a->d;
	const double eps = join->params.eps;
	TcFilter   *f;
	double	   *mean;
	double		maxabs = 0;
	int			scale;
	int64_t		total = a->n + (b ? b->n : 0);
	const TcPoints *sets[2] = {a, b};
	int			nsets = b ? 2 : 1;
	const int64_t rows = tc_check_rows(d);
	TcStatus	st;

	*slot = NULL;
	/* Tiny eps: float8 terms could underflow, and the proof above needs them. */
	if (d < TC_FILTER_MIN_DIMS || !(eps >= 1e-100) || total == 0)
		return TC_OK;
	/* Owned by the caller from here on, so a longjmp out of a poll leaks nothing. */
	f = *slot = calloc(1, sizeof(TcFilter));
	if (f == NULL)
		return TC_ERR_NOMEM;
	mean = f->blocks[6] = calloc(d, sizeof(double));
	if (mean == NULL)
		return TC_ERR_NOMEM;

	/*
	 * Mean of everything; the centre need not be exact, only the same for
	 * all.  Both passes read all n x d coordinates: they poll as they go.
	 */
	for (int set = 0; set < nsets; set++)
		for (int64_t i = 0; i < sets[set]->n; i++)
		{
			if (i % rows == 0 && !tc_poll(join))
				return TC_STOPPED;
			for (int k = 0; k < d; k++)
				mean[k] += tc_coord(sets[set], i, k) / (double) total;
		}
	for (int k = 0; k < d; k++)
		if (!isfinite(mean[k]))
			goto unusable;
	for (int set = 0; set < nsets; set++)
		for (int64_t i = 0; i < sets[set]->n; i++)
		{
			if (i % rows == 0 && !tc_poll(join))
				return TC_STOPPED;
			for (int k = 0; k < d; k++)
				maxabs = fmax(maxabs, fabs(tc_coord(sets[set], i, k) - mean[k]));
		}
	if (!(maxabs > 0) || !isfinite(maxabs))
		goto unusable;			/* all points equal, or out of range */

	/* Scale so the largest |coordinate| is in [0.5, 1): float32 has room. */
	frexp(maxabs, &scale);
	scale = -scale;
	f->eps_s = ldexp(eps, scale);
	if (!isfinite(f->eps_s) || ldexp(f->eps_s, -scale) != eps)
		goto unusable;			/* eps would not scale exactly */

	f->d = d;
	f->dp = (d + 7) / 8 * 8;
	f->g32 = 1.1 * (double) d * 0x1p-24;
	f->reject_above = f->eps_s * (1.0 + (2.0 * d + 8.0) * 0x1p-53);
	if ((st = build_rows(join, f, a, mean, scale, 0, &f->fa, &f->na, &f->ra)) != TC_OK)
		return st;
	if (b)
	{
		if ((st = build_rows(join, f, b, mean, scale, 3, &f->fb, &f->nb, &f->rb)) != TC_OK)
			return st;
	}
	else
	{
		f->fb = f->fa;
		f->nb = f->na;
		f->rb = f->ra;
	}
	return TC_OK;

unusable:
	/* The exact path alone serves this join. */
	tc_filter_free(f);
	*slot = NULL;
	return TC_OK;
}

/*
 * Dot products of 2 rows of fa against 4 rows of fb, 8 lanes at a time.
 * Built for AVX2 and for the baseline, chosen at load time.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void
tc_dots_2x4(const float *a0, const float *a1, const float *b0, const float *b1,
		 const float *b2, const float *b3, int dp, float *out)
{
	v8sf		s[8] = {{0}};

	for (int k = 0; k < dp; k += 8)
	{
		v8sf		x0 = *(const v8sf *) (a0 + k);
		v8sf		x1 = *(const v8sf *) (a1 + k);
		v8sf		y0 = *(const v8sf *) (b0 + k);
		v8sf		y1 = *(const v8sf *) (b1 + k);
		v8sf		y2 = *(const v8sf *) (b2 + k);
		v8sf		y3 = *(const v8sf *) (b3 + k);

		s[0] += x0 * y0;
		s[1] += x0 * y1;
		s[2] += x0 * y2;
		s[3] += x0 * y3;
		s[4] += x1 * y0;
		s[5] += x1 * y1;
		s[6] += x1 * y2;
		s[7] += x1 * y3;
	}
	for (int p = 0; p < 8; p++)
	{
		float		t = 0;

		for (int l = 0; l < 8; l++)
			t += s[p][l];
		out[p] = t;
	}
}

void
tc_filter_block(const TcFilter *f, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
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
			for (int r = 0; r < 2; r++)
			{
				int64_t		row = r == 0 ? i : ib;

				if (r == 1 && ib == i)
					break;
				for (int c = 0; c < 4 && j + c < j1; c++)
				{
					double		na = f->na[row];
					double		nb = f->nb[jj[c]];
					double		dt = (double) dot[r * 4 + c];
					double		est = na + nb - 2 * dt;
					double		err = 2 * f->g32 * sqrt(na * nb) +
						4 * 0x1p-53 * (na + nb + 2 * fabs(dt));
					double		low = est - err > 0 ? sqrt(est - err) * (1 - 0x1p-50) : 0;

					keep[(row - i0) * w + (j + c - j0)] =
						!(low - f->ra[row] - f->rb[jj[c]] > f->reject_above);
				}
			}
		}
	}
}
