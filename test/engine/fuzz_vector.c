/*
 * fuzz_vector.c
 *		Fuzzing of the loader's array and pgvector reading
 *		(src/pg/vector_parse.c), built
 *		with AddressSanitizer and UndefinedBehaviorSanitizer: every input
 *		lies in an allocation of exactly its length, so a read outside it
 *		stops the run.
 *
 * Each case builds one array value the way PostgreSQL lays it out, from
 * chosen fields: 0 to 3 dimensions, any lower bounds, 4- or 8-byte
 * elements, with or without a NULL bitmap (NULLs anywhere), values with
 * NaN and infinities anywhere.  The verdict expected follows from those
 * fields alone (empty, not one-dimensional, the first NULL, or the values
 * and the first non-finite one), and is checked against the parser's.
 * Then the same bytes, damaged (bytes overwritten, header fields set to
 * extremes, the value cut short), must give either a verdict inside the
 * bytes or TC_VEC_MALFORMED, never a read outside them.  pgvector's vector
 * and halfvec values likewise, at odd addresses; and every binary16 value
 * widened to float against a reference built from its fields.
 *
 *	 fuzz_vector [SECONDS]		(default 10; seed from TC_TEST_SEED or the clock)
 * Ends with "N passed, N failed".
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vector_parse.h"

static uint64_t rng_state;

static uint64_t
next(void)
{
	/* splitmix64 */
	uint64_t	z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint32_t
below(uint32_t n)
{
	return (uint32_t) (next() % n);
}

static void
put32(unsigned char *p, int32_t v)
{
	memcpy(p, &v, 4);
}

#define MAXALIGN8(x) (((x) + 7) & ~(size_t) 7)

typedef struct Built
{
	unsigned char *bytes;		/* the body after the length word, exactly len */
	size_t		len;
	size_t		elem_size;
	int32_t		ndim;
	int32_t		dim;			/* first dimension (elements, for ndim 1) */
	int32_t		first_null;		/* 1-based, 0: none */
	int32_t		first_bad;		/* 1-based non-finite, 0: none */
	bool		bad_is_nan;
	size_t		values_at;
} Built;

/* One array value laid out as PostgreSQL lays it (array_in, construct_md_array). */
static void
build(Built *b)
{
	int32_t		dims[3] = {0, 0, 0};
	int64_t		nitems = 1;
	bool		nulls = below(3) == 0;
	size_t		header,
				bitmap_bytes = 0,
				values_at;
	int			w = below(10);

	memset(b, 0, sizeof(*b));
	b->elem_size = below(2) ? 4 : 8;
	b->ndim = w < 1 ? 0 : w < 8 ? 1 : 2 + (int32_t) below(2);
	for (int k = 0; k < b->ndim; k++)
	{
		dims[k] = 1 + (int32_t) below(k == 0 ? (below(8) == 0 ? 300 : 40) : 4);
		nitems *= dims[k];
	}
	if (b->ndim == 0)
		nitems = 0;
	b->dim = dims[0];
	header = 12 + 8 * (size_t) b->ndim;
	if (nulls && nitems > 0)
		bitmap_bytes = ((size_t) nitems + 7) / 8;
	values_at = bitmap_bytes ? MAXALIGN8(4 + header + bitmap_bytes) - 4 : MAXALIGN8(4 + header) - 4;
	b->values_at = values_at;
	b->len = values_at + (size_t) nitems * b->elem_size;
	b->bytes = malloc(b->len > 0 ? b->len : 1);
	memset(b->bytes, 0, b->len);
	put32(b->bytes + 0, b->ndim);
	put32(b->bytes + 4, bitmap_bytes ? (int32_t) (values_at + 4) : 0);
	put32(b->bytes + 8, b->elem_size == 4 ? 700 : 701);
	for (int k = 0; k < b->ndim; k++)
	{
		put32(b->bytes + 12 + 4 * k, dims[k]);
		put32(b->bytes + 12 + 4 * b->ndim + 4 * k, (int32_t) below(5) - 2);	/* lower bounds */
	}
	if (bitmap_bytes)
	{
		unsigned char *bm = b->bytes + header;

		memset(bm, 0xff, bitmap_bytes);
		/* the bits past the last item are zero, as PostgreSQL leaves them */
		if (nitems % 8)
			bm[bitmap_bytes - 1] = (unsigned char) ((1 << (nitems % 8)) - 1);
		if (below(2))
			for (int t = 0, m = 1 + (int) below(3); t < m; t++)
			{
				int32_t		i = (int32_t) below((uint32_t) nitems);

				bm[i / 8] &= (unsigned char) ~(1 << (i % 8));
				if (b->first_null == 0 || i + 1 < b->first_null)
					b->first_null = i + 1;
			}
	}
	/* values: finite mostly, NaN and infinities at chosen places */
	for (int64_t i = 0; i < nitems; i++)
	{
		double		x = (double) (int64_t) (next() % 2001) - 1000.0;
		int			kind = below(40);

		if (kind == 0)
			x = NAN;
		else if (kind == 1)
			x = below(2) ? INFINITY : -INFINITY;
		if (b->elem_size == 4)
		{
			float		f = (float) x;

			memcpy(b->bytes + values_at + 4 * i, &f, 4);
		}
		else
			memcpy(b->bytes + values_at + 8 * i, &x, 8);
		if ((kind == 0 || kind == 1) && b->first_bad == 0)
		{
			b->first_bad = (int32_t) i + 1;
			b->bad_is_nan = kind == 0;
		}
	}
}

