/*
 * test_graph.c
 *		The graph answers (graph.c) against references computed here from
 *		every pair's contract distance: counts, degrees, neighbour lists
 *		(all and the k nearest, ties by id), connected components (by a
 *		breadth-first search, not a union-find) and DBSCAN (cores, clusters
 *		grown breadth-first, the nearest-core border rule, numbering by the
 *		smallest member id).  Fresh random points with duplicates and ids
 *		in a shuffled order, every method and several thread counts, eps on
 *		a pair's own distance.
 */
#include "test_harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct RefGraph
{
	int64_t		n;
	int64_t    *deg;
	int64_t   **nb;				/* per point: neighbour indices, by (dist, id) */
	double	  **nbd;
	const int64_t *ids;
} RefGraph;

static const double *g_sort_dist;	/* qsort's view of a point's distances */
static const int64_t *g_sort_ids;

static int
cmp_nb_ref(const void *x, const void *y)
{
	int64_t		a = *(const int64_t *) x,
				b = *(const int64_t *) y;

	if (g_sort_dist[a] != g_sort_dist[b])
		return g_sort_dist[a] < g_sort_dist[b] ? -1 : 1;
	return (g_sort_ids[a] > g_sort_ids[b]) - (g_sort_ids[a] < g_sort_ids[b]);
}

/* Every pair's distance, and each point's neighbours sorted, from the contract's sum. */
static void
ref_build(RefGraph *r, const TcPoints *p, const int64_t *ids, double eps)
{
	double	   *row = malloc(sizeof(double) * p->n);
	int64_t    *tmp = malloc(sizeof(int64_t) * p->n);

	r->n = p->n;
	r->ids = ids;
	r->deg = calloc(p->n, sizeof(int64_t));
	r->nb = calloc(p->n, sizeof(int64_t *));
	r->nbd = calloc(p->n, sizeof(double *));
	for (int64_t i = 0; i < p->n; i++)
	{
		int64_t		m = 0;

		for (int64_t j = 0; j < p->n; j++)
		{
			row[j] = j == i ? INFINITY : ref_dist(p, i, p, j);
			if (row[j] <= eps)
				tmp[m++] = j;
		}
		g_sort_dist = row;
		g_sort_ids = ids;
		qsort(tmp, m, sizeof(int64_t), cmp_nb_ref);
		r->deg[i] = m;
		r->nb[i] = malloc(sizeof(int64_t) * (m + 1));
		r->nbd[i] = malloc(sizeof(double) * (m + 1));
		for (int64_t t = 0; t < m; t++)
		{
			r->nb[i][t] = tmp[t];
			r->nbd[i][t] = row[tmp[t]];
		}
	}
	free(row);
	free(tmp);
}

static void
ref_free(RefGraph *r)
{
	for (int64_t i = 0; i < r->n; i++)
	{
		free(r->nb[i]);
		free(r->nbd[i]);
	}
	free(r->nb);
	free(r->nbd);
	free(r->deg);
}

/*
 * Breadth-first labels over the edges whose both ends pass keep (NULL:
 * all): label[i] = a start index of its component, -1 where keep fails.
 */
static void
ref_bfs(const RefGraph *r, const bool *keep, int64_t *label)
{
	int64_t    *queue = malloc(sizeof(int64_t) * (r->n + 1));

	for (int64_t i = 0; i < r->n; i++)
		label[i] = -1;
	for (int64_t s = 0; s < r->n; s++)
	{
		int64_t		head = 0,
					tail = 0;

		if (label[s] >= 0 || (keep && !keep[s]))
			continue;
		label[s] = s;
		queue[tail++] = s;
		while (head < tail)
		{
			int64_t		u = queue[head++];

			for (int64_t t = 0; t < r->deg[u]; t++)
			{
				int64_t		v = r->nb[u][t];

				if (label[v] < 0 && (keep == NULL || keep[v]))
				{
					label[v] = s;
					queue[tail++] = v;
				}
			}
		}
	}
	free(queue);
}

/*
 * Whether the graphs of this case take their pairs on the workers (the
 * sink's reduce) or in batches through emit: cases alternate.
 */
static bool g_reduce;

