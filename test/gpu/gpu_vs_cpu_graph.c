/*
 * gpu_vs_cpu_graph.c
 *		The answers that are not pair lists (graph.c) from the GPU, whose
 *		pairs are folded on the device (TcSink.fold), against the CPU's,
 *		whose workers reduce them on the host: the count, every degree, every
 *		component and DBSCAN's clusters and core flags, equal.  The points
 *		have exact duplicates and ids out of order, so that a border point's
 *		nearest cores tie and the smaller id must decide.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_vs_cpu.h"

int
counted_emit(void *arg, const TcPair *pairs, size_t count)
{
	Counted    *c = arg;

	c->emitted += count;
	return tc_graph_emit(c->g, pairs, count);
}

void
counted_reduce(void *arg, int64_t a, int64_t b, double dist)
{
	Counted    *c = arg;

	tc_graph_reducer(c->g) (c->g, a, b, dist);
}

/* One join of p into g (with the graph's fold); the pairs the host saw. */
static TcStatus
graph_join(const TcPoints *p, TcJoinParams params, TcGraph *g, uint64_t *pairs,
		   uint64_t *emitted, TcError *err)
{
	Counted		c = {g, 0};
	TcSink		sink = {counted_emit, NULL, &c, TC_GRAPH_BATCH_HINT, NULL, tc_graph_fold(g), NULL};
	TcJoinStats stats;
	TcJoin	   *j;
	TcStatus	st;

	params.overrides = g_overrides;
	take_devices(&params);
	/* on the CPU, the graph's own sink: its workers reduce the pairs (arg: the graph) */
	if (params.device == TC_DEVICE_CPU)
	{
		sink.emit = tc_graph_emit;
		sink.arg = g;
		sink.reduce = tc_graph_reducer(g);
	}
	j = tc_join_create(p, NULL, &params, err);
	if (j == NULL)
		return err->status;
	st = tc_join_run(j, &sink, err);
	tc_join_get_stats(j, &stats);
	note_gpus(st, &stats);
	tc_join_destroy(j);
	*pairs = stats.pairs;
	*emitted += c.emitted;
	return st;
}

/* Every answer of kind on one device: count, degrees, components or clusters. */
typedef struct Answer
{
	TcStatus	st;
	char		message[256];
	uint64_t	pairs;
	uint64_t	emitted;		/* pairs the host was handed */
	int			joins;
	int64_t    *values;			/* degree, component or cluster a point */
	bool	   *core;
} Answer;

static void
answer(const TcPoints *p, const int64_t *ids, TcJoinParams params, TcGraphKind kind,
	   int64_t min_points, Answer *out)
{
	TcError		err;
	TcGraph    *g = tc_graph_create(kind, p->n, ids, 0, 4, &err);
	int32_t    *cluster = calloc((size_t) p->n + 1, sizeof(int32_t));

	memset(out, 0, sizeof(*out));
	out->values = calloc((size_t) p->n + 1, sizeof(int64_t));
	out->core = calloc((size_t) p->n + 1, sizeof(bool));
	if (g == NULL || cluster == NULL || out->values == NULL || out->core == NULL)
	{
		out->st = TC_ERR_NOMEM;
		snprintf(out->message, sizeof(out->message), "out of memory");
		tc_graph_destroy(g);
		free(cluster);
		return;
	}
	out->st = graph_join(p, params, g, &out->pairs, &out->emitted, &err);
	out->joins = 1;
	if (out->st == TC_OK && kind == TC_GRAPH_DBSCAN)
	{
		tc_graph_dbscan_cores(g, min_points);
		out->st = graph_join(p, params, g, &out->pairs, &out->emitted, &err);
		out->joins++;
		if (out->st == TC_OK && tc_graph_after_join(g))
		{
			out->st = graph_join(p, params, g, &out->pairs, &out->emitted, &err);
			out->joins++;
		}
	}
	if (out->st != TC_OK)
		snprintf(out->message, sizeof(out->message), "%s", err.message);
	else if (kind == TC_GRAPH_DEGREES)
		for (int64_t i = 0; i < p->n; i++)
			out->values[i] = tc_graph_degree(g, i);
	else if (kind == TC_GRAPH_COMPONENTS)
		tc_graph_components(g, out->values);
	else if (kind == TC_GRAPH_DBSCAN)
	{
		tc_graph_dbscan(g, cluster, out->core);
		for (int64_t i = 0; i < p->n; i++)
			out->values[i] = cluster[i];
	}
	if (tc_graph_failed(g))
		out->st = TC_ERR_NOMEM;
	tc_graph_destroy(g);
	free(cluster);
}

