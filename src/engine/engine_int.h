/*
 * engine_int.h
 *		What the engine's driver (engine.c) shares with its CPU back ends.
 *
 * The driver owns the worker threads, the work queue and the output
 * batches; a back end owns its index and knows how to run one work item.
 */
#ifndef TCJOIN_ENGINE_INT_H
#define TCJOIN_ENGINE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "distance.h"
#include "engine.h"
#include "grid_plan.h"

/* Pairs per output batch: large enough to amortise the hand-over. */
#define TC_BATCH_PAIRS 8192

typedef struct TcBatch
{
	struct TcBatch *next;
	size_t		count;
	TcPair		pairs[TC_BATCH_PAIRS];
} TcBatch;

typedef struct TcWorker TcWorker;

/* A CPU back end: an index built before the run, work items run by workers. */
typedef struct TcBackend
{
	const char *name;
	/* Run work item `item` (0 .. nitems-1) on worker w. */
	void		(*run_item) (TcJoin *join, TcWorker *w, int64_t item);
	/* Free the back end's state (join->state). */
	void		(*free_state) (TcJoin *join);
} TcBackend;

struct TcWorker
{
	TcJoin	   *join;
	pthread_t	thread;
	bool		started;
	TcBatch    *batch;			/* being filled; NULL once stopped */
	uint64_t	candidates;
	uint64_t	rechecked;		/* pairs a filter kept for the exact sum */
	/* the sink's reduce (TcSink), where set: pairs go there, counted, not into batches */
	void		(*reduce) (void *arg, int64_t a, int64_t b, double dist);
	void		(*prefetch) (void *arg, int64_t a);	/* the sink's, with reduce */
	void	   *reduce_arg;
	uint64_t	reduced;
	void	   *scratch;		/* a back end's per-worker buffer (malloc) */
};

struct TcJoin
{
	TcPoints	a;
	TcPoints	b;				/* == a for a self-join */
	bool		self;
	TcJoinParams params;
	double		thr;			/* tc_sq_threshold(eps) */
	TcJoinStats stats;
	double		created;		/* tc_now() at tc_join_create: the trace's clock */

	const TcSink *sink;			/* set by tc_join_run */
	struct TcGpuJoin *gpu;		/* a GPU join's resources, if it ran there */
	struct CosineGrid *cosine_grid; /* cosine through a grid (cosine_grid.c) */
	const TcBackend *backend;
	void	   *state;
	int64_t		nitems;
	/*
	 * Every worker takes its items here: padded to a cache line of its
	 * own, so that taking one does not evict what the others read.
	 */
	char		pad_before[64];
	atomic_int_fast64_t next_item;
	char		pad_after[64];

	/* Threads and output hand-over. */
	int			nworkers;
	TcWorker   *workers;
	pthread_mutex_t mu;
	pthread_cond_t full_cv;		/* main thread waits: a batch is full */
	pthread_cond_t free_cv;		/* workers wait: a batch is free */
	bool		sync_init;
	TcBatch    *free_list;
	TcBatch    *full_head;
	TcBatch    *full_tail;
	TcBatch   **all_batches;	/* every batch, for freeing */
	int			nbatches;
	int			workers_done;
	atomic_bool stop;			/* set on early stop, cancel or destroy */
	atomic_int	worker_error;	/* a TcStatus set by a failing worker */
	bool		ran;

	/* The grid's plan, its choice left open (tc_grid_plan), once made. */
	TcGridPlan	plan;
	bool		have_plan;

	/* Planner scratch: freed when planning ends, or by tc_join_destroy. */
#define TC_SCRATCH_SLOTS 6
	void	   *scratch[TC_SCRATCH_SLOTS];
};

/* Coordinate k of point i, as float8 (exact for float4 data too). */
static inline double
tc_coord(const TcPoints *p, int64_t i, int k)
{
	if (p->type == TC_FLOAT4)
		return (double) ((const float *) p->data)[i * p->d + k];
	return ((const double *) p->data)[i * p->d + k];
}

