/*
 * gpu_vs_cpu_join.c
 *		Two-set joins (a against b: pairs (index into a, index into b,
 *		dist)) on the GPU against the CPU, on fresh random data: the same
 *		pairs, dists bit for bit, and the GPU where it should have run.  A
 *		bug both devices shared would pass that, so each case is also held
 *		to the test's own sums of the contract: a sample of the pairs'
 *		dists, and every partner within eps of a few rows of a and columns
 *		of b, found by scanning the other side whole.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_vs_cpu.h"

/* What one case joins and what the GPU should have done with it. */
typedef struct JoinCase
{
	const char *label;			/* the data, for the report */
	TcMetric	metric;
	TcMethod	method;
	double		eps;
	TcTensorCores tc;			/* the GPU's; the CPU ignores it */
	size_t		limit;			/* the GPU's memory limit; > 0: it must stream */
	bool		approx;			/* the GPU's exact => false (approx_ok compares) */
	const char *want;			/* the GPU's method ("grid", "brute"); NULL: either */
	/* the sets the test's own sums read (NULL: those joined) */
	const TcPoints *ref_a;
	const TcPoints *ref_b;
} JoinCase;

static const char *
metric_name(TcMetric metric)
{
	return metric == TC_METRIC_COSINE ? "cosine" :
		metric == TC_METRIC_INNER_PRODUCT ? "inner_product" : "euclidean";
}

static inline double
coord(const TcPoints *p, int64_t i, int k)
{
	return p->type == TC_FLOAT4 ? (double) ((const float *) p->data)[i * p->d + k] :
		((const double *) p->data)[i * p->d + k];
}

/* The contract's dot product of row i of x and row j of y (float8, index order, no FMA). */
static double
dot_xy(const TcPoints *x, int64_t i, const TcPoints *y, int64_t j)
{
	double		s = 0.0;

	for (int k = 0; k < x->d; k++)
		s += coord(x, i, k) * coord(y, j, k);
	return s;
}

/* Each row's squared norm for cosine (NULL for the other metrics, which need none). */
static double *
norms_for(const TcPoints *p, TcMetric metric)
{
	double	   *norm;

	if (metric != TC_METRIC_COSINE)
		return NULL;
	norm = malloc(sizeof(double) * (size_t) (p->n + 1));
	for (int64_t i = 0; i < p->n; i++)
		norm[i] = dot_xy(p, i, p, i);
	return norm;
}

/*
 * The contract's dist of row i of x and row j of y, independent of the
 * engine: Euclidean sqrt(sum ((double) x_k - (double) y_k)^2) in index
 * order; the inner product -dot; cosine 1 - clamp(dot / sqrt(nx ny), -1,
 * 1) (README.md, src/common/distance.h).  Symmetric bit for bit, so that
 * either side may be x.
 */
double
ref_dist(TcMetric metric, const TcPoints *x, int64_t i, const double *nx, const TcPoints *y,
		 int64_t j, const double *ny)
{
	double		s = 0.0,
				sim;

	if (metric == TC_METRIC_EUCLIDEAN)
	{
		for (int k = 0; k < x->d; k++)
		{
			double		t = coord(x, i, k) - coord(y, j, k);

			s += t * t;
		}
		return sqrt(s);
	}
	s = dot_xy(x, i, y, j);
	if (metric == TC_METRIC_INNER_PRODUCT)
		return -s;
	sim = s / sqrt(nx[i] * ny[j]);
	if (sim > 1.0)
		sim = 1.0;
	else if (sim < -1.0)
		sim = -1.0;
	return 1.0 - sim;
}

static int
cmp_double(const void *x, const void *y)
{
	double		a = *(const double *) x,
				b = *(const double *) y;

	return a < b ? -1 : a > b ? 1 : 0;
}

/*
 * The k-th smallest Euclidean dist (1-based, at most y's size) from row i
 * of x to every row of y: an eps on a pair's own dist, with k pairs.
 */
