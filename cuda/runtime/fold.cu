/*
 * fold.cu
 *		A GPU join's pairs folded into per point arrays on the device
 *		(TcSink.fold, engine.h) instead of crossing the bus: counts, degrees,
 *		a union-find, and DBSCAN's links and border ties.
 *
 * Each drained batch's pairs, still in device memory, go through one
 * kernel on the batch's own stream (so the next batch into that buffer
 * waits for it); the arrays are copied in at the join's start and out at
 * its end, and only then is the fold marked done: a join that stops early
 * or fails leaves the caller's arrays as they were.
 *
 * The union-find is the host's (graph.c): a root links under a root of
 * smaller index by compare-and-swap, so two links never close a cycle;
 * finds halve paths with compare-and-swap too and read parents through
 * volatile loads (L1 is not coherent between multiprocessors).  A border
 * point's nearest core is found in two joins: the least distance key by
 * atomic minimum in the links' join, then among the cores at exactly that
 * key the one of smallest id in a third join (a 64-bit atomic cannot hold
 * both a distance and an id).
 *
 * The k nearest keep, a point, k slots under a lock of its own (the lock
 * taken and released in one iteration of its loop, so that threads of one
 * warp that want the same point never wait on each other), and once full
 * the worst distance kept: it only falls, so a pair beyond it is dropped
 * without the lock, as most are once the lists fill.  The lists are
 * sorted on the device at the end, nearest first, ties by id.
 */
#include <cuda_runtime.h>

#include "join_state.h"

#define FOLD_THREADS 256

/* dist as an unsigned key of the same order; -0 and +0 (equal) the same key */
__device__ static inline unsigned long long
fold_key(double dist)
{
	unsigned long long u = (unsigned long long) __double_as_longlong(dist + 0.0);

	return (u >> 63) ? ~u : u | (1ull << 63);
}

__device__ static inline long long
uf_find(long long *parent, long long x)
{
	for (;;)
	{
		long long	p = *(volatile long long *) &parent[x];
		long long	gp;

		if (p == x)
			return x;
		gp = *(volatile long long *) &parent[p];
		/* path halving; a lost race only leaves the path longer */
		if (gp != p)
			atomicCAS((unsigned long long *) &parent[x], (unsigned long long) p,
					  (unsigned long long) gp);
		x = p;
	}
}

__device__ static inline void
uf_union(long long *parent, long long a, long long b)
{
	for (;;)
	{
		a = uf_find(parent, a);
		b = uf_find(parent, b);
		if (a == b)
			return;
		if (a < b)
		{
			long long	t = a;

			a = b;
			b = t;
		}
		/* a, the larger root, under b; a root no longer: find again */
		if (atomicCAS((unsigned long long *) &parent[a], (unsigned long long) a,
					  (unsigned long long) b) == (unsigned long long) a)
			return;
	}
}

/* best[p] = c where c's id is smaller than the current one's (or none yet) */
__device__ static inline void
min_by_id(long long *best, const long long *ids, long long p, long long c)
{
	long long	cur = *(volatile long long *) &best[p];

	while (cur < 0 || ids[c] < ids[cur])
	{
		long long	prev = (long long) atomicCAS((unsigned long long *) &best[p],
												 (unsigned long long) cur,
												 (unsigned long long) c);

		if (prev == cur)
			return;
		cur = prev;
	}
}

/* The k nearest's arrays on the device: k slots a point, ids of the neighbours for ties. */
struct NearestDev
{
	int			k;
	int		   *len;
	int		   *lock;
	double	   *worst;
	double	   *dist;
	long long  *who;
	const long long *ids;
};

/* (d, id) before (e, jd): nearer, or as near with the smaller id */
__device__ static inline bool
nearer(double d, long long id, double e, long long jd)
{
	return d < e || (d == e && id < jd);
}

/* The slot of point p's worst entry (of k), and the worst distance kept. */
__device__ static inline int
nearest_worst(const NearestDev &nd, volatile double *d, volatile long long *w, double *worst)
{
	int			j = 0;

	for (int t = 1; t < nd.k; t++)
		if (nearer(d[j], nd.ids[w[j]], d[t], nd.ids[w[t]]))
			j = t;
	*worst = d[j];
	return j;
}

