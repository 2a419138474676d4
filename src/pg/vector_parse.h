/*
 * vector_parse.h
 *		One array's (or pgvector value's) bytes read as a vector, every field
 *		checked against the bytes there are.  No PostgreSQL header: the fuzzer
 *		(test/engine/fuzz_vector.c) drives it alone.
 */
#ifndef TCJOIN_VECTOR_PARSE_H
#define TCJOIN_VECTOR_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum TcVectorStatus
{
	TC_VEC_OK = 0,
	TC_VEC_EMPTY,				/* no dimension */
	TC_VEC_NOT_1D,				/* ndim > 1 (ndim says how many) */
	TC_VEC_NULL,				/* a NULL element (elem says which, 1-based) */
	TC_VEC_MALFORMED			/* fields that do not fit the bytes */
} TcVectorStatus;

typedef struct TcVectorLayout
{
	int32_t		ndim;
	int32_t		dim;			/* elements, when ndim == 1 */
	int32_t		elem;			/* TC_VEC_NULL: the first NULL, 1-based */
	const char *values;			/* TC_VEC_OK: dim elements inside the bytes */
} TcVectorLayout;

/*
 * body, len: an array's bytes after its 4-byte length word (flat: neither
 * toasted nor expanded).  elem_size: 4 (real) or 8 (double precision).
 */
extern TcVectorStatus tc_vector_parse(const char *body, size_t len, size_t elem_size,
									  TcVectorLayout *out);

/*
 * pgvector's vector (elem_size 4: float) and halfvec (2: IEEE binary16),
 * body and len as above: int16 dim, int16 reserved, then dim elements.
 * Read from the bytes as they lie (a short varlena header leaves them
 * unaligned); dim 0 is TC_VEC_EMPTY.
 */
extern TcVectorStatus tc_pgvector_parse(const char *body, size_t len, size_t elem_size,
										TcVectorLayout *out);

/* dim IEEE binary16 values (any alignment) into floats: exact, every one. */
extern void tc_half_to_float(float *dst, const char *src, int32_t dim);

/*
 * Whether all dim elements of row (aligned for its type) are finite; if
 * not, *elem is the first that is not (1-based) and *is_nan says which kind.
 */
extern bool tc_vector_finite(const void *row, int32_t dim, size_t elem_size,
							 int32_t *elem, bool *is_nan);

/* Where the values start in an array without a NULL bitmap, one dimension. */
#define TC_VEC_VALUES_NONULLS 20

#endif							/* TCJOIN_VECTOR_PARSE_H */