/* The dot product of a's point i and b's point j, in float8, in index order. */
static inline double
tc_point_dot(const TcPoints *a, int64_t i, const TcPoints *b, int64_t j)
{
	double		s = 0.0;

	for (int k = 0; k < a->d; k++)
		s += tc_coord(a, i, k) * tc_coord(b, j, k);
	return s;
}

/*
 * The contract's dist of a's point i with itself (include_self): 0
 * Euclidean; from its own dot product, which is its squared norm, -na for
 * the inner product and cosine's 1 - clamp(na / sqrt(na na)).
 */
static inline double
tc_self_dist(const TcJoin *join, int64_t i)
{
	double		dot;

	if (join->params.metric == TC_METRIC_EUCLIDEAN)
		return 0.0;
	dot = tc_point_dot(&join->a, i, &join->a, i);
	return join->params.metric == TC_METRIC_INNER_PRODUCT ? -dot : tc_cosine_dist(dot, dot, dot);
}

/*
 * DBSCAN's state set without the join (dbscan_grid.c), on the caller's
 * thread: the core flags (false: out of memory); the cores' union-find
 * as a finished forest, a core's parent at a time (roots their own); each
 * border candidate as a pair the links' join would give.
 */
extern bool tc_graph_dbscan_set_cores(TcGraph *g, const bool *core);
extern void tc_graph_dbscan_set_parent(TcGraph *g, int64_t i, int64_t parent);
extern void tc_graph_dbscan_pair(TcGraph *g, int64_t a, int64_t b, double dist);

/* Hand the worker's batch to the main thread; false when told to stop. */
extern bool tc_worker_flush(TcWorker *w);

/* Append one pair; false when the join must stop. */
static inline bool
tc_emit(TcWorker *w, int64_t a, int64_t b, double dist)
{
	TcBatch    *batch = w->batch;

	if (w->reduce)
	{
		w->reduce(w->reduce_arg, a, b, dist);
		w->reduced++;
		return true;
	}
	batch->pairs[batch->count].a = a;
	batch->pairs[batch->count].b = b;
	batch->pairs[batch->count].dist = dist;
	if (++batch->count == TC_BATCH_PAIRS)
		return tc_worker_flush(w);
	return true;
}

static inline bool
tc_should_stop(const TcJoin *join)
{
	return atomic_load_explicit(&join->stop, memory_order_relaxed);
}

/*
 * Coordinate operations between two looks at the stop flag (a worker) or
 * two polls (the caller's thread): a few milliseconds of work, so that a
 * stop is answered well within a second however large a work item or the
 * data, while a relaxed load or a poll costs nothing against it.
 */
#define TC_CHECK_COORDS (INT64_C(1) << 22)

/* Rows of `width` coordinate operations each between two checks (>= 1). */
static inline int64_t
tc_check_rows(int64_t width)
{
	return width >= TC_CHECK_COORDS ? 1 : TC_CHECK_COORDS / (width > 0 ? width : 1);
}

/*
 * For the caller's thread while it builds an index: poll the sink (which
 * may longjmp); false when the join must stop.
 */
extern bool tc_poll(TcJoin *join);
extern void tc_trace_step(const TcJoin *join, const char *step);
/*
 * fn on each of n parts, stride bytes apart, at once: parts 1 .. n - 1 on
 * helpers (tc_start_thread), part 0 and any whose helper did not start on
 * the caller's thread, which returns once every part is done.  fn must not
 * poll (a poll may longjmp past the helpers).  threads.c.
 */
extern void tc_run_parts(void *(*fn) (void *), void *parts, size_t stride, int n);
/*
 * The parts to split items into: one a thread, at most max, none of fewer
 * than min_part items (below that a thread costs more than it saves), 1
 * at least.  threads.c.
 */
extern int	tc_parts_for(int64_t items, int64_t min_part, int threads, int max);
/*
 * Rows [lo, hi) of p folded into each dimension's least and greatest
 * value, mn and mx (d each, as float8); first: they hold nothing yet.
 * grid_plan.c.
 */
extern void tc_extent_fold(const TcPoints *p, int64_t lo, int64_t hi, bool first,
						   double *mn, double *mx);
