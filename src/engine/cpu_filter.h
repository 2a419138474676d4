/*
 * cpu_filter.h
 *		A float32 filter with a proven margin for the CPU brute force
 *		(cpu_filter.c has the proof).
 */
#ifndef TCJOIN_CPU_FILTER_H
#define TCJOIN_CPU_FILTER_H

#include <stdint.h>

#include "engine.h"

/* Below this many dimensions the exact sums are as cheap as the filter. */
#define TC_FILTER_MIN_DIMS 48

typedef struct TcFilter TcFilter;

/*
 * Build the filter for join's point sets into *slot (which the caller owns
 * and frees, even after a longjmp out of a poll).  Leaves *slot NULL where
 * the filter cannot help or its proof does not hold (few dimensions, a tiny
 * eps, data out of float32's reach): the exact path then runs alone.
 */
extern TcStatus tc_filter_build(TcJoin *join, TcFilter **slot);

/*
 * Rows [i0, i1) of a against [j0, j1) of b: keep[(i - i0) * (j1 - j0) +
 * (j - j0)] is 0 where the pair is surely farther than eps, 1 where the
 * exact formula must decide.
 */
extern void tc_filter_block(const TcFilter *f, int64_t i0, int64_t i1,
							int64_t j0, int64_t j1, uint8_t *keep);

extern void tc_filter_free(TcFilter *f);

/*
 * Float32 dot products of rows a0, a1 with rows b0..b3 (dp floats each, a
 * multiple of 8, 32-byte aligned): out[r * 4 + c], in any summation order.
 */
extern void tc_dots_2x4(const float *a0, const float *a1, const float *b0, const float *b1,
						const float *b2, const float *b3, int dp, float *out);

/*
 * The dot-product metrics' float32 filter (cpu_dot_filter.c has the proof):
 * the same contract as above for cosine and the inner product.  norm_a and
 * norm_b are the contract's squared norms of the points (the caller's, kept
 * alive with the filter); *slot is left NULL where the proof's range does
 * not hold.
 */
typedef struct TcDotFilter TcDotFilter;

extern TcStatus tc_dot_filter_build(TcJoin *join, const double *norm_a, const double *norm_b,
									TcDotFilter **slot);
extern void tc_dot_filter_block(const TcDotFilter *f, int64_t i0, int64_t i1,
								int64_t j0, int64_t j1, uint8_t *keep);
extern void tc_dot_filter_free(TcDotFilter *f);

/*
 * The dot-product metrics' int8 filter (cpu_dot_filter_lp.c has the proof),
 * for CPUs with AVX-512 VNNI (tc_cpu_has_int8_dot): the same contract.  Its
 * proof holds up to 16,384 dimensions, for the inner product and for
 * cosine with eps <= 0.99 (tc_dot_filter_lp_applies; the brute force takes
 * it from TC_FILTER_MIN_DIMS dimensions, as the float32 filter); *slot
 * is left NULL where the proof's range does not hold.  portable: plain C
 * in place of the instructions, the same integers (tests, any CPU).
 */
typedef struct TcDotFilterLp TcDotFilterLp;

extern bool tc_cpu_has_int8_dot(void);
extern bool tc_dot_filter_lp_applies(const TcJoin *join);
extern TcStatus tc_dot_filter_lp_build(TcJoin *join, const double *norm_a, const double *norm_b,
									   bool portable, TcDotFilterLp **slot);
extern void tc_dot_filter_lp_block(const TcDotFilterLp *f, int64_t i0, int64_t i1,
								   int64_t j0, int64_t j1, uint8_t *keep);
extern void tc_dot_filter_lp_free(TcDotFilterLp *f);

/* For the tests: the proof's upper bound on the contract's dot of a's i and b's j. */
extern double tc_dot_filter_lp_upper(const TcDotFilterLp *f, int64_t i, int64_t j);

#endif							/* TCJOIN_CPU_FILTER_H */