static const char *
kind_name(TcGraphKind kind)
{
	switch (kind)
	{
		case TC_GRAPH_COUNT:
			return "count";
		case TC_GRAPH_DEGREES:
			return "degrees";
		case TC_GRAPH_COMPONENTS:
			return "components";
		case TC_GRAPH_DBSCAN:
			return "dbscan";
		default:
			return "neighbors";
	}
}

static void
graph_case(const char *label, const TcPoints *p, const int64_t *ids, TcJoinParams params,
		   TcGraphKind kind, int64_t min_points)
{
	Answer		cpu,
				gpu;
	int64_t		diff = 0;

	params.device = TC_DEVICE_CPU;
	answer(p, ids, params, kind, min_points, &cpu);
	params.device = TC_DEVICE_GPU;
	answer(p, ids, params, kind, min_points, &gpu);
	if (cpu.st != TC_OK || gpu.st != TC_OK)
		report(0, "graph %s %s: cpu %s (%s), gpu %s (%s)", label, kind_name(kind),
			   tc_status_name(cpu.st), cpu.message, tc_status_name(gpu.st), gpu.message);
	else
	{
		for (int64_t i = 0; i < p->n; i++)
			diff += cpu.values[i] != gpu.values[i] || cpu.core[i] != gpu.core[i];
		/* folded: the GPU handed the host no pair (DBSCAN takes a third join for its ties) */
		report(diff == 0 && cpu.pairs == gpu.pairs && gpu.emitted == 0 &&
			   gpu.joins == (kind == TC_GRAPH_DBSCAN ? 3 : 1),
			   "graph %-22s %-10s min_points %-3lld pairs cpu %llu gpu %llu, %lld points differ, "
			   "gpu joins %d, pairs handed to the host %llu", label, kind_name(kind),
			   (long long) min_points, (unsigned long long) cpu.pairs,
			   (unsigned long long) gpu.pairs, (long long) diff, gpu.joins,
			   (unsigned long long) gpu.emitted);
	}
	free(cpu.values);
	free(cpu.core);
	free(gpu.values);
	free(gpu.core);
}

/*
 * tc_neighbors' lists with k (TC_GRAPH_NEIGHBORS): the GPU's, kept on the
 * device up to TC_FOLD_MAX_K a point (no pair handed to the host), past it
 * from every pair, against the CPU's, ids and dists bit for bit.
 */
static void
neighbors_case(const char *label, const TcPoints *p, const int64_t *ids, TcJoinParams params,
			   int k)
{
	TcGraph    *g[2];
	TcStatus	st[2];
	TcError		err[2];
	uint64_t	pairs[2] = {0, 0},
				emitted[2] = {0, 0};
	int64_t		diff = 0,
				listed = 0;

	for (int dev = 0; dev < 2; dev++)
	{
		params.device = dev ? TC_DEVICE_GPU : TC_DEVICE_CPU;
		memset(&err[dev], 0, sizeof(err[dev]));
		g[dev] = tc_graph_create(TC_GRAPH_NEIGHBORS, p->n, ids, k, 4, &err[dev]);
		st[dev] = g[dev] ? graph_join(p, params, g[dev], &pairs[dev], &emitted[dev], &err[dev]) :
			TC_ERR_NOMEM;
		if (st[dev] == TC_OK)
			tc_graph_after_join(g[dev]);
		if (st[dev] == TC_OK && tc_graph_failed(g[dev]))
			st[dev] = TC_ERR_NOMEM;
	}
	for (int64_t i = 0; st[0] == TC_OK && st[1] == TC_OK && i < p->n; i++)
	{
		const int64_t *i0,
				   *i1;
		const double *d0,
				   *d1;
		int			l0,
					l1;
		int64_t		cpu_ids[TC_FOLD_MAX_K + 8];
		double		cpu_d[TC_FOLD_MAX_K + 8];

		/* a graph's answer is valid until its next read: keep the CPU's */
		tc_graph_neighbors(g[0], i, &i0, &d0, &l0);
		l0 = l0 < TC_FOLD_MAX_K + 8 ? l0 : TC_FOLD_MAX_K + 8;
		memcpy(cpu_ids, i0, sizeof(int64_t) * l0);
		memcpy(cpu_d, d0, sizeof(double) * l0);
		tc_graph_neighbors(g[1], i, &i1, &d1, &l1);
		listed += l1;
		if ((l0 != l1 || (l0 > 0 && (memcmp(cpu_ids, i1, sizeof(int64_t) * l0) != 0 ||
									 memcmp(cpu_d, d1, sizeof(double) * l0) != 0))) &&
			diff++ == 0)
			printf("  point %lld: cpu %d neighbours, gpu %d (first: %lld and %lld)\n",
				   (long long) i, l0, l1, l0 ? (long long) cpu_ids[0] : -1LL,
				   l1 ? (long long) i1[0] : -1LL);
	}
	if (st[0] != TC_OK || st[1] != TC_OK)
		report(0, "graph %s neighbors k=%d: cpu %s (%s), gpu %s (%s)", label, k,
			   tc_status_name(st[0]), err[0].message, tc_status_name(st[1]), err[1].message);
	else
		report(diff == 0 && pairs[0] == pairs[1] &&
			   (k <= TC_FOLD_MAX_K ? emitted[1] == 0 : emitted[1] == pairs[1]),
			   "graph %-22s neighbors  k %-3d pairs cpu %llu gpu %llu, %lld entries, %lld points "
			   "differ, pairs handed to the host %llu", label, k, (unsigned long long) pairs[0],
			   (unsigned long long) pairs[1], (long long) listed, (long long) diff,
			   (unsigned long long) emitted[1]);
	tc_graph_destroy(g[0]);
	tc_graph_destroy(g[1]);
}