/* One join of p into a graph of the kind; the join's pair count into *pairs (may be NULL). */
static TcGraph *
graph_of(const TcPoints *p, const int64_t *ids, const TcJoinParams *params, TcGraphKind kind,
		 int k, int64_t min_points, uint64_t *pairs)
{
	TcError		err;
	TcGraph    *g = tc_graph_create(kind, p->n, ids, k, params->threads, &err);

	/* every batch over the threads, however small, where there are several */
	if (g && params->threads > 1)
		tc_graph_set_split(g, 1);

	for (int pass = 0; pass < (kind == TC_GRAPH_DBSCAN ? 2 : 1) && g; pass++)
	{
		TcJoin	   *j = tc_join_create(p, NULL, params, &err);
		TcSink		sink = {tc_graph_emit, NULL, g, 0, g_reduce ? tc_graph_reducer(g) : NULL, NULL,
		g_reduce ? tc_graph_prefetcher(g) : NULL};
		TcStatus	st = j ? tc_join_run(j, &sink, &err) : err.status;

		CHECK(st == TC_OK, "join failed: %s", err.message);
		if (j && pairs)
		{
			TcJoinStats js;

			tc_join_get_stats(j, &js);
			*pairs = js.pairs;
		}
		tc_join_destroy(j);
		if (kind == TC_GRAPH_DBSCAN && pass == 0)
			tc_graph_dbscan_cores(g, min_points);
	}
	return g;
}

static void
check_neighbors(const RefGraph *r, const TcPoints *p, const int64_t *ids, const TcJoinParams *params,
				int k)
{
	TcGraph    *g = graph_of(p, ids, params, TC_GRAPH_NEIGHBORS, k, 0, NULL);
	int64_t		bad = 0;

	for (int64_t i = 0; i < r->n && g; i++)
	{
		const int64_t *gi;
		const double *gd;
		int			len;
		int64_t		want = k > 0 && r->deg[i] > k ? k : r->deg[i];

		tc_graph_neighbors(g, i, &gi, &gd, &len);
		if (len != want)
			bad++;
		else
			for (int t = 0; t < len; t++)
				if (gi[t] != ids[r->nb[i][t]] || memcmp(&gd[t], &r->nbd[i][t], sizeof(double)) != 0)
				{
					bad++;
					break;
				}
		if (bad == 1 && (len != want))
			check_fail("k=%d: point %lld has %d neighbours, want %lld", k, (long long) i, len,
					   (long long) want);
	}
	CHECK(bad == 0, "k=%d: %lld points' neighbour lists differ", k, (long long) bad);
	tc_graph_destroy(g);
}

static void
check_components(const RefGraph *r, const TcPoints *p, const int64_t *ids, const TcJoinParams *params)
{
	TcGraph    *g = graph_of(p, ids, params, TC_GRAPH_COMPONENTS, 0, 0, NULL);
	int64_t    *label = calloc(r->n + 1, sizeof(int64_t));
	int64_t    *minid = calloc(r->n + 1, sizeof(int64_t));
	int64_t    *got = calloc(r->n + 1, sizeof(int64_t));
	int64_t		bad = 0;

	ref_bfs(r, NULL, label);
	for (int64_t i = 0; i < r->n; i++)
		minid[i] = INT64_MAX;
	for (int64_t i = 0; i < r->n; i++)
		if (ids[i] < minid[label[i]])
			minid[label[i]] = ids[i];
	tc_graph_components(g, got);
	for (int64_t i = 0; i < r->n; i++)
		bad += got[i] != minid[label[i]];
	CHECK(bad == 0, "%lld points in the wrong component", (long long) bad);
	free(label);
	free(minid);
	free(got);
	tc_graph_destroy(g);
}

/* A poll that asks to stop at its polls[1]-th call, counting them in polls[0]. */
static int
stop_at(void *arg)
{
	int		   *polls = arg;

	return ++polls[0] >= polls[1];
}

