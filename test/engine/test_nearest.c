/*
 * test_nearest.c
 *		A two-set join's nearest (graph.c, TC_GRAPH_NEAREST) against a
 *		reference computed here from every pair's contract distance: for
 *		each point of a, its neighbours in b within eps, nearest first, ties
 *		by the smaller id of b; all of them, and the k nearest for k of 1, 3
 *		and past every list.  Fresh random points, b holding copies of
 *		points of a and of itself (so that distances tie exactly), ids of b
 *		shuffled (ties by id differ from ties by index), every metric,
 *		float4 and float8, every method, several thread counts, the
 *		workers' reduce and batches through emit (split over the graph's
 *		threads), sides of 0 and 1 points, and the pairs fed as the GPU
 *		feeds a sink: large batches in any order.  The workers reduce each
 *		point of a on one thread (the nearest's reducer takes no lock), and
 *		a stop asked for while they reduce many pairs is answered promptly.
 */
#include "test_harness.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct RefNearest
{
	int64_t		na;
	int64_t		nb_n;			/* b's points */
	int64_t    *len;			/* per point of a: its neighbours in b */
	int64_t   **nb;				/* their indices in b, by (dist, id) */
	double	  **nbd;
} RefNearest;

static const double *g_key_dist;	/* qsort's view of a point's distances */
static const int64_t *g_key_ids;

static int
cmp_by_dist_id(const void *x, const void *y)
{
	int64_t		a = *(const int64_t *) x,
				b = *(const int64_t *) y;

	if (g_key_dist[a] != g_key_dist[b])
		return g_key_dist[a] < g_key_dist[b] ? -1 : 1;
	return (g_key_ids[a] > g_key_ids[b]) - (g_key_ids[a] < g_key_ids[b]);
}

static void
ref_nearest(RefNearest *r, TcMetric m, const TcPoints *a, const TcPoints *b, const int64_t *ids_b,
			double eps)
{
	double	   *row = malloc(sizeof(double) * (b->n + 1));
	int64_t    *tmp = malloc(sizeof(int64_t) * (b->n + 1));

	r->na = a->n;
	r->nb_n = b->n;
	r->len = calloc(a->n + 1, sizeof(int64_t));
	r->nb = calloc(a->n + 1, sizeof(int64_t *));
	r->nbd = calloc(a->n + 1, sizeof(double *));
	for (int64_t i = 0; i < a->n; i++)
	{
		int64_t		len = 0;

		for (int64_t j = 0; j < b->n; j++)
		{
			row[j] = m == TC_METRIC_EUCLIDEAN ? ref_dist(a, i, b, j) : metric_ref(m, a, i, b, j);
			if (row[j] <= eps)
				tmp[len++] = j;
		}
		g_key_dist = row;
		g_key_ids = ids_b;
		qsort(tmp, len, sizeof(int64_t), cmp_by_dist_id);
		r->len[i] = len;
		r->nb[i] = malloc(sizeof(int64_t) * (len + 1));
		r->nbd[i] = malloc(sizeof(double) * (len + 1));
		for (int64_t t = 0; t < len; t++)
		{
			r->nb[i][t] = tmp[t];
			r->nbd[i][t] = row[tmp[t]];
		}
	}
	free(row);
	free(tmp);
}

static void
ref_nearest_free(RefNearest *r)
{
	for (int64_t i = 0; i < r->na; i++)
	{
		free(r->nb[i]);
		free(r->nbd[i]);
	}
	free(r->nb);
	free(r->nbd);
	free(r->len);
}

/* Each point of a's list against the reference's first k (0: all), ids and dists exactly. */
static void
check_lists(TcGraph *g, const RefNearest *r, const int64_t *ids_b, int k, const char *how)
{
	int64_t		bad = 0;

	CHECK(!tc_graph_failed(g), "%s, k=%d: the graph ran out of memory", how, k);
	for (int64_t i = 0; i < r->na; i++)
	{
		const int64_t *gi;
		const double *gd;
		int			len;
		int64_t		want = k > 0 && r->len[i] > k ? k : r->len[i];
		bool		same;

		tc_graph_neighbors(g, i, &gi, &gd, &len);
		same = len == want;
		for (int t = 0; same && t < len; t++)
			same = gi[t] == ids_b[r->nb[i][t]] && same_bits(gd[t], r->nbd[i][t]);
		if (!same && bad++ == 0)
			check_fail("%s, k=%d: point %lld of a has %d neighbours (want %lld), first %lld at %.17g",
					   how, k, (long long) i, len, (long long) want, len > 0 ? (long long) gi[0] : -1LL,
					   len > 0 ? gd[0] : NAN);
	}
	CHECK(bad == 0, "%s, k=%d: %lld points' lists differ", how, k, (long long) bad);
}

