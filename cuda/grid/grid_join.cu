/*
 * grid_join.cu
 *		Exact epsilon-grid join on the GPU, of one set with itself or of
 *		two sets, FP64 on CUDA cores or filtered on FP64 tensor cores: the
 *		host side.
 *
 * The points are uploaded, indexed into cells and cut into work items on
 * the device (index.cu); of two sets, the larger is indexed and the
 * other's cells give the work items.  They are joined by the kernels of
 * kernels.cu in batches (batches.h).  Results go to a bounded device
 * buffer as TcPair records with the caller's indices, so the host hands
 * them to the sink as they are.  Batches are ranges of items whose
 * bounds, scaled by the hit rate seen so far, fit the buffer; a batch that
 * overflows anyway is dropped and rerun smaller, so no pair is ever lost,
 * and no single item can overflow (its bound is at most half the buffer).
 * Two streams alternate: while one batch computes, the previous one is
 * copied to pinned memory and handed to the sink.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "batches.h"
#include "grid.h"

/* Default result buffer (pairs), halved until it fits the memory limit. */
#define DEFAULT_CAPACITY (8u << 20)
#define MIN_CAPACITY (1u << 16)	/* with a memory limit; tests may go lower */
/* Candidates per batch at most, so a cancel is seen within milliseconds. */
#define MAX_BATCH_CANDIDATES 4e9

/* One grid join, from the upload to its last batch. */
struct GridRun
{
	TcGpuJoin  *g;
	const TcPoints *a;
	const TcPoints *ix;			/* the indexed set: a, or of two the larger */
	const TcPoints *qs;			/* the queries' set: a, or of two the other */
	const TcJoinParams *params;
	const TcSink *sink;
	TcJoinStats *stats;
	TcError    *err;
	GridDev		gd;				/* the index, as the kernels see it */

	/* Work items, sorted by bound, largest first. */
	unsigned int nitems;
	unsigned long long *d_items;
	unsigned char *d_item_nq;
	unsigned long long *h_bounds;
	unsigned long long max_pq;	/* the most candidates of one query */
	unsigned long long total_bound; /* on all pairs */

	/* Result buffers and per-batch counters, one set per stream. */
	unsigned int capacity;		/* pairs per buffer */
	PairDev    *d_pairs[2];
	unsigned int *d_meta[2],
			   *h_meta[2];		/* count, overflow, queue */
	unsigned long long *d_cand,
			   *h_cand;			/* (candidates, rechecked) per stream */

	bool		tc;				/* the FP64 tensor-core filter */
	int			sms;
};

/*
 * Tensor cores or CUDA cores for the distances.  auto follows the
 * measurements in docs/performance.md.
 */
static bool
use_tensor_cores(const TcJoinParams *params, int d, int major)
{
	if (major < 8 || params->tensor_cores == TC_TENSOR_OFF)
		return false;
	if (params->tensor_cores == TC_TENSOR_ON)
		return true;
	return d >= 5;
}

/*
 * One set uploaded in its own element type and indexed into gd's index
 * fields; the permutation from its cell order to the caller's indices
 * into *d_perm.
 */
static TcStatus
index_set(GridRun *r, const TcPoints *set, GridDev *gd, unsigned int **d_perm)
{
	TcGpuJoin  *g = r->g;
	TcError    *err = r->err;
	size_t		bytes = (size_t) set->d * (size_t) set->type * (size_t) set->n;
	void	   *d_raw;
	TcStatus	st;

	if ((st = dev_alloc(g, &d_raw, bytes, err)) != TC_OK)
		return st;
	if ((st = upload(g, d_raw, set->data, bytes, g->stream[0], r->sink, err)) != TC_OK)
		return st;
	if ((st = grid_build_index(g, set, gd, d_raw, d_perm, err)) != TC_OK)
		return st;
	if ((st = gpu_sync(g, g->stream[0], err)) != TC_OK)
		return st;
	dev_free(g, d_raw);
	return TC_OK;
}

/*
 * The neighbour rows (a self-join's positive ones, every one for two
 * sets), then the index, and the queries: the index itself, or the other
 * set indexed by the same plan.
 */
