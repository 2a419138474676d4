/*
 * vector_parse.c
 *		One array value's bytes read as a vector.
 *
 * The layout is PostgreSQL's ArrayType after its length word: ndim,
 * dataoffset (0 without a NULL bitmap; else where the values start,
 * counting the length word), the element type, dims[ndim], lbound[ndim],
 * the bitmap if any, then the values.  Every field is checked against the
 * bytes there are before it is used, so that no value, however malformed,
 * is read outside them: the values PostgreSQL hands over are well formed,
 * but nothing here depends on it.
 */
#include "vector_parse.h"

#include <math.h>
#include <string.h>

#define BODY_NDIM 0
#define BODY_DATAOFFSET 4
#define BODY_DIMS 12
#define LENGTH_WORD 4
/* ndim, dataoffset, element type, dims[1], lbound[1] */
#define HEADER_1D (BODY_DIMS + 2 * 4)

static int32_t
read_int32(const char *p)
{
	int32_t		v;

	memcpy(&v, p, sizeof(v));
	return v;
}

TcVectorStatus
tc_vector_parse(const char *body, size_t len, size_t elem_size, TcVectorLayout *out)
{
	int32_t		dataoffset;
	size_t		values_at;

	memset(out, 0, sizeof(*out));
	if (len < BODY_DIMS)
		return TC_VEC_MALFORMED;
	out->ndim = read_int32(body + BODY_NDIM);
	dataoffset = read_int32(body + BODY_DATAOFFSET);
	if (out->ndim == 0)
		return TC_VEC_EMPTY;
	if (out->ndim != 1)
		return out->ndim > 1 ? TC_VEC_NOT_1D : TC_VEC_MALFORMED;
	if (len < HEADER_1D)
		return TC_VEC_MALFORMED;
	out->dim = read_int32(body + BODY_DIMS);
	if (out->dim < 1)
		return TC_VEC_MALFORMED;
	if (dataoffset != 0)
	{
		/* a NULL bitmap, one bit an element, any clear bit a NULL */
		const unsigned char *bitmap = (const unsigned char *) body + HEADER_1D;
		size_t		bitmap_bytes = ((size_t) out->dim + 7) / 8;

		if (len - HEADER_1D < bitmap_bytes)
			return TC_VEC_MALFORMED;
		for (int32_t i = 0; i < out->dim; i++)
			if ((bitmap[i / 8] & (1 << (i % 8))) == 0)
			{
				out->elem = i + 1;
				return TC_VEC_NULL;
			}
		if (dataoffset < LENGTH_WORD ||
			(size_t) dataoffset - LENGTH_WORD < HEADER_1D + bitmap_bytes)
			return TC_VEC_MALFORMED;
		values_at = (size_t) dataoffset - LENGTH_WORD;
	}
	else
		values_at = TC_VEC_VALUES_NONULLS;
	if (values_at > len || (len - values_at) / elem_size < (size_t) out->dim)
		return TC_VEC_MALFORMED;
	out->values = body + values_at;
	return TC_VEC_OK;
}

/*
 * One pass over the bits, no branch an element (it vectorizes); only a row
 * that fails is looked at element by element.
 */
bool
tc_vector_finite(const void *row, int32_t dim, size_t elem_size, int32_t *elem, bool *is_nan)
{
	bool		bad = false;

	if (elem_size == 4)
	{
		const uint32_t *w = row;

		for (int32_t i = 0; i < dim; i++)
			bad |= (w[i] & UINT32_C(0x7f800000)) == UINT32_C(0x7f800000);
	}
	else
	{
		const uint64_t *w = row;

		for (int32_t i = 0; i < dim; i++)
			bad |= (w[i] & UINT64_C(0x7ff0000000000000)) == UINT64_C(0x7ff0000000000000);
	}
	if (!bad)
		return true;
	for (int32_t i = 0; i < dim; i++)
	{
		double		x = elem_size == 4 ? (double) ((const float *) row)[i] : ((const double *) row)[i];

		if (!isfinite(x))
		{
			*elem = i + 1;
			*is_nan = isnan(x);
			return false;
		}
	}
	return true;
}