static double
kth_dist(const TcPoints *x, int64_t i, const TcPoints *y, int64_t k)
{
	double	   *dist = malloc(sizeof(double) * (size_t) y->n);
	double		r;

	for (int64_t j = 0; j < y->n; j++)
		dist[j] = ref_dist(TC_METRIC_EUCLIDEAN, x, i, NULL, y, j, NULL);
	qsort(dist, (size_t) y->n, sizeof(double), cmp_double);
	r = dist[(k < y->n ? k : y->n) - 1];
	free(dist);
	return r;
}

/* eps with about k partners a point in a pool of n (eps_for on a sample, scaled to n). */
double
pool_eps(const float *x, int64_t n, int d, double k)
{
	int64_t		m = d >= 64 ? 5000 : 20000;

	if (m > n)
		m = n;
	return eps_for(x, m, d, k) * pow((double) m / (double) n, 1.0 / d);
}

/* n float4 rows as float8, each nudged below float4's step (not float4-representable). */
static double *
to_f8(const float *x, int64_t n, int d, bool nudge)
{
	double	   *y = malloc(sizeof(double) * (size_t) (n * d + 1));

	for (int64_t i = 0; i < n * d; i++)
		y[i] = (double) x[i] + (nudge ? unit() * 1e-9 : 0.0);
	return y;
}