static TcStatus
build_grid(GridRun *r, const TcGridPlan *plan, double thr)
{
	TcError    *err = r->err;
	GridDev    &gd = r->gd;
	unsigned int *d_perm;
	TcStatus	st;

	memset(&gd, 0, sizeof(gd));
	gd.p = *plan;
	gd.d = r->a->d;
	gd.thr = thr;
	/* the tensor-core filter's margin, as kernels.cu derives it */
	gd.tc_rel = (double) (r->a->d + 8) * 0x1p-51;
	gd.tc_abs = (double) (r->a->d + 8) * 0x1p-1018;
	gd.two = r->qs != r->ix;
	gd.a_indexed = gd.two && r->ix == r->a;
	if ((st = grid_set_rows(plan, !gd.two, &gd.noffs, err)) != TC_OK)
		return st;
	if ((st = index_set(r, r->ix, &gd, &d_perm)) != TC_OK)
		return st;

	/* The kernel writes the caller's indices, through the permutation. */
	gd.perm = d_perm;
	gd.qpts = gd.pts;
	gd.qperm = gd.perm;
	gd.qcell_key = gd.cell_key;
	gd.qcell_start = gd.cell_start;
	gd.qncells = gd.ncells;
	if (gd.two)
	{
		GridDev		qd = gd;

		if ((st = index_set(r, r->qs, &qd, &d_perm)) != TC_OK)
			return st;
		gd.qpts = qd.pts;
		gd.qperm = d_perm;
		gd.qcell_key = qd.cell_key;
		gd.qcell_start = qd.cell_start;
		gd.qncells = qd.ncells;
	}
	/* a's cells, as the CPU counts them */
	r->stats->cells = gd.two && !gd.a_indexed ? gd.qncells : gd.ncells;
	return TC_OK;
}

/*
 * The result buffers' size: two buffers (one per stream), as large as the
 * memory limit allows after the work items, up to DEFAULT_CAPACITY pairs,
 * and never below twice the candidates of one query, so that an item of a
 * single query always fits half a buffer.
 */
static TcStatus
choose_capacity(GridRun *r)
{
	TcGpuJoin  *g = r->g;
	TcError    *err = r->err;
	size_t		items_bytes = (size_t) r->qs->n * (8 + 1 + 8 + 8 + 8 + 1) + (1 << 20);
	size_t		per_pair = 2 * sizeof(PairDev);
	unsigned long long floor_cap = std::max((unsigned long long) MIN_CAPACITY / 16, 2 * r->max_pq);
	unsigned int capacity = DEFAULT_CAPACITY;

	if (r->params->gpu_result_pairs > 0)
		capacity = (unsigned int) std::min((size_t) DEFAULT_CAPACITY, r->params->gpu_result_pairs);
	if (g->limit > 0)
	{
		size_t		room = g->limit > g->used + items_bytes ? g->limit - g->used - items_bytes : 0;

		while (capacity > MIN_CAPACITY && (size_t) capacity * per_pair > room)
			capacity /= 2;
	}
	if (floor_cap > UINT32_MAX / 2)
	{
		err->status = TC_ERR_INVALID;
		snprintf(err->message, sizeof(err->message),
				 "a point has %llu candidates, more than the GPU join handles", r->max_pq);
		return TC_ERR_INVALID;
	}
	/* No larger than every candidate pair: small joins stay cheap. */
	if (r->total_bound + 1 < capacity)
		capacity = (unsigned int) (r->total_bound + 1);
	r->capacity = std::max(capacity, (unsigned int) floor_cap);
	return TC_OK;
}

/*
 * Work items: each query cell's candidates bound its items' pairs, which
 * size the result buffers, which in turn cap an item's queries; then the
 * items, sorted by bound, and the bounds on the host, where batches are
 * cut.  Two sets may leave no item at all (r->nitems 0).
 */