/* Neighbour who at dist into point p's k nearest. */
__device__ static void
nearest_add(const NearestDev &nd, long long p, long long who, double dist)
{
	volatile int *len = &nd.len[p];
	volatile double *d = nd.dist + p * nd.k;
	volatile long long *w = nd.who + p * nd.k;
	bool		done = false;

	/* full, and farther than the worst kept (which only falls): not among the k */
	if (*len == nd.k && dist > *(volatile double *) &nd.worst[p])
		return;
	while (!done)
	{
		if (atomicCAS(&nd.lock[p], 0, 1) != 0)
			continue;
		__threadfence();

		int			l = *len;
		double		worst;

		if (l < nd.k)
		{
			d[l] = dist;
			w[l] = who;
			if (l + 1 == nd.k)
			{
				nearest_worst(nd, d, w, &worst);
				nd.worst[p] = worst;
			}
			/* the worst is in place before the length says full */
			__threadfence();
			*len = l + 1;
		}
		else
		{
			int			j = nearest_worst(nd, d, w, &worst);

			if (nearer(dist, nd.ids[who], d[j], nd.ids[w[j]]))
			{
				d[j] = dist;
				w[j] = who;
				nearest_worst(nd, d, w, &worst);
				*(volatile double *) &nd.worst[p] = worst;
			}
		}
		__threadfence();
		atomicExch(&nd.lock[p], 0);
		done = true;
	}
}

__global__ static void
nearest_kernel(const PairDev *pairs, unsigned int count, NearestDev nd, bool both)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= count)
		return;
	nearest_add(nd, pairs[i].a, pairs[i].b, pairs[i].dist);
	if (both)
		nearest_add(nd, pairs[i].b, pairs[i].a, pairs[i].dist);
}

/* Each point's list, nearest first, ties by id (insertion: k is small). */
__global__ static void
nearest_sort_kernel(long long n, NearestDev nd)
{
	long long	p = (long long) blockIdx.x * blockDim.x + threadIdx.x;

	if (p >= n)
		return;

	double	   *d = nd.dist + p * nd.k;
	long long  *w = nd.who + p * nd.k;
	int			len = nd.len[p];

	for (int t = 1; t < len; t++)
	{
		double		x = d[t];
		long long	y = w[t];
		int			u = t;

		for (; u > 0 && nearer(x, nd.ids[y], d[u - 1], nd.ids[w[u - 1]]); u--)
		{
			d[u] = d[u - 1];
			w[u] = w[u - 1];
		}
		d[u] = x;
		w[u] = y;
	}
}

static NearestDev
nearest_dev(const TcGpuJoin *g)
{
	return {g->fold->k, g->f_len, g->f_lock, g->f_worst, g->f_ndist, g->f_nwho, g->f_ids};
}

__global__ static void
fold_kernel(const PairDev *pairs, unsigned int count, int kind, unsigned long long *deg,
			long long *parent, const unsigned char *core, unsigned long long *best_key,
			long long *best, const long long *ids)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= count)
		return;

	const long long a = pairs[i].a;
	const long long b = pairs[i].b;

	switch (kind)
	{
		case TC_FOLD_DEGREES:
			atomicAdd(&deg[a], 1ull);
			atomicAdd(&deg[b], 1ull);
			break;
		case TC_FOLD_UNION:
			uf_union(parent, a, b);
			break;
		case TC_FOLD_DBSCAN_LINKS:
			if (core[a] && core[b])
				uf_union(parent, a, b);
			else if (core[a])
				atomicMin(&best_key[b], fold_key(pairs[i].dist));
			else if (core[b])
				atomicMin(&best_key[a], fold_key(pairs[i].dist));
			break;
		case TC_FOLD_DBSCAN_TIES:
			if (core[a] && !core[b] && fold_key(pairs[i].dist) == best_key[b])
				min_by_id(best, ids, b, a);
			else if (core[b] && !core[a] && fold_key(pairs[i].dist) == best_key[a])
				min_by_id(best, ids, a, b);
			break;
	}
}

