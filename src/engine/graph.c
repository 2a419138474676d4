/*
 * graph.c
 *		Answers that are not pair lists (engine.h): counts, degrees,
 *		neighbour lists, connected components and DBSCAN, from a self-join's
 *		pairs, with per point state only.
 *
 * Large batches are shared by a pool of threads (started with every
 * signal blocked, as the engine's workers are): degrees by atomic
 * increments, the components by a lock-free union-find that links the
 * root of larger index under the smaller by compare-and-swap (two links
 * can then never close a cycle), a border point's nearest core under a
 * one-byte lock of its own, as is a two-set join's list of the nearest
 * (the CPU's workers need none: each point of a is on one).  Batches on
 * the caller's thread alone take plain increments and links by rank.
 * The caller's thread waits for the pool before emit returns, so nothing
 * runs while the caller polls or leaves.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "neighbor_lists.h"

/*
 * A batch of at least this many pairs is split over the graph's threads
 * (degrees, components, DBSCAN and a two-set join's nearest; a self-join's
 * neighbour lists stay on the caller's thread, as each pair feeds two):
 * the GPU hands over millions of pairs at a time.
 */
#define TC_GRAPH_SPLIT_PAIRS 65536

struct TcGraph
{
	TcGraphKind kind;
	int64_t		n;
	const int64_t *ids;			/* TC_GRAPH_NEAREST: the second set's */
	int64_t		ids_n;
	int			k;				/* neighbours kept a point; 0: all */
	atomic_bool failed;			/* out of memory growing a list (any thread) */

	_Atomic int64_t *deg;		/* degrees, DBSCAN */
	NbLists		nb;				/* neighbours (neighbor_lists.c); all zero: none */
	_Atomic int64_t *parent;	/* components, DBSCAN: union-find */
	uint8_t    *rank;			/* its ranks, for links on the caller's thread alone */

	/* DBSCAN, once the cores are known */
	bool		linking;
	bool	   *core;
	int64_t    *best;			/* a border point's nearest core neighbour (-1: none) */
	double	   *best_dist;
	_Atomic unsigned char *lock;	/* per point, over best and best_dist */

	/* a GPU join's fold on the device (TcSink.fold) */
	TcDeviceFold fold;
	uint64_t   *best_key;		/* DBSCAN: a border point's least key (the links' fold) */
	TcDeviceFold adopted;		/* the k nearest a device kept, read in place (nb_adopt) */
	bool		ties;			/* DBSCAN: the next join settles the ties (after that fold) */

	/* the pool: nthreads - 1 helpers and the caller */
	int			nthreads;
	int			started;
	pthread_t  *threads;
	pthread_mutex_t mu;
	pthread_cond_t work_cv;
	pthread_cond_t done_cv;
	const TcPair *batch;
	size_t		batch_count;
	uint64_t	generation;
	int			running;
	int			next_id;		/* the helpers' shares: 1 ... started */
	bool		quit;
	size_t		split;			/* batches from this many pairs go to the pool */
};

/*
 * n zeroed entries (tc_calloc_huge: huge pages, kept between joins), since
 * every entry of a per-row array is used; free with tc_free_huge.
 */
static void *
alloc_n(int64_t n, size_t size)
{
	if (n > 0 && (uint64_t) n > SIZE_MAX / size)
		return NULL;
	return tc_calloc_huge((size_t) (n > 0 ? n : 1) * size);
}

static void *pool_main(void *arg);

/* The pool's helpers (tc_start_thread); fewer where some do not start. */
static void
pool_start(TcGraph *g, int threads)
{
	g->split = TC_GRAPH_SPLIT_PAIRS;
	g->nthreads = 1;
	if (threads < 2 || (g->kind != TC_GRAPH_DEGREES && g->kind != TC_GRAPH_COMPONENTS &&
						g->kind != TC_GRAPH_DBSCAN && g->kind != TC_GRAPH_NEAREST))
		return;
	g->threads = calloc((size_t) threads, sizeof(pthread_t));
	if (g->threads == NULL)
		return;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->work_cv, NULL);
	pthread_cond_init(&g->done_cv, NULL);
	for (int t = 0; t < threads - 1; t++)
	{
		if (tc_start_thread(&g->threads[t], pool_main, g) != 0)
			break;
		g->started++;
	}
	g->nthreads = g->started + 1;
}