/* DBSCAN by the definition: returns the clusters found, for the case's shape checks. */
static int64_t
check_dbscan(const RefGraph *r, const TcPoints *p, const int64_t *ids, const TcJoinParams *params,
			 int64_t min_points)
{
	TcGraph    *g = graph_of(p, ids, params, TC_GRAPH_DBSCAN, 0, min_points, NULL);
	bool	   *core = calloc(r->n + 1, sizeof(bool));
	int64_t    *label = calloc(r->n + 1, sizeof(int64_t));
	int64_t    *root = calloc(r->n + 1, sizeof(int64_t));
	int64_t    *minid = calloc(r->n + 1, sizeof(int64_t));
	int64_t    *rank = calloc(r->n + 1, sizeof(int64_t));
	int32_t    *cl = calloc(r->n + 1, sizeof(int32_t));
	bool	   *is_core = calloc(r->n + 1, sizeof(bool));
	int64_t		bad = 0,
				clusters = 0;

	for (int64_t i = 0; i < r->n; i++)
		core[i] = r->deg[i] + 1 >= min_points;
	ref_bfs(r, core, label);
	/* a border point: its first core neighbour in (dist, id) order */
	for (int64_t i = 0; i < r->n; i++)
	{
		root[i] = core[i] ? label[i] : -1;
		for (int64_t t = 0; !core[i] && t < r->deg[i]; t++)
			if (core[r->nb[i][t]])
			{
				root[i] = label[r->nb[i][t]];
				break;
			}
		minid[i] = INT64_MAX;
	}
	for (int64_t i = 0; i < r->n; i++)
		if (root[i] >= 0 && ids[i] < minid[root[i]])
			minid[root[i]] = ids[i];
	/* a cluster's number: how many clusters have a smaller least id */
	for (int64_t i = 0; i < r->n; i++)
	{
		rank[i] = -1;
		if (minid[i] == INT64_MAX)
			continue;
		rank[i] = 0;
		clusters++;
		for (int64_t j = 0; j < r->n; j++)
			rank[i] += minid[j] < minid[i];
	}
	tc_graph_dbscan(g, cl, is_core);
	for (int64_t i = 0; i < r->n; i++)
		bad += is_core[i] != core[i] || cl[i] != (root[i] >= 0 ? rank[root[i]] : -1);
	CHECK(bad == 0, "min_points %lld: %lld points differ from DBSCAN's definition",
		  (long long) min_points, (long long) bad);
	/* in 2-D and 3-D, the grid's DBSCAN without the joins (dbscan_grid.c): the same answer */
	if (p->d == 2 || p->d == 3)
	{
		TcError		err;
		TcGraph    *gg = tc_graph_create(TC_GRAPH_DBSCAN, r->n, ids, 0, 1, &err);
		bool		done = false;
		int			polls[2] = {0, 1 + (int) ((min_points + r->n) % 8)};
		TcStatus	st;

		/* stopped in some phase by a poll, then run again on the same graph: as if never stopped */
		st = tc_graph_dbscan_grid(gg, p, params->eps, min_points, params->threads, stop_at, polls,
								  &done, &err);
		CHECK((st == TC_STOPPED && polls[0] == polls[1] && !done) || st == TC_OK,
			  "the grid's DBSCAN, told to stop at poll %d: status %d, %d polls, done %d", polls[1],
			  (int) st, polls[0], (int) done);
		st = tc_graph_dbscan_grid(gg, p, params->eps, min_points, params->threads, NULL, NULL, &done,
								  &err);

		bad = 0;
		if (st == TC_OK && done)
		{
			tc_graph_dbscan(gg, cl, is_core);
			for (int64_t i = 0; i < r->n; i++)
				bad += is_core[i] != core[i] || cl[i] != (root[i] >= 0 ? rank[root[i]] : -1);
		}
		/* eps 0 is left to the joins */
		CHECK(st == TC_OK && (done || params->eps == 0) && bad == 0,
			  "the grid's DBSCAN, min_points %lld: status %d, done %d, %lld points differ",
			  (long long) min_points, (int) st, (int) done, (long long) bad);
		tc_graph_destroy(gg);
	}
	free(core);
	free(label);
	free(root);
	free(minid);
	free(rank);
	free(cl);
	free(is_core);
	tc_graph_destroy(g);
	return clusters;
}

