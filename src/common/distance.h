/*
 * distance.h
 *		The contract's exact distance, shared by every CPU path.
 *
 * s = sum over k of ((double) a_k - (double) b_k)^2, in index order.  This
 * file must be compiled with -ffp-contract=off (the Makefiles do): a fused
 * multiply-add would round differently and break bit-identical results.
 *
 * The partial sums never decrease (each term is >= 0 and rounding is
 * monotone), so once a partial sum exceeds thr = tc_sq_threshold(eps) the
 * final sum does too and the pair can be rejected early without changing
 * any answer.
 */
#ifndef TCJOIN_DISTANCE_H
#define TCJOIN_DISTANCE_H

#include <math.h>
#include <stdbool.h>

/*
 * Early exit is tested every TC_EXIT_STRIDE dimensions: often enough to save
 * work on long vectors, rarely enough that the branch stays cheap.
 */
#define TC_EXIT_STRIDE 8

#define TC_DEFINE_WITHIN(NAME, ELEM) \
static inline bool \
NAME(const ELEM *a, const ELEM *b, int d, double thr, double *dist) \
{ \
	double		s = 0.0; \
	int			k = 0; \
	\
	for (; k + TC_EXIT_STRIDE <= d; k += TC_EXIT_STRIDE) \
	{ \
		for (int u = 0; u < TC_EXIT_STRIDE; u++) \
		{ \
			double		t = (double) a[k + u] - (double) b[k + u]; \
			\
			s += t * t; \
		} \
		if (s > thr) \
			return false; \
	} \
	for (; k < d; k++) \
	{ \
		double		t = (double) a[k] - (double) b[k]; \
		\
		s += t * t; \
	} \
	if (!(s <= thr)) \
		return false; \
	*dist = sqrt(s); \
	return true; \
}

TC_DEFINE_WITHIN(tc_within_f4, float)
TC_DEFINE_WITHIN(tc_within_f8, double)

/*
 * The cosine contract's dist from a dot product and the two squared norms
 * (each summed in float8, in index order): 1 - clamp(dot / sqrt(na nb)).
 * Monotone decreasing in dot, which the float32 filter's bound relies on.
 */
static inline double
tc_cosine_dist(double dot, double na, double nb)
{
	double		sim = dot / sqrt(na * nb);

	if (sim > 1.0)
		sim = 1.0;
	else if (sim < -1.0)
		sim = -1.0;
	return 1.0 - sim;
}

/*
 * The dot-product metrics' paths that filter (the unit vectors' grid and
 * FP16 brute force on the GPU) prove their margins for points whose every
 * coordinate is 0 or of magnitude in [TC_DOT_RANGE_LO, TC_DOT_RANGE_HI],
 * and d <= TC_DOT_RANGE_DIMS: then no square, product or sum of d of them
 * overflows or underflows, nor does na nb.  Every real and halfvec value
 * lies within it; float8 values are checked.
 */
#define TC_DOT_RANGE_LO 0x1p-240
#define TC_DOT_RANGE_HI 0x1p240
#define TC_DOT_RANGE_DIMS (1 << 20)

/*
 * A Euclidean threshold on the unit vectors u = fl(x / fl(sqrt(na))) that
 * keeps every pair whose cosine dist (the contract's) is at most eps, for
 * points within the range above.  With gamma = (d + 10) 2^-53: the
 * contract's sim is within 5 gamma of the true cosine s (dot within gamma
 * |a||b|, the root of na nb within 2 gamma, one rounding each after), so
 * dist <= eps gives 1 - s <= eps + 6 gamma; each computed unit vector is
 * within 2 gamma of the true one, and |a/|a| - b/|b|| = sqrt(2 (1 - s));
 * the Euclidean contract's sum on the unit vectors is at most their
 * distance times 1 + gamma, squared.  With m = max(1e-12, 6 gamma) every
 * term is covered, and the threshold's own roundings by the last factor.
 */
static inline double
tc_cosine_unit_eps(double eps, int d)
{
	double		m = 6.0 * (double) (d + 10) * 0x1p-53;

	if (m < 1e-12)
		m = 1e-12;
	return (sqrt(2.0 * (eps + m)) + 2.0 * m) * (1.0 + m);
}

#endif							/* TCJOIN_DISTANCE_H */