/* The join of a with b into a nearest graph, through the workers' reduce or emit. */
static TcGraph *
nearest_by_join(const TcPoints *a, const TcPoints *b, const int64_t *ids_b,
				const TcJoinParams *params, int k, bool reduce)
{
	TcError		err;
	TcGraph    *g = tc_graph_create_nearest(a->n, ids_b, b->n, k, params->threads, &err);
	TcJoin	   *j;
	TcStatus	st;

	CHECK(g != NULL, "tc_graph_create_nearest: %s", g ? "" : err.message);
	if (g == NULL)
		return NULL;
	/* every batch over the threads, however small, where there are several */
	if (params->threads > 1)
		tc_graph_set_split(g, 1);
	j = tc_join_create(a, b, params, &err);
	{
		TcSink		sink = {tc_graph_emit, NULL, g, TC_GRAPH_BATCH_HINT,
		reduce ? tc_graph_reducer(g) : NULL, NULL, reduce ? tc_graph_prefetcher(g) : NULL};

		st = j ? tc_join_run(j, &sink, &err) : err.status;
	}
	CHECK(st == TC_OK, "join failed: %s", err.message);
	tc_join_destroy(j);
	return g;
}

/*
 * The reference's pairs fed as the GPU feeds a sink: shuffled, in batches
 * of up to a few thousand, each split over the threads.
 */
static TcGraph *
nearest_by_batches(const RefNearest *r, const int64_t *ids_b, int k, int threads, Rng *rng)
{
	TcError		err;
	TcGraph    *g = tc_graph_create_nearest(r->na, ids_b, r->nb_n, k, threads, &err);
	PairVec		pv = {0};

	if (g == NULL)
		return NULL;
	tc_graph_set_split(g, 1);
	for (int64_t i = 0; i < r->na; i++)
		for (int64_t t = 0; t < r->len[i]; t++)
			pairvec_push(&pv, i, r->nb[i][t], r->nbd[i][t]);
	for (size_t p = pv.n; p > 1; p--)
	{
		size_t		q = (size_t) rng_below(rng, p);
		TcPair		x = pv.v[p - 1];

		pv.v[p - 1] = pv.v[q];
		pv.v[q] = x;
	}
	for (size_t p = 0; p < pv.n;)
	{
		size_t		m = 1 + (size_t) rng_below(rng, 3000);

		if (m > pv.n - p)
			m = pv.n - p;
		CHECK(tc_graph_emit(g, pv.v + p, m) == 0, "emit asked to stop");
		p += m;
	}
	pairvec_free(&pv);
	return g;
}

/*
 * The reference's pairs as a GPU with the fold (TC_FOLD_NEAREST) hands
 * them over: about half through emit (a GPU that declined the fold) where
 * half, else none, the rest kept on the "device" as each point's k
 * nearest of its share,
 * sorted, which tc_graph_after_join takes in after the join.  k = 0 and
 * k past TC_FOLD_MAX_K have no fold.
 */
static TcGraph *
nearest_by_fold(const RefNearest *r, const int64_t *ids_b, int k, Rng *rng, bool half)
{
	TcError		err;
	TcGraph    *g = tc_graph_create_nearest(r->na, ids_b, r->nb_n, k, 1, &err);
	TcDeviceFold *f;

	if (g == NULL)
		return NULL;
	f = tc_graph_fold(g);
	if (k == 0 || k > TC_FOLD_MAX_K)
	{
		CHECK(f == NULL, "k=%d: a fold offered", k);
		tc_graph_destroy(g);
		return NULL;
	}
	CHECK(f != NULL && f->kind == TC_FOLD_NEAREST && f->k == k && !f->both &&
		  f->ids_n == r->nb_n && f->ids == ids_b, "k=%d: no fold of the k nearest, or not as asked", k);
	if (f == NULL)
	{
		tc_graph_destroy(g);
		return NULL;
	}
	/* the back end makes the lists (the graph frees them) */
	CHECK(tc_fold_lists_make(f, (size_t) r->na + 1), "k=%d: no memory for the lists", k);
	for (int64_t i = 0; i < r->na; i++)
	{
		int			kept = 0;

		/* the reference's list is in (dist, id) order: the device's share keeps its first k */
		for (int64_t t = 0; t < r->len[i]; t++)
		{
			TcPair		p = {i, r->nb[i][t], r->nbd[i][t]};

			if (half && rng_below(rng, 2) == 0)
				CHECK(tc_graph_emit(g, &p, 1) == 0, "emit asked to stop");
			else if (kept < k)
			{
				f->nb_who[i * k + kept] = p.b;
				f->nb_dist[i * k + kept] = p.dist;
				kept++;
			}
		}
		f->nb_len[i] = kept;
	}
	f->folded = true;
	CHECK(!tc_graph_after_join(g), "k=%d: the nearest asked for one more join", k);
	return g;
}