/*
 * The grid plan's cost sample: hits[k] for k = 0 .. kmax, the pairs of a's
 * ma and b's mb sample points (cell coordinates, kmax a point) within one
 * cell on exactly the first k grid dimensions; self: a and b are the same
 * sample, its pairs i < l.  False: out of memory.  grid_plan.c.
 */
extern bool tc_grid_sample_hits(const int64_t *cca, int64_t ma, const int64_t *ccb, int64_t mb,
								int kmax, bool self, double *hits);

/*
 * A union-find over an array of parents (graph.c), shared by threads:
 * the root of x's set, and the union of a's and b's (the larger root under
 * the smaller, by CAS).
 */
extern int64_t tc_uf_find(_Atomic int64_t *parent, int64_t x);
extern void tc_uf_unite(_Atomic int64_t *parent, int64_t a, int64_t b);

/*
 * The answers from a finished union-find over n points, by up to threads
 * threads (graph_number.c): out[i] the smallest id of i's set; DBSCAN's
 * cluster[i] (-1 noise; a border point's that of best[i], its nearest
 * core) numbered by the clusters' smallest ids, and is_core[i].  False:
 * out of memory.
 */
extern bool tc_number_components(int64_t n, _Atomic int64_t *parent, const int64_t *ids,
								 int threads, int64_t *out);
extern bool tc_number_dbscan(int64_t n, _Atomic int64_t *parent, const bool *core,
							 const int64_t *best, const int64_t *ids, int threads,
							 int32_t *cluster, bool *is_core);

/* params->devices resolved: every GPU for "all", each listed one checked (devices.c). */
extern TcStatus tc_devices_resolve(TcJoinParams *params, TcError *err);


/*
 * The contract's squared norms of p's points into *out (malloc'd; set 0 is
 * a, 1 is b), polling; under cosine a zero norm is an error naming its
 * point (cpu_brute.c).
 */
extern TcStatus tc_squared_norms(TcJoin *join, const TcPoints *p, int set, double **out,
								 TcError *err);

/*
 * Whether every coordinate of p is 0 or of magnitude in [lo, hi], polling;
 * on a stop, false with *stopped set (cpu_dot_filter.c).
 */
extern bool tc_coords_in_range(TcJoin *join, const TcPoints *p, double lo, double hi,
							   bool *stopped);

/*
 * Whether p lies within the dot-product metrics' range (distance.h), which
 * the unit vectors' grid and the GPU take; the same stop convention.
 */
extern bool tc_dot_range_ok(TcJoin *join, const TcPoints *p, bool *stopped);

/*
 * Cosine in few dimensions through the Euclidean grid on unit vectors
 * (cosine_grid.c): whether this join takes that path, running it, and
 * freeing what it holds (tc_join_destroy).
 */
extern bool tc_cosine_grid_applies(const TcJoin *join);
extern TcStatus tc_cosine_grid_run(TcJoin *join, bool *ran, TcError *err);
extern void tc_cosine_grid_free(TcJoin *join);

/* Tiny GPU joins on the prewarm thread, loading the kernels (gpu_warm.c). */
extern void tc_gpu_warm_kernels(void);

/* Error helpers. */
extern void tc_set_error(TcError *err, TcStatus status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));


/*
 * Back ends: set join->backend, join->state and join->nitems.  With
 * allow_brute (method 'auto'), the grid's planner may hand the join to the
 * brute-force back end when the cost model (choose.c) says that is cheaper.
 */
extern TcStatus tc_grid_prepare(TcJoin *join, bool allow_brute, TcError *err);
extern TcStatus tc_brute_prepare(TcJoin *join, TcError *err);

/*
 * Choose the grid for this join (grid_plan.c, with choose.c's cost model);
 * with allow_brute, plan->brute says the cost model prefers brute force.
 * May return TC_STOPPED.
 */
extern TcStatus tc_grid_plan(TcJoin *join, bool allow_brute, TcGridPlan *plan,
							 TcError *err);
extern void tc_free_scratch(TcJoin *join);

#endif							/* TCJOIN_ENGINE_INT_H */