static int	failed;				/* checks failed, of either kind */
static int	failed_damaged;

#define EXPECT(cond, ...) \
	do { \
		if (!(cond)) \
		{ \
			failed++; \
			if (failed <= 20) \
			{ \
				printf("FAILED "); \
				printf(__VA_ARGS__); \
				printf("\n"); \
			} \
			return; \
		} \
	} while (0)

/* The parser's verdict on a well-formed value against the one its fields imply. */
static void
check_built(const Built *b)
{
	TcVectorLayout lay;
	TcVectorStatus st = tc_vector_parse((const char *) b->bytes, b->len, b->elem_size, &lay);

	if (b->ndim == 0)
	{
		EXPECT(st == TC_VEC_EMPTY, "empty array: status %d", st);
		return;
	}
	if (b->ndim > 1)
	{
		EXPECT(st == TC_VEC_NOT_1D && lay.ndim == b->ndim, "%d-D array: status %d, ndim %d",
			   b->ndim, st, lay.ndim);
		return;
	}
	if (b->first_null)
	{
		EXPECT(st == TC_VEC_NULL && lay.elem == b->first_null, "NULL at %d of %d: status %d, elem %d",
			   b->first_null, b->dim, st, lay.elem);
		return;
	}
	EXPECT(st == TC_VEC_OK && lay.dim == b->dim &&
		   lay.values == (const char *) b->bytes + b->values_at,
		   "%d elements of %zu bytes: status %d, dim %d, values at %td (want %zu)", b->dim,
		   b->elem_size, st, lay.dim, lay.values ? lay.values - (const char *) b->bytes : -1,
		   b->values_at);
	{
		/* the loader checks an aligned copy */
		void	   *copy = malloc((size_t) b->dim * b->elem_size);
		int32_t		elem = 0;
		bool		is_nan = false;
		bool		fin;

		memcpy(copy, lay.values, (size_t) b->dim * b->elem_size);
		fin = tc_vector_finite(copy, b->dim, b->elem_size, &elem, &is_nan);
		free(copy);
		EXPECT(fin == (b->first_bad == 0), "finite: %d, want %d", fin, b->first_bad == 0);
		EXPECT(fin || (elem == b->first_bad && is_nan == b->bad_is_nan),
			   "first non-finite %d (nan %d), want %d (nan %d)", elem, is_nan, b->first_bad,
			   b->bad_is_nan);
	}
}