/*
 * Points near a few centres; b: every third point a copy of a point of a,
 * every fifth a copy of an earlier point of b (ties across ids of b).
 */
static void
make_sides(TcPoints *a, TcPoints *b, int64_t na, int64_t nb, int d, TcElemType type, Rng *r)
{
	points_alloc(a, na, d, type);
	points_alloc(b, nb, d, type);
	for (int64_t i = 0; i < na; i++)
		for (int k = 0; k < d; k++)
			points_set(a, i, k, (double) (i % 4) + 0.4 * rng_uniform(r));
	for (int64_t j = 0; j < nb; j++)
	{
		int64_t		src_a = na > 0 && j % 3 == 0 ? (int64_t) rng_below(r, (uint64_t) na) : -1;
		int64_t		src_b = src_a < 0 && j > 0 && j % 5 == 0 ? (int64_t) rng_below(r, (uint64_t) j) : -1;

		for (int k = 0; k < d; k++)
			points_set(b, j, k, src_a >= 0 ? points_get(a, src_a, k) :
					   src_b >= 0 ? points_get(b, src_b, k) :
					   (double) (j % 4) + 0.4 * rng_uniform(r));
	}
}

static const char *
nearest_metric_name(TcMetric m)
{
	return m == TC_METRIC_COSINE ? "cosine" : m == TC_METRIC_INNER_PRODUCT ? "inner_product" : "euclidean";
}

static void
nearest_case(int c, Rng *r)
{
	static const int dims[] = {1, 2, 3, 8, 50};
	static const int64_t sides[][2] = {{120, 90}, {60, 250}, {0, 40}, {40, 0}, {1, 70}, {70, 1}, {200, 200}};
	TcMetric	m = (TcMetric) (c % 3);
	TcElemType	type = (c / 3) % 2 ? TC_FLOAT4 : TC_FLOAT8;
	int			d = dims[c % 5];
	int64_t		na = sides[c % 7][0],
				nb = sides[c % 7][1];
	TcMethod	method = (TcMethod) ((c / 2) % 3);
	int			threads = thread_choices[c % 4];
	bool		reduce = (c / 4) % 2 == 0;
	TcPoints	a,
				b;
	int64_t    *ids_b = malloc(sizeof(int64_t) * (nb + 1));
	double		eps = 0;
	RefNearest	ref;
	TcJoinParams params;

	if (m == TC_METRIC_INNER_PRODUCT && method == TC_METHOD_GRID)
		method = TC_METHOD_BRUTE;
	make_sides(&a, &b, na, nb, d, type, r);
	/* ids of b: a shuffle of 10 j + 3 */
	for (int64_t j = 0; j < nb; j++)
		ids_b[j] = 10 * j + 3;
	for (int64_t j = nb - 1; j > 0; j--)
	{
		int64_t		q = (int64_t) rng_below(r, (uint64_t) (j + 1));
		int64_t		t = ids_b[j];

		ids_b[j] = ids_b[q];
		ids_b[q] = t;
	}
	/* eps: a pair's own distance, about a twentieth of them within */
	if (na > 0 && nb > 0)
	{
		double	   *all = malloc(sizeof(double) * na * nb);

		for (int64_t i = 0; i < na; i++)
			for (int64_t j = 0; j < nb; j++)
				all[i * nb + j] = m == TC_METRIC_EUCLIDEAN ? ref_dist(&a, i, &b, j) :
					metric_ref(m, &a, i, &b, j);
		qsort(all, na * nb, sizeof(double), cmp_double);
		eps = all[(na * nb) / 20];
		free(all);
	}
	ref_nearest(&ref, m, &a, &b, ids_b, eps);
	params = make_params(eps, method, threads, false);
	params.metric = m;
	case_begin("nearest: %s, %s %lld with %lld x %d, eps %.17g, %s, %d threads, %s",
			   nearest_metric_name(m), type_name(type), (long long) na, (long long) nb, d, eps,
			   method_name(method), threads, reduce ? "the workers reduce" : "batches through emit");
	{
		static const int ks[] = {0, 1, 3, 100000};

		for (int ki = 0; ki < 4; ki++)
		{
			TcGraph    *g = nearest_by_join(&a, &b, ids_b, &params, ks[ki], reduce);

			if (g)
				check_lists(g, &ref, ids_b, ks[ki], "join");
			tc_graph_destroy(g);
		}
		for (int ki = 0; ki < 3; ki++)
		{
			TcGraph    *g = nearest_by_batches(&ref, ids_b, ks[ki], threads, r);

			if (g)
				check_lists(g, &ref, ids_b, ks[ki], "shuffled batches");
			tc_graph_destroy(g);
		}
		for (int ki = 0; ki < 4; ki++)
			for (int half = 0; half < 2; half++)
			{
				TcGraph    *g = nearest_by_fold(&ref, ids_b, ks[ki], r, half);

				if (g)
					check_lists(g, &ref, ids_b, ks[ki], half ? "half folded on the device" :
								"all kept on the device, read in place");
				tc_graph_destroy(g);
			}
	}
	case_end();
	ref_nearest_free(&ref);
	points_free(&a);
	points_free(&b);
	free(ids_b);
}

