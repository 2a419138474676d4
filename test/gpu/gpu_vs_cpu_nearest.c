/*
 * gpu_vs_cpu_nearest.c
 *		A two-set join's k nearest within eps (TC_GRAPH_NEAREST, as tc_join
 *		with k runs it) on the GPU against the CPU: every row's list the
 *		same, indices and dists bit for bit, and a sample of the rows held
 *		to the test's own sums of the contract (ref_dist).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_vs_cpu.h"

static bool
is(const char *s, const char *want)
{
	return s != NULL && strcmp(s, want) == 0;
}

/*
 * One device's k nearest of b for each row of a (TC_GRAPH_NEAREST), as
 * tc_join with k runs it: the CPU's workers keep each row's k nearest
 * (reduce), a GPU on the device (the fold) where k allows; *emitted: the
 * pairs handed to the host.
 */
static TcGraph *
nearest(const TcPoints *a, const TcPoints *b, const int64_t *ids_b, TcJoinParams params, int k,
		TcJoinStats *stats, uint64_t *emitted, TcError *err)
{
	TcGraph    *g = tc_graph_create_nearest(a->n, ids_b, b->n, k, 4, err);
	Counted		ns = {g, 0};
	TcSink		sink = {counted_emit, NULL, &ns, TC_GRAPH_BATCH_HINT,
		g && tc_graph_reducer(g) ? counted_reduce : NULL, g ? tc_graph_fold(g) : NULL, NULL};
	TcJoin	   *j;
	TcStatus	st;

	if (g == NULL)
		return NULL;
	params.overrides = g_overrides;
	take_devices(&params);
	j = tc_join_create(a, b, &params, err);
	st = j ? tc_join_run(j, &sink, err) : err->status;
	if (j)
	{
		tc_join_get_stats(j, stats);
		note_gpus(st, stats);
	}
	tc_join_destroy(j);
	if (st == TC_OK)
		tc_graph_after_join(g);
	*emitted = ns.emitted;
	if (st != TC_OK || tc_graph_failed(g))
	{
		if (st == TC_OK)
			snprintf(err->message, sizeof(err->message), "out of memory for the lists");
		tc_graph_destroy(g);
		return NULL;
	}
	return g;
}

/* Partners by dist, then by the smaller index of b. */
static int
cmp_nearest(const void *x, const void *y)
{
	const TcPair *p = x,
			   *q = y;

	if (p->dist != q->dist)
		return p->dist < q->dist ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b ? 1 : 0;
}

/* Row i of a's k nearest within eps by the contract, against the list got. */
static bool
nearest_ref(const TcPoints *a, const TcPoints *b, double eps, int k, int64_t i,
			const int64_t *idx, const double *dist, int len)
{
	TcPair	   *all = malloc(sizeof(TcPair) * (size_t) (b->n + 1));
	int64_t		m = 0;
	bool		ok;

	for (int64_t j = 0; j < b->n; j++)
	{
		double		r = ref_dist(TC_METRIC_EUCLIDEAN, a, i, NULL, b, j, NULL);

		if (r <= eps)
			all[m++] = (TcPair) {i, j, r};
	}
	qsort(all, (size_t) m, sizeof(TcPair), cmp_nearest);
	ok = len == (m < k ? m : k);
	for (int t = 0; ok && t < len; t++)
		ok = idx[t] == all[t].b && memcmp(&dist[t], &all[t].dist, sizeof(double)) == 0;
	free(all);
	return ok;
}

/*
 * One k on both devices: every row of a's list from the GPU equal to the
 * CPU's (indices and dists bit for bit); the first rows and every 500th
 * equal to the test's own.
 */
