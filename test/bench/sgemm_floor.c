/*
 * sgemm_floor.c
 *		The CPU's floor for a brute-force join of n points in d dimensions:
 *		OpenBLAS SGEMM of the same n x n x d shape (C = A A^T, float32), as
 *		gemm_floor.cu is the GPU's with cuBLAS.
 *
 *	sgemm_floor N D [REPS]
 *
 * Prints one CSV line: n, d, threads, median seconds, GFLOP/s (2 n^2 d
 * flops, as tcbench counts a brute-force join), min and max seconds.
 * OpenBLAS takes its threads from OPENBLAS_NUM_THREADS (default: every
 * CPU).  Where the n x n output would not fit in 4 GB, square blocks of
 * 8,192 rows are timed and the time scaled by area: a block runs at the
 * rate of the whole product.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int
cmp_dbl(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	long		n,
				d,
				m;
	int			reps;
	float	   *a,
			   *c;
	double	   *t;
	double		scale;
	unsigned int seed = 1;

	if (argc < 3)
	{
		fprintf(stderr, "usage: sgemm_floor N D [REPS]\n");
		return 2;
	}
	n = atol(argv[1]);
	d = atol(argv[2]);
	reps = argc > 3 ? atoi(argv[3]) : 3;
	if (n < 1 || d < 1 || reps < 1)
	{
		fprintf(stderr, "sgemm_floor: N, D and REPS must be positive\n");
		return 2;
	}
	m = (double) n * n * 4 > 4e9 ? 8192 : n;	/* rows of the block timed */
	scale = ((double) n / m) * ((double) n / m);
	a = malloc(sizeof(float) * n * d);
	c = malloc(sizeof(float) * m * m);
	t = malloc(sizeof(double) * reps);
	if (a == NULL || c == NULL || t == NULL)
	{
		fprintf(stderr, "sgemm_floor: out of memory\n");
		return 1;
	}
	for (long i = 0; i < n * d; i++)
		a[i] = (float) rand_r(&seed) / (float) RAND_MAX - 0.5f;
	/* one untimed run: threads started, pages touched */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, m, d, 1.0f, a, d, a, d, 0.0f, c, m);
	for (int r = 0; r < reps; r++)
	{
		double		t0 = now();

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, m, d, 1.0f, a, d, a, d, 0.0f, c, m);
		t[r] = (now() - t0) * scale;
	}
	qsort(t, reps, sizeof(double), cmp_dbl);
	printf("%ld,%ld,%d,%.6f,%.1f,%.6f,%.6f\n", n, d, openblas_get_num_threads(), t[reps / 2],
		   2.0 * n * n * d / t[reps / 2] / 1e9, t[0], t[reps - 1]);
	free(a);
	free(c);
	free(t);
	return 0;
}
