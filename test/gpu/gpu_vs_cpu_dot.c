/*
 * gpu_vs_cpu_dot.c
 *		The GPU-against-CPU program's cosine and inner-product cases: FP16
 *		brute force on the GPU against the CPU's brute force, the same pairs
 *		with dists bit for bit, on fresh random data (near duplicates,
 *		scaled copies, a shifted cloud), eps on pairs' own dists; the test's
 *		own float8 sums count the pairs as well.  Then include_self, a zero
 *		vector (the error names the first), streamed joins and exact =>
 *		false.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_vs_cpu.h"

/*
 * The dot-product metrics (cosine and inner product), which on the GPU run
 * on the FP16 brute force only: against the CPU's brute force, pairs and
 * dists bit for bit, and against the test's own sums (below) for the
 * number of pairs, so that an eps taken from those sums is known to lie on
 * a pair's dist.
 */

static const char *
metric_name(TcMetric metric)
{
	return metric == TC_METRIC_COSINE ? "cosine" :
		metric == TC_METRIC_INNER_PRODUCT ? "inner_product" : "euclidean";
}

/*
 * The contract's dot product of points i and j: float8, index order, no
 * fused multiply-add (this file is built with -ffp-contract=off).
 */
static double
dot_of(const TcPoints *p, int64_t i, int64_t j)
{
	double		s = 0.0;

	if (p->type == TC_FLOAT4)
	{
		const float *a = (const float *) p->data + i * p->d;
		const float *b = (const float *) p->data + j * p->d;

		for (int k = 0; k < p->d; k++)
			s += (double) a[k] * (double) b[k];
	}
	else
	{
		const double *a = (const double *) p->data + i * p->d;
		const double *b = (const double *) p->data + j * p->d;

		for (int k = 0; k < p->d; k++)
			s += a[k] * b[k];
	}
	return s;
}

/* The contract's dist from dot and both squared norms (as distance.h has it). */
static double
dot_dist(TcMetric metric, double dot, double na, double nb)
{
	double		sim;

	if (metric == TC_METRIC_INNER_PRODUCT)
		return -dot;
	sim = dot / sqrt(na * nb);
	if (sim > 1.0)
		sim = 1.0;
	else if (sim < -1.0)
		sim = -1.0;
	return 1.0 - sim;
}

/* Every point's squared norm, the contract's way. */
static double *
own_norms(const TcPoints *p)
{
	double	   *norm = malloc(sizeof(double) * p->n);

	for (int64_t i = 0; i < p->n; i++)
		norm[i] = dot_of(p, i, i);
	return norm;
}

/* The dot products of the first m points' pairs i < j, row by row. */
static double *
pair_dots(const TcPoints *p, int64_t m)
{
	double	   *dots = malloc(sizeof(double) * (size_t) (m * (m - 1) / 2 + 1));
	size_t		t = 0;

	for (int64_t i = 0; i < m; i++)
		for (int64_t j = i + 1; j < m; j++)
			dots[t++] = dot_of(p, i, j);
	return dots;
}

static int
cmp_double(const void *x, const void *y)
{
	double		a = *(const double *) x,
				b = *(const double *) y;

	return a < b ? -1 : a > b ? 1 : 0;
}

/* The dists of the first m points' pairs (dots from pair_dots), ascending. */
static double *
sorted_dists(const double *dots, const double *norm, int64_t m, TcMetric metric, size_t *count)
{
	double	   *dist = malloc(sizeof(double) * (size_t) (m * (m - 1) / 2 + 1));
	size_t		t = 0;

	for (int64_t i = 0; i < m; i++)
		for (int64_t j = i + 1; j < m; j++, t++)
			dist[t] = dot_dist(metric, dots[t], norm[i], norm[j]);
	qsort(dist, t, sizeof(double), cmp_double);
	*count = t;
	return dist;
}