/* A damaged value's verdict: any, but one inside its bytes. */
static void
check_damaged_verdict(const unsigned char *bytes, size_t len, const Built *b,
					  TcVectorStatus st, const TcVectorLayout *lay)
{
	if (st == TC_VEC_OK)
	{
		EXPECT(lay->dim >= 1 && lay->values >= (const char *) bytes + 20 &&
			   lay->values + (size_t) lay->dim * b->elem_size <= (const char *) bytes + len,
			   "damaged value: %d elements at %td of %zu bytes", lay->dim,
			   lay->values - (const char *) bytes, len);
		/* read every element, as the loader's copy would */
		{
			volatile unsigned char sum = 0;

			for (size_t i = 0; i < (size_t) lay->dim * b->elem_size; i++)
				sum += (unsigned char) lay->values[i];
			(void) sum;
		}
	}
	else if (st == TC_VEC_NULL)
		EXPECT(lay->elem >= 1 && lay->elem <= lay->dim, "damaged value: NULL at %d of %d",
			   lay->elem, lay->dim);
}

/* Damaged bytes: any verdict, but one that stays inside them. */
static void
check_damaged(const Built *b)
{
	size_t		len = b->len;
	unsigned char *bytes;
	TcVectorLayout lay;
	TcVectorStatus st;
	int			how = below(4);

	if (how == 0 && len > 0)
		len = below((uint32_t) len);	/* cut short */
	bytes = malloc(len > 0 ? len : 1);
	memcpy(bytes, b->bytes, len);
	if (how == 1)
		for (int t = 0, m = 1 + (int) below(4); t < m && len > 0; t++)
			bytes[below((uint32_t) (len < 48 ? len : 48))] = (unsigned char) next();
	else if (how == 2 && len >= 20)
	{
		static const int32_t extremes[] = {0, 1, -1, 2, 7, 8, 16, 19, 20, 23, 24, 255, 4096,
		INT32_MAX, INT32_MIN, INT32_MAX - 3, 1000001};
		int			field = below(5);	/* ndim, dataoffset, type, dims[0], lbound[0] */

		put32(bytes + 4 * field, extremes[below(sizeof(extremes) / sizeof(extremes[0]))]);
	}
	else if (how == 3 && len >= 24 && b->ndim == 1)
		put32(bytes + 4, (int32_t) below(64));	/* a bitmap claimed where there is none, or off */
	st = tc_vector_parse((const char *) bytes, len, b->elem_size, &lay);
	{
		int			before = failed;

		check_damaged_verdict(bytes, len, b, st, &lay);
		failed_damaged += failed - before;
	}
	free(bytes);
}

/* binary16 h as a double, from its fields alone: the reference for tc_half_to_float */
static double
half_reference(uint16_t h)
{
	int			sign = h >> 15,
				exp = (h >> 10) & 0x1f,
				frac = h & 0x3ff;
	double		mag;

	if (exp == 0x1f)
		mag = frac ? NAN : INFINITY;
	else if (exp == 0)
		mag = ldexp((double) frac, -24);
	else
		mag = ldexp(1.0 + frac / 1024.0, exp - 15);
	return sign ? -mag : mag;
}

/* Every binary16 value, widened: equal to the reference, zeros' signs and NaNs kept. */
static int
check_all_halves(void)
{
	int			wrong = 0;

	for (uint32_t h = 0; h <= 0xffff; h++)
	{
		uint16_t	v = (uint16_t) h;
		float		f;
		double		want = half_reference(v);

		tc_half_to_float(&f, (const char *) &v, 1);
		if (isnan(want) ? !isnan(f) : ((double) f != want || !signbit(f) != !signbit(want)))
		{
			if (++wrong <= 5)
				printf("FAILED half 0x%04x: %.9g, want %.9g\n", h, (double) f, want);
		}
	}
	return wrong;
}

/*
 * One pgvector value (vector: 4-byte elements, halfvec: 2), its body at an
 * odd address as a short varlena header leaves it, exactly len bytes:
 * read as built, then damaged (cut short, dim overwritten).
 */
