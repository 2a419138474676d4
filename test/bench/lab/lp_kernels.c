/*
 * lp_kernels.c
 *		Throughput of candidate kernels for the CPU's dot-product filter, one
 *		thread, an N x N x D block of dot products (no decisions): the float32
 *		2 x 4 kernel the filter runs (multiply, then add: no FMA), AVX-512
 *		BF16 (vdpbf16ps) and AVX-512 VNNI int8 (vpdpbusd), both 8 rows x 32
 *		columns with the columns packed four dimensions a lane.
 *
 *	cc -O2 -ffp-contract=off -o lp_kernels lp_kernels.c && ./lp_kernels [N [D [REPS]]]
 *
 * The row loops are unrolled (GCC keeps the accumulators in memory
 * otherwise, at a quarter of the rate).  Prints each kernel's median seconds and billions of multiply-adds a
 * second.  A lab probe: it decides which kernel the filter gets.
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef float v8sf __attribute__((vector_size(32)));

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((target("avx2")))
static void
f32_2x4(const float *a0, const float *a1, const float *b0, const float *b1,
		const float *b2, const float *b3, int dp, float *out)
{
	v8sf		s[8] = {{0}};

	for (int k = 0; k < dp; k += 8)
	{
		v8sf		x0 = *(const v8sf *) (a0 + k),
					x1 = *(const v8sf *) (a1 + k);
		v8sf		y0 = *(const v8sf *) (b0 + k),
					y1 = *(const v8sf *) (b1 + k),
					y2 = *(const v8sf *) (b2 + k),
					y3 = *(const v8sf *) (b3 + k);

		s[0] += x0 * y0;
		s[1] += x0 * y1;
		s[2] += x0 * y2;
		s[3] += x0 * y3;
		s[4] += x1 * y0;
		s[5] += x1 * y1;
		s[6] += x1 * y2;
		s[7] += x1 * y3;
	}
	for (int p = 0; p < 8; p++)
	{
		float		t = 0;

		for (int l = 0; l < 8; l++)
			t += s[p][l];
		out[p] = t;
	}
}

/* a: 8 rows of dp bytes; bp: 32 columns packed [dp/4][32 x 4 bytes]; out 8 x 32 int32 */
__attribute__((target("avx512f,avx512bw,avx512vnni")))
static void
i8_8x32(const int8_t *a, int dp, const uint8_t *bp, int32_t *out)
{
	__m512i		acc[16];

	for (int i = 0; i < 16; i++)
		acc[i] = _mm512_setzero_si512();
	for (int k = 0; k < dp; k += 4)
	{
		__m512i		b0 = _mm512_load_si512(bp + (size_t) k * 32);
		__m512i		b1 = _mm512_load_si512(bp + (size_t) k * 32 + 64);

#pragma GCC unroll 8
		for (int r = 0; r < 8; r++)
		{
			__m512i		x = _mm512_set1_epi32(*(const int32_t *) (a + (size_t) r * dp + k));

			acc[2 * r] = _mm512_dpbusd_epi32(acc[2 * r], b0, x);
			acc[2 * r + 1] = _mm512_dpbusd_epi32(acc[2 * r + 1], b1, x);
		}
	}
	for (int i = 0; i < 16; i++)
		_mm512_storeu_si512(out + i * 16, acc[i]);
}

/* a: 8 rows of dp bf16; bp: 32 columns packed [dp/2][32 x 2 bf16]; out 8 x 32 float */
__attribute__((target("avx512f,avx512bw,avx512bf16")))
static void
bf16_8x32(const uint16_t *a, int dp, const uint16_t *bp, float *out)
{
	__m512		acc[16];

	for (int i = 0; i < 16; i++)
		acc[i] = _mm512_setzero_ps();
	for (int k = 0; k < dp; k += 2)
	{
		__m512bh	b0 = (__m512bh) _mm512_load_si512(bp + (size_t) k * 32);
		__m512bh	b1 = (__m512bh) _mm512_load_si512(bp + (size_t) k * 32 + 32);

#pragma GCC unroll 8
		for (int r = 0; r < 8; r++)
		{
			__m512bh	x = (__m512bh) _mm512_set1_epi32(*(const int32_t *) (a + (size_t) r * dp + k));

			acc[2 * r] = _mm512_dpbf16_ps(acc[2 * r], b0, x);
			acc[2 * r + 1] = _mm512_dpbf16_ps(acc[2 * r + 1], b1, x);
		}
	}
	for (int i = 0; i < 16; i++)
		_mm512_storeu_ps(out + i * 16, acc[i]);
}

