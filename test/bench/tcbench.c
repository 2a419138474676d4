/*
 * tcbench.c
 *		Engine-only benchmark: no PostgreSQL, so the figures are the join's.
 *
 *	tcbench [options]
 *	  --file F          raw little-endian float32, row-major n x d
 *	  --gen KIND        synthetic data: uniform | expo (rate 40) | gauss
 *	  --n N --d D       size (with --file: d is required, n defaults to all)
 *	  --seed S          seed for --gen (default 1)
 *	  --eps E           threshold; or --neighbours K to pick eps by sampling
 *	  --method M        auto | grid | brute (default auto)
 *	  --threads T       compute threads (default: all CPUs)
 *	  --type T          f4 | f8: element type handed to the engine (default f4)
 *	  --reps R          repeats (default 3); the median is reported
 *	  --csv             one CSV line instead of the table row
 *
 * Each run includes index building; pairs are delivered to a sink that
 * counts them (the engine's output path, minus PostgreSQL).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

typedef struct Options
{
	const char *file;
	const char *gen;
	int64_t		n;
	int			d;
	uint64_t	seed;
	double		eps;
	double		neighbours;
	TcMethod	method;
	const char *method_name;
	int			threads;
	TcElemType	type;
	int			reps;
	int			csv;
} Options;

static uint64_t rng_state;

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

static void
die(const char *msg)
{
	fprintf(stderr, "tcbench: %s\n", msg);
	exit(2);
}

static float *
load_points(const Options *o, int64_t *n_out)
{
	int64_t		n = o->n;
	float	   *pts;

	if (o->d < 1)
		die("--d is required");
	if (o->file)
	{
		FILE	   *f = fopen(o->file, "rb");
		long		bytes;

		if (f == NULL)
			die("cannot open --file");
		fseek(f, 0, SEEK_END);
		bytes = ftell(f);
		fseek(f, 0, SEEK_SET);
		if (n <= 0 || n > bytes / (4L * o->d))
			n = bytes / (4L * o->d);
		pts = malloc(sizeof(float) * n * o->d);
		if (pts == NULL || fread(pts, sizeof(float) * o->d, n, f) != (size_t) n)
			die("cannot read --file");
		fclose(f);
	}
	else
	{
		if (n <= 0)
			die("--n is required with --gen");
		pts = malloc(sizeof(float) * n * o->d);
		if (pts == NULL)
			die("out of memory");
		rng_state = o->seed;
		for (int64_t i = 0; i < n * o->d; i++)
		{
			double		u = next_unit();

			if (strcmp(o->gen, "expo") == 0)
				pts[i] = (float) (-log(1.0 - u) / 40.0);
			else if (strcmp(o->gen, "gauss") == 0)
				pts[i] = (float) (sqrt(-2 * log(1.0 - u)) * cos(2 * M_PI * next_unit()));
			else
				pts[i] = (float) u;
		}
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

static int
cmp_double(const void *x, const void *y)
{
	double		a = *(const double *) x,
				b = *(const double *) y;

	return (a > b) - (a < b);
}

/*
 * eps for about k neighbours per point: the k-th smallest distance from a
 * sample of points to all points, averaged over the sample (by its median).
 */
static double
eps_for_neighbours(const float *pts, int64_t n, int d, double k)
{
	int			m = n < 200 ? (int) n : 200;
	double	   *kth = malloc(sizeof(double) * m);
	double	   *dist = malloc(sizeof(double) * n);
	double		eps;

	rng_state = 12345;
	for (int s = 0; s < m; s++)
	{
		int64_t		q = (int64_t) (next_u64() % (uint64_t) n);
		int64_t		want = (int64_t) k < n - 1 ? (int64_t) k : n - 1;

		for (int64_t i = 0; i < n; i++)
			dist[i] = sqdist(pts + q * d, pts + i * d, d);
		qsort(dist, n, sizeof(double), cmp_double);
		kth[s] = sqrt(dist[want]);	/* dist[0] is the point itself */
	}
	qsort(kth, m, sizeof(double), cmp_double);
	eps = kth[m / 2];
	free(kth);
	free(dist);
	return eps;
}

typedef struct Counter
{
	uint64_t	pairs;
	double		checksum;
} Counter;

static int
count_pairs(void *arg, const TcPair *pairs, size_t count)
{
	Counter    *c = arg;

	c->pairs += count;
	for (size_t i = 0; i < count; i++)
		c->checksum += pairs[i].dist;
	return 0;
}

static double
cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