static TcStatus
build_items(GridRun *r)
{
	TcGpuJoin  *g = r->g;
	TcError    *err = r->err;
	unsigned int ncells = r->gd.qncells;
	cudaStream_t s0 = g->stream[0];
	unsigned long long *d_nbr,
			   *d_pq,
			   *d_cb,
			   *d_bounds;
	unsigned int *d_nq,
			   *d_nit;
	TcStatus	st;

	if ((st = dev_alloc(g, (void **) &d_nbr, sizeof(*d_nbr) * ncells, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_pq, sizeof(*d_pq) * (ncells + 1), err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_cb, sizeof(*d_cb) * (ncells + 1), err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_nq, sizeof(*d_nq) * ncells, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_nit, sizeof(*d_nit) * (ncells + 1), err)) != TC_OK)
		return st;
	if ((st = grid_cell_bounds(r->gd, d_nbr, d_pq, d_cb, s0, err)) != TC_OK ||
		(st = grid_bound_totals(g, d_pq, d_cb, ncells, s0, &r->max_pq, &r->total_bound,
								err)) != TC_OK)
		return st;
	dev_free(g, d_cb);
	gpu_trace_step(g, "cell bounds");
	if ((st = choose_capacity(r)) != TC_OK ||
		(st = grid_count_items(g, r->gd, r->capacity / 2, d_pq, d_nq, d_nit, s0,
							   &r->nitems, err)) != TC_OK)
		return st;
	if (r->nitems == 0)
		return TC_OK;
	gpu_trace_step(g, "items counted");
	if ((st = grid_sort_items(g, r->gd, d_nbr, d_nq, d_nit, r->nitems, s0, &r->d_items,
							  &r->d_item_nq, &d_bounds, err)) != TC_OK)
		return st;
	dev_free(g, d_nq);
	dev_free(g, d_nit);
	dev_free(g, d_nbr);
	dev_free(g, d_pq);
	gpu_trace_step(g, "items sorted");

	if ((st = heap_alloc(g, (void **) &r->h_bounds, sizeof(*r->h_bounds) * r->nitems + 8,
						 err)) != TC_OK)
		return st;
	/* through the pinned ring: a plain copy into pageable memory is a fraction as fast */
	if ((st = download(g, r->h_bounds, d_bounds, sizeof(*r->h_bounds) * r->nitems, s0, r->sink,
					   err)) != TC_OK)
		return st;
	dev_free(g, d_bounds);
	return TC_OK;
}

/*
 * Several GPUs: this one's digest of its work items and the order of its
 * indexed points, which number the units (multi.cu checks they agree).
 */
static TcStatus
record_digest(GridRun *r)
{
	TcGpuJoin  *g = r->g;
	unsigned long long di = 0,
				dp = 0;
	TcStatus	st;

	if (g->share == NULL)
		return TC_OK;
	if (r->nitems > 0 &&
		(st = device_digest(g, r->d_items, sizeof(*r->d_items) * r->nitems, &di, r->err)) != TC_OK)
		return st;
	if ((st = device_digest(g, r->gd.perm, sizeof(*r->gd.perm) * (size_t) r->ix->n, &dp,
							r->err)) != TC_OK)
		return st;
	g->share->digest[g->share_index] = di * 31 + dp + r->nitems;
	g->share->has_digest[g->share_index] = true;
	return TC_OK;
}

/* Result buffers and per-batch counters, one set per stream; the ring. */
static TcStatus
alloc_results(GridRun *r)
{
	TcGpuJoin  *g = r->g;
	TcError    *err = r->err;
	TcStatus	st;

	for (int i = 0; i < 2; i++)
	{
		if ((st = dev_alloc(g, (void **) &r->d_pairs[i], sizeof(PairDev) * r->capacity, err)) != TC_OK ||
			(st = dev_alloc(g, (void **) &r->d_meta[i], sizeof(unsigned int) * 4, err)) != TC_OK ||
			(st = host_alloc(g, (void **) &r->h_meta[i], sizeof(unsigned int) * 4, cudaHostAllocDefault, err)) != TC_OK)
			return st;
	}
	if ((st = get_ring(g, err)) != TC_OK)
		return st;
	/* (candidates, rechecked) for each stream's batch, read when it is kept */
	if ((st = dev_alloc(g, (void **) &r->d_cand, sizeof(*r->d_cand) * 4, err)) != TC_OK ||
		(st = host_alloc(g, (void **) &r->h_cand, sizeof(*r->h_cand) * 4, cudaHostAllocDefault, err)) != TC_OK)
		return st;
	return TC_OK;
}