/*
 * n points of d dimensions, clustered with a fifth scattered, every fourth
 * point an exact copy of an earlier one; ids a permutation out of order.
 */
static float *
graph_points(int64_t n, int d, int64_t *ids)
{
	float	   *x = make_clusters(n, d);

	for (int64_t i = 0; i < n; i++)
	{
		if (i % 5 == 4)
			for (int t = 0; t < d; t++)
				x[i * d + t] = (float) (unit() * 4.0 - 2.0);
		if (i % 4 == 3)
			memcpy(x + i * d, x + (int64_t) (unit() * (double) i) * d, sizeof(float) * d);
		/* 7919 is prime to n here: a permutation of 0 .. n-1, shifted */
		ids[i] = (i * 7919) % n + 1000;
	}
	return x;
}

void
graph_cases(bool quick)
{
	static const struct
	{
		const char *label;
		int			d;
		TcMethod	method;
		TcMetric	metric;
		double		k;			/* neighbours a point */
	}			cases[] = {
		{"2-D grid", 2, TC_METHOD_GRID, TC_METRIC_EUCLIDEAN, 12},
		{"3-D grid", 3, TC_METHOD_GRID, TC_METRIC_EUCLIDEAN, 6},
		{"32-D fp16 brute", 32, TC_METHOD_BRUTE, TC_METRIC_EUCLIDEAN, 20},
		{"64-D fp16 cosine", 64, TC_METHOD_BRUTE, TC_METRIC_COSINE, 20},
	};
	static const TcGraphKind kinds[] = {TC_GRAPH_COUNT, TC_GRAPH_DEGREES, TC_GRAPH_COMPONENTS};
	static const int64_t min_points[] = {1, 4, 12};

	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
	{
		int64_t		n = cases[ci].d <= 3 ? (quick ? 60000 : 200000) : (quick ? 12000 : 40000);
		int			d = cases[ci].d;
		int64_t    *ids = malloc(sizeof(int64_t) * n);
		float	   *x = graph_points(n, d, ids);
		TcPoints	p = {x, n, d, TC_FLOAT4};
		double		eps = eps_for(x, 4000, d, cases[ci].k);
		TcJoinParams params = {.eps = eps, .method = cases[ci].method,
			.metric = cases[ci].metric, .exact = true, .threads = tc_cpu_count(),
		.tensor_cores = TC_TENSOR_ON};

		if (cases[ci].metric == TC_METRIC_COSINE)
			params.eps = 0.05;
		for (size_t ki = 0; ki < sizeof(kinds) / sizeof(kinds[0]); ki++)
			graph_case(cases[ci].label, &p, ids, params, kinds[ki], 0);
		for (size_t mi = 0; mi < sizeof(min_points) / sizeof(min_points[0]); mi++)
			graph_case(cases[ci].label, &p, ids, params, TC_GRAPH_DBSCAN, min_points[mi]);
		neighbors_case(cases[ci].label, &p, ids, params, 1);
		neighbors_case(cases[ci].label, &p, ids, params, 10);
		neighbors_case(cases[ci].label, &p, ids, params, TC_FOLD_MAX_K + 1);
		free(x);
		free(ids);
	}
}
