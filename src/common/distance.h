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

#endif							/* TCJOIN_DISTANCE_H */