/* As many items from lo as should fit the buffer at the rate seen. */
static unsigned long long
next_batch(const GridRun *r, unsigned long long lo, double rate, double *bound)
{
	const unsigned long long *h_bounds = r->h_bounds;
	unsigned long long hi = lo;
	double		sum = 0;

	while (hi < r->nitems &&
		   (hi == lo ||
			((sum + (double) h_bounds[hi]) * rate <= 0.8 * r->capacity &&
			 sum + (double) h_bounds[hi] <= MAX_BATCH_CANDIDATES)))
		sum += (double) h_bounds[hi++];
	*bound = sum;
	return hi;
}

/* Items [lo, hi) on stream cur, into its result buffer and counters. */
static TcStatus
launch_batch(GridRun *r, int cur, unsigned long long lo, unsigned long long hi)
{
	TcGpuJoin  *g = r->g;
	TcError    *err = r->err;
	BatchDev	bd;
	unsigned int blocks = std::min((unsigned int) r->sms * 8,
								   (unsigned int) (hi - lo + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK);
	cudaStream_t s = g->stream[cur];
	TcStatus	st;

	bd.items = r->d_items;
	bd.item_nq = r->d_item_nq;
	bd.lo = (unsigned int) lo;
	bd.hi = (unsigned int) hi;
	bd.count = r->d_meta[cur];
	bd.overflow = r->d_meta[cur] + 1;
	bd.queue = r->d_meta[cur] + 2;
	bd.pairs = r->d_pairs[cur];
	bd.capacity = r->capacity;
	bd.candidates = r->d_cand + 2 * cur;
	bd.rechecked = r->d_cand + 2 * cur + 1;
	bd.abort = g->d_abort;
	CHECK(cudaMemsetAsync(r->d_meta[cur], 0, sizeof(unsigned int) * 4, s));
	CHECK(cudaMemsetAsync(r->d_cand + 2 * cur, 0, sizeof(*r->d_cand) * 2, s));
	CHECK(cudaEventRecord(g->kev[cur][0], s));
	if ((st = grid_launch_join(r->gd, bd, r->tc, blocks, s, err)) != TC_OK)
		return st;
	CHECK(cudaEventRecord(g->kev[cur][1], s));
	CHECK(cudaMemcpyAsync(r->h_meta[cur], r->d_meta[cur], sizeof(unsigned int) * 4,
						  cudaMemcpyDeviceToHost, s));
	CHECK(cudaMemcpyAsync(r->h_cand + 2 * cur, r->d_cand + 2 * cur, sizeof(*r->h_cand) * 2,
						  cudaMemcpyDeviceToHost, s));
	return TC_OK;
}

/* A batch's counts, once: not those of a batch dropped and rerun. */
static void
count_kept(GridRun *r, int cur)
{
	r->stats->candidates += r->h_cand[2 * cur];
	if (r->tc)
		r->stats->rechecked += r->h_cand[2 * cur + 1];
}

/* The filter for this GPU, then every item in batches. */
static TcStatus
join_batches(GridRun *r)
{
	TcGpuJoin  *g = r->g;
	TcError    *err = r->err;
	TcJoinStats *stats = r->stats;
	double		t1 = tc_now();
	int			major = 0;
	double		rate = 1.0;		/* pairs per unit of bound, conservatively */
	TcStatus	st;

	CHECK(cudaDeviceGetAttribute(&r->sms, cudaDevAttrMultiProcessorCount, g->device));
	CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, g->device));
	r->tc = use_tensor_cores(r->params, r->a->d, major);
	if (r->params->tensor_cores == TC_TENSOR_ON && !r->tc)
	{
		err->status = TC_ERR_INVALID;
		snprintf(err->message, sizeof(err->message),
				 "FP64 tensor cores need a GPU of compute capability 8.0 or higher");
		return TC_ERR_INVALID;
	}
	stats->tensor_cores = r->tc;
	stats->filter = r->tc ? "fp64 tensor cores" : "none";

	auto		next = [r] (unsigned long long lo, double rt, double *bound) { return next_batch(r, lo, rt, bound); };
	auto		launch = [r] (int cur, unsigned long long lo, unsigned long long hi) { return launch_batch(r, cur, lo, hi); };
	auto		kept = [r] (int cur) { count_kept(r, cur); };

	/* several GPUs take the items from their queue */
	if ((st = run_batches(g, r->nitems, r->d_pairs, r->h_meta, rate, next, launch, "work item",
						  r->sink, stats, err, 0, kept, RUN_SHARED)) != TC_OK)
		return st;
	stats->join_seconds = tc_now() - t1;
	return TC_OK;
}