/* How many of the sorted dists are within eps. */
static size_t
count_within(const double *dist, size_t count, double eps)
{
	size_t		lo = 0,
				hi = count;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (dist[mid] <= eps)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static double
gauss(void)
{
	return sqrt(-2 * log(1.0 - unit())) * cos(2 * M_PI * unit());
}

/*
 * n points for the dot-product metrics, stored as type.  "uniform": each
 * coordinate uniform in [-1, 1]; "shifted": 5 + N(0, 1) (every cosine near
 * 1, so that the FP16 filter's margin is what separates pairs); "neardup":
 * uniform, but a third of the points copies of an earlier one, scaled by 3
 * or by 0.25 (exact: a cosine dist of 0) or nudged slightly (all
 * coordinates by up to 5e-4, or one by about 1e-6 of itself); "unitdup":
 * the same on unit vectors (the scaled copies keep their scale).
 */
static void *
make_dot_points(const char *kind, int64_t n, int d, TcElemType type)
{
	void	   *buf = malloc((size_t) type * n * d);
	double	   *row = malloc(sizeof(double) * d);
	TcPoints	p = {buf, n, d, type};
	bool		dup = strcmp(kind, "neardup") == 0 || strcmp(kind, "unitdup") == 0;

	for (int64_t i = 0; i < n; i++)
	{
		if (dup && i > 0 && next_u64() % 3 == 0)
		{
			int64_t		src = (int64_t) (next_u64() % (uint64_t) i);
			int			how = (int) (next_u64() % 4);
			int			one = (int) (next_u64() % (uint64_t) d);

			for (int k = 0; k < d; k++)
			{
				double		v = p.type == TC_FLOAT4 ? (double) ((float *) buf)[src * d + k] :
					((double *) buf)[src * d + k];

				if (how == 0)
					v *= 3;
				else if (how == 1)
					v *= 0.25;
				else if (how == 2)
					v += (unit() - 0.5) * 1e-3;
				else if (k == one)
					v *= 1 + (unit() + 0.5) * 1e-6;
				row[k] = v;
			}
		}
		else
		{
			double		s = 0.0;

			for (int k = 0; k < d; k++)
			{
				row[k] = strcmp(kind, "shifted") == 0 ? 5 + gauss() : 2 * unit() - 1;
				s += row[k] * row[k];
			}
			if (strcmp(kind, "unitdup") == 0 && s > 0)
				for (int k = 0; k < d; k++)
					row[k] /= sqrt(s);
		}
		for (int k = 0; k < d; k++)
		{
			if (type == TC_FLOAT4)
				((float *) buf)[i * d + k] = (float) row[k];
			else
				((double *) buf)[i * d + k] = row[k];
		}
	}
	free(row);
	return buf;
}

/* One dot-metric join, on the CPU and on the GPU (dot_compare). */
typedef struct DotCase
{
	const char *kind;
	TcMetric	metric;
	double		eps;
	bool		include_self;
	TcMethod	method;			/* the GPU's: brute, or auto (which goes there) */
	TcTensorCores tc;			/* on or auto: these metrics run on them only */
	size_t		limit;			/* the GPU's memory limit; > 0: it must stream */
	bool		mma;			/* the mma.sync tile kernel */
	size_t		expect;			/* pairs by the test's own sums; SIZE_MAX: not counted */
} DotCase;

/*
 * The CPU's brute force (the contract's sums, pair by pair) against the
 * GPU's FP16 brute force on p: the same pairs, dists bit for bit, the join
 * where it should have run (the GPU, the exact FP16 filter, in blocks when
 * limited), and as many pairs as the test's own sums give.
 */
static void
dot_compare(const TcPoints *p, const DotCase *dc)
{
	TcJoinParams cpu = {.eps = dc->eps, .metric = dc->metric, .method = TC_METHOD_BRUTE,
		.device = TC_DEVICE_CPU, .exact = true, .include_self = dc->include_self,
	.threads = tc_cpu_count()};
	TcJoinParams gpu = cpu;
	Collect		c1 = {0},
				c2 = {0};
	TcJoinStats s1 = {0},
				s2 = {0};
	TcError		e1 = {0},
				e2 = {0};
	TcStatus	st1,
				st2;
	char		what[200],
				own[32] = "-";

	gpu.device = TC_DEVICE_GPU;
	gpu.method = dc->method;
	gpu.tensor_cores = dc->tc;
	gpu.gpu_memory_limit = dc->limit;
	if (dc->mma)
		gpu.overrides.tile_kernel = TC_TILE_MMA;
	snprintf(what, sizeof(what), "%-13s %-8s %s n=%-5lld d=%-3d eps=%-10.4g self=%d %-5s tc=%-4s%s%s",
			 metric_name(dc->metric), dc->kind, p->type == TC_FLOAT4 ? "f4" : "f8",
			 (long long) p->n, p->d, dc->eps, dc->include_self,
			 dc->method == TC_METHOD_AUTO ? "auto" : "brute", dc->tc == TC_TENSOR_ON ? "on" : "auto",
			 dc->limit ? " streamed" : "", dc->mma ? " mma" : "");
	if (dc->expect != SIZE_MAX)
		snprintf(own, sizeof(own), "%zu", dc->expect);
	st1 = run(p, cpu, &c1, &s1, &e1);
	st2 = run(p, gpu, &c2, &s2, &e2);
	if (st1 != TC_OK || st2 != TC_OK)
		report(0, "%s: cpu %s (%s), gpu %s (%s)", what, tc_status_name(st1), e1.message,
			   tc_status_name(st2), e2.message);
	else
	{
		bool		same = same_pairs(&c1, &c2);
		bool		path = s2.device != NULL && strcmp(s2.device, "gpu") == 0 && s2.tensor_cores &&
			s2.filter != NULL && strcmp(s2.filter, "fp16 tensor cores") == 0 &&
			(dc->limit == 0 || s2.gpu_blocks > 1);
		bool		count = dc->expect == SIZE_MAX || c1.n == dc->expect;

		report(same && path && count,
			   "%s: pairs cpu %zu gpu %zu own %s; gpu %s, %s, %d block%s, kernel %s, recheck %s, "
			   "rechecked %llu of %llu", what, c1.n, c2.n, own, s2.device ? s2.device : "-",
			   s2.filter ? s2.filter : "-", s2.gpu_blocks, s2.gpu_blocks == 1 ? "" : "s",
			   s2.gpu_kernel ? s2.gpu_kernel : "-",
			   s2.gpu_recheck ? s2.gpu_recheck : "-", (unsigned long long) s2.rechecked,
			   (unsigned long long) s2.candidates);
	}
	free(c1.pairs);
	free(c2.pairs);
}

/*
 * One set under one metric at several eps (dots from pair_dots over the
 * whole set): cosine at 0, at the 10th, 1%'s and 10%'s smallest dists
 * (each a pair's own dist) and at a generous 0.3; the inner product at the
 * smallest dist, the 50th and 2%'s (negative where the set's dots are
 * positive).  An eps equal to the one before is skipped.  Every other eps
 * runs on auto and tensor cores auto (auto for cosine only above 12
 * dimensions: below, with eps <= 0.5, auto takes the unit vectors' grid).
 */
static void
dot_eps_cases(const TcPoints *p, const char *kind, TcMetric metric, const double *dots,
			  const double *norm)
{
	size_t		count;
	double	   *dist = sorted_dists(dots, norm, p->n, metric, &count);
	double		eps[5];
	int			ne = 0;

	if (metric == TC_METRIC_COSINE)
	{
		eps[ne++] = 0.0;
		eps[ne++] = dist[9];
		eps[ne++] = dist[count / 100];
		eps[ne++] = dist[count / 10];
		eps[ne++] = 0.3;
	}
	else
	{
		eps[ne++] = dist[0];
		eps[ne++] = dist[49];
		eps[ne++] = dist[count / 50];
	}
	for (int e = 0; e < ne; e++)
	{
		DotCase		dc = {.kind = kind, .metric = metric, .eps = eps[e],
			.method = e % 2 == 1 && (metric == TC_METRIC_INNER_PRODUCT || p->d > 12) ?
			TC_METHOD_AUTO : TC_METHOD_BRUTE,
			.tc = e % 2 == 1 ? TC_TENSOR_AUTO : TC_TENSOR_ON,
		.expect = count_within(dist, count, eps[e])};

		/* few dimensions: quantiles often coincide (cosine dists of 0) */
		if (e > 0 && eps[e] == eps[e - 1])
			continue;
		dot_compare(p, &dc);
	}
	free(dist);
}

/*
 * The dot-product metrics' matrix: each dimension and kind of set (float4
 * and float8 in turn), both metrics, a few hundred to two thousand points
 * (every pair's dist is computed here to choose eps).  --quick: five
 * dimensions, a few hundred points.  Stops once seconds (> 0) have passed
 * since start.
 */
void
dot_matrix(bool quick, double seconds, double start)
{
	static const int dims[] = {1, 2, 3, 8, 16, 17, 64, 100, 128, 384, 768};
	static const char *const kinds[] = {"uniform", "shifted", "neardup"};

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (size_t ki = 0; ki < sizeof(kinds) / sizeof(kinds[0]); ki++)
		{
			int			d = dims[di];
			TcElemType	type = (di + ki) % 2 == 1 ? TC_FLOAT8 : TC_FLOAT4;
			int64_t		n;
			TcPoints	p;
			double	   *norm,
					   *dots;

			if (quick && d != 1 && d != 3 && d != 17 && d != 128 && d != 384)
				continue;
			if (seconds > 0 && tc_now() - start > seconds)
			{
				printf("time is up: dot-product metrics d = %d %s and later cases not run\n", d, kinds[ki]);
				return;
			}
			/* partial tiles: n not a multiple of anything */
			n = (quick ? 300 : d >= 384 ? 900 : 1600) + (int64_t) (next_u64() % (quick ? 200 : 400));
			p = (TcPoints) {make_dot_points(kinds[ki], n, d, type), n, d, type};
			norm = own_norms(&p);
			dots = pair_dots(&p, n);
			dot_eps_cases(&p, kinds[ki], TC_METRIC_COSINE, dots, norm);
			dot_eps_cases(&p, kinds[ki], TC_METRIC_INNER_PRODUCT, dots, norm);
			free(dots);
			free(norm);
			free((void *) p.data);
		}
}

/*
 * include_self on the GPU, once per metric: (i, i, dist) for each point
 * whose own dist is within eps (cosine: 0, so every point; the inner
 * product: -|x|^2, so the points of large norm only, here the copies
 * scaled by 3), as the CPU emits them.
 */
static void
dot_self_cases(bool quick)
{
	for (int m = 0; m < 2; m++)
	{
		TcMetric	metric = m ? TC_METRIC_INNER_PRODUCT : TC_METRIC_COSINE;
		int64_t		n = quick ? 500 : 2000;
		int			d = m ? 100 : 64;
		TcElemType	type = m ? TC_FLOAT8 : TC_FLOAT4;
		TcPoints	p = {make_dot_points("neardup", n, d, type), n, d, type};
		double	   *norm = own_norms(&p);
		double	   *dots = pair_dots(&p, n);
		size_t		count;
		double	   *dist = sorted_dists(dots, norm, n, metric, &count);
		double		eps = m ? dist[49] : dist[count / 100];
		DotCase		dc = {.kind = "neardup", .metric = metric, .eps = eps, .include_self = true,
		.method = TC_METHOD_BRUTE, .tc = TC_TENSOR_ON, .expect = count_within(dist, count, eps)};

		for (int64_t i = 0; i < n; i++)
			if (dot_dist(metric, norm[i], norm[i], norm[i]) <= eps)
				dc.expect++;
		dot_compare(&p, &dc);
		free(dist);
		free(dots);
		free(norm);
		free((void *) p.data);
	}
}

/*
 * Cosine with zero vectors on the GPU, whole and streamed (the zero rows in
 * a later block): the join fails before any pair, naming the first zero
 * row as the CPU does.
 */
static void
dot_zero_vector(void)
{
	for (int streamed = 0; streamed < 2; streamed++)
	{
		int64_t		n = streamed ? 20000 : 3000;
		int			d = streamed ? 16 : 64;
		TcElemType	type = streamed ? TC_FLOAT4 : TC_FLOAT8;
		void	   *x = make_dot_points("neardup", n, d, type);
		TcPoints	p = {x, n, d, type};
		int64_t		z = n / 2 + (int64_t) (next_u64() % (uint64_t) (n / 4));
		int64_t		z2 = z + 1 + (int64_t) (next_u64() % (uint64_t) (n / 8));
		TcJoinParams gpu = {.eps = 0.1, .metric = TC_METRIC_COSINE, .method = TC_METHOD_BRUTE,
			.device = TC_DEVICE_GPU, .tensor_cores = TC_TENSOR_ON, .exact = true,
			.threads = tc_cpu_count(), .gpu_memory_limit = streamed ? (size_t) 3 << 20 : 0};
		TcJoinParams cpu = gpu;
		Collect		c1 = {0},
					c2 = {0};
		TcJoinStats s1 = {0},
					s2 = {0};
		TcError		e1 = {0},
					e2 = {0};
		TcStatus	st1,
					st2;

		/* two zero rows: the first by index is the one named */
		memset((char *) x + (size_t) type * z * d, 0, (size_t) type * d);
		memset((char *) x + (size_t) type * z2 * d, 0, (size_t) type * d);
		cpu.device = TC_DEVICE_CPU;
		cpu.gpu_memory_limit = 0;
		st1 = run(&p, cpu, &c1, &s1, &e1);
		st2 = run(&p, gpu, &c2, &s2, &e2);
		report(st2 == TC_ERR_INVALID && strstr(e2.message, "zero vector") != NULL && e2.point == z &&
			   e2.point_set == 0 && c2.n == 0 && (!streamed || s2.gpu_blocks > 1) &&
			   st1 == TC_ERR_INVALID && e1.point == z,
			   "cosine, zero rows %lld and %lld of %lld, d=%d %s%s: gpu %s, point %lld (%d blocks): %s; "
			   "cpu %s, point %lld; gpu pairs %zu", (long long) z, (long long) z2, (long long) n, d,
			   type == TC_FLOAT4 ? "f4" : "f8", streamed ? " streamed" : "", tc_status_name(st2),
			   (long long) e2.point, s2.gpu_blocks, e2.message, tc_status_name(st1),
			   (long long) e1.point, c2.n);
		free(c1.pairs);
		free(c2.pairs);
		free(x);
	}
}

/*
 * The dot-product metrics streamed in blocks (tcjoin.gpu_memory_limit, as
 * streamed_cases has it for Euclidean; cosine's rows take two float8 more
 * each), one with the mma.sync kernel.  eps: a pair's own dist, of the
 * first 1,500 points' pairs the 0.3%'s smallest for cosine (past the
 * planted copies' dists of about 0), 0.1%'s for the inner product.
 */
static void
dot_streamed_cases(void)
{
	static const struct
	{
		const char *kind;
		int64_t		n;
		int			d;
		size_t		limit_kb;
		TcElemType	type;
		bool		mma;
	}			cases[] = {
		{"neardup", 20000, 16, 3 << 10, TC_FLOAT4, false},
		{"uniform", 12000, 100, 12 << 10, TC_FLOAT8, false},
		{"neardup", 20000, 128, 16 << 10, TC_FLOAT4, true},
	};

	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
	{
		int64_t		n = cases[ci].n;
		int64_t		m = 1500;
		TcPoints	p = {make_dot_points(cases[ci].kind, n, cases[ci].d, cases[ci].type), n,
		cases[ci].d, cases[ci].type};
		double	   *norm = own_norms(&p);
		double	   *dots = pair_dots(&p, m);

		for (int mi = 0; mi < 2; mi++)
		{
			TcMetric	metric = mi ? TC_METRIC_INNER_PRODUCT : TC_METRIC_COSINE;
			size_t		count;
			double	   *dist = sorted_dists(dots, norm, m, metric, &count);
			DotCase		dc = {.kind = cases[ci].kind, .metric = metric,
				.eps = dist[mi ? count / 1000 : count / 300],
				.method = TC_METHOD_BRUTE, .tc = TC_TENSOR_ON, .limit = cases[ci].limit_kb << 10,
			.mma = cases[ci].mma, .expect = SIZE_MAX};

			dot_compare(&p, &dc);
			free(dist);
		}
		free(dots);
		free(norm);
		free((void *) p.data);
	}
}

/*
 * exact => false for the dot-product metrics (the FP16 filter decides,
 * dist from an FP32 dot), on unit vectors and their copies: loose checks
 * only, against the test's own sums.  Every pair returned once, with a
 * dist near its exact one; and at least 90% of the pairs well within eps
 * (by a tenth of it) returned.
 */
static void
dot_approx_cases(bool quick)
{
	for (int mi = 0; mi < 2; mi++)
		for (int ci = 0; ci < 2; ci++)
		{
			TcMetric	metric = mi ? TC_METRIC_INNER_PRODUCT : TC_METRIC_COSINE;
			int			d = ci ? 384 : 128;
			TcElemType	type = ci ? TC_FLOAT8 : TC_FLOAT4;
			int64_t		n = quick ? 800 : 2000;
			double		eps = mi ? -0.5 : 0.3;
			double		inner = eps - 0.1 * fabs(eps);
			TcPoints	p = {make_dot_points("unitdup", n, d, type), n, d, type};
			double	   *norm = own_norms(&p);
			TcJoinParams ap = {.eps = eps, .metric = metric, .method = TC_METHOD_BRUTE,
				.device = TC_DEVICE_GPU, .tensor_cores = TC_TENSOR_ON, .exact = false,
			.threads = tc_cpu_count()};
			Collect		c = {0};
			TcJoinStats s = {0};
			TcError		e = {0};
			TcStatus	st = run(&p, ap, &c, &s, &e);
			size_t		bad = 0,
						want = 0,
						found = 0;
			double		maxerr = 0;

			if (c.n > 0)
				qsort(c.pairs, c.n, sizeof(TcPair), cmp_pair);
			for (size_t i = 0; i < c.n; i++)
			{
				const TcPair *q = &c.pairs[i];
				double		exact,
							err;

				if (q->a < 0 || q->b >= n || q->a == q->b ||
					(i > 0 && cmp_pair(q, &c.pairs[i - 1]) == 0))
				{
					bad++;
					continue;
				}
				exact = dot_dist(metric, dot_of(&p, q->a, q->b), norm[q->a], norm[q->b]);
				err = fabs(q->dist - exact);
				maxerr = fmax(maxerr, err);
				if (!(err <= 0.02 * (1 + fabs(exact))))
					bad++;
			}
			for (int64_t i = 0; st == TC_OK && i < n; i++)
				for (int64_t j = i + 1; j < n; j++)
					if (dot_dist(metric, dot_of(&p, i, j), norm[i], norm[j]) <= inner)
					{
						TcPair		key = {i, j, 0};

						want++;
						if (c.n > 0 && bsearch(&key, c.pairs, c.n, sizeof(TcPair), cmp_pair) != NULL)
							found++;
					}
			report(st == TC_OK && bad == 0 && (double) found >= 0.9 * (double) want &&
				   s.filter != NULL && strcmp(s.filter, "fp16 tensor cores, approximate") == 0,
				   "approximate %-13s unitdup %s n=%lld d=%-3d eps=%g: %s, %zu pairs, %zu bad, "
				   "max dist error %.2e; %zu of %zu pairs within %g returned", metric_name(metric),
				   type == TC_FLOAT4 ? "f4" : "f8", (long long) n, d, eps,
				   st == TC_OK ? (s.filter ? s.filter : "-") : e.message, c.n, bad, maxerr,
				   found, want, inner);
			free(c.pairs);
			free(norm);
			free((void *) p.data);
		}
}

/* The dot-product metrics' cases that run whatever the time. */
void
dot_fixed_cases(bool quick)
{
	dot_self_cases(quick);
	dot_zero_vector();
	dot_streamed_cases();
	dot_approx_cases(quick);
}