static void
check_pgvector(void)
{
	size_t		elem = below(2) ? 4 : 2;
	int16_t		dim = (int16_t) (below(8) == 0 ? 0 : 1 + below(40));
	size_t		len = 4 + (size_t) dim * elem;
	unsigned char *mem = malloc(len + 1);
	unsigned char *body = mem + 1;
	TcVectorLayout lay;
	TcVectorStatus st;

	memcpy(body, &dim, 2);
	memset(body + 2, 0, 2);
	for (size_t i = 4; i < len; i++)
		body[i] = (unsigned char) next();
	st = tc_pgvector_parse((const char *) body, len, elem, &lay);
	if (dim == 0)
		EXPECT(st == TC_VEC_EMPTY, "pgvector dim 0: status %d", st);
	else
	{
		EXPECT(st == TC_VEC_OK && lay.dim == dim && lay.values == (const char *) body + 4,
			   "pgvector %d x %zu bytes: status %d, dim %d", dim, elem, st, lay.dim);
		if (elem == 2)
		{
			float		out[40];

			tc_half_to_float(out, lay.values, lay.dim);
			for (int i = 0; i < dim; i++)
			{
				uint16_t	h;
				double		want;

				memcpy(&h, body + 4 + 2 * i, 2);
				want = half_reference(h);
				EXPECT(isnan(want) ? isnan(out[i]) : (double) out[i] == want,
					   "halfvec element %d: %.9g, want %.9g", i, (double) out[i], want);
			}
		}
	}
	/* damaged: cut short, or dim overwritten; the verdict stays inside the bytes */
	{
		size_t		dlen = below(2) ? below((uint32_t) len + 1) : len;
		int16_t		ddim = (int16_t) next();

		if (dlen == len && len >= 2)
			memcpy(body, &ddim, 2);
		st = tc_pgvector_parse((const char *) body, dlen, elem, &lay);
		EXPECT(st != TC_VEC_OK ||
			   (lay.dim >= 1 && lay.values + (size_t) lay.dim * elem <= (const char *) body + dlen),
			   "damaged pgvector: %d elements in %zu bytes", lay.dim, dlen);
	}
	free(mem);
}

int
main(int argc, char **argv)
{
	double		seconds = argc > 1 ? atof(argv[1]) : 10;
	const char *seed_env = getenv("TC_TEST_SEED");
	uint64_t	seed = seed_env ? strtoull(seed_env, NULL, 10) : (uint64_t) time(NULL);
	time_t		start = time(NULL);
	long		cases = 0;

	int			halves_wrong,
				before_pgv;
	int			failed_pgv = 0;

	rng_state = seed;
	printf("fuzz_vector: seed %" PRIu64 " (TC_TEST_SEED to replay), %.0f s\n", seed, seconds);
	halves_wrong = check_all_halves();
	printf("every binary16 value widened to float: %d wrong\n", halves_wrong);
	while (difftime(time(NULL), start) < seconds)
	{
		for (int k = 0; k < 1000; k++)
		{
			Built		b;

			build(&b);
			check_built(&b);
			for (int t = 0; t < 4; t++)
				check_damaged(&b);
			free(b.bytes);
			before_pgv = failed;
			check_pgvector();
			failed_pgv += failed - before_pgv;
			failed_damaged += failed - before_pgv;	/* counted apart below */
			cases++;
		}
	}
	failed_damaged -= failed_pgv;
	/*
	 * Four checks: every array read as built, every damaged array inside its
	 * bytes, every pgvector value (vector and halfvec, read and damaged),
	 * every binary16 value widened exactly.
	 */
	printf("%ld arrays, each read as built (%d wrong) and damaged 4 ways (%d wrong); "
		   "%ld pgvector values (%d wrong)\n", cases, failed - failed_damaged - failed_pgv,
		   failed_damaged, cases, failed_pgv);
	printf("%d passed, %d failed\n",
		   (failed - failed_damaged - failed_pgv == 0) + (failed_damaged == 0) +
		   (failed_pgv == 0) + (halves_wrong == 0),
		   (failed - failed_damaged - failed_pgv > 0) + (failed_damaged > 0) +
		   (failed_pgv > 0) + (halves_wrong > 0));
	return failed || halves_wrong ? 1 : 0;
}