/* The first pair at or after (i, j) in a sorted list. */
static size_t
lower_bound(const Collect *c, int64_t i, int64_t j)
{
	size_t		lo = 0,
				hi = c->n;
	TcPair		key = {i, j, 0};

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (cmp_pair(&c->pairs[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool
has_pair(const Collect *c, int64_t i, int64_t j)
{
	size_t		t = lower_bound(c, i, j);

	return t < c->n && c->pairs[t].a == i && c->pairs[t].b == j;
}

static void
sort_pairs(Collect *c)
{
	if (c->n > 1)
		qsort(c->pairs, c->n, sizeof(TcPair), cmp_pair);
}

/* A reference failure, shown once per case. */
static void
ref_bad(int64_t *bad, const char *what, int64_t i, int64_t j, double want, double got)
{
	if ((*bad)++ == 0)
		printf("  reference: %s at (%lld,%lld): contract %.17g, join %.17g\n", what,
			   (long long) i, (long long) j, want, got);
}

/*
 * One row i of a (by_b false) or column i of b (by_b true) against the
 * whole other side by the contract: each partner within eps is in the
 * sorted list c, and the list has no other partner of it.
 */
static void
ref_scan(const TcPoints *a, const TcPoints *b, const double *na, const double *nb, TcMetric metric,
		 double eps, const Collect *c, const int64_t *per_b, bool by_b, int64_t i, int64_t *bad)
{
	const TcPoints *other = by_b ? a : b;
	int64_t		within = 0,
				listed;

	for (int64_t j = 0; j < other->n; j++)
	{
		double		r = by_b ? ref_dist(metric, a, j, na, b, i, nb) :
			ref_dist(metric, a, i, na, b, j, nb);

		if (!(r <= eps))
			continue;
		within++;
		if (!(by_b ? has_pair(c, j, i) : has_pair(c, i, j)))
			ref_bad(bad, "a pair within eps missing", by_b ? j : i, by_b ? i : j, r, NAN);
	}
	listed = by_b ? per_b[i] : (int64_t) (lower_bound(c, i + 1, 0) - lower_bound(c, i, 0));
	if (listed != within)
		ref_bad(bad, by_b ? "partners of a column of b, listed against the contract's" :
				"partners of a row of a, listed against the contract's",
				by_b ? -1 : i, by_b ? i : -1, (double) within, (double) listed);
}

/*
 * The test's own contract over a join's sorted pairs: every pair once and
 * in range, a sample of 100,000 (or all) at its contract dist bit for bit
 * and within eps; and up to 64 rows of a and 64 columns of b (the first,
 * the last and random ones, fewer where the other side is large) scanned
 * whole.  Returns the failures; note says what was checked.
 */
static int64_t
ref_check(const TcPoints *a, const TcPoints *b, TcMetric metric, double eps, const Collect *c,
		  char *note, size_t notelen)
{
	double	   *na = norms_for(a, metric),
			   *nb = norms_for(b, metric);
	size_t		step = c->n > 100000 ? c->n / 100000 : 1;
	int64_t		bad = 0,
				checked = 0,
				rows = 0,
				cols = 0;
	double		budget = 2e8;	/* coordinates read by the scans of each side */
	int64_t    *per_b = calloc((size_t) b->n + 1, sizeof(int64_t));	/* pairs a column */

	for (size_t t = 0; t < c->n; t++)
	{
		const TcPair *q = &c->pairs[t];
		double		r;

		if (q->a < 0 || q->a >= a->n || q->b < 0 || q->b >= b->n ||
			(t > 0 && cmp_pair(q, q - 1) == 0))
		{
			ref_bad(&bad, "a pair out of range or repeated", q->a, q->b, NAN, q->dist);
			continue;
		}
		per_b[q->b]++;
		if (t % step != 0)
			continue;
		r = ref_dist(metric, a, q->a, na, b, q->b, nb);
		checked++;
		if (!(r <= eps) || memcmp(&r, &q->dist, sizeof(double)) != 0)
			ref_bad(&bad, "a pair's dist", q->a, q->b, r, q->dist);
	}
	if (a->n > 0 && b->n > 0)
	{
		rows = (int64_t) fmin(64.0, fmax(1.0, budget / ((double) b->n * a->d)));
		cols = (int64_t) fmin(64.0, fmax(1.0, budget / ((double) a->n * a->d)));
	}
	for (int64_t r = 0; r < rows; r++)
		ref_scan(a, b, na, nb, metric, eps, c, per_b, false,
				 r == 0 ? 0 : r == 1 ? a->n - 1 : (int64_t) (next_u64() % (uint64_t) a->n), &bad);
	for (int64_t r = 0; r < cols; r++)
		ref_scan(a, b, na, nb, metric, eps, c, per_b, true,
				 r == 0 ? 0 : r == 1 ? b->n - 1 : (int64_t) (next_u64() % (uint64_t) b->n), &bad);
	snprintf(note, notelen, "%lld dists, %lld rows and %lld columns scanned, %lld bad",
			 (long long) checked, (long long) rows, (long long) cols, (long long) bad);
	free(per_b);
	free(na);
	free(nb);
	return bad;
}

static bool
is(const char *s, const char *want)
{
	return s != NULL && strcmp(s, want) == 0;
}

/*
 * exact => false (FaSTED's semantics: the FP16-32 product decides) against
 * the exact CPU join, as approx_cases measures it: the overlap of the two
 * sorted pair sets and the dist error of the pairs both have, within loose
 * bounds (a broken mode misses them by far).
 */
static bool
approx_ok(const Collect *ce, const Collect *ca, double eps, char *note, size_t notelen)
{
	size_t		i = 0,
				j = 0,
				common = 0;
	double		maxerr = 0,
				overlap;

	while (i < ce->n && j < ca->n)
	{
		int			c = cmp_pair(&ce->pairs[i], &ca->pairs[j]);

		if (c == 0)
			maxerr = fmax(maxerr, fabs(ca->pairs[j].dist - ce->pairs[i].dist) / eps);
		common += c == 0;
		i += c <= 0;
		j += c >= 0;
	}
	overlap = ce->n + ca->n - common ? (double) common / (double) (ce->n + ca->n - common) : 1.0;
	snprintf(note, notelen, "none (approximate): overlap %.6f, max dist error / eps %.2e",
			 overlap, maxerr);
	return overlap >= 0.99 && maxerr <= 1e-2;
}

/*
 * One case on the CPU and on the GPU: both lists sorted and equal bit for
 * bit (or close, approx_ok), the GPU's held to the test's contract, the
 * GPU ran (and the method, filter and blocks the case asks for), and an
 * empty side gives no pair.
 */
static void
join_compare(const TcPoints *a, const TcPoints *b, const JoinCase *jc)
{
	TcJoinParams cpu = {.eps = jc->eps, .metric = jc->metric, .method = jc->method,
		.device = TC_DEVICE_CPU, .exact = true, .threads = tc_cpu_count()};
	TcJoinParams gpu = cpu;
	Collect		c1 = {0},
				c2 = {0};
	TcJoinStats s1 = {0},
				s2 = {0};
	TcError		e1 = {0},
				e2 = {0};
	TcStatus	st1,
				st2;
	char		what[240],
				note[160];
	double		t0,
				t1,
				t2;

	gpu.device = TC_DEVICE_GPU;
	gpu.tensor_cores = jc->tc;
	gpu.gpu_memory_limit = jc->limit;
	gpu.exact = !jc->approx;
	snprintf(what, sizeof(what), "join %-9s %-13s %s/%s na=%-7lld nb=%-7lld d=%-3d eps=%-10.4g %-5s%s%s",
			 jc->label, metric_name(jc->metric), a->type == TC_FLOAT4 ? "f4" : "f8",
			 b->type == TC_FLOAT4 ? "f4" : "f8", (long long) a->n, (long long) b->n, a->d, jc->eps,
			 jc->method == TC_METHOD_BRUTE ? "brute" : jc->method == TC_METHOD_GRID ? "grid" : "auto",
			 jc->limit ? " streamed" : "", jc->approx ? " approximate" : "");
	t0 = tc_now();
	st1 = run_join(a, b, cpu, &c1, &s1, &e1);
	t1 = tc_now();
	st2 = run_join(a, b, gpu, &c2, &s2, &e2);
	t2 = tc_now();
	if (st1 != TC_OK || st2 != TC_OK)
		report(0, "%s: cpu %s (%s), gpu %s (%s)", what, tc_status_name(st1), e1.message,
			   tc_status_name(st2), e2.message);
	else
	{
		bool		both = a->n > 0 && b->n > 0;
		/* FP16 brute force, forced (brute) or the only way (the dot-product metrics) */
		bool		fp16 = both && (is(jc->want, "brute") || jc->metric != TC_METRIC_EUCLIDEAN);
		bool		same,
					path;
		int64_t		bad = 0;

		sort_pairs(&c1);
		sort_pairs(&c2);
		if (jc->approx)
			same = approx_ok(&c1, &c2, jc->eps, note, sizeof(note));
		else
		{
			same = same_pairs(&c1, &c2) && (both || c2.n == 0);
			bad = ref_check(jc->ref_a ? jc->ref_a : a, jc->ref_b ? jc->ref_b : b, jc->metric,
							jc->eps, &c2, note, sizeof(note));
		}
		/* the approximate filter decides alone: nothing rechecked */
		path = is(s2.device, "gpu") && (jc->want == NULL || !both || is(s2.method, jc->want)) &&
			(!fp16 || is(s2.filter, jc->approx ? "fp16 tensor cores, approximate" :
						 "fp16 tensor cores")) &&
			(!jc->approx || s2.rechecked == 0) && (jc->limit == 0 || s2.gpu_blocks > 1);
		report(same && path && bad == 0,
			   "%s: pairs cpu %zu gpu %zu; gpu %s, %s, filter %s, %d block%s; reference %s; "
			   "cpu %.3f s gpu %.3f s", what, c1.n, c2.n, s2.device ? s2.device : "-",
			   s2.method ? s2.method : "-", s2.filter ? s2.filter : "-", s2.gpu_blocks,
			   s2.gpu_blocks == 1 ? "" : "s", note, t1 - t0, t2 - t1);
	}
	free(c1.pairs);
	free(c2.pairs);
}

/*
 * The grid: d = 2, 3, 5 and 8, uniform and clustered (half the points in
 * Gaussian clusters, make_clusters), a and b two parts of one pool so that
 * clusters span both; method grid (the GPU grid must run) and auto (its
 * choice).
 */
static void
grid_cases(bool quick)
{
	static const int dims[] = {2, 3, 5, 8};

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (int clustered = 0; clustered < 2; clustered++)
		{
			int			d = dims[di];
			/* 8-D: the CPU's grid prunes little; a third of the rows */
			int64_t		na = (quick ? 60000 : 300000) / (d == 8 ? 3 : 1) + (int64_t) (next_u64() % 1000);
			int64_t		nb = na * 2 / 3;
			float	   *x = clustered ? make_clusters(na + nb, d) : make_points("uniform", na + nb, d);
			TcPoints	a = {x, na, d, TC_FLOAT4},
						b = {x + na * d, nb, d, TC_FLOAT4};
			JoinCase	jc = {.label = clustered ? "clustered" : "uniform",
			.eps = pool_eps(x, na + nb, d, 16)};

			jc.method = TC_METHOD_GRID;
			jc.want = "grid";
			join_compare(&a, &b, &jc);
			jc.method = TC_METHOD_AUTO;
			jc.want = NULL;
			join_compare(&a, &b, &jc);
			free(x);
		}
}

/*
 * FP16 brute force: d = 16 to 768 (sizes not a multiple of a tile), method
 * brute (tensor cores on) and auto; clustered at 128 and 768.  Then one
 * join streamed in blocks under a small memory limit (as streamed_cases
 * forces it for self-joins), and one with exact => false (approx_ok).
 */
static void
brute_cases(bool quick)
{
	static const int dims[] = {16, 64, 128, 384, 768};

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (int clustered = 0; clustered < 2; clustered++)
		{
			int			d = dims[di];
			int64_t		na = (quick ? 4000 : 12000) + (int64_t) (next_u64() % 200);
			int64_t		nb = (quick ? 3000 : 9000) + (int64_t) (next_u64() % 200);
			float	   *x;
			TcPoints	a,
						b;
			JoinCase	jc = {.label = clustered ? "clustered" : "uniform", .want = "brute"};

			if (clustered && d != 128 && d != 768)
				continue;
			x = clustered ? make_clusters(na + nb, d) : make_points("uniform", na + nb, d);
			a = (TcPoints) {x, na, d, TC_FLOAT4};
			b = (TcPoints) {x + na * d, nb, d, TC_FLOAT4};
			jc.eps = pool_eps(x, na + nb, d, 16);
			jc.method = TC_METHOD_BRUTE;
			jc.tc = TC_TENSOR_ON;
			join_compare(&a, &b, &jc);
			jc.method = TC_METHOD_AUTO;
			jc.tc = TC_TENSOR_AUTO;
			join_compare(&a, &b, &jc);
			free(x);
		}

	/*
	 * streamed: 30,001 x 25,000 rows of 128 under 16 MB (15 MB of
	 * coordinates a side); then exact => false, whole
	 */
	for (int approx = 0; approx < 2; approx++)
	{
		int64_t		na = approx ? (quick ? 8000 : 20000) : 30001,
					nb = approx ? (quick ? 6000 : 15000) : 25000;
		float	   *x = make_points(approx ? "uniform" : "dups", na + nb, 128);
		TcPoints	a = {x, na, 128, TC_FLOAT4},
					b = {x + na * 128, nb, 128, TC_FLOAT4};
		JoinCase	jc = {.label = approx ? "uniform" : "dups", .method = TC_METHOD_BRUTE,
			.tc = TC_TENSOR_ON, .limit = approx ? 0 : (size_t) 16 << 20, .approx = approx,
		.want = "brute", .eps = pool_eps(x, na + nb, 128, approx ? 16 : 32)};

		join_compare(&a, &b, &jc);
		free(x);
	}
}

/*
 * n rows for the dot-product metrics, each coordinate uniform in [-1, 1];
 * from copy_of (if not NULL, m rows), a third of the rows copies of its
 * rows scaled by 3 or 0.25 or nudged by up to 5e-4 (cosine dists of about
 * 0 across the sides).
 */
static void *
dot_rows(int64_t n, int d, TcElemType type, const TcPoints *copy_of)
{
	void	   *buf = malloc((size_t) type * (size_t) (n * d + 1));

	for (int64_t i = 0; i < n; i++)
	{
		int64_t		src = copy_of && next_u64() % 3 == 0 ?
			(int64_t) (next_u64() % (uint64_t) copy_of->n) : -1;
		int			how = (int) (next_u64() % 3);

		for (int k = 0; k < d; k++)
		{
			double		v = 2 * unit() - 1;

			if (src >= 0)
				v = coord(copy_of, src, k) * (how == 0 ? 3.0 : how == 1 ? 0.25 : 1.0) +
					(how == 2 ? (unit() - 0.5) * 1e-3 : 0.0);
			if (type == TC_FLOAT4)
				((float *) buf)[i * d + k] = (float) v;
			else
				((double *) buf)[i * d + k] = v;
		}
	}
	return buf;
}

/*
 * Cosine and the inner product (FP16 brute force on the GPU whatever the
 * method) at d = 16, 128 and 384, float8 at 128; eps a pair's own dist:
 * of the first 200 rows of a against all of b, the 0.5%'s smallest (cosine)
 * or 0.2%'s (inner product).  Method brute and auto.
 */
static void
dot_cases(bool quick)
{
	static const int dims[] = {16, 128, 384};

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
	{
		int			d = dims[di];
		TcElemType	type = d == 128 ? TC_FLOAT8 : TC_FLOAT4;
		int64_t		na = (quick ? 1500 : 4000) + (int64_t) (next_u64() % 100);
		int64_t		nb = (quick ? 1200 : 3000) + (int64_t) (next_u64() % 100);
		TcPoints	a = {dot_rows(na, d, type, NULL), na, d, type};
		TcPoints	b = {dot_rows(nb, d, type, &a), nb, d, type};
		TcPoints	head = {a.data, na < 200 ? na : 200, d, type};

		for (int mi = 0; mi < 2; mi++)
		{
			TcMetric	metric = mi ? TC_METRIC_INNER_PRODUCT : TC_METRIC_COSINE;
			double	   *nh = norms_for(&head, metric),
					   *nb2 = norms_for(&b, metric);
			size_t		count = (size_t) (head.n * nb);
			double	   *dist = malloc(sizeof(double) * count);
			JoinCase	jc = {.label = "dot", .metric = metric, .want = "brute"};

			for (int64_t i = 0; i < head.n; i++)
				for (int64_t j = 0; j < nb; j++)
					dist[i * nb + j] = ref_dist(metric, &head, i, nh, &b, j, nb2);
			qsort(dist, count, sizeof(double), cmp_double);
			jc.eps = dist[mi ? count / 500 : count / 200];
			jc.method = TC_METHOD_BRUTE;
			jc.tc = TC_TENSOR_ON;
			join_compare(&a, &b, &jc);
			jc.method = TC_METHOD_AUTO;
			jc.tc = TC_TENSOR_AUTO;
			join_compare(&a, &b, &jc);
			free(dist);
			free(nh);
			free(nb2);
		}
		free((void *) a.data);
		free((void *) b.data);
	}
}

/*
 * Very unequal sides, in 2-D (grid) and 128-D (brute force): one row
 * against a million (quick: 200,000) and the million against the one, eps
 * the 50th smallest dist of the one (a pair's own dist); an empty side
 * against the many and back (no pair, no error); one against one at eps
 * equal to their dist (the pair) and one step below it (none).
 */
static void
unequal_cases(bool quick)
{
	int64_t		big = quick ? 200000 : 1000000;

	for (int hi = 0; hi < 2; hi++)
	{
		int			d = hi ? 128 : 2;
		float	   *x = make_points("uniform", big + 1, d);
		TcPoints	one = {x + big * d, 1, d, TC_FLOAT4},
					many = {x, big, d, TC_FLOAT4},
					none = {NULL, 0, d, TC_FLOAT4},
					first = {x, 1, d, TC_FLOAT4};
		JoinCase	jc = {.label = "unequal", .method = hi ? TC_METHOD_BRUTE : TC_METHOD_GRID,
		.want = hi ? "brute" : "grid"};
		double		own;

		jc.eps = kth_dist(&one, 0, &many, 50);
		join_compare(&one, &many, &jc);
		join_compare(&many, &one, &jc);
		jc.label = "empty";
		join_compare(&none, &many, &jc);
		join_compare(&many, &none, &jc);
		/* two points give a grid no dimension of three cells: one cell, brute force's work */
		jc.label = "1x1";
		jc.want = hi ? "brute" : NULL;
		own = ref_dist(TC_METRIC_EUCLIDEAN, &one, 0, NULL, &first, 0, NULL);
		jc.eps = own;
		join_compare(&one, &first, &jc);
		jc.eps = nextafter(own, 0.0);
		join_compare(&one, &first, &jc);
		free(x);
	}
}

/*
 * Duplicates across the sides: every fourth row of b an exact copy of a
 * row of a (dist 0).  eps 0 (the copies alone; auto in 2-D, whose grid
 * must take a zero eps), eps the 10th smallest dist of a's first row (a
 * pair's own dist), and eps with about 16 partners.
 */
static void
dup_cases(bool quick)
{
	for (int hi = 0; hi < 2; hi++)
	{
		int			d = hi ? 128 : 2;
		int64_t		na = hi ? (quick ? 3000 : 8000) : (quick ? 20000 : 100000);
		int64_t		nb = na * 3 / 4;
		float	   *x = make_points("uniform", na + nb, d);
		TcPoints	a = {x, na, d, TC_FLOAT4},
					b = {x + na * d, nb, d, TC_FLOAT4};
		JoinCase	jc = {.label = "dups", .want = hi ? "brute" : NULL};

		for (int64_t j = 0; j < nb; j += 4)
			memcpy(x + (na + j) * d, x + (int64_t) (next_u64() % (uint64_t) na) * d, sizeof(float) * d);
		jc.method = hi ? TC_METHOD_BRUTE : TC_METHOD_AUTO;
		jc.eps = 0.0;
		join_compare(&a, &b, &jc);
		jc.method = hi ? TC_METHOD_BRUTE : TC_METHOD_GRID;
		jc.want = hi ? "brute" : "grid";
		jc.eps = kth_dist(&a, 0, &b, 10);
		join_compare(&a, &b, &jc);
		jc.eps = pool_eps(x, na + nb, d, 16);
		join_compare(&a, &b, &jc);
		free(x);
	}
}

/*
 * float4 against float8 (values below float4's step) and the reverse, in
 * 3-D (grid) and 128-D (brute force).  A join takes one element type
 * (engine.c), so the float4 side is widened, exactly, as tc_join does
 * (src/pg/functions.c); the test's sums read the sides as they came.
 */
static void
mixed_cases(bool quick)
{
	for (int hi = 0; hi < 2; hi++)
		for (int rev = 0; rev < 2; rev++)
		{
			int			d = hi ? 128 : 3;
			int64_t		na = hi ? (quick ? 3000 : 8000) : (quick ? 40000 : 150000);
			int64_t		nb = na * 2 / 3;
			float	   *x = make_points("uniform", na + nb, d);
			/* the float8 side: a or b (rev), nudged; the float4 side as floats and widened */
			double	   *fine = to_f8(rev ? x : x + na * d, rev ? na : nb, d, true);
			double	   *wide = to_f8(rev ? x + na * d : x, rev ? nb : na, d, false);
			TcPoints	f4 = {rev ? x + na * d : x, rev ? nb : na, d, TC_FLOAT4},
						f8 = {fine, rev ? na : nb, d, TC_FLOAT8},
						w = {wide, f4.n, d, TC_FLOAT8};
			JoinCase	jc = {.label = rev ? "f8-f4" : "f4-f8",
				.method = hi ? TC_METHOD_BRUTE : TC_METHOD_GRID, .want = hi ? "brute" : "grid",
			.eps = pool_eps(x, na + nb, d, 16)};

			jc.ref_a = rev ? &f8 : &f4;
			jc.ref_b = rev ? &f4 : &f8;
			join_compare(rev ? &f8 : &w, rev ? &w : &f8, &jc);
			free(fine);
			free(wide);
			free(x);
		}
}

/*
 * A GPU join stopped by the sink's poll midway (once a quarter of the
 * CPU's pairs came; a result buffer of 4,096 pairs, so that they come in
 * many batches), then the same join run again: every pair.  2-D grid and
 * 128-D brute force.
 */
static void
stop_cases(bool quick)
{
	for (int hi = 0; hi < 2; hi++)
	{
		int			d = hi ? 128 : 2;
		int64_t		n = hi ? (quick ? 8000 : 20000) : (quick ? 300000 : 1000000);
		float	   *x = make_points("uniform", 2 * n, d);
		TcPoints	a = {x, n, d, TC_FLOAT4},
					b = {x + n * d, n, d, TC_FLOAT4};
		TcJoinParams cpu = {.eps = pool_eps(x, 2 * n, d, hi ? 64 : 16),
			.method = hi ? TC_METHOD_BRUTE : TC_METHOD_GRID, .device = TC_DEVICE_CPU,
		.exact = true, .threads = tc_cpu_count()};
		TcJoinParams gpu = cpu;
		/* the CPU's, the GPU's stopped, the GPU's again */
		Collect		c[3] = {{0}};
		TcJoinStats s[3] = {{0}};
		TcError		e[3] = {{0}};
		TcStatus	st[3];
		char		note[160] = "-";
		int64_t		bad = 0;

		gpu.device = TC_DEVICE_GPU;
		gpu.gpu_result_pairs = 4096;
		/* brute force's first batches sized for almost no pairs, as small_buffer has them */
		if (hi)
			gpu.overrides.batch_rate = 1e-6;
		st[0] = run_join(&a, &b, cpu, &c[0], &s[0], &e[0]);
		c[1].stop_after_pairs = c[0].n / 4 > 0 ? c[0].n / 4 : 1;
		st[1] = run_join(&a, &b, gpu, &c[1], &s[1], &e[1]);
		st[2] = run_join(&a, &b, gpu, &c[2], &s[2], &e[2]);
		sort_pairs(&c[0]);
		sort_pairs(&c[2]);
		if (st[2] == TC_OK)
			bad = ref_check(&a, &b, TC_METRIC_EUCLIDEAN, cpu.eps, &c[2], note, sizeof(note));
		report(st[0] == TC_OK && st[1] == TC_STOPPED && c[1].n > 0 && c[1].n < c[0].n &&
			   st[2] == TC_OK && same_pairs(&c[0], &c[2]) && bad == 0 && is(s[1].device, "gpu") &&
			   is(s[2].device, "gpu") && is(s[2].method, hi ? "brute" : "grid"),
			   "join stopped by its poll %-5s n=%lld x %lld d=%d: cpu %s, %zu pairs; stopped gpu %s "
			   "after %zu pairs (%s); again %s, %zu pairs (%s); reference %s",
			   hi ? "brute" : "grid", (long long) n, (long long) n, d, tc_status_name(st[0]), c[0].n,
			   tc_status_name(st[1]), c[1].n, st[1] == TC_STOPPED ? "-" : e[1].message,
			   tc_status_name(st[2]), c[2].n, st[2] == TC_OK ? (s[2].method ? s[2].method : "-") :
			   e[2].message, note);
		for (int t = 0; t < 3; t++)
			free(c[t].pairs);
		free(x);
	}
}

/* Every two-set case; --quick shrinks the sets, never the shapes. */
void
join_cases(bool quick)
{
	grid_cases(quick);
	brute_cases(quick);
	dot_cases(quick);
	unequal_cases(quick);
	dup_cases(quick);
	mixed_cases(quick);
	nearest_cases(quick);
	stop_cases(quick);
}