/* n points' state; ids name the neighbours (the second set's in TC_GRAPH_NEAREST). */
static TcGraph *
graph_new(TcGraphKind kind, int64_t n, const int64_t *ids, int64_t ids_n, int k, int threads,
		  TcError *err)
{
	TcGraph    *g = calloc(1, sizeof(TcGraph));
	bool		ok = g != NULL;

	if (ok)
	{
		g->kind = kind;
		g->n = n;
		g->ids = ids;
		g->ids_n = ids_n;
		g->k = k > 0 ? k : 0;
		atomic_init(&g->failed, false);
		if (kind == TC_GRAPH_DEGREES || kind == TC_GRAPH_DBSCAN)
			ok &= (g->deg = alloc_n(n, sizeof(int64_t))) != NULL;
		if (kind == TC_GRAPH_NEIGHBORS || kind == TC_GRAPH_NEAREST)
			ok &= nb_lists_init(&g->nb, n, ids, g->k, &g->failed);
		if (kind == TC_GRAPH_COMPONENTS || kind == TC_GRAPH_DBSCAN)
		{
			ok &= (g->parent = alloc_n(n, sizeof(int64_t))) != NULL;
			ok &= (g->rank = alloc_n(n, sizeof(uint8_t))) != NULL;
			for (int64_t i = 0; ok && i < n; i++)
				atomic_init(&g->parent[i], i);
		}
		if (ok)
			pool_start(g, threads);
	}
	if (!ok)
	{
		tc_graph_destroy(g);
		if (err)
		{
			err->status = TC_ERR_NOMEM;
			strcpy(err->message, "out of memory for the graph's per-point state");
		}
		return NULL;
	}
	return g;
}

TcGraph *
tc_graph_create(TcGraphKind kind, int64_t n, const int64_t *ids, int k, int threads, TcError *err)
{
	/* the nearest take the other set's ids: tc_graph_create_nearest */
	if (kind == TC_GRAPH_NEAREST)
	{
		if (err)
		{
			err->status = TC_ERR_INVALID;
			strcpy(err->message, "a two-set join's nearest come from tc_graph_create_nearest");
		}
		return NULL;
	}
	return graph_new(kind, n, ids, n, k, threads, err);
}

TcGraph *
tc_graph_create_nearest(int64_t n_a, const int64_t *ids_b, int64_t n_b, int k, int threads,
						TcError *err)
{
	return graph_new(TC_GRAPH_NEAREST, n_a, ids_b, n_b, k, threads, err);
}

void
tc_graph_set_split(TcGraph *g, size_t pairs)
{
	g->split = pairs > 0 ? pairs : 1;
}

void
tc_fold_lists_free(TcDeviceFold *f)
{
	tc_free_huge(f->nb_len);
	tc_free_huge(f->nb_who);
	tc_free_huge(f->nb_dist);
	f->nb_len = NULL;
	f->nb_who = NULL;
	f->nb_dist = NULL;
}

bool
tc_fold_lists_make(TcDeviceFold *f, size_t rows)
{
	tc_fold_lists_free(f);
	f->nb_len = tc_malloc_huge(rows * sizeof(int32_t));
	f->nb_who = tc_malloc_huge(rows * (size_t) f->k * sizeof(int64_t));
	f->nb_dist = tc_malloc_huge(rows * (size_t) f->k * sizeof(double));
	return f->nb_len != NULL && f->nb_who != NULL && f->nb_dist != NULL;
}

/* The k nearest's lists a GPU back end made for the fold, once taken in. */
static void
free_nearest_fold(TcGraph *g)
{
	tc_fold_lists_free(&g->fold);
}

void
tc_graph_destroy(TcGraph *g)
{
	if (g == NULL)
		return;
	if (g->started > 0)
	{
		pthread_mutex_lock(&g->mu);
		g->quit = true;
		pthread_cond_broadcast(&g->work_cv);
		pthread_mutex_unlock(&g->mu);
		for (int t = 0; t < g->started; t++)
			pthread_join(g->threads[t], NULL);
		pthread_mutex_destroy(&g->mu);
		pthread_cond_destroy(&g->work_cv);
		pthread_cond_destroy(&g->done_cv);
	}
	free(g->threads);
	nb_lists_free(&g->nb);
	tc_free_huge(g->deg);
	tc_free_huge(g->parent);
	tc_free_huge(g->rank);
	tc_free_huge(g->core);
	tc_free_huge(g->best);
	tc_free_huge(g->best_dist);
	tc_free_huge(g->lock);
	tc_free_huge(g->best_key);
	free_nearest_fold(g);
	tc_fold_lists_free(&g->adopted);
	free(g);
}