static int
cmp(const void *x, const void *y)
{
	double		a = *(const double *) x,
				b = *(const double *) y;

	return (a > b) - (a < b);
}

int
main(int argc, char **argv)
{
	int			n = argc > 1 ? atoi(argv[1]) : 2048;
	int			d = argc > 2 ? atoi(argv[2]) : 384;
	int			reps = argc > 3 ? atoi(argv[3]) : 5;
	int			dp = (d + 63) / 64 * 64;
	float	   *f = aligned_alloc(64, sizeof(float) * n * dp);
	int8_t	   *q = aligned_alloc(64, (size_t) n * dp);
	uint8_t    *qp = aligned_alloc(64, (size_t) n * dp);
	uint16_t   *h = aligned_alloc(64, sizeof(uint16_t) * n * dp);
	uint16_t   *hp = aligned_alloc(64, sizeof(uint16_t) * n * dp);
	float		sink = 0;
	double		t[3][64];
	const char *names[3] = {"float32 2x4 (mul+add, AVX2)", "int8 vpdpbusd 8x32 (AVX-512 VNNI)",
	"bf16 vdpbf16ps 8x32 (AVX-512 BF16)"};

	srand(1);
	for (size_t i = 0; i < (size_t) n * dp; i++)
	{
		f[i] = (float) rand() / RAND_MAX - 0.5f;
		q[i] = (int8_t) (rand() % 255 - 127);
		h[i] = (uint16_t) (rand() & 0x3fff);
	}
	/* columns packed in groups of 32: [group][k/4][col][4] and [group][k/2][col][2] */
	for (int g = 0; g < n / 32; g++)
		for (int k = 0; k < dp; k++)
			for (int c = 0; c < 32; c++)
			{
				size_t		row = (size_t) (g * 32 + c) * dp + k;

				qp[(size_t) g * 32 * dp + (size_t) (k / 4) * 128 + c * 4 + k % 4] = (uint8_t) (q[row] + 128);
				hp[(size_t) g * 32 * dp + (size_t) (k / 2) * 64 + c * 2 + k % 2] = h[row];
			}
	for (int r = 0; r < reps && r < 64; r++)
	{
		double		t0 = now();

		for (int i = 0; i < n; i += 2)
			for (int j = 0; j < n; j += 4)
			{
				float		o[8];

				f32_2x4(f + (size_t) i * dp, f + (size_t) (i + 1) * dp, f + (size_t) j * dp,
						f + (size_t) (j + 1) * dp, f + (size_t) (j + 2) * dp,
						f + (size_t) (j + 3) * dp, dp, o);
				sink += o[0];
			}
		t[0][r] = now() - t0;
		t0 = now();
		for (int g = 0; g < n / 32; g++)
			for (int i = 0; i < n; i += 8)
			{
				int32_t		o[256];

				i8_8x32(q + (size_t) i * dp, dp, qp + (size_t) g * 32 * dp, o);
				sink += o[0];
			}
		t[1][r] = now() - t0;
		t0 = now();
		for (int g = 0; g < n / 32; g++)
			for (int i = 0; i < n; i += 8)
			{
				float		o[256];

				bf16_8x32(h + (size_t) i * dp, dp, hp + (size_t) g * 32 * dp, o);
				sink += o[0];
			}
		t[2][r] = now() - t0;
	}
	printf("%d x %d x %d (padded %d), one thread, medians of %d\n", n, n, d, dp, reps);
	for (int k = 0; k < 3; k++)
	{
		qsort(t[k], reps, sizeof(double), cmp);
		printf("%-36s %8.4f s  %7.1f G multiply-adds/s\n", names[k], t[k][reps / 2],
			   (double) n * n * dp / t[k][reps / 2] * 1e-9);
	}
	return sink == 12345.0f;
}