int
main(int argc, char **argv)
{
	Options		o = {.gen = "uniform", .seed = 1, .eps = -1, .method = TC_METHOD_AUTO,
	.method_name = "auto", .threads = 0, .type = TC_FLOAT4, .reps = 3};
	int64_t		n;
	float	   *pts;
	void	   *data;
	double	   *wall,
			   *cpu;
	TcJoinStats stats = {0};
	Counter		counter = {0};

	for (int i = 1; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--csv") == 0)
		{
			o.csv = 1;
			continue;
		}
		if (v == NULL)
			die("missing value");
		i++;
		if (strcmp(a, "--file") == 0)
			o.file = v;
		else if (strcmp(a, "--gen") == 0)
			o.gen = v;
		else if (strcmp(a, "--n") == 0)
			o.n = atoll(v);
		else if (strcmp(a, "--d") == 0)
			o.d = atoi(v);
		else if (strcmp(a, "--seed") == 0)
			o.seed = strtoull(v, NULL, 10);
		else if (strcmp(a, "--eps") == 0)
			o.eps = atof(v);
		else if (strcmp(a, "--neighbours") == 0)
			o.neighbours = atof(v);
		else if (strcmp(a, "--threads") == 0)
			o.threads = atoi(v);
		else if (strcmp(a, "--reps") == 0)
			o.reps = atoi(v);
		else if (strcmp(a, "--type") == 0)
			o.type = strcmp(v, "f8") == 0 ? TC_FLOAT8 : TC_FLOAT4;
		else if (strcmp(a, "--method") == 0)
		{
			o.method_name = v;
			o.method = strcmp(v, "grid") == 0 ? TC_METHOD_GRID :
				strcmp(v, "brute") == 0 ? TC_METHOD_BRUTE : TC_METHOD_AUTO;
		}
		else
			die("unknown option");
	}
	if (o.threads <= 0)
		o.threads = tc_cpu_count();
	if (o.reps < 1)
		o.reps = 1;

	pts = load_points(&o, &n);
	if (o.eps < 0 && o.neighbours > 0)
		o.eps = eps_for_neighbours(pts, n, o.d, o.neighbours);
	if (o.eps < 0)
		die("--eps or --neighbours is required");
	if (o.type == TC_FLOAT8)
	{
		double	   *p8 = malloc(sizeof(double) * n * o.d);

		for (int64_t i = 0; i < n * o.d; i++)
			p8[i] = pts[i];
		data = p8;
	}
	else
		data = pts;

	wall = calloc(o.reps, sizeof(double));
	cpu = calloc(o.reps, sizeof(double));
	for (int r = 0; r < o.reps; r++)
	{
		TcPoints	p = {.data = data, .n = n, .d = o.d, .type = o.type};
		TcJoinParams params = {.eps = o.eps, .method = o.method, .device = TC_DEVICE_CPU,
		.exact = true, .threads = o.threads};
		TcSink		sink = {.emit = count_pairs, .poll = NULL, .arg = &counter};
		TcError		err;
		TcJoin	   *join;
		double		t0 = tc_now(),
					c0 = cpu_seconds();

		counter.pairs = 0;
		counter.checksum = 0;
		join = tc_join_create(&p, NULL, &params, &err);
		if (join == NULL || tc_join_run(join, &sink, &err) != TC_OK)
		{
			fprintf(stderr, "tcbench: %s\n", err.message);
			return 1;
		}
		wall[r] = tc_now() - t0;
		cpu[r] = cpu_seconds() - c0;
		tc_join_get_stats(join, &stats);
		tc_join_destroy(join);
	}
	qsort(wall, o.reps, sizeof(double), cmp_double);
	qsort(cpu, o.reps, sizeof(double), cmp_double);

	if (o.csv)
		printf("%s,%s,%lld,%d,%.9g,%s,%s,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%llu,%llu,%d\n",
			   o.file ? o.file : o.gen, o.type == TC_FLOAT4 ? "f4" : "f8",
			   (long long) n, o.d, o.eps, o.method_name, stats.method, o.threads,
			   stats.grid_dims, wall[o.reps / 2], wall[0], wall[o.reps - 1],
			   cpu[o.reps / 2], stats.index_seconds,
			   (unsigned long long) stats.candidates,
			   (unsigned long long) counter.pairs, o.reps);
	else
		printf("%-10s %-3s n=%-9lld d=%-4d eps=%-10.4g %-5s->%-5s thr=%-2d dims=%d  "
			   "median %8.3f s (%.3f-%.3f)  cpu %8.3f s  index %.3f s  cand %llu  pairs %llu  %.1f Mpairs/s\n",
			   o.file ? "file" : o.gen, o.type == TC_FLOAT4 ? "f4" : "f8",
			   (long long) n, o.d, o.eps, o.method_name, stats.method, o.threads,
			   stats.grid_dims, wall[o.reps / 2], wall[0], wall[o.reps - 1],
			   cpu[o.reps / 2], stats.index_seconds,
			   (unsigned long long) stats.candidates,
			   (unsigned long long) counter.pairs,
			   counter.pairs / wall[o.reps / 2] / 1e6);
	return 0;
}