bool
tc_graph_failed(const TcGraph *g)
{
	return g->failed;
}

/* Whether g's kind keeps neighbour lists (g->nb); the others' is all zero. */
static inline bool
keeps_lists(const TcGraph *g)
{
	return g->kind == TC_GRAPH_NEIGHBORS || g->kind == TC_GRAPH_NEAREST;
}

void
tc_graph_limit_lists(TcGraph *g, size_t bytes)
{
	if (keeps_lists(g))
		nb_lists_limit(&g->nb, bytes);
}

bool
tc_graph_over_limit(const TcGraph *g)
{
	return keeps_lists(g) && nb_lists_over(&g->nb);
}

bool
tc_graph_lists_grow(const TcGraph *g)
{
	return keeps_lists(g) && nb_lists_grow(&g->nb);
}

int64_t
tc_graph_degree(const TcGraph *g, int64_t i)
{
	return g->deg ? atomic_load_explicit(&g->deg[i], memory_order_relaxed) : 0;
}

/* ---------- union-find ---------- */

/* The root of x's set; paths halved by CAS (a lost race only leaves the path longer). */
int64_t
tc_uf_find(_Atomic int64_t *parent, int64_t x)
{
	for (;;)
	{
		int64_t		p = atomic_load_explicit(&parent[x], memory_order_relaxed);
		int64_t		gp;

		if (p == x)
			return x;
		gp = atomic_load_explicit(&parent[p], memory_order_relaxed);
		if (gp != p)
			atomic_compare_exchange_weak_explicit(&parent[x], &p, gp, memory_order_relaxed,
												  memory_order_relaxed);
		x = gp;
	}
}

/*
 * Unite the sets of a and b, shared by threads: the root of larger index
 * goes under the smaller by CAS, retried where another link came first
 * (parents only decrease, so no link closes a cycle).
 */
void
tc_uf_unite(_Atomic int64_t *parent, int64_t a, int64_t b)
{
	for (;;)
	{
		int64_t		ra = tc_uf_find(parent, a);
		int64_t		rb = tc_uf_find(parent, b);
		int64_t		expect;

		if (ra == rb)
			return;
		if (ra > rb)
		{
			int64_t		t = ra;

			ra = rb;
			rb = t;
		}
		expect = rb;
		if (atomic_compare_exchange_strong_explicit(&parent[rb], &expect, ra,
													memory_order_relaxed, memory_order_relaxed))
			return;
		a = ra;
		b = rb;
	}
}

/*
 * The graph's union: tc_uf_unite where the pool shares the batch (conc);
 * by rank, a plain store, on the caller's thread alone (shallower trees; a
 * later CAS link still never closes a cycle).
 */
static void
unite(TcGraph *g, int64_t a, int64_t b, bool conc)
{
	int64_t		ra,
				rb;

	if (conc)
	{
		tc_uf_unite(g->parent, a, b);
		return;
	}
	ra = tc_uf_find(g->parent, a);
	rb = tc_uf_find(g->parent, b);
	if (ra == rb)
		return;
	/* the smaller index the root, unless the other tree is deeper */
	if (ra > rb)
	{
		int64_t		t = ra;

		ra = rb;
		rb = t;
	}
	if (g->rank[ra] < g->rank[rb])
	{
		int64_t		t = ra;

		ra = rb;
		rb = t;
	}
	atomic_store_explicit(&g->parent[rb], ra, memory_order_relaxed);
	if (g->rank[ra] == g->rank[rb])
		g->rank[ra]++;
}

/* ---------- neighbour lists ---------- */

void
tc_graph_neighbors(TcGraph *g, int64_t i, const int64_t **ids, const double **dist, int *len)
{
	nb_read(&g->nb, i, ids, dist, len);
}

/* ---------- the sink ---------- */

/* DBSCAN's second join: cores linked; a border point remembers its nearest core. */
static void
dbscan_link(TcGraph *g, int64_t a, int64_t b, double dist, bool conc)
{
	if (g->core[a] && g->core[b])
		unite(g, a, b, conc);
	else if (g->core[a] || g->core[b])
	{
		int64_t		c = g->core[a] ? a : b;
		int64_t		p = g->core[a] ? b : a;

		while (conc && atomic_exchange_explicit(&g->lock[p], 1, memory_order_acquire))
			;
		if (g->best[p] < 0 || dist < g->best_dist[p] ||
			(dist == g->best_dist[p] && g->ids[c] < g->ids[g->best[p]]))
		{
			g->best[p] = c;
			g->best_dist[p] = dist;
		}
		if (conc)
			atomic_store_explicit(&g->lock[p], 0, memory_order_release);
	}
}