static void
graph_case(int c, int d, int64_t n)
{
	Rng			r;
	TcPoints	p;
	int64_t    *ids = malloc(sizeof(int64_t) * n);
	double	   *all = malloc(sizeof(double) * n * (n - 1) / 2);
	RefGraph	ref;
	TcJoinParams params = {0};
	double		eps;
	static const TcMethod methods[] = {TC_METHOD_AUTO, TC_METHOD_GRID, TC_METHOD_BRUTE};

	rng_seed(&r, mix_seed(g_fresh_seed, 0x96a9000 + c));
	points_generate(&p, c % 3 == 0 ? DIST_DUPLICATES : c % 3 == 1 ? DIST_CLUSTERED : DIST_LATTICE, n, d,
					c % 2 ? TC_FLOAT4 : TC_FLOAT8, &r);
	/* ids: a shuffle of 10 i + 3, so that ties by id differ from ties by index */
	for (int64_t i = 0; i < n; i++)
		ids[i] = 10 * i + 3;
	for (int64_t i = n - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) (rng_next(&r) % (uint64_t) (i + 1));
		int64_t		t = ids[i];

		ids[i] = ids[j];
		ids[j] = t;
	}
	for (int64_t i = 0, t = 0; i < n; i++)
		for (int64_t j = i + 1; j < n; j++)
			all[t++] = ref_dist(&p, i, &p, j);
	qsort(all, n * (n - 1) / 2, sizeof(double), cmp_double);
	eps = all[(n * (n - 1) / 2) / 40];	/* a pair's own distance */
	ref_build(&ref, &p, ids, eps);

	g_reduce = c % 2 == 1;
	params.eps = eps;
	params.method = methods[c % 3];
	params.device = TC_DEVICE_CPU;
	params.exact = true;
	params.threads = thread_choices[c % 4];
	case_begin("graph%s %s d=%d n=%lld eps=%.17g method %d threads %d", g_reduce ? " (workers reduce)" : "", dist_name(c % 3 == 0 ? DIST_DUPLICATES :
																		 c % 3 == 1 ? DIST_CLUSTERED : DIST_LATTICE),
			   d, (long long) n, eps, (int) params.method, params.threads);
	{
		uint64_t	got = 0,
					counted = 0;
		TcGraph    *g = graph_of(&p, ids, &params, TC_GRAPH_DEGREES, 0, 0, &got);
		TcGraph    *gc = graph_of(&p, ids, &params, TC_GRAPH_COUNT, 0, 0, &counted);
		uint64_t	pairs = 0;
		int64_t		bad = 0;

		for (int64_t i = 0; i < n; i++)
		{
			pairs += ref.deg[i];
			bad += tc_graph_degree(g, i) != ref.deg[i];
		}
		CHECK(got == pairs / 2 && counted == pairs / 2, "%llu and %llu pairs, want %llu",
			  (unsigned long long) got, (unsigned long long) counted, (unsigned long long) pairs / 2);
		tc_graph_destroy(gc);
		CHECK(bad == 0, "%lld degrees differ", (long long) bad);
		tc_graph_destroy(g);
	}
	check_neighbors(&ref, &p, ids, &params, 0);
	check_neighbors(&ref, &p, ids, &params, 1);
	check_neighbors(&ref, &p, ids, &params, 3);
	check_components(&ref, &p, ids, &params);
	for (int64_t mp = 1; mp <= 9; mp += 4)
		check_dbscan(&ref, &p, ids, &params, mp);
	/* every point noise: min_points past every degree */
	CHECK(check_dbscan(&ref, &p, ids, &params, n + 1) == 0, "clusters with min_points past n");
	case_end();
	ref_free(&ref);
	points_free(&p);
	free(ids);
	free(all);
}

/*
 * A graph's lists past tcjoin.lists_memory_limit's bytes (tc_graph_limit_lists):
 * every pair within eps, so each list would hold every other point.  Over
 * the limit the join stops and the graph says why; at a limit the lists
 * fit in (capacities doubling from 4: 256 entries for 199), and without
 * one, every list is whole.
 */
