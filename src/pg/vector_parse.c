/*
 * vector_parse.c
 *		One array value's (or pgvector value's) bytes read as a vector.
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
 * pgvector's layout after the length word (its src/vector.h and
 * src/halfvec.h): int16 dim, int16 reserved (zero), the elements.
 */
#define PGV_HEADER 4

TcVectorStatus
tc_pgvector_parse(const char *body, size_t len, size_t elem_size, TcVectorLayout *out)
{
	int16_t		dim;

	memset(out, 0, sizeof(*out));
	if (len < PGV_HEADER)
		return TC_VEC_MALFORMED;
	memcpy(&dim, body, sizeof(dim));
	out->ndim = 1;
	out->dim = dim;
	if (dim == 0)
		return TC_VEC_EMPTY;
	if (dim < 0 || (len - PGV_HEADER) / elem_size < (size_t) dim)
		return TC_VEC_MALFORMED;
	out->values = body + PGV_HEADER;
	return TC_VEC_OK;
}

/*
 * binary16: sign, 5 exponent bits (bias 15), 10 fraction bits.  Every one
 * is a float exactly: normal values keep their fraction and rebias the
 * exponent (127 - 15 = 112); subnormal ones are fraction x 2^-24, a product
 * float represents exactly; infinities and NaNs keep their class.
 */
void
tc_half_to_float(float *dst, const char *src, int32_t dim)
{
	for (int32_t i = 0; i < dim; i++)
	{
		uint16_t	h;
		uint32_t	sign,
					exp,
					frac,
					bits;
		float		f;

		memcpy(&h, src + 2 * (size_t) i, sizeof(h));
		sign = (uint32_t) (h & 0x8000) << 16;
		exp = (h >> 10) & 0x1f;
		frac = h & 0x3ff;
		if (exp == 0x1f)
			bits = sign | UINT32_C(0x7f800000) | (frac << 13);
		else if (exp != 0)
			bits = sign | ((exp + 112) << 23) | (frac << 13);
		else
		{
			f = (float) frac * 0x1p-24f;
			dst[i] = sign ? -f : f;
			continue;
		}
		memcpy(&f, &bits, sizeof(f));
		dst[i] = f;
	}
}

/*
 * One pass over the bits, no branch and no compare an element: an
 * element's exponent field plus one carries into the sign bit exactly when
 * the field is all ones (infinity or NaN), so the OR of those sums has its
 * sign bit set iff some element is not finite.  Runs of 16 with a fixed
 * count, which the compiler turns into vector instructions at -O2 (a loop
 * of unknown count it did not: that scalar loop was a quarter of reading
 * a 128-d column).  Only a row that fails is looked at element by element.
 */
bool
tc_vector_finite(const void *row, int32_t dim, size_t elem_size, int32_t *elem, bool *is_nan)
{
	bool		bad;
	int32_t		i = 0;

	if (elem_size == 4)
	{
		const uint32_t *w = row;
		uint32_t	acc = 0;

		for (; i + 16 <= dim; i += 16)
		{
			const uint32_t *p = w + i;
			uint32_t	run = 0;

			for (int k = 0; k < 16; k++)
				run |= (p[k] & UINT32_C(0x7f800000)) + UINT32_C(0x00800000);
			acc |= run;
		}
		for (; i < dim; i++)
			acc |= (w[i] & UINT32_C(0x7f800000)) + UINT32_C(0x00800000);
		bad = (acc & UINT32_C(0x80000000)) != 0;
	}
	else
	{
		const uint64_t *w = row;
		uint64_t	acc = 0;

		for (; i + 8 <= dim; i += 8)
		{
			const uint64_t *p = w + i;
			uint64_t	run = 0;

			for (int k = 0; k < 8; k++)
				run |= (p[k] & UINT64_C(0x7ff0000000000000)) + UINT64_C(0x0010000000000000);
			acc |= run;
		}
		for (; i < dim; i++)
			acc |= (w[i] & UINT64_C(0x7ff0000000000000)) + UINT64_C(0x0010000000000000);
		bad = (acc & UINT64_C(0x8000000000000000)) != 0;
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
