/*
 * tcbench_data.c
 *		tcbench's points (--gen, --file, --queries) and eps for a number of
 *		neighbours (--neighbours).
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "tcbench_data.h"

static uint64_t rng_state;

void
tcbench_die(const char *msg)
{
	fprintf(stderr, "tcbench: %s\n", msg);
	exit(2);
}

static uint64_t
next_u64(void)
{
	uint64_t	z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double
next_unit(void)
{
	return (double) (next_u64() >> 11) * 0x1p-53;
}

static double
next_gauss(void)
{
	return sqrt(-2 * log(1.0 - next_unit())) * cos(2 * M_PI * next_unit());
}

/* Row i of pts scaled to unit length (a zero row is left as it is). */
static void
normalise(float *row, int d)
{
	double		s = 0;

	for (int k = 0; k < d; k++)
		s += (double) row[k] * row[k];
	for (int k = 0; k < d && s > 0; k++)
		row[k] = (float) (row[k] / sqrt(s));
}

/*
 * --gen neardup: unit vectors in random directions; every 20th (5%) is the
 * one before plus a random step of length up to 0.15, normalised: a cosine
 * distance below about 0.012, the planted pairs of a near-duplicate search.
 */
static void
near_duplicates(float *pts, int64_t n, int d)
{
	for (int64_t i = 0; i < n; i++)
	{
		float	   *row = pts + i * d;

		if (i % 20 == 19)
		{
			double		step = 0.15 * next_unit();

			for (int k = 0; k < d; k++)
				row[k] = (float) next_gauss();
			normalise(row, d);
			for (int k = 0; k < d; k++)
				row[k] = (float) (row[k - d] + step * row[k]);
		}
		else
			for (int k = 0; k < d; k++)
				row[k] = (float) next_gauss();
		normalise(row, d);
	}
}

/*
 * total rows of kind gen.  Clusters are drawn for n rows (the corpus), so
 * that the corpus is the same with or without queries after it, and the
 * queries come from the corpus's clusters.
 */
static void
generate(const char *gen, float *pts, int64_t n, int64_t total, int d, uint64_t seed)
{
	rng_state = seed;
	if (strcmp(gen, "cluster") == 0)
	{
		int64_t		nc = n / 128 > 0 ? n / 128 : 1;
		float	   *centre = malloc(sizeof(float) * nc * d);

		if (centre == NULL)
			tcbench_die("out of memory");
		for (int64_t i = 0; i < nc * d; i++)
			centre[i] = (float) next_unit();
		for (int64_t i = 0; i < total; i++)
		{
			const float *c = centre + (int64_t) (next_unit() * nc) * d;

			for (int j = 0; j < d; j++)
				pts[i * d + j] = (float) (c[j] + 0.02 * sqrt(-2 * log(1.0 - next_unit())) *
										  cos(2 * M_PI * next_unit()));
		}
		free(centre);
	}
	else if (strcmp(gen, "neardup") == 0)
		near_duplicates(pts, total, d);
	else
		for (int64_t i = 0; i < total * d; i++)
		{
			double		u = next_unit();

			if (strcmp(gen, "expo") == 0)
				pts[i] = (float) (-log(1.0 - u) / 40.0);
			else if (strcmp(gen, "gauss") == 0)
				pts[i] = (float) (sqrt(-2 * log(1.0 - u)) * cos(2 * M_PI * next_unit()));
			else
				pts[i] = (float) u;
		}
}

float *
tcbench_load(const DataSpec *spec, int64_t *n_out)
{
	int64_t		n = spec->n,
				m = spec->queries;
	int			d = spec->d;
	float	   *pts;

	if (d < 1)
		tcbench_die("--d is required");
	if (spec->file)
	{
		FILE	   *f = fopen(spec->file, "rb");
		int64_t		rows;

		if (f == NULL)
			tcbench_die("cannot open --file");
		fseek(f, 0, SEEK_END);
		rows = ftell(f) / (4L * d);
		fseek(f, 0, SEEK_SET);
		if (rows <= m)
			tcbench_die("--file has no rows left for the corpus after --queries");
		if (n <= 0 || n > rows - m)
			n = rows - m;
		pts = malloc(sizeof(float) * (n + m) * d);
		if (pts == NULL || fread(pts, sizeof(float) * d, n + m, f) != (size_t) (n + m))
			tcbench_die("cannot read --file");
		fclose(f);
	}
	else
	{
		if (n <= 0)
			tcbench_die("--n is required with --gen");
		pts = malloc(sizeof(float) * (n + m) * d);
		if (pts == NULL)
			tcbench_die("out of memory");
		generate(spec->gen, pts, n, n + m, d, spec->seed);
	}
	*n_out = n;
	return pts;
}