static void
lists_limit_case(int64_t limit, bool over)
{
	const int64_t n = 200;
	Rng			r;
	TcPoints	p;
	int64_t    *ids = malloc(sizeof(int64_t) * n);
	TcJoinParams params = {0};
	TcError		err;
	TcGraph    *g;
	TcJoin	   *j;
	TcStatus	st;
	int64_t		short_lists = 0;

	case_begin("graph lists limit %lld bytes (over it: %d)", (long long) limit, (int) over);
	rng_seed(&r, mix_seed(g_fresh_seed, 0x11517 + (uint64_t) limit));
	points_generate(&p, DIST_CLUSTERED, n, 2, TC_FLOAT8, &r);
	for (int64_t i = 0; i < n; i++)
		ids[i] = i;
	params.eps = 1e6;
	params.method = TC_METHOD_AUTO;
	params.device = TC_DEVICE_CPU;
	params.exact = true;
	params.threads = 2;
	g = tc_graph_create(TC_GRAPH_NEIGHBORS, n, ids, 0, params.threads, &err);
	CHECK(g != NULL, "no graph: %s", err.message);
	if (g)
	{
		TcSink		sink = {tc_graph_emit, NULL, g, 0, NULL, NULL, NULL};

		tc_graph_limit_lists(g, (size_t) limit);
		j = tc_join_create(&p, NULL, &params, &err);
		st = j ? tc_join_run(j, &sink, &err) : err.status;
		tc_join_destroy(j);
		CHECK(over ? st == TC_STOPPED : st == TC_OK, "join status %s", tc_status_name(st));
		CHECK(tc_graph_over_limit(g) == over && tc_graph_failed(g) == over,
			  "over the limit %d, failed %d", (int) tc_graph_over_limit(g), (int) tc_graph_failed(g));
		for (int64_t i = 0; !over && i < n; i++)
		{
			const int64_t *gi;
			const double *gd;
			int			len;

			tc_graph_neighbors(g, i, &gi, &gd, &len);
			short_lists += len != n - 1;
		}
		CHECK(short_lists == 0, "%lld lists not whole", (long long) short_lists);
		tc_graph_destroy(g);
	}
	/* the nearest of a two-set join, k past the rows made whole: lists that grow */
	g = tc_graph_create_nearest(n, ids, n, 100, params.threads, &err);
	CHECK(g != NULL, "no graph: %s", err.message);
	if (g)
	{
		TcSink		sink = {tc_graph_emit, NULL, g, 0, NULL, NULL, NULL};

		tc_graph_limit_lists(g, (size_t) limit);
		j = tc_join_create(&p, &p, &params, &err);
		st = j ? tc_join_run(j, &sink, &err) : err.status;
		tc_join_destroy(j);
		CHECK(tc_graph_over_limit(g) == over, "the nearest: over the limit %d",
			  (int) tc_graph_over_limit(g));
		tc_graph_destroy(g);
	}
	case_end();
	points_free(&p);
	free(ids);
}

/*
 * The grid's DBSCAN at a size where its steps run in parts on several
 * threads (binning, sorting, the cells, the sweep, the phases): the same
 * cores and clusters on 1, 2 and 5 threads as DBSCAN from the joins' pairs
 * (graph.c), which the cases above hold to the definition.  Blobs of about
 * 50 points around uniform centres, a fifth of the points uniform noise.
 */
static void
large_dbscan_case(int c, int64_t n, int d)
{
	Rng			r;
	TcPoints	p;
	int64_t    *ids = malloc(sizeof(int64_t) * n);
	int32_t    *want = malloc(sizeof(int32_t) * n);
	int32_t    *got = malloc(sizeof(int32_t) * n);
	bool	   *want_core = malloc(sizeof(bool) * n);
	bool	   *got_core = malloc(sizeof(bool) * n);
	TcJoinParams params = {0};
	const double side = d == 2 ? sqrt((double) n / 10.0) : cbrt((double) n / 10.0);
	const int64_t min_points = 5;
	TcGraph    *g;

	rng_seed(&r, mix_seed(g_fresh_seed, 0xdb5ca0 + c));
	points_alloc(&p, n, d, c % 2 ? TC_FLOAT4 : TC_FLOAT8);
	for (int64_t i = 0; i < n; i++)
	{
		double		centre[3];
		bool		noise = rng_below(&r, 5) == 0;

		if (noise || i % 50 == 0)
			for (int k = 0; k < d; k++)
				centre[k] = rng_uniform(&r) * side;
		for (int k = 0; k < d; k++)
			points_set(&p, i, k, noise ? rng_uniform(&r) * side : centre[k] + 0.15 * rng_normal(&r));
		ids[i] = 7 * (n - i) + 1;
	}
	params.eps = 0.3;
	params.method = TC_METHOD_GRID;
	params.device = TC_DEVICE_CPU;
	params.exact = true;
	params.threads = 2;
	case_begin("graph: the grid's DBSCAN of %lld %d-D points in blobs on 1, 2 and 5 threads, as from the joins",
			   (long long) n, d);
	g = graph_of(&p, ids, &params, TC_GRAPH_DBSCAN, 0, min_points, NULL);
	if (g)
	{
		tc_graph_dbscan(g, want, want_core);
		tc_graph_destroy(g);
	}
	for (int t = 1; g && t <= 5; t += t < 2 ? 1 : 3)
	{
		TcError		err;
		TcGraph    *gg = tc_graph_create(TC_GRAPH_DBSCAN, n, ids, 0, t, &err);
		bool		done = false;
		TcStatus	st = gg ? tc_graph_dbscan_grid(gg, &p, params.eps, min_points, t, NULL, NULL,
												   &done, &err) : TC_ERR_NOMEM;
		int64_t		bad = 0,
					cores = 0;

		if (st == TC_OK && done)
		{
			tc_graph_dbscan(gg, got, got_core);
			for (int64_t i = 0; i < n; i++)
			{
				bad += got[i] != want[i] || got_core[i] != want_core[i];
				cores += got_core[i];
			}
		}
		CHECK(st == TC_OK && done && bad == 0 && cores > n / 4,
			  "%d threads: status %d, done %d, %lld points differ, %lld cores", t, (int) st,
			  (int) done, (long long) bad, (long long) cores);
		tc_graph_destroy(gg);
	}
	case_end();
	points_free(&p);
	free(ids);
	free(want);
	free(got);
	free(want_core);
	free(got_core);
}