/* A pair's two degrees, from any thread. */
static inline void
add_degrees(TcGraph *g, int64_t a, int64_t b)
{
	atomic_fetch_add_explicit(&g->deg[a], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&g->deg[b], 1, memory_order_relaxed);
}

/* Atomic increments where the pool shares the batch, plain ones (relaxed load and store) alone. */
static void
count_degrees(TcGraph *g, const TcPair *pairs, size_t lo, size_t hi, bool conc)
{
	if (conc)
		for (size_t p = lo; p < hi; p++)
			add_degrees(g, pairs[p].a, pairs[p].b);
	else
		for (size_t p = lo; p < hi; p++)
		{
			_Atomic int64_t *x = &g->deg[pairs[p].a],
					   *y = &g->deg[pairs[p].b];

			atomic_store_explicit(x, atomic_load_explicit(x, memory_order_relaxed) + 1, memory_order_relaxed);
			atomic_store_explicit(y, atomic_load_explicit(y, memory_order_relaxed) + 1, memory_order_relaxed);
		}
}

/* Pairs [lo, hi) of a batch: the per-pair work of the kinds the pool shares. */
static void
apply(TcGraph *g, const TcPair *pairs, size_t lo, size_t hi, bool conc)
{
	switch (g->kind)
	{
		case TC_GRAPH_COMPONENTS:
			for (size_t p = lo; p < hi; p++)
				unite(g, pairs[p].a, pairs[p].b, conc);
			break;
		case TC_GRAPH_DBSCAN:
			/* the first join counts degrees, the second links */
			if (!g->linking)
				count_degrees(g, pairs, lo, hi, conc);
			else
				for (size_t p = lo; p < hi; p++)
					dbscan_link(g, pairs[p].a, pairs[p].b, pairs[p].dist, conc);
			break;
		case TC_GRAPH_DEGREES:
			count_degrees(g, pairs, lo, hi, conc);
			break;
		case TC_GRAPH_NEAREST:
			/* a pair (a, b) feeds a's list alone */
			for (size_t p = lo; p < hi && !g->failed; p++)
			{
				if (conc)
					nb_add_locked(&g->nb, pairs[p].a, pairs[p].b, pairs[p].dist);
				else
					nb_add(&g->nb, pairs[p].a, pairs[p].b, pairs[p].dist);
			}
			break;
		default:
			break;
	}
}

/* Thread t of nthreads: its share of the batch. */
static void
apply_share(TcGraph *g, const TcPair *pairs, size_t count, int t)
{
	size_t		per = (count + (size_t) g->nthreads - 1) / (size_t) g->nthreads;
	size_t		lo = per * (size_t) t;
	size_t		hi = lo + per < count ? lo + per : count;

	if (lo < hi)
		apply(g, pairs, lo, hi, true);
}