/* The nearest take the other set's ids: tc_graph_create refuses the kind. */
static void
nearest_api(void)
{
	TcError		err;
	int64_t		ids[2] = {1, 2};
	TcGraph    *g;

	case_begin("nearest: tc_graph_create refuses TC_GRAPH_NEAREST");
	memset(&err, 0, sizeof(err));
	g = tc_graph_create(TC_GRAPH_NEAREST, 2, ids, 1, 1, &err);
	CHECK(g == NULL && err.status == TC_ERR_INVALID, "made a graph, or status %s",
		  tc_status_name(err.status));
	tc_graph_destroy(g);
	case_end();
}

/* ---------- the workers split a two-set join by points of a ---------- */

typedef struct SplitCheck
{
	_Atomic uintptr_t *owner;	/* per point of a: the first thread that reduced it */
	atomic_bool shared;
	_Atomic uint64_t pairs;
} SplitCheck;

static _Thread_local char g_thread_token;

static void
split_reduce(void *arg, int64_t a, int64_t b, double dist)
{
	SplitCheck *c = arg;
	uintptr_t	me = (uintptr_t) &g_thread_token;
	uintptr_t	expect = 0;

	(void) b;
	(void) dist;
	atomic_fetch_add(&c->pairs, 1);
	if (!atomic_compare_exchange_strong(&c->owner[a], &expect, me) && expect != me)
		atomic_store(&c->shared, true);
}

static int
split_emit(void *arg, const TcPair *pairs, size_t count)
{
	(void) arg;
	(void) pairs;
	return count > 0;			/* a reducing join has no batches */
}

/*
 * TcSink.reduce's promise, which the nearest's reducer takes without a
 * lock: every pair of a point of a comes on one thread, on every CPU back
 * end and method, one huge grid cell (split into many items) included.
 */
