/*
 * gpu_vs_cpu.c
 *		Exactness stress of the GPU back end against the CPU back end: the
 *		same pairs and the same dist, bit for bit, on fresh random data.
 *		Plus the GPU's failure modes: cancel, a memory limit too small, and
 *		a result buffer far smaller than the result.
 *
 *	gpu_vs_cpu [--quick] [--brute-only [--tc-only]] [--graph-only] [--join-only]
 *			   [--seed S] [--seconds T] [--override TEXT] [--devices LIST]
 *
 * The failure modes run first; then the matrix, until T seconds (default
 * no limit) have passed, so that a time-boxed run still ends with its
 * summary line.  --brute-only runs the brute-force and approximate cases
 * alone (the brute-force passes of test/gpu/run.sh); --tc-only leaves out
 * the matrix's GPU runs with tensor cores off (for the passes that vary
 * the tensor-core path only, which then reach the higher dimensions in the
 * same time).  The cosine and inner-product cases (FP16 brute force, the
 * only GPU path of those metrics) run in both.  --graph-only runs the graph
 * answers alone, --join-only the two-set joins (a against b) alone.
 * --override's developer overrides apply to every join.  --devices (the
 * syntax of tcjoin.devices: "all", the default, or GPU numbers such as
 * "0,1"; a number may repeat, "0,0" running the several-GPU path on one
 * GPU) lists the GPUs every join may use, with the override split=all, so
 * that the whole comparison runs on several GPUs however small its joins;
 * every GPU join's GPUs and shares are held to the list (one case at the
 * end, after the split by the estimates: a small join on one GPU, a large
 * one on several), and a list naming a GPU the process does not see must
 * fail with its message (one case at the start).
 *
 * Ends with "N passed, N failed".  Needs a GPU; with none it says so and
 * fails.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_vs_cpu.h"

static uint64_t rng;
static int	passed,
			failed;
static bool tc_only;			/* compare_case: the GPU with tensor cores on only */