static void *
pool_main(void *arg)
{
	TcGraph    *g = arg;
	uint64_t	seen = 0;
	int			me;

	pthread_mutex_lock(&g->mu);
	me = ++g->next_id;			/* share 0 is the caller's */
	for (;;)
	{
		const TcPair *pairs;
		size_t		count;

		while (!g->quit && g->generation == seen)
			pthread_cond_wait(&g->work_cv, &g->mu);
		if (g->quit)
			break;
		seen = g->generation;
		pairs = g->batch;
		count = g->batch_count;
		pthread_mutex_unlock(&g->mu);
		apply_share(g, pairs, count, me);
		pthread_mutex_lock(&g->mu);
		if (--g->running == 0)
			pthread_cond_signal(&g->done_cv);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/* A batch over the pool and the caller's thread, back when every share is done. */
static void
apply_pool(TcGraph *g, const TcPair *pairs, size_t count)
{
	pthread_mutex_lock(&g->mu);
	g->batch = pairs;
	g->batch_count = count;
	g->running = g->started;
	g->generation++;
	pthread_cond_broadcast(&g->work_cv);
	pthread_mutex_unlock(&g->mu);
	apply_share(g, pairs, count, 0);
	pthread_mutex_lock(&g->mu);
	while (g->running > 0)
		pthread_cond_wait(&g->done_cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

int
tc_graph_emit(void *graph, const TcPair *pairs, size_t count)
{
	TcGraph    *g = graph;

	switch (g->kind)
	{
		case TC_GRAPH_COUNT:
			break;
		case TC_GRAPH_NEIGHBORS:
			for (size_t p = 0; p < count && !g->failed; p++)
			{
				nb_add(&g->nb, pairs[p].a, pairs[p].b, pairs[p].dist);
				nb_add(&g->nb, pairs[p].b, pairs[p].a, pairs[p].dist);
			}
			/* out of memory: stop the join (the caller reports it) */
			return g->failed ? 1 : 0;
		default:
			if (g->started > 0 && count >= g->split)
				apply_pool(g, pairs, count);
			else
				apply(g, pairs, 0, count, false);
			break;
	}
	return g->failed ? 1 : 0;
}

/* ---------- a worker's pairs, one at a time ---------- */

/* A count: nothing to keep, the join counts the pairs each worker reduced. */
static void
reduce_count(void *graph, int64_t a, int64_t b, double dist)
{
	(void) graph;
	(void) a;
	(void) b;
	(void) dist;
}

static void
reduce_degrees(void *graph, int64_t a, int64_t b, double dist)
{
	(void) dist;
	add_degrees(graph, a, b);
}

static void
reduce_components(void *graph, int64_t a, int64_t b, double dist)
{
	(void) dist;
	unite(graph, a, b, true);
}

static void
reduce_dbscan(void *graph, int64_t a, int64_t b, double dist)
{
	TcGraph    *g = graph;

	if (g->linking)
		dbscan_link(g, a, b, dist, true);
	else
		add_degrees(g, a, b);
}

/*
 * The k nearest: a's list, with no lock, as every pair of a point of a
 * comes on one worker (TcSink.reduce); a locked instruction a pair would
 * wait out each list's cache miss in turn, and cost twice the join.
 */
static void
reduce_nearest(void *graph, int64_t a, int64_t b, double dist)
{
	nb_add(&((TcGraph *) graph)->nb, a, b, dist);
}

/* The k nearest: a's row of the lists toward the cache before its pairs come. */
static void
prefetch_nearest(void *graph, int64_t a)
{
	nb_prefetch(&((TcGraph *) graph)->nb, a);
}

void		(*tc_graph_prefetcher(const TcGraph *g)) (void *graph, int64_t a)
{
	return g->kind == TC_GRAPH_NEAREST && g->k > 0 ? prefetch_nearest : NULL;
}

void		(*tc_graph_reducer(const TcGraph *g)) (void *graph, int64_t a, int64_t b, double dist)
{
	switch (g->kind)
	{
		case TC_GRAPH_COUNT:
			return reduce_count;
		case TC_GRAPH_DEGREES:
			return reduce_degrees;
		case TC_GRAPH_COMPONENTS:
			return reduce_components;
		case TC_GRAPH_DBSCAN:
			return reduce_dbscan;
		case TC_GRAPH_NEAREST:
			/* without k the lists grow: through emit, which stops the join where memory runs out */
			return g->k > 0 ? reduce_nearest : NULL;
		default:
			return NULL;
	}
}

/* ---------- answers ---------- */

void
tc_graph_components(TcGraph *g, int64_t *out)
{
	if (!tc_number_components(g->n, g->parent, g->ids, g->nthreads, out))
		g->failed = true;
}

/* DBSCAN's linking state: core flags (from the degrees, or core if not NULL), no border yet. */
static void
dbscan_begin_links(TcGraph *g, int64_t min_points, const bool *core)
{
	/* again after a stopped start (the grid's): the links made stay, being true */
	tc_free_huge(g->core);
	tc_free_huge(g->best);
	tc_free_huge(g->best_dist);
	tc_free_huge(g->lock);
	g->core = tc_malloc_huge(sizeof(bool) * (size_t) (g->n > 0 ? g->n : 1));
	g->best = tc_malloc_huge(sizeof(int64_t) * (size_t) (g->n > 0 ? g->n : 1));
	g->best_dist = alloc_n(g->n, sizeof(double));
	g->lock = alloc_n(g->n, sizeof(unsigned char));
	if (g->core == NULL || g->best == NULL || g->best_dist == NULL || g->lock == NULL)
	{
		g->failed = true;
		return;
	}
	if (core)
		memcpy(g->core, core, sizeof(bool) * (size_t) g->n);
	else
		for (int64_t i = 0; i < g->n; i++)
			g->core[i] = atomic_load_explicit(&g->deg[i], memory_order_relaxed) + 1 >= min_points;
	/* every byte 0xff: -1, no border point has a core yet */
	memset(g->best, 0xff, sizeof(int64_t) * (size_t) g->n);
	g->linking = true;
}

void
tc_graph_dbscan_cores(TcGraph *g, int64_t min_points)
{
	dbscan_begin_links(g, min_points, NULL);
}

bool
tc_graph_dbscan_set_cores(TcGraph *g, const bool *core)
{
	dbscan_begin_links(g, 0, core);
	return !g->failed;
}

void
tc_graph_dbscan_pair(TcGraph *g, int64_t a, int64_t b, double dist)
{
	dbscan_link(g, a, b, dist, false);
}

void
tc_graph_dbscan_set_parent(TcGraph *g, int64_t i, int64_t parent)
{
	atomic_store_explicit(&g->parent[i], parent, memory_order_relaxed);
}

/*
 * The fold a GPU join may run for the graph's next join, by kind and phase:
 * the count, the degrees, the union-find, DBSCAN's degrees, links and then
 * ties.  Neighbour lists have none.  The arrays are the graph's own (the
 * atomic ones hold plain 64-bit integers), read and written by the back end
 * only before its first pair and after its last.
 */
TcDeviceFold *
tc_graph_fold(TcGraph *g)
{
	TcDeviceFold *f = &g->fold;

	free_nearest_fold(g);
	memset(f, 0, sizeof(*f));
	f->n = g->n;
	f->ids = g->ids;
	switch (g->kind)
	{
		case TC_GRAPH_COUNT:
			f->kind = TC_FOLD_COUNT;
			break;
		case TC_GRAPH_DEGREES:
			f->kind = TC_FOLD_DEGREES;
			f->deg = (int64_t *) g->deg;
			break;
		case TC_GRAPH_COMPONENTS:
			f->kind = TC_FOLD_UNION;
			f->parent = (int64_t *) g->parent;
			break;
		case TC_GRAPH_DBSCAN:
			if (!g->linking)
			{
				f->kind = TC_FOLD_DEGREES;
				f->deg = (int64_t *) g->deg;
				break;
			}
			if (g->best_key == NULL &&
				(g->best_key = alloc_n(g->n, sizeof(uint64_t))) == NULL)
			{
				g->failed = true;
				return NULL;
			}
			f->kind = g->ties ? TC_FOLD_DBSCAN_TIES : TC_FOLD_DBSCAN_LINKS;
			f->parent = (int64_t *) g->parent;
			f->core = g->core;
			f->best_key = g->best_key;
			f->best = g->best;
			break;
		case TC_GRAPH_NEIGHBORS:
		case TC_GRAPH_NEAREST:
			/* every neighbour (no k) or many: the lists on the host take the pairs */
			if (g->k == 0 || g->k > TC_FOLD_MAX_K)
				return NULL;
			/* the lists come from the back end that keeps them (nb_len and the rest) */
			f->kind = TC_FOLD_NEAREST;
			f->ids_n = g->ids_n;
			f->k = g->k;
			f->both = g->kind == TC_GRAPH_NEIGHBORS;
			break;
	}
	return f;
}

bool
tc_graph_after_join(TcGraph *g)
{
	bool		folded = g->fold.folded;

	g->fold.folded = false;
	if (g->fold.kind == TC_FOLD_NEAREST)
	{
		const TcDeviceFold *f = &g->fold;

		/*
		 * No pair came to the host: the device's lists are the answer, read
		 * where they are (the graph keeps them); else each point's k nearest
		 * as the device kept them, after the pairs the host took.
		 */
		if (folded && !nb_lists_made(&g->nb) && g->adopted.nb_len == NULL)
		{
			g->adopted = g->fold;
			memset(&g->fold, 0, sizeof(g->fold));
			nb_adopt(&g->nb, g->adopted.nb_len, g->adopted.nb_who, g->adopted.nb_dist);
			return false;
		}
		for (int64_t i = 0; folded && i < g->n && !g->failed; i++)
			nb_add_sorted(&g->nb, i, f->nb_who + (size_t) i * (size_t) g->k,
						  f->nb_dist + (size_t) i * (size_t) g->k, f->nb_len[i]);
		free_nearest_fold(g);
		return false;
	}
	if (g->kind == TC_GRAPH_DBSCAN && g->linking && !g->ties && folded)
	{
		g->ties = true;
		return true;
	}
	return false;
}

void
tc_graph_dbscan(TcGraph *g, int32_t *cluster, bool *is_core)
{
	if (!tc_number_dbscan(g->n, g->parent, g->core, g->best, g->ids, g->nthreads, cluster, is_core))
		g->failed = true;
}