/*
 * 200,000 points in one cell of the grid's DBSCAN, whose steps run in
 * parts on 2 and 4 threads: one cluster, every point core (whatever a
 * part boundary cuts, the cell stays one).
 */
static void
one_cell_case(void)
{
	const int64_t n = 200000;
	Rng			r;
	TcPoints	p;
	int64_t    *ids = malloc(sizeof(int64_t) * n);
	int32_t    *cl = malloc(sizeof(int32_t) * n);
	bool	   *core = malloc(sizeof(bool) * n);

	rng_seed(&r, mix_seed(g_fresh_seed, 0x1ce11));
	points_alloc(&p, n, 2, TC_FLOAT8);
	for (int64_t i = 0; i < n; i++)
	{
		points_set(&p, i, 0, 5.0 + 0.1 * rng_uniform(&r));
		points_set(&p, i, 1, -3.0 + 0.1 * rng_uniform(&r));
		ids[i] = i;
	}
	case_begin("graph: the grid's DBSCAN of %lld points in one cell, on 2 and 4 threads", (long long) n);
	for (int t = 2; t <= 4; t += 2)
	{
		TcError		err;
		TcGraph    *gg = tc_graph_create(TC_GRAPH_DBSCAN, n, ids, 0, t, &err);
		bool		done = false;
		TcStatus	st = gg ? tc_graph_dbscan_grid(gg, &p, 0.3, 5, t, NULL, NULL, &done, &err) :
			TC_ERR_NOMEM;
		int64_t		bad = 0;

		if (st == TC_OK && done)
		{
			tc_graph_dbscan(gg, cl, core);
			for (int64_t i = 0; i < n; i++)
				bad += cl[i] != 0 || !core[i];
		}
		CHECK(st == TC_OK && done && bad == 0, "%d threads: status %d, done %d, %lld points not core in cluster 0",
			  t, (int) st, (int) done, (long long) bad);
		tc_graph_destroy(gg);
	}
	case_end();
	points_free(&p);
	free(ids);
	free(cl);
	free(core);
}

void
test_graph(void)
{
	lists_limit_case(0, false);
	lists_limit_case(16 * 1000, true);
	lists_limit_case(1 << 20, false);
	static const int dims[] = {1, 2, 3, 8, 33};

	for (int c = 0; c < (g_quick ? 10 : 30); c++)
		graph_case(c, dims[c % 5], 60 + 37 * (c % 7));
	/* larger 2-D and 3-D sets: cells of many points, whole cells core (dbscan_grid.c) */
	for (int c = 30; c < (g_quick ? 33 : 36); c++)
		graph_case(c, 2 + c % 2, 1500 + 250 * (c % 3));
	one_cell_case();
	large_dbscan_case(0, g_quick ? 140000 : 300000, 2);
	large_dbscan_case(1, g_quick ? 140000 : 300000, 3);
}
