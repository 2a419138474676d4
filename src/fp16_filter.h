/*
 * fp16_filter.h
 *		The arithmetic of the FP16 tensor-core filter for brute-force joins:
 *		how points become FP16, and when a pair may be dropped.
 *
 * Shared by the GPU brute-force join and by the engine tests, which emulate
 * the tensor cores' accumulation on the CPU (in its worst plausible forms)
 * and check that no pair within eps is ever dropped.  Plain C; the
 * functions are __host__ __device__ under nvcc.
 *
 * The scheme.  Points x are centred, y = fl(x - c) in float8 (c is any
 * vector; the mean keeps |y| small), and scaled by sigma = 2^k into FP16,
 * h = fp16(sigma y), rounded to nearest.  The tensor cores compute
 * acc = h_a . h_b with exact FP16 products and FP32 accumulation; the
 * epilogue forms, in float4,
 *		S = (hn_a + hn_b) - 2 acc,	hn = |h|^2,
 * and drops the pair iff S > lim, with
 *		lim = (R_a + R_b)^2 (1 + 2^-20) + kappa (hn_a + hn_b) + 2^-100,
 * where R = E/2 + r + nu per point, E >= sigma D for every pair within eps,
 * r = |h - sigma y| (FP16 rounding), nu >= sigma |fl(x - c) - (x - c)|
 * (centring), and kappa = (5 K / 4 + 24) 2^-23 with K = d rounded up to 16.
 * Every pair not dropped is decided, and its dist computed, by the
 * contract's exact float8 sum.
 *
 * Why no pair within eps is dropped.  Let D = |x_a - x_b| over the reals.
 * (1) The contract's s <= thr gives D^2 <= thr (1 + gamma_{d+3}) + d 2^-1074
 *     (a term that underflows loses up to 2^-1074), so sigma D <= E
 *     (tc_f16_plan rounds E up).
 * (2) By the triangle inequality, |h_a - h_b| <= sigma D + r_a + nu_a +
 *     r_b + nu_b <= R_a + R_b =: T.
 * (3) |S - |h_a - h_b|^2| <= kappa (hn_a + hn_b):
 *     - FP16 products are exact in FP32 (22-bit significands, no
 *       underflow: FP16's smallest step is 2^-24).  Each m16n8k16 step adds
 *       16 products to the accumulator; aligning and truncating (the
 *       hardware does not round to nearest) loses at most 18 units of 2^-23
 *       of (|acc| + the step's sum of |products|), so over K / 16 steps
 *       acc is off by at most 1.125 K 2^-23 sum |h_a,i h_b,i|, and
 *       sum |h_a,i h_b,i| <= |h_a||h_b| <= (hn_a + hn_b) / 2; S takes 2 acc,
 *       so 1.125 K 2^-23 (hn_a + hn_b) (test/gpu/mma_error.cu measures the
 *       hardware against this model);
 *     - hn in float4, rounded up from a float8 sum: 2^-22 of it each;
 *     - the epilogue's two float4 roundings: 2^-23 (hn_a + hn_b + 2|acc|).
 *     Together at most (1.125 K + 3.5) 2^-23 (hn_a + hn_b): kappa leaves
 *     0.125 K + 20 units of 2^-23 for the rounding of lim itself.
 * (4) So a pair within eps has S <= T^2 + kappa (hn_a + hn_b) <= lim.
 *     (1 + 2^-20) covers the three float4 roundings of T^2, and 2^-100
 *     the underflow of tiny terms.
 * The scale keeps |sigma y| <= 2^15, so no FP16 value overflows
 * (65,504 is FP16's largest) and |acc| stays below 2^43.
 */
#ifndef TCJOIN_FP16_FILTER_H
#define TCJOIN_FP16_FILTER_H

#include <math.h>
#include <stdbool.h>

#include "grid_plan.h"			/* TC_HOSTDEV */

typedef struct TcF16Plan
{
	double		sigma;			/* 2^k: scaled |y| <= 2^15 */
	double		e_half;			/* E / 2, E >= sigma D for pairs within eps */
	float		kappa;			/* (5 K / 4 + 24) 2^-23 */
	int			dpad;			/* K: d rounded up to 16 */
} TcF16Plan;

/*
 * x rounded to the nearest FP16 value, ties to even (what the GPU's
 * __double2half_rn does), as a double; +-infinity past FP16's range.
 */