uint64_t
next_u64(void)
{
	uint64_t	z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

double
unit(void)
{
	return (double) (next_u64() >> 11) * 0x1p-53;
}


static uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A pair's hash: ids and every bit of dist. */
static uint64_t
pair_hash(const TcPair *q)
{
	uint64_t	bits;

	memcpy(&bits, &q->dist, sizeof(bits));
	return mix64((uint64_t) q->a ^ mix64((uint64_t) q->b ^ mix64(bits + 0x9e3779b97f4a7c15ULL)));
}

static int
collect(void *arg, const TcPair *p, size_t count)
{
	Collect    *c = arg;

	if (c->n + count > c->cap)
	{
		c->cap = (c->n + count) * 2;
		c->pairs = realloc(c->pairs, sizeof(TcPair) * c->cap);
		if (c->pairs == NULL)
		{
			fprintf(stderr, "out of memory collecting pairs\n");
			exit(2);
		}
	}
	for (size_t i = 0; i < count; i++)
	{
		TcPair		q = p[i];

		/* a self-join's pair comes in either order; a two-set join's is (a, b) */
		if (!c->two_set && q.a > q.b)
		{
			int64_t		t = q.a;

			q.a = q.b;
			q.b = t;
		}
		c->digest += pair_hash(&q);
		c->pairs[c->n++] = q;
	}
	return 0;
}

static int
poll_cb(void *arg)
{
	Collect    *c = arg;

	c->polls++;
	if ((c->stop_after_polls > 0 && c->polls >= c->stop_after_polls) ||
		(c->stop_at > 0 && tc_now() >= c->stop_at) ||
		(c->stop_after_pairs > 0 && c->n >= c->stop_after_pairs))
	{
		if (c->stopped_at == 0)
			c->stopped_at = tc_now();
		return 1;
	}
	return 0;
}

int
cmp_pair(const void *x, const void *y)
{
	const TcPair *a = x,
			   *b = y;

	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	return 0;
}

/* --override: the developer overrides every join of this run takes */
TcOverrides g_overrides;

TcStatus
run(const TcPoints *p, TcJoinParams params, Collect *c, TcJoinStats *stats, TcError *err)
{
	return run_join(p, NULL, params, c, stats, err);
}

TcStatus
run_join(const TcPoints *a, const TcPoints *b, TcJoinParams params, Collect *c,
		 TcJoinStats *stats, TcError *err)
{
	TcSink		sink = {collect, poll_cb, c, 0, NULL, NULL, NULL};
	TcOverrides ov = g_overrides;
	TcJoin	   *j;
	TcStatus	st;

	/* a case's own overrides (the mma.sync kernel, a tiny first batch) over the run's */
	if (params.overrides.tile_kernel != TC_TILE_AUTO)
		ov.tile_kernel = params.overrides.tile_kernel;
	if (params.overrides.batch_rate > 0)
		ov.batch_rate = params.overrides.batch_rate;
	params.overrides = ov;
	/* a case that names its own GPUs (devices_error_case) keeps them */
	if (params.ndevices == 0)
		take_devices(&params);
	c->two_set = b != NULL;
	j = tc_join_create(a, b, &params, err);

	if (j == NULL)
		return err->status;
	st = tc_join_run(j, &sink, err);
	tc_join_get_stats(j, stats);
	note_gpus(st, stats);
	tc_join_destroy(j);
	return st;
}

void
report(int ok, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	printf("%s ", ok ? "ok    " : "FAILED");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	if (ok)
		passed++;
	else
		failed++;
}

/* eps with about k neighbours per point, from a sample. */
double
eps_for(const float *x, int64_t n, int d, double k)
{
	int			m = 64;
	double		acc = 0;
	double	   *dist = malloc(sizeof(double) * n);

	for (int s = 0; s < m; s++)
	{
		int64_t		q = (int64_t) (next_u64() % (uint64_t) n);
		int64_t		want = (int64_t) k < n - 1 ? (int64_t) k : n - 1;

		for (int64_t i = 0; i < n; i++)
		{
			double		t = 0;

			for (int j = 0; j < d; j++)
			{
				double		u = (double) x[q * d + j] - (double) x[i * d + j];

				t += u * u;
			}
			dist[i] = t;
		}
		/* partial selection is plenty for a sample */
		for (int64_t r = 0; r <= want; r++)
		{
			int64_t		best = r;

			for (int64_t i = r + 1; i < n && r < 300; i++)
				if (dist[i] < dist[best])
					best = i;
			double		t = dist[r];

			dist[r] = dist[best];
			dist[best] = t;
		}
		acc += sqrt(dist[want]);
	}
	free(dist);
	return acc / m;
}

/* The GPU's pairs against the CPU's: the same set, dists bit for bit. */
bool
same_pairs(Collect *c1, Collect *c2)
{
	/*
	 * Equal counts and equal order-independent digests: the same set (a
	 * collision is vanishingly unlikely).  Otherwise sort both and show the
	 * first difference.
	 */
	bool		ok = c1->n == c2->n && c1->digest == c2->digest;

	if (!ok)
	{
		qsort(c1->pairs, c1->n, sizeof(TcPair), cmp_pair);
		qsort(c2->pairs, c2->n, sizeof(TcPair), cmp_pair);
	}
	for (size_t i = 0; !ok && i < c1->n && i < c2->n; i++)
		if (cmp_pair(&c1->pairs[i], &c2->pairs[i]) != 0 ||
			memcmp(&c1->pairs[i].dist, &c2->pairs[i].dist, sizeof(double)) != 0)
		{
			printf("  first difference at %zu: cpu (%lld,%lld,%.17g) gpu (%lld,%lld,%.17g)\n", i,
				   (long long) c1->pairs[i].a, (long long) c1->pairs[i].b, c1->pairs[i].dist,
				   (long long) c2->pairs[i].a, (long long) c2->pairs[i].b, c2->pairs[i].dist);
			break;
		}
	return ok;
}

/* One case on the CPU, then on the GPU with tensor cores off and on. */
void
compare_case(const char *kind, int64_t n, int d, double eps, bool include_self,
			 TcMethod method, const void *data, TcElemType type)
{
	TcPoints	p = {data, n, d, type};
	TcJoinParams cpu = {.eps = eps, .method = method, .device = TC_DEVICE_CPU,
	.exact = true, .include_self = include_self, .threads = tc_cpu_count()};
	Collect		c1 = {0};
	TcJoinStats s1;
	TcError		e1;
	TcStatus	st1;
	double		t0,
				t1;

	t0 = tc_now();
	st1 = run(&p, cpu, &c1, &s1, &e1);
	t1 = tc_now();
	for (int tc = tc_only ? 1 : 0; tc < 2; tc++)
	{
		TcJoinParams gpu = cpu;
		Collect		c2 = {0};
		TcJoinStats s2;
		TcError		e2;
		TcStatus	st2;
		double		t2,
					t3;

		gpu.device = TC_DEVICE_GPU;
		gpu.tensor_cores = tc ? TC_TENSOR_ON : TC_TENSOR_OFF;
		t2 = tc_now();
		st2 = run(&p, gpu, &c2, &s2, &e2);
		t3 = tc_now();
		if (st1 != TC_OK || st2 != TC_OK)
			report(0, "%s n=%lld d=%d eps=%.17g tc=%d: cpu %s (%s), gpu %s (%s)", kind,
				   (long long) n, d, eps, tc, tc_status_name(st1), e1.message,
				   tc_status_name(st2), e2.message);
		else
			report(same_pairs(&c1, &c2) && s2.tensor_cores == (tc == 1),
				   "%-7s %s n=%-8lld d=%-3d eps=%-10.4g self=%d %-5s tc=%-3s pairs cpu %zu gpu %zu  "
				   "cpu %.3f s  gpu %.3f s (index %.3f, %s dims %d, rechecked %llu of %llu%s%s)",
				   kind, type == TC_FLOAT4 ? "f4" : "f8", (long long) n, d, eps, include_self,
				   method == TC_METHOD_BRUTE ? "brute" : method == TC_METHOD_GRID ? "grid" : "auto",
				   s2.tensor_cores ? "on" : "off", c1.n, c2.n, t1 - t0, t3 - t2,
				   s2.index_seconds, s2.method, s2.grid_dims,
				   (unsigned long long) s2.rechecked, (unsigned long long) s2.candidates,
				   s2.gpu_recheck ? ", recheck " : "", s2.gpu_recheck ? s2.gpu_recheck : "");
		free(c2.pairs);
	}
	free(c1.pairs);
}

/*
 * The distance from the first point to its nearest distinct neighbour
 * among the next 2,000 (a float8 sum, near enough to the contract's that
 * eps equal to it lands on a pair's distance); infinity if none differs.
 */
static double
nearest_to_first(const float *x, int64_t n, int d)
{
	double		best = INFINITY;

	for (int64_t i = 1; i < n && i < 2000; i++)
	{
		double		t = 0;

		for (int j = 0; j < d; j++)
		{
			double		u = (double) x[j] - (double) x[i * d + j];

			t += u * u;
		}
		if (t > 0 && t < best)
			best = t;
	}
	return sqrt(best);
}

float *
make_points(const char *kind, int64_t n, int d)
{
	float	   *x = malloc(sizeof(float) * n * d);

	for (int64_t i = 0; i < n; i++)
	{
		/* dups: a quarter of the points repeat an earlier one exactly. */
		if (strcmp(kind, "dups") == 0 && i > 0 && next_u64() % 4 == 0)
		{
			memcpy(x + i * d, x + (int64_t) (next_u64() % (uint64_t) i) * d, sizeof(float) * d);
			continue;
		}
		for (int j = 0; j < d; j++)
		{
			double		u = unit();
			double		v;

			if (strcmp(kind, "expo") == 0)
				v = -log(1.0 - u) / 40.0;
			else if (strcmp(kind, "fp16edge") == 0)
				v = (next_u64() % 2 ? 6e4 : 1e-6) * (u - 0.5);	/* FP16's largest and smallest */
			else if (strcmp(kind, "far") == 0)
				v = 1e4 + u * 10;	/* far from the origin: float4 steps of 2^-10 */
			else if (strcmp(kind, "huge") == 0)
				v = (i % 2 ? 2e19 : 0.0) + u;	/* two clusters 8e19 apart in 16-D */
			else
				v = u;
			x[i * d + j] = (float) v;
		}
	}
	return x;
}

/*
 * Half the points in Gaussian clusters of about 64 (sigma 0.02 a
 * coordinate around uniform centres), half uniform: at about 48
 * neighbours a point, the clustered points' candidates share their rows,
 * the uniform points' candidates share almost nothing.
 */
float *
make_clusters(int64_t n, int d)
{
	int64_t		nc = n / 128 > 0 ? n / 128 : 1;
	float	   *centre = malloc(sizeof(float) * nc * d);
	float	   *x = malloc(sizeof(float) * n * d);

	for (int64_t i = 0; i < nc * d; i++)
		centre[i] = (float) unit();
	for (int64_t i = 0; i < n; i++)
	{
		const float *c = centre + (int64_t) (next_u64() % (uint64_t) nc) * d;
		bool		noise = next_u64() % 2 == 0;

		for (int j = 0; j < d; j++)
		{
			double		g = sqrt(-2 * log(1.0 - unit())) * cos(2 * M_PI * unit());

			x[i * d + j] = (float) (noise ? unit() : c[j] + 0.02 * g);
		}
	}
	free(centre);
	return x;
}

/*
 * exact => false on the FP16 brute force (FaSTED's semantics: the FP16-32
 * accumulator decides, dist from an FP32 dot), measured against the exact
 * CPU join as FaSTED's paper does (its Tables 7-8): recall and overlap of
 * the pair sets, and the distance error of the pairs both return.  The
 * bounds asserted are loose sanity checks (a broken mode misses them by
 * far); the figures are printed.
 */
static void
approx_cases(void)
{
	static const struct
	{
		const char *kind;
		int			d;
		double		k;			/* neighbours per point */
	}			cases[] = {{"uniform", 128, 16}, {"uniform", 784, 64}, {"far", 128, 16},
	{"fp16edge", 384, 16}, {"expo", 960, 64}};

	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
	{
		int64_t		n = 20000;
		int			d = cases[ci].d;
		float	   *x = make_points(cases[ci].kind, n, d);
		double		eps = eps_for(x, 5000, d, cases[ci].k);
		TcPoints	p = {x, n, d, TC_FLOAT4};
		TcJoinParams ex = {.eps = eps, .method = TC_METHOD_BRUTE, .device = TC_DEVICE_CPU,
		.exact = true, .threads = tc_cpu_count()};
		TcJoinParams ap = ex;
		Collect		ce = {0},
					ca = {0};
		TcJoinStats se,
					sa;
		TcError		ee,
					ea;
		TcStatus	st1,
					st2;
		size_t		i = 0,
					j = 0,
					common = 0;
		double		maxerr = 0,
					sum = 0,
					sum2 = 0;

		ap.device = TC_DEVICE_GPU;
		ap.exact = false;
		ap.tensor_cores = TC_TENSOR_ON;
		st1 = run(&p, ex, &ce, &se, &ee);
		st2 = run(&p, ap, &ca, &sa, &ea);
		if (st1 != TC_OK || st2 != TC_OK)
		{
			report(0, "approximate %s d=%d: cpu %s (%s), gpu %s (%s)", cases[ci].kind, d,
				   tc_status_name(st1), ee.message, tc_status_name(st2), ea.message);
			free(x);
			continue;
		}
		qsort(ce.pairs, ce.n, sizeof(TcPair), cmp_pair);
		qsort(ca.pairs, ca.n, sizeof(TcPair), cmp_pair);
		while (i < ce.n && j < ca.n)
		{
			int			c = cmp_pair(&ce.pairs[i], &ca.pairs[j]);

			if (c == 0)
			{
				double		err = fabs(ca.pairs[j].dist - ce.pairs[i].dist) / eps;

				common++;
				maxerr = fmax(maxerr, err);
				sum += err;
				sum2 += err * err;
				i++;
				j++;
			}
			else if (c < 0)
				i++;
			else
				j++;
		}
		{
			double		recall = ce.n ? (double) common / (double) ce.n : 1.0;
			double		overlap = ce.n + ca.n - common ? (double) common / (double) (ce.n + ca.n - common) : 1.0;
			double		mean = common ? sum / (double) common : 0.0;
			double		sd = common ? sqrt(fmax(0.0, sum2 / (double) common - mean * mean)) : 0.0;

			report(overlap >= 0.99 && maxerr <= 1e-2 && sa.rechecked == 0,
				   "approximate %-8s n=%lld d=%-4d eps=%-9.4g exact %zu pairs, approximate %zu: "
				   "recall %.6f, overlap %.6f; dist error / eps: mean %.2e, sd %.2e, max %.2e",
				   cases[ci].kind, (long long) n, d, eps, ce.n, ca.n, recall, overlap, mean, sd, maxerr);
		}
		free(ce.pairs);
		free(ca.pairs);
		free(x);
	}
}

/*
 * Brute force on the FP16 tensor cores (method brute, tensor cores on)
 * against the CPU at the dimensions of embeddings and images, with values
 * at FP16's limits, far from the origin, duplicates, and eps equal to a
 * pair's distance.  compare_case also runs tensor cores off (FP64 CUDA
 * cores) on the same data.
 */
static void
brute_cases(bool quick, double seconds, double start)
{
	static const int dims[] = {16, 100, 128, 384, 784, 960, 1024, 4096};
	static const char *const kinds[] = {"uniform", "fp16edge", "far", "dups"};

	/*
	 * Two clusters whose tile centres lie 8e19 apart (a float4 sum of their
	 * squares overflows): tile pruning must keep the pairs across when eps
	 * reaches them, and drop them when it does not.
	 */
	{
		float	   *x = make_points("huge", 3000, 16);

		compare_case("huge", 3000, 16, 8.1e19, false, TC_METHOD_BRUTE, x, TC_FLOAT4);
		compare_case("huge", 3000, 16, 10.0, false, TC_METHOD_BRUTE, x, TC_FLOAT4);
		free(x);
	}

	/*
	 * Rows shorter than one step of the recheck's loads (16 float4 or 8
	 * float8 values) and rows with a remainder past whole steps: the
	 * recheck's tails; and rows not 16-byte aligned (the staged kernel).
	 */
	{
		static const int fdims[] = {4, 8, 12, 20, 3, 5, 13};
		static const int ddims[] = {2, 4, 6, 10, 3, 5, 9};

		for (size_t i = 0; i < sizeof(fdims) / sizeof(fdims[0]); i++)
		{
			int64_t		n = 6000;
			float	   *x = make_points("uniform", n, fdims[i]);
			double	   *x8;

			compare_case("uniform", n, fdims[i], eps_for(x, 5000, fdims[i], 16), false,
						 TC_METHOD_BRUTE, x, TC_FLOAT4);
			free(x);
			x = make_points("uniform", n, ddims[i]);
			x8 = malloc(sizeof(double) * n * ddims[i]);
			for (int64_t j = 0; j < n * ddims[i]; j++)
				x8[j] = (double) x[j] + unit() * 1e-9;
			compare_case("uniform", n, ddims[i], eps_for(x, 5000, ddims[i], 16), false,
						 TC_METHOD_BRUTE, x8, TC_FLOAT8);
			free(x8);
			free(x);
		}
	}

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (size_t ki = 0; ki < sizeof(kinds) / sizeof(kinds[0]); ki++)
		{
			int			d = dims[di];
			int64_t		n = d >= 4096 ? 6000 : quick ? 8000 : 20000;
			float	   *x;
			double		best;

			if (quick && ki > 1 && d != 784)
				continue;
			if (seconds > 0 && tc_now() - start > seconds)
			{
				printf("time is up: brute force d = %d %s and later cases not run\n", d, kinds[ki]);
				return;
			}
			x = make_points(kinds[ki], n, d);
			compare_case(kinds[ki], n, d, eps_for(x, n < 5000 ? n : 5000, d, 16), false,
						 TC_METHOD_BRUTE, x, TC_FLOAT4);
			best = nearest_to_first(x, n, d);
			if (isfinite(best))
				compare_case(kinds[ki], n, d, best, ki == 0, TC_METHOD_BRUTE, x, TC_FLOAT4);
			if (ki == 0 && d <= 1024)
			{
				/* float8 input, not representable in FP16 */
				double	   *x8 = malloc(sizeof(double) * n * d);

				for (int64_t i = 0; i < n * d; i++)
					x8[i] = (double) x[i] + unit() * 1e-9;
				compare_case("uniform", n, d, eps_for(x, n < 5000 ? n : 5000, d, 64), false,
							 TC_METHOD_BRUTE, x8, TC_FLOAT8);
				free(x8);
			}
			free(x);
		}
}

int
main(int argc, char **argv)
{
	bool		quick = false;
	bool		brute_only = false;	/* the brute-force and approximate cases alone */
	bool		graph_only = false; /* the graph answers alone */
	bool		join_only = false;	/* the two-set joins alone */
	double		seconds = 0;
	double		start;
	uint64_t	seed = (uint64_t) time(NULL);
	char		reason[256];
	static const int dims[] = {1, 2, 3, 4, 5, 8, 16, 32, 64};
	static const char *const kinds[] = {"uniform", "expo", "far", "dups"};

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--quick") == 0)
			quick = true;
		else if (strcmp(argv[i], "--brute-only") == 0)
			brute_only = true;
		else if (strcmp(argv[i], "--tc-only") == 0)
			tc_only = true;
		else if (strcmp(argv[i], "--graph-only") == 0)
			graph_only = true;
		else if (strcmp(argv[i], "--join-only") == 0)
			join_only = true;
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc)
		{
			if (!devices_option(argv[++i]))
				return 1;
		}
		else if (strcmp(argv[i], "--override") == 0 && i + 1 < argc)
		{
			char		msg[256];

			if (!tc_overrides_parse(argv[++i], &g_overrides, msg, sizeof(msg)))
			{
				printf("--override: %s\n0 passed, 1 failed\n", msg);
				return 1;
			}
		}
	}
	rng = seed;
	printf("seed %llu\n", (unsigned long long) seed);
	if (tc_gpu_count(reason, sizeof(reason)) < 1)
	{
		printf("no GPU: %s\n0 passed, 1 failed\n", reason);
		return 1;
	}
	if (!devices_start(tc_gpu_count(reason, sizeof(reason))))
		return 1;

	if (graph_only)
	{
		graph_cases(quick);
		goto out;
	}
	if (join_only)
	{
		join_cases(quick);
		goto out;
	}
	if (brute_only)
	{
		small_buffer(false);
		cluster_choice();
		approx_cases();
		streamed_cases();
		dot_fixed_cases(quick);
		result_buffer_halved();
		clustered_cases();
		/* the dot-product metrics' matrix takes a third of the time at most */
		start = tc_now();
		dot_matrix(quick, seconds / 3, start);
		brute_cases(quick, seconds, start);
		goto out;
	}
	small_buffer(true);
	cluster_choice();
	failure_modes();
	approx_cases();
	streamed_cases();
	dot_fixed_cases(quick);
	result_buffer_halved();
	clustered_cases();
	limit_too_small();
	auto_cases();
	graph_cases(quick);
	join_cases(quick);

	start = tc_now();
	dot_matrix(quick, seconds / 4, start);
	brute_cases(quick, seconds / 2, start);
	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (size_t ki = 0; ki < sizeof(kinds) / sizeof(kinds[0]); ki++)
		{
			int			d = dims[di];
			const char *kind = kinds[ki];
			int64_t		n = d <= 3 ? (quick ? 200000 : 2000000) : d <= 16 ? 200000 : 50000;
			float	   *x;
			/* neighbours per point: none, few, some, many (fewer when quick) */
			double		targets[] = {0, 1, 16, quick ? 32 : 128};

			if (quick && d > 8 && ki > 1)
				continue;
			if (seconds > 0 && tc_now() - start > seconds)
			{
				printf("time is up: d = %d %s and later cases not run\n", d, kind);
				goto out;
			}
			if (n > 200000 && strcmp(kind, "uniform") != 0 && strcmp(kind, "expo") != 0)
				n = 200000;
			x = make_points(kind, n, d);
			for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++)
			{
				double		eps = targets[t] == 0 ? 0 : eps_for(x, n < 50000 ? n : 50000, d, targets[t]) *
					(n < 50000 ? 1.0 : pow(50000.0 / (double) n, 1.0 / d));

				compare_case(kind, n, d, eps, t == 1, TC_METHOD_AUTO, x, TC_FLOAT4);
			}
			/*
			 * eps equal to an actual pair distance (point 0 and its nearest
			 * other point among the first 2000): that pair must be in.
			 */
			{
				double		best = nearest_to_first(x, n, d);

				if (isfinite(best))
					compare_case(kind, n < 100000 ? n : 100000, d, best, false,
								 TC_METHOD_GRID, x, TC_FLOAT4);
			}
			if (d <= 8 && strcmp(kind, "uniform") == 0)
			{
				/*
				 * Coordinates near 2^-530: squared differences underflow
				 * into subnormals, where the filter's absolute margin is
				 * what keeps pairs.
				 */
				int64_t		m = 20000;
				double	   *x8 = malloc(sizeof(double) * m * d);
				double		e = eps_for(x, m, d, 16);

				for (int64_t i = 0; i < m * d; i++)
					x8[i] = ldexp((double) x[i], -530);
				compare_case("tiny", m, d, ldexp(e, -530), false, TC_METHOD_GRID, x8, TC_FLOAT8);
				free(x8);
			}
			if (d <= 16 && !quick)
			{
				/* float8 input and forced brute force on a smaller set. */
				int64_t		m = 20000;
				double	   *x8 = malloc(sizeof(double) * m * d);

				for (int64_t i = 0; i < m * d; i++)
					x8[i] = (double) x[i] + unit() * 1e-9;
				compare_case(kind, m, d, eps_for(x, m, d, 16), false, TC_METHOD_GRID, x8, TC_FLOAT8);
				compare_case(kind, m, d, eps_for(x, m, d, 16), false, TC_METHOD_BRUTE, x8, TC_FLOAT8);
				free(x8);
			}
			free(x);
		}

out:
	gpus_summary();
	printf("%d passed, %d failed\n", passed, failed);
	return failed > 0;
}