/* The join's points, plan and threshold, for each GPU's run. */
struct GridArgs
{
	const TcPoints *a;
	const TcPoints *b;
	const TcGridPlan *plan;
	double		thr;
};

/* The join on one GPU, alone or as one of several sharing it (GpuJoinOne). */
static TcStatus
grid_one(void *ctx, TcGpuJoin **handle, const TcJoinParams *params, const TcSink *sink,
		 TcJoinStats *stats, TcError *err, GpuShare *share, int index)
{
	const GridArgs *args = (const GridArgs *) ctx;
	const TcPoints *a = args->a,
			   *b = args->b;
	const TcGridPlan *plan = args->plan;
	GridRun		r;
	TcStatus	st;
	double		t0 = tc_now();

	if ((st = gpu_join_begin(handle, a, params, share, index, sink, stats, err)) != TC_OK)
		return st;
	/* two sets fold only the k nearest of a's points */
	if ((st = fold_begin(*handle, a->n, b != NULL, err)) != TC_OK)
		return st;
	if (b != NULL && b->n >= (int64_t) INT32_MAX)
	{
		err->status = TC_ERR_INVALID;
		snprintf(err->message, sizeof(err->message),
				 "the GPU join takes at most %d points", INT32_MAX - 1);
		return TC_ERR_INVALID;
	}
	memset(&r, 0, sizeof(r));
	r.g = *handle;
	r.a = a;
	r.ix = r.qs = a;
	if (b != NULL)
	{
		/* Index the larger set: fewer items, each meeting fuller cells. */
		r.ix = a->n > b->n ? a : b;
		r.qs = r.ix == a ? b : a;
	}
	r.params = params;
	r.sink = sink;
	r.stats = stats;
	r.err = err;
	stats->method = plan->k > 0 ? "grid" : "brute";
	stats->grid_dims = plan->k;
	for (int j = 0; j < plan->k; j++)
		stats->grid_dim_ids[j] = plan->dims[j];
	/* No pair: a self-join of fewer than two points, or an empty set. */
	if (b == NULL ? a->n < 2 : (a->n == 0 || b->n == 0))
	{
		stats->index_seconds = tc_now() - t0;
		return fold_end(r.g, err);
	}

	gpu_trace_step(r.g, "begun");
	/* Upload, the index, the work items, then the batches. */
	if ((st = build_grid(&r, plan, args->thr)) != TC_OK)
		return st;
	gpu_trace_step(r.g, "grid built");
	if ((st = build_items(&r)) != TC_OK ||
		(st = record_digest(&r)) != TC_OK)
		return st;
	gpu_trace_step(r.g, "items built");
	if (r.nitems == 0)
	{
		/* two sets, no query cell next to an indexed one */
		stats->index_seconds = tc_now() - t0;
		return fold_end(r.g, err);
	}
	if ((st = alloc_results(&r)) != TC_OK)
		return st;
	stats->index_seconds = tc_now() - t0;
	gpu_trace_step(r.g, "results allocated");
	if ((st = join_batches(&r)) != TC_OK)
		return st;
	gpu_trace_step(r.g, "batches done");
	st = fold_end(r.g, err);
	gpu_trace_step(r.g, "folded");
	return st;
}

extern "C" TcStatus
tc_gpu_grid_join(TcGpuJoin **handle, const TcPoints *a, const TcPoints *b,
				 const TcJoinParams *params, const TcGridPlan *plan, double thr,
				 const TcSink *sink, TcJoinStats *stats, TcError *err)
{
	GridArgs	args = {a, b, plan, thr};

	return gpu_join_devices(handle, grid_one, &args, a, params, sink, stats, err);
}