static void
nearest_compare(const TcPoints *a, const TcPoints *b, const int64_t *ids, TcJoinParams params,
				int k)
{
	TcJoinStats s1 = {0},
				s2 = {0};
	TcError		e1 = {0},
				e2 = {0};
	TcGraph    *g1,
			   *g2;
	int64_t		diff = 0,
				refbad = 0,
				listed = 0;
	uint64_t	em1 = 0,
				em2 = 0;
	/* the GPU keeps up to TC_FOLD_MAX_K a row on the device: no pair crosses */
	const bool	folds = k <= TC_FOLD_MAX_K;
	const char *want = params.method == TC_METHOD_BRUTE ? "brute" : "grid";

	params.device = TC_DEVICE_CPU;
	g1 = nearest(a, b, ids, params, k, &s1, &em1, &e1);
	params.device = TC_DEVICE_GPU;
	g2 = nearest(a, b, ids, params, k, &s2, &em2, &e2);
	for (int64_t i = 0; g1 != NULL && g2 != NULL && i < a->n; i++)
	{
		const int64_t *i1,
				   *i2;
		const double *d1,
				   *d2;
		int			l1,
					l2;

		tc_graph_neighbors(g1, i, &i1, &d1, &l1);
		tc_graph_neighbors(g2, i, &i2, &d2, &l2);
		listed += l2;
		if ((l1 != l2 || (l1 > 0 && (memcmp(i1, i2, sizeof(int64_t) * l1) != 0 ||
									 memcmp(d1, d2, sizeof(double) * l1) != 0))) &&
			diff++ == 0)
			printf("  row %lld of a: cpu %d nearest, gpu %d (first: %lld and %lld)\n",
				   (long long) i, l1, l2, l1 ? (long long) i1[0] : -1LL, l2 ? (long long) i2[0] : -1LL);
		if ((i < 8 || i % 500 == 0) && !nearest_ref(a, b, params.eps, k, i, i2, d2, l2))
			refbad++;
	}
	if (g1 == NULL || g2 == NULL)
		report(0, "nearest %s d=%d k=%d: cpu %s, gpu %s", want, a->d, k, g1 ? "ran" : e1.message,
			   g2 ? "ran" : e2.message);
	else
		report(diff == 0 && refbad == 0 && is(s2.device, "gpu") && is(s2.method, want) &&
			   (folds ? em2 == 0 : em2 == s2.pairs) && s1.pairs == s2.pairs,
			   "nearest %-5s na=%lld nb=%lld d=%d eps=%.4g k=%d: %lld entries, %lld rows differ, "
			   "%lld rows unlike the contract's; gpu %s, %s, pairs %llu (cpu %llu), handed to the "
			   "host %llu (%s)", want, (long long) a->n,
			   (long long) b->n, a->d, params.eps, k, (long long) listed, (long long) diff,
			   (long long) refbad, s2.device ? s2.device : "-", s2.method ? s2.method : "-",
			   (unsigned long long) s2.pairs, (unsigned long long) s1.pairs,
			   (unsigned long long) em2, folds ? "kept on the device" : "every pair");
	tc_graph_destroy(g1);
	tc_graph_destroy(g2);
}

/*
 * The k nearest within eps (k 1 and 5), as tc_join with k runs them, in
 * 2-D (grid) and 128-D (brute force).  A third of b repeats earlier rows
 * of b, so that partners tie and the smaller index of b must win; ids of
 * b are its indices.
 */
void
nearest_cases(bool quick)
{
	for (int hi = 0; hi < 2; hi++)
	{
		int			d = hi ? 128 : 2;
		int64_t		na = hi ? (quick ? 3000 : 8000) : (quick ? 20000 : 100000);
		int64_t		nb = na;
		float	   *x = make_points("uniform", na + nb, d);
		int64_t    *ids = malloc(sizeof(int64_t) * (size_t) nb);
		TcPoints	a = {x, na, d, TC_FLOAT4},
					b = {x + na * d, nb, d, TC_FLOAT4};
		TcJoinParams params = {.eps = pool_eps(x, na + nb, d, 12),
			.method = hi ? TC_METHOD_BRUTE : TC_METHOD_GRID, .exact = true,
		.threads = tc_cpu_count()};

		for (int64_t j = 0; j < nb; j++)
		{
			ids[j] = j;
			if (j > 0 && j % 3 == 2)
				memcpy(x + (na + j) * d, x + (na + (int64_t) (next_u64() % (uint64_t) j)) * d,
					   sizeof(float) * d);
		}
		nearest_compare(&a, &b, ids, params, 1);
		nearest_compare(&a, &b, ids, params, 5);
		/* past the device's lists: the pairs come to the host */
		nearest_compare(&a, &b, ids, params, TC_FOLD_MAX_K + 1);
		free(ids);
		free(x);
	}
}