static void
nearest_split(void)
{
	static const Dist dists[] = {DIST_IDENTICAL, DIST_CLUSTERED, DIST_UNIFORM};
	static const TcMethod methods[] = {TC_METHOD_GRID, TC_METHOD_BRUTE, TC_METHOD_AUTO};
	static const TcMetric metrics[] = {TC_METRIC_EUCLIDEAN, TC_METRIC_INNER_PRODUCT, TC_METRIC_COSINE};
	Rng			r;

	rng_seed(&r, mix_seed(g_fresh_seed, 0x73706c74));
	for (int c = 0; c < 9; c++)
	{
		TcPoints	a,
					b;
		int			d = c % 3 == 2 ? 64 : 2;
		TcMethod	method = methods[c % 3];
		TcMetric	metric = metrics[(c / 3) % 3];
		TcJoinParams params;
		SplitCheck	chk;
		TcError		err;
		TcJoin	   *j;
		TcSink		sink = {split_emit, NULL, &chk, 0, split_reduce, NULL, NULL};
		TcStatus	st;

		if (metric == TC_METRIC_INNER_PRODUCT && method == TC_METHOD_GRID)
			method = TC_METHOD_BRUTE;
		/* cosine through the grid takes batches: brute force reduces */
		if (metric == TC_METRIC_COSINE)
			method = TC_METHOD_BRUTE;
		points_generate(&a, dists[c % 3], 3000, d, TC_FLOAT8, &r);
		points_generate(&b, dists[c % 3], 200, d, TC_FLOAT8, &r);
		params = make_params(1e300, method, 7, false);
		params.metric = metric;
		chk.owner = calloc(a.n, sizeof(uintptr_t));
		atomic_init(&chk.shared, false);
		atomic_init(&chk.pairs, 0);
		case_begin("nearest: the workers reduce each point of a on one thread, %s, %s, %s, d=%d",
				   dist_name(dists[c % 3]), method_name(method), nearest_metric_name(metric), d);
		j = tc_join_create(&a, &b, &params, &err);
		st = j ? tc_join_run(j, &sink, &err) : err.status;
		CHECK(st == TC_OK, "join failed: %s", err.message);
		CHECK(atomic_load(&chk.pairs) == (uint64_t) (a.n * b.n), "%llu pairs reduced, want every pair",
			  (unsigned long long) atomic_load(&chk.pairs));
		CHECK(!atomic_load(&chk.shared), "a point of a was reduced on two threads");
		case_end();
		tc_join_destroy(j);
		free(chk.owner);
		points_free(&a);
		points_free(&b);
	}
}

/* ---------- a stop while the workers reduce ---------- */

/* When poll asks to stop: a global, as the sink's one arg is the graph (reduce takes it). */
static double g_stop_at;

static int
stop_poll(void *arg)
{
	(void) arg;
	return tc_now() >= g_stop_at;
}

/*
 * Every pair within eps (two sets of 40,000 points in a unit square, eps
 * 2: 1.6 billion pairs, many seconds on any machine), the stop asked for
 * 0.3 s in; tc_join_run must return within half a second of it, through
 * the workers' reduce and through emit alike.
 */
static void
iso_nearest_stop(void)
{
	const int64_t n = 40000;
	TcPoints	a,
				b;
	int64_t    *ids = malloc(sizeof(int64_t) * n);
	Rng			r;
	TcError		err;

	rng_seed(&r, FIXED_SEED ^ 0x6e656172);
	points_generate(&a, DIST_UNIFORM, n, 2, TC_FLOAT8, &r);
	points_generate(&b, DIST_UNIFORM, n, 2, TC_FLOAT8, &r);
	for (int64_t j = 0; j < n; j++)
		ids[j] = j;
	for (int reduce = 0; reduce < 2; reduce++)
	{
		TcJoinParams params = make_params(2.0, TC_METHOD_AUTO, 2, false);
		TcGraph    *g = tc_graph_create_nearest(n, ids, n, 4, 2, &err);
		TcJoin	   *j = tc_join_create(&a, &b, &params, &err);
		TcSink		sink = {tc_graph_emit, stop_poll, g, TC_GRAPH_BATCH_HINT,
		reduce ? tc_graph_reducer(g) : NULL, NULL, reduce ? tc_graph_prefetcher(g) : NULL};
		TcStatus	st;
		double		late;

		if (g == NULL || j == NULL)
		{
			check_fail("set-up failed: %s", err.message);
			break;
		}
		g_stop_at = tc_now() + 0.3;
		st = tc_join_run(j, &sink, &err);
		late = tc_now() - g_stop_at;
		CHECK(st == TC_STOPPED, "%s: tc_join_run returned %s, expected TC_STOPPED",
			  reduce ? "reduce" : "emit", tc_status_name(st));
		CHECK(late <= 0.5, "%s: tc_join_run returned %.3f s after the stop",
			  reduce ? "reduce" : "emit", late);
		if (g_verbose)
			printf("# nearest stop (%s): answered %.3f s after it\n", reduce ? "reduce" : "emit", late);
		tc_join_destroy(j);
		tc_graph_destroy(g);
	}
	points_free(&a);
	points_free(&b);
	free(ids);
}

void
test_nearest(void)
{
	Rng			r;

	rng_seed(&r, mix_seed(g_fresh_seed, 0x6e656172));
	nearest_api();
	nearest_split();
	for (int c = 0; c < (g_quick ? 14 : 42); c++)
		nearest_case(c, &r);
	run_isolated("[nearest] a stop while the workers reduce 1.6 billion pairs", iso_nearest_stop, 120);
}