static double
sqdist(const float *a, const float *b, int d)
{
	double		s = 0;

	for (int k = 0; k < d; k++)
	{
		double		t = (double) a[k] - (double) b[k];

		s += t * t;
	}
	return s;
}

/*
 * Rearrange a[0 .. len-1] so that a[k] is the k-th smallest (0-based) and
 * nothing before it is larger (Hoare's selection, expected linear time).
 */
static void
select_kth(double *a, int64_t len, int64_t k)
{
	int64_t		lo = 0,
				hi = len - 1;

	while (hi > lo)
	{
		double		x = a[lo],
					y = a[lo + (hi - lo) / 2],
					z = a[hi];
		double		pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
		int64_t		i = lo,
					j = hi;

		while (i <= j)
		{
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i <= j)
			{
				double		t = a[i];

				a[i++] = a[j];
				a[j--] = t;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return;
	}
}

/* Sampling for eps: each thread takes every nthreads-th sample point. */
typedef struct EpsWork
{
	const float *pts;
	int64_t		n;
	int			d;
	const float *from;			/* the sample points' set: pts, or the queries */
	bool		self;			/* from is pts: a point is not its own neighbour */
	const int64_t *samples;		/* rows of from */
	int			m;
	int64_t		keep;			/* distances kept per sample point */
	double	   *pool;			/* m x keep */
	int			first;
	int			step;
} EpsWork;

static void *
eps_worker(void *arg)
{
	EpsWork    *w = arg;
	double	   *dist = malloc(sizeof(double) * w->n);

	if (dist == NULL)
		tcbench_die("out of memory");
	for (int s = w->first; s < w->m; s += w->step)
	{
		int64_t		q = w->samples[s],
					len = 0;

		for (int64_t i = 0; i < w->n; i++)
			if (!w->self || i != q)
				dist[len++] = sqdist(w->from + q * w->d, w->pts + i * w->d, w->d);
		select_kth(dist, len, w->keep - 1);
		memcpy(w->pool + (int64_t) s * w->keep, dist, sizeof(double) * w->keep);
	}
	free(dist);
	return NULL;
}

/*
 * eps for about k neighbours per point on average, which is how the papers
 * state selectivity (a self-join then has about n k / 2 pairs, a join of m
 * queries with the corpus about m k).  The distances from s sample points
 * (of the queries, or of the corpus in a self-join) to all points of the
 * corpus (but themselves) are pooled, and eps is the (k s)-th smallest of
 * them: the sample then has k neighbours per point.  A median of per-point
 * k-th distances would miss the mean badly on skewed data.  Each sample
 * point keeps only its k s smallest distances, all that the pool's k s
 * smallest can draw on.  s shrinks with n d to bound the work.
 */
double
tcbench_eps_for_neighbours(const float *pts, int64_t n, const float *queries, int64_t m,
						   int d, double k, int threads)
{
	double		budget = 3e9;	/* distance terms */
	int			s = (int) fmin(200, fmax(32, budget / ((double) n * d)));
	bool		self = queries == NULL;
	int64_t		from_n = self ? n : m,
				others = self ? n - 1 : n,
				target,
				keep;
	int64_t    *samples;
	double	   *pool;
	pthread_t  *tids;
	EpsWork    *work;
	double		eps,
				t0 = tc_now();

	if (others < 1 || from_n < 1)
		return 0;
	if (s > from_n)
		s = (int) from_n;
	target = llround(k * s);
	if (target < 1)
		target = 1;
	keep = target < others ? target : others;
	if (target > keep * s)
		target = keep * s;
	samples = malloc(sizeof(int64_t) * s);
	pool = malloc(sizeof(double) * keep * s);
	tids = malloc(sizeof(pthread_t) * threads);
	work = malloc(sizeof(EpsWork) * threads);
	if (!samples || !pool || !tids || !work)
		tcbench_die("out of memory");
	rng_state = 12345;
	for (int i = 0; i < s; i++)
		samples[i] = (int64_t) (next_u64() % (uint64_t) from_n);
	for (int t = 0; t < threads; t++)
	{
		work[t] = (EpsWork) {.pts = pts, .n = n, .d = d, .from = self ? pts : queries,
			.self = self, .samples = samples, .m = s, .keep = keep, .pool = pool,
		.first = t, .step = threads};
		if (pthread_create(&tids[t], NULL, eps_worker, &work[t]) != 0)
			tcbench_die("cannot start a thread");
	}
	for (int t = 0; t < threads; t++)
		pthread_join(tids[t], NULL);
	select_kth(pool, keep * s, target - 1);
	eps = sqrt(pool[target - 1]);
	fprintf(stderr, "tcbench: eps %.9g for %g neighbours per %s (%d sample points, %.1f s)\n",
			eps, k, self ? "point" : "query in the corpus", s, tc_now() - t0);
	free(samples);
	free(pool);
	free(tids);
	free(work);
	return eps;
}
