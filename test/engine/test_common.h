/*
 * test_common.h
 *		Shared pieces of the engine tests: a PRNG, point generators, an
 *		independent naive reference join, and exact result comparison.
 *
 * The reference deliberately shares no code with the engine: it evaluates the
 * contract formula literally (float8 sum of squared differences in index
 * order, then sqrt) for every pair.  Everything here must be compiled with
 * -ffp-contract=off so that the compiler cannot fuse the multiply-adds.
 */
#ifndef TC_TEST_COMMON_H
#define TC_TEST_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"

/* ---- PRNG: splitmix64 for seeding, xoshiro256** for streams ---- */

typedef struct Rng
{
	uint64_t	s[4];
} Rng;

uint64_t	splitmix64(uint64_t *state);
void		rng_seed(Rng *r, uint64_t seed);
uint64_t	rng_next(Rng *r);
double		rng_uniform(Rng *r);	/* [0, 1) */
double		rng_normal(Rng *r);
uint64_t	rng_below(Rng *r, uint64_t bound);	/* [0, bound), bound > 0 */
uint64_t	mix_seed(uint64_t a, uint64_t b);

/* Seconds on a monotonic clock. */
double		now_seconds(void);

/* ---- point sets ---- */

typedef enum Dist
{
	DIST_UNIFORM,
	DIST_EXPONENTIAL,
	DIST_CLUSTERED,
	DIST_DUPLICATES,
	DIST_IDENTICAL,
	DIST_OFFSET_1E6,
	DIST_OFFSET_1E9,
	DIST_ZERO_DIM,
	DIST_MIXED_MAG,
	DIST_UNDERFLOW,
	DIST_NEGATIVE,
	DIST_LATTICE,
	DIST_COUNT
} Dist;

const char *dist_name(Dist dist);

/* Allocate and fill p; free with points_free.  Data is never NULL. */
void		points_generate(TcPoints *p, Dist dist, int64_t n, int32_t d,
							TcElemType type, Rng *r);
void		points_alloc(TcPoints *p, int64_t n, int32_t d, TcElemType type);
void		points_set(TcPoints *p, int64_t i, int32_t k, double v);
void		points_free(TcPoints *p);

static inline double
points_get(const TcPoints *p, int64_t i, int32_t k)
{
	size_t		off = (size_t) i * (size_t) p->d + (size_t) k;

	if (p->type == TC_FLOAT4)
		return (double) ((const float *) p->data)[off];
	return ((const double *) p->data)[off];
}

/* The contract distance between a[i] and b[j]: sqrt of the float8 sum. */
double		ref_dist(const TcPoints *a, int64_t i, const TcPoints *b, int64_t j);

/* ---- pair vectors ---- */

typedef struct PairVec
{
	TcPair	   *v;
	size_t		n;
	size_t		cap;
} PairVec;

void		pairvec_push(PairVec *pv, int64_t a, int64_t b, double dist);
void		pairvec_append(PairVec *pv, const TcPair *pairs, size_t count);
void		pairvec_free(PairVec *pv);

/*
 * Sort pairs by (a, b).  With normalize, each pair is first rewritten as
 * (min, max), as a self-join may report either order.  nrows bounds a.
 */
void		pairvec_sort(PairVec *pv, bool normalize, int64_t nrows);

/* ---- naive reference ---- */

/*
 * All pairwise contract distances, computed once per data set so that many
 * eps values can be checked cheaply.  Self-join (b == NULL): the strict
 * upper triangle, row-major.  Two sets: the full na x nb matrix.
 */
typedef struct RefTable
{
	const TcPoints *a;
	const TcPoints *b;			/* NULL for a self-join */
	int64_t		na;
	int64_t		nb;
	double	   *dist;
} RefTable;

void		ref_table_build(RefTable *t, const TcPoints *a, const TcPoints *b);
void		ref_table_free(RefTable *t);
size_t		ref_table_size(const RefTable *t);
/* Distance of pair (i, j); for a self-join i != j, either order. */
double		ref_table_get(const RefTable *t, int64_t i, int64_t j);

/* The expected result for eps, sorted by (a, b), normalized to a <= b. */
void		ref_table_pairs(const RefTable *t, double eps, bool include_self,
							PairVec *out);
/* Only the count of the above. */
size_t		ref_table_count(const RefTable *t, double eps, bool include_self);

/* The expected result computed directly, without a table (small inputs). */
void		ref_join(const TcPoints *a, const TcPoints *b, double eps,
					 bool include_self, PairVec *out);

/* ---- comparison ---- */

/*
 * Compare an engine result (already sorted, normalized for self-joins) with
 * the expected one.  Indices and dist must match exactly (dist bitwise).
 * Prints at most max_lines "FAIL <label>: ..." lines and returns the number
 * of differences found (0: identical).
 */
size_t		compare_pairs(const char *label, const PairVec *got,
						  const PairVec *want, int max_lines);

/* Bitwise float8 equality (distinguishes -0.0, compares NaN payloads). */
bool		same_bits(double x, double y);

#endif							/* TC_TEST_COMMON_H */
