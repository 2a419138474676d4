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
 * acc = h_a . h_b with exact FP16 products and FP32 accumulation.  Per
 * point, two float4 values:
 *		q  = ((1 - kappa) hn - R^2 (1 + 2^-21)) / 2 - 2^-102, rounded down,
 *		rc = R (1 + 2^-21), rounded up,
 * with hn = |h|^2, R = E/2 + r + nu, E >= sigma D for every pair within
 * eps, r = |h - sigma y| (FP16 rounding), nu >= sigma |fl(x - c) - (x - c)|
 * (centring), and kappa = (5 K / 4 + 24) 2^-23, K = d rounded up to 16.
 * The epilogue drops a pair iff, in float4,
 *		acc + rc_a rc_b < q_a + q_b,
 * three operations; that is |h_a - h_b|^2 > (R_a + R_b)^2 + kappa (hn_a +
 * hn_b) up to roundings.  Every pair not dropped is decided, and its dist
 * computed, by the contract's exact float8 sum.
 *
 * Why no pair within eps is dropped.  Let D = |x_a - x_b| over the reals,
 * and hn, dot = h_a . h_b the exact values.
 * (1) The contract's s <= thr gives D^2 <= thr (1 + gamma_{d+3}) + d 2^-1074
 *     (a term that underflows loses up to 2^-1074), so sigma D <= E
 *     (tc_f16_plan rounds E up).
 * (2) By the triangle inequality, |h_a - h_b| <= sigma D + r_a + nu_a +
 *     r_b + nu_b <= R_a + R_b, so dot >= (hn_a + hn_b - (R_a + R_b)^2) / 2.
 * (3) h has no subnormal FP16 values (tc_f16_round), so every product is
 *     exact in FP32 and normalised (22-bit significands, at least 2^-28).
 *     Each m16n8k16 step adds 16 products
 *     to the accumulator; aligning and truncating (the hardware does not
 *     round to nearest) loses at most 18 units of 2^-23 of (|acc| + the
 *     step's sum of |products|), so over K / 16 steps acc is off by at most
 *     1.125 K 2^-23 sum |h_a,i h_b,i| <= 0.5625 K 2^-23 (hn_a + hn_b)
 *     (test/gpu/mma_error.cu measures the hardware against this model).
 * (4) fl(rc_a rc_b) >= R_a R_b, so acc + fl(rc_a rc_b) >= sum over a, b of
 *     (hn - R^2) / 2, less 0.5625 K 2^-23 (hn_a + hn_b).  The two float4
 *     sums are off by at most 2^-24 (hn_a + hn_b + R_a^2 + R_b^2)(1 + 2^-20).
 *     kappa hn / 2 = (0.625 K + 12) 2^-23 hn covers the accumulation, the
 *     hn part of the roundings and the float8 sums behind q; R^2 2^-22
 *     covers their R^2 part; 2^-102 each, the underflow of tiny terms.  So
 *     the computed left side is at least the computed right side: kept.
 * The scale keeps |sigma y| <= 2^15, so no FP16 value overflows
 * (65,504 is FP16's largest) and |acc| stays below 2^43.
 *
 * The prefix bound (plan.prefix; the GPU's default where K allows).  Step (3)
 * charges each step with the whole sum of |products|, but the tensor cores
 * take the steps in index order, and what step s truncates is the
 * accumulator so far, the prefix's dot, plus the step's own products.  With
 * P(s) the sum of h^2 over a point's first 16 s coordinates, Cauchy-Schwarz
 * and AM-GM give |prefix dot| <= (P_a(s) + P_b(s)) / 2.  Summed over the
 * steps, the error is at most 9 2^-23 (A_a + A_b + hn_a + hn_b) / (1 - 18
 * 2^-23 S), where A = sum over the steps s of P(s - 1), S is the number of
 * steps and the last factor the error's feedback into later steps (under
 * 1.01 for K <= 2^16).  The steps are the K / 16 of (3).  So q gives
 * up, per point, 10 2^-23 A + 22 2^-23 hn (the 12 units of (4) included)
 * in place of kappa hn / 2: about half as much where the energy is spread
 * over the coordinates (A is then about K / 32 hn), and never more, as
 * P(0) = 0 makes A at most (K / 16 - 1) hn (to A's rounding).
 *
 * The dot-product metrics.  Cosine is the Euclidean filter above on the
 * unit vectors u = fl(x / fl(sqrt(na))) at tc_cosine_unit_eps (distance.h),
 * which keeps every pair the cosine contract returns; the recheck then
 * applies the cosine contract to x.  The inner product (dist = -dot, kept
 * iff dot >= -eps) has its own q, with the points not centred (c = 0, so
 * X = sigma x exactly) and rc = 0, so that the same epilogue drops a pair
 * iff acc < q_a + q_b in float4.  With T = X_a . X_b over the reals, S =
 * |X|, H = |h|, r = |h - X| and M = max(H, S):
 * (5) every coordinate in [2^-240, 2^240] or 0 (the engine checks) and d
 *     <= 2^20: the contract's dot has no overflow or underflow, so it is
 *     within gamma = (d + 10) 2^-53 of sum |x_a,i x_b,i| <= (|x_a|^2 +
 *     |x_b|^2) / 2 of x_a . x_b, and dot >= -eps gives T >= -sigma^2 eps -
 *     gamma (S_a^2 + S_b^2) / 2;
 * (6) |h_a . h_b - T| <= r_a H_b + S_a r_b (Cauchy-Schwarz), and with w =
 *     2^-12 (about the FP16 rounding's relative size) each product is at
 *     most r^2 / (2 w) + w M^2 / 2 (AM-GM): per point phi = 2^11 r^2 +
 *     2^-13 M^2, a sum over the two points, as q needs;
 * (7) the accumulation costs what it costs in (3) or the prefix bound:
 *     hn / 2 less the Euclidean charge, per point.
 * So acc >= Q_a + Q_b with Q = -te - phi - gamma S^2 / 2 - the accumulation's
 * share, te = sigma^2 eps / 2 (exact: sigma is 2^k; clamped to +-2^100,
 * which decides the same pairs as |acc| < 2^51).  q = Q - 2^-22 |Q| -
 * 2^-102, rounded down, so that the float4 sum q_a + q_b (rounded, 2^-24 of
 * |q_a| + |q_b|) stays at most Q_a + Q_b: a pair the contract keeps is kept.
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
	bool		prefix;			/* the prefix bound (above); K <= 2^16 */
} TcF16Plan;

/*
 * x rounded to the nearest normal (or zero) FP16 value, ties to even (as
 * the GPU's __double2half_rn does for normal results), as a double;
 * +-infinity past FP16's range.
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
	/*
	 * No subnormal results: below FP16's smallest normal, 2^-14, the
	 * nearest of 0 and 2^-14 (ties to 0).  The tensor cores align a
	 * product of a subnormal input by its nominal exponent, which breaks
	 * the accumulation model of (3); the larger rounding error is in r.
	 */
	if (ax < 0x1p-14)
		return ax > 0x1p-15 ? copysign(0x1p-14, x) : copysign(0.0, x);
	(void) frexp(ax, &e);		/* ax in [2^(e-1), 2^e) */
	ulp = ldexp(1.0, e - 11);	/* 11 significant bits */
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
		/* at most 2^1023: below about 2^-1008 the scale stops short (values round to 0) */
		p->sigma = ldexp(1.0, 15 - e > 1023 ? 1023 : 15 - e);
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
	p->prefix = false;
}

/* The prefix bound where K allows it (its feedback factor assumes K <= 2^16). */
static inline TC_HOSTDEV void
tc_f16_use_prefix(TcF16Plan *p, bool on)
{
	p->prefix = on && p->dpad <= 65536;
}

/* What a point contributes to the filter. */
typedef struct TcF16Point
{
	float		q;				/* rounded down */
	float		rc;				/* rounded up */
	double		hn;				/* |h|^2 (float8 sum) */
	double		R;				/* the radius, an upper bound */
} TcF16Point;

/* v as a float4, rounded down. */
static inline TC_HOSTDEV float
tc_f16_float_down(double v)
{
	float		f = (float) v;

	if ((double) f > v)
		f = nextafterf(f, -INFINITY);
	return f;
}

/*
 * A point's filter values from the sums over its coordinates (in any order)
 * of h^2, (h - sigma y)^2 and (sigma y)^2, and (for the prefix bound) A, the
 * sum over the K / 16 steps of the h^2 before each (as tc_f16_point sums it).
 */
static inline TC_HOSTDEV void
tc_f16_finish(const TcF16Plan *p, int d, double hn2, double r2, double y2, double A,
			  TcF16Point *pt)
{
	/* Sums of d non-negative terms: each within gamma_{d+2} of its value. */
	double		slack = 1.0 + (double) (d + 4) * 0x1p-52;
	double		R = (sqrt(r2 * slack) + sqrt(y2 * slack) * 0x1p-52 + p->e_half) * (1.0 + 0x1p-48);
	double		charge;			/* hn / 2 less what q gives up for the accumulation */

	if (p->prefix)
		/* A's float8 sums: K + K / 16 terms a value, within 2^-32 for K <= 2^16 */
		charge = hn2 * (0.5 - 22.0 * 0x1p-23) - 10.0 * 0x1p-23 * A * (1.0 + 0x1p-30);
	else
		charge = (1.0 - (double) p->kappa) * hn2 * 0.5;
	pt->hn = hn2;
	pt->R = R;
	pt->rc = tc_f16_float_up(R * (1.0 + 0x1p-21) * (1.0 + 0x1p-50));
	pt->q = tc_f16_float_down(charge - R * R * (1.0 + 0x1p-21) * 0.5 * (1.0 + 0x1p-50) - 0x1p-102);
}

/*
 * One point's sums from its centred coordinates y (tc_f16_finish's
 * arguments, in index order): h^2, (h - sigma y)^2, (sigma y)^2 and A; its
 * FP16 coordinates h into h (as doubles, each exactly an FP16 value; h may
 * be NULL).
 */
static inline TC_HOSTDEV void
tc_f16_sums(const TcF16Plan *p, const double *y, int d, double *h, double sums[4])
{
	double		hn2 = 0.0,
				r2 = 0.0,
				y2 = 0.0,
				A = 0.0;

	for (int k = 0; k < d; k++)
	{
		double		sy = p->sigma * y[k];	/* exact: sigma is 2^k */
		double		hk = tc_f16_round(sy);
		double		ek = hk - sy;

		if (k % 16 == 0)
			A += hn2;			/* the h^2 before this step */
		hn2 += hk * hk;
		r2 += ek * ek;
		y2 += sy * sy;
		if (h)
			h[k] = hk;
	}
	sums[0] = hn2;
	sums[1] = r2;
	sums[2] = y2;
	sums[3] = A;
}

/* One point's FP16 coordinates (h may be NULL) and filter values, from its centred coordinates y. */
static inline TC_HOSTDEV void
tc_f16_point(const TcF16Plan *p, const double *y, int d, double *h, TcF16Point *pt)
{
	double		sums[4];

	tc_f16_sums(p, y, d, h, sums);
	tc_f16_finish(p, d, sums[0], sums[1], sums[2], sums[3], pt);
}

/*
 * Cosine's threshold for the Euclidean filter of the unit vectors: the
 * square of tc_cosine_unit_eps (distance.h), rounded up.
 */
static inline TC_HOSTDEV double
tc_f16_cosine_thr(double eps_unit)
{
	return eps_unit * eps_unit * (1.0 + 0x1p-50);
}

/*
 * te = sigma^2 eps / 2 for the inner product's q, clamped to +-2^100 (see
 * above): sigma is 2^k, so it is exact unless it would overflow or underflow.
 */
static inline TC_HOSTDEV double
tc_f16_ip_half(const TcF16Plan *p, double eps)
{
	int			k;
	double		te;

	(void) frexp(p->sigma, &k);	/* sigma = 2^(k - 1) */
	te = ldexp(eps, 2 * (k - 1) - 1);
	return te > 0x1p100 ? 0x1p100 : te < -0x1p100 ? -0x1p100 : te;
}

/*
 * The inner product's filter values of a point (not centred), from the sums
 * of h^2, (h - sigma x)^2 and (sigma x)^2 and A, as for tc_f16_finish, and
 * te = tc_f16_ip_half(eps).
 */
static inline TC_HOSTDEV void
tc_f16_ip_finish(const TcF16Plan *p, int d, double hn2, double r2, double y2, double A, double te,
				 TcF16Point *pt)
{
	double		slack = 1.0 + (double) (d + 4) * 0x1p-52;
	double		r = sqrt(r2 * slack) * (1.0 + 0x1p-50);
	double		m2 = (hn2 > y2 ? hn2 : y2) * slack;
	double		phi = (r * r * 0x1p11 + m2 * 0x1p-13) * (1.0 + 0x1p-48);
	double		acc = p->prefix ?
		22.0 * 0x1p-23 * hn2 + 10.0 * 0x1p-23 * A * (1.0 + 0x1p-30) :
		(double) p->kappa * hn2 * 0.5;
	double		gam = (double) (d + 10) * 0x1p-53 * y2 * slack * 0.5;
	double		Q = -te - (phi + acc + gam) * (1.0 + 0x1p-40);

	pt->hn = hn2;
	pt->R = r;
	pt->rc = 0.0f;
	pt->q = tc_f16_float_down(Q - fabs(Q) * 0x1p-22 - 0x1p-102);
}

/* The inner product's: one point from its coordinates x (not centred). */
static inline TC_HOSTDEV void
tc_f16_ip_point(const TcF16Plan *p, const double *x, int d, double te, double *h, TcF16Point *pt)
{
	double		sums[4];

	tc_f16_sums(p, x, d, h, sums);
	tc_f16_ip_finish(p, d, sums[0], sums[1], sums[2], sums[3], te, pt);
}

/* The epilogue's test: true iff the pair is certainly beyond eps. */
static inline TC_HOSTDEV bool
tc_f16_drop(float acc, float q_a, float q_b, float rc_a, float rc_b)
{
	return acc + rc_a * rc_b < q_a + q_b;
}

#endif							/* TCJOIN_FP16_FILTER_H */