/* A device array of n entries of size, copied from host src (or filled with byte fill). */
static TcStatus
fold_array(TcGpuJoin *g, void **dst, size_t n, size_t size, const void *src, int fill,
		   TcError *err)
{
	TcStatus	st;

	if ((st = dev_alloc(g, dst, n * size, err)) != TC_OK)
		return st;
	if (src)
		CHECK(cudaMemcpy(*dst, src, n * size, cudaMemcpyHostToDevice));
	else
		CHECK(cudaMemset(*dst, fill, n * size));
	return TC_OK;
}

/*
 * Whether the k nearest's arrays (m points, k slots each, and the
 * neighbours' ids) fit a quarter of the GPU memory left to the join, and
 * the host's copy of the lists could be made (the caller frees it): else
 * the pairs go to the host, as they would without the fold.
 */
static bool
nearest_fits(TcGpuJoin *g, TcDeviceFold *f, size_t m)
{
	size_t		bytes = m * (2 * sizeof(int) + sizeof(double)) +
		m * (size_t) f->k * (sizeof(double) + sizeof(long long)) +
		(size_t) (f->ids_n > 0 ? f->ids_n : 1) * sizeof(long long);
	size_t		free_b = 0,
				total_b = 0;

	if (f->k < 1 || f->k > TC_FOLD_MAX_K)
		return false;
	if (g->limit > 0 && bytes > (g->limit > g->used ? g->limit - g->used : 0) / 4)
		return false;
	if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || bytes > free_b / 4)
		return false;
	/* a join run again (tcjoin.gpu_full = wait) makes them again */
	return tc_fold_lists_make(f, m);
}

TcStatus
fold_begin(TcGpuJoin *g, int64_t n, bool two, TcError *err)
{
	TcDeviceFold *f = g->sink ? g->sink->fold : NULL;
	TcStatus	st = TC_OK;
	size_t		m = (size_t) (n > 0 ? n : 1);

	if (f == NULL || f->n != n)
		return TC_OK;
	/* two sets fold only a's k nearest; a self-join's k nearest take both ends */
	if (f->kind == TC_FOLD_NEAREST ? f->both == two || !nearest_fits(g, f, m) : two)
		return TC_OK;
	g->fold = f;
	f->folded = false;
	switch (f->kind)
	{
		case TC_FOLD_COUNT:
			break;
		case TC_FOLD_DEGREES:
			st = fold_array(g, (void **) &g->f_deg, m, sizeof(long long), NULL, 0, err);
			break;
		case TC_FOLD_UNION:
			st = fold_array(g, (void **) &g->f_parent, m, sizeof(long long), f->parent, 0, err);
			break;
		case TC_FOLD_DBSCAN_LINKS:
			if ((st = fold_array(g, (void **) &g->f_parent, m, sizeof(long long), f->parent, 0,
								 err)) == TC_OK &&
				(st = fold_array(g, (void **) &g->f_core, m, 1, f->core, 0, err)) == TC_OK)
				st = fold_array(g, (void **) &g->f_key, m, sizeof(long long), NULL, 0xff, err);
			break;
		case TC_FOLD_DBSCAN_TIES:
			if ((st = fold_array(g, (void **) &g->f_core, m, 1, f->core, 0, err)) == TC_OK &&
				(st = fold_array(g, (void **) &g->f_key, m, sizeof(long long), f->best_key, 0,
								 err)) == TC_OK &&
				(st = fold_array(g, (void **) &g->f_ids, m, sizeof(long long), f->ids, 0,
								 err)) == TC_OK)
				st = fold_array(g, (void **) &g->f_best, m, sizeof(long long), NULL, 0xff, err);
			break;
		case TC_FOLD_NEAREST:
			if ((st = fold_array(g, (void **) &g->f_len, m, sizeof(int), NULL, 0, err)) == TC_OK &&
				(st = fold_array(g, (void **) &g->f_lock, m, sizeof(int), NULL, 0, err)) == TC_OK &&
				/* NaN until full: a stale read of it then drops nothing (every comparison false) */
				(st = fold_array(g, (void **) &g->f_worst, m, sizeof(double), NULL, 0xff, err)) == TC_OK &&
				(st = fold_array(g, (void **) &g->f_ndist, m * (size_t) f->k, sizeof(double), NULL, 0,
								 err)) == TC_OK &&
				(st = fold_array(g, (void **) &g->f_nwho, m * (size_t) f->k, sizeof(long long), NULL,
								 0, err)) == TC_OK)
				st = fold_array(g, (void **) &g->f_ids, (size_t) (f->ids_n > 0 ? f->ids_n : 1),
								sizeof(long long), f->ids_n > 0 ? f->ids : NULL, 0, err);
			break;
	}
	if (st != TC_OK)
		return st;
	/* the fills ran on the default stream, which the join's streams do not wait for */
	CHECK(cudaStreamSynchronize(0));
	return TC_OK;
}