static inline TC_HOSTDEV double
tc_f16_round(double x)
{
	double		ax = fabs(x);
	int			e;
	double		ulp;

	if (!(ax < 65520.0))		/* 65504 + half a step rounds to even: inf */
		return x > 0 ? INFINITY : -INFINITY;
	if (ax == 0.0)
		return x;
	(void) frexp(ax, &e);		/* ax in [2^(e-1), 2^e) */
	/* 11 significant bits; below 2^-14, subnormal steps of 2^-24. */
	ulp = ldexp(1.0, e - 11 < -24 ? -24 : e - 11);
	return copysign(rint(ax / ulp) * ulp, x);
}

/* v as a float4, rounded up. */
static inline TC_HOSTDEV float
tc_f16_float_up(double v)
{
	float		f = (float) v;

	if ((double) f < v)
		f = nextafterf(f, INFINITY);
	return f;
}

/*
 * The plan for d dimensions, the contract's threshold thr
 * (tc_sq_threshold(eps)) and the largest |y| over all points.
 */
static inline TC_HOSTDEV void
tc_f16_plan(TcF16Plan *p, int d, double thr, double maxabs)
{
	int			e = 0;
	double		bound;

	/* sigma = 2^k with maxabs * sigma in (2^14, 2^15]; 1 for all zeros. */
	if (maxabs > 0.0)
	{
		(void) frexp(maxabs, &e);	/* maxabs in [2^(e-1), 2^e) */
		p->sigma = ldexp(1.0, 15 - e);
	}
	else
		p->sigma = 1.0;
	/*
	 * E >= sigma sqrt(thr (1 + gamma_{d+3}) + d 2^-1074), rounded up
	 * generously: a term of s that underflows loses up to 2^-1074.
	 */
	bound = sqrt(thr * (1.0 + (double) (d + 4) * 0x1p-52) + (double) (d + 4) * 0x1p-1074) *
		(1.0 + 0x1p-48);
	p->e_half = p->sigma * bound * 0.5;
	p->dpad = (d + 15) / 16 * 16;
	p->kappa = (float) ((1.25 * p->dpad + 24.0) * 0x1p-23);
}

/*
 * A point's hn = |h|^2 and R, as float4 rounded up, from the sums over its
 * coordinates (in any order) of h^2, (h - sigma y)^2 and (sigma y)^2.
 */
static inline TC_HOSTDEV void
tc_f16_finish(const TcF16Plan *p, int d, double hn2, double r2, double y2, float *hn,
			  float *R)
{
	/* Sums of d non-negative terms: each within gamma_{d+2} of its value. */
	double		slack = 1.0 + (double) (d + 4) * 0x1p-52;

	*hn = tc_f16_float_up(hn2 * slack);
	*R = tc_f16_float_up((sqrt(r2 * slack) + sqrt(y2 * slack) * 0x1p-52 + p->e_half) *
						 (1.0 + 0x1p-48));
}

/*
 * One point, from its centred coordinates y: the FP16 coordinates h (as
 * doubles, each exactly an FP16 value; h may be NULL), hn and R.
 */
static inline TC_HOSTDEV void
tc_f16_point(const TcF16Plan *p, const double *y, int d, double *h, float *hn,
			 float *R)
{
	double		hn2 = 0.0,
				r2 = 0.0,
				y2 = 0.0;

	for (int k = 0; k < d; k++)
	{
		double		sy = p->sigma * y[k];	/* exact: sigma is 2^k */
		double		hk = tc_f16_round(sy);
		double		ek = hk - sy;

		hn2 += hk * hk;
		r2 += ek * ek;
		y2 += sy * sy;
		if (h)
			h[k] = hk;
	}
	tc_f16_finish(p, d, hn2, r2, y2, hn, R);
}

/* The epilogue's test: true iff the pair is certainly beyond eps. */
static inline TC_HOSTDEV bool
tc_f16_reject(float acc, float hn_a, float hn_b, float R_a, float R_b, float kappa)
{
	float		hs = hn_a + hn_b;
	float		S = hs - 2.0f * acc;
	float		T = R_a + R_b;
	float		lim = T * T * (1.0f + 0x1p-20f) + kappa * hs + 0x1p-100f;

	return S > lim;
}

#endif							/* TCJOIN_FP16_FILTER_H */