TcStatus
fold_pairs(TcGpuJoin *g, cudaStream_t s, const PairDev *d_pairs, unsigned int count,
		   TcJoinStats *stats, TcError *err)
{
	stats->pairs += count;
	if (count == 0 || g->fold->kind == TC_FOLD_COUNT)
		return TC_OK;
	if (g->fold->kind == TC_FOLD_NEAREST)
	{
		nearest_kernel<<<(count + FOLD_THREADS - 1) / FOLD_THREADS, FOLD_THREADS, 0, s>>>
			(d_pairs, count, nearest_dev(g), g->fold->both);
		CHECK(cudaGetLastError());
		return TC_OK;
	}
	fold_kernel<<<(count + FOLD_THREADS - 1) / FOLD_THREADS, FOLD_THREADS, 0, s>>>
		(d_pairs, count, (int) g->fold->kind, g->f_deg, g->f_parent, g->f_core, g->f_key,
		 g->f_best, g->f_ids);
	CHECK(cudaGetLastError());
	return TC_OK;
}

TcStatus
fold_end(TcGpuJoin *g, TcError *err)
{
	TcDeviceFold *f = g->fold;
	size_t		m;

	if (f == NULL)
		return TC_OK;
	m = (size_t) (f->n > 0 ? f->n : 1);
	for (int i = 0; i < g->nstreams; i++)
		CHECK(cudaStreamSynchronize(g->stream[i]));
	/* through the pinned ring: a plain copy into pageable memory is a fraction as fast */
	if (f->n > 0)
	{
		cudaStream_t s0 = g->stream[0];
		const TcSink *sink = g->sink;
		TcStatus	st = TC_OK;

		switch (f->kind)
		{
			case TC_FOLD_COUNT:
				break;
			case TC_FOLD_DEGREES:
				st = download(g, f->deg, g->f_deg, m * sizeof(long long), s0, sink, err);
				break;
			case TC_FOLD_UNION:
				st = download(g, f->parent, g->f_parent, m * sizeof(long long), s0, sink, err);
				break;
			case TC_FOLD_DBSCAN_LINKS:
				if ((st = download(g, f->parent, g->f_parent, m * sizeof(long long), s0, sink, err)) == TC_OK)
					st = download(g, f->best_key, g->f_key, m * sizeof(long long), s0, sink, err);
				break;
			case TC_FOLD_DBSCAN_TIES:
				st = download(g, f->best, g->f_best, m * sizeof(long long), s0, sink, err);
				break;
			case TC_FOLD_NEAREST:
				nearest_sort_kernel<<<(unsigned int) ((m + FOLD_THREADS - 1) / FOLD_THREADS),
					FOLD_THREADS, 0, s0>>>((long long) f->n, nearest_dev(g));
				CHECK(cudaGetLastError());
				if ((st = download(g, f->nb_len, g->f_len, m * sizeof(int), s0, sink, err)) == TC_OK &&
					(st = download(g, f->nb_dist, g->f_ndist, m * (size_t) f->k * sizeof(double), s0,
								   sink, err)) == TC_OK)
					st = download(g, f->nb_who, g->f_nwho, m * (size_t) f->k * sizeof(long long), s0,
								  sink, err);
				break;
		}
		if (st != TC_OK)
			return st;
	}
	f->folded = true;
	return TC_OK;
}
