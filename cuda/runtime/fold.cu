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

TcStatus
fold_begin(TcGpuJoin *g, int64_t n, TcError *err)
{
	TcDeviceFold *f = g->sink ? g->sink->fold : NULL;
	TcStatus	st = TC_OK;
	size_t		m = (size_t) (n > 0 ? n : 1);

	if (f == NULL || f->n != n)
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
	}
	return st;
}

TcStatus
fold_pairs(TcGpuJoin *g, cudaStream_t s, const PairDev *d_pairs, unsigned int count,
		   TcJoinStats *stats, TcError *err)
{
	stats->pairs += count;
	if (count == 0 || g->fold->kind == TC_FOLD_COUNT)
		return TC_OK;
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
	if (f->n > 0)
		switch (f->kind)
		{
			case TC_FOLD_COUNT:
				break;
			case TC_FOLD_DEGREES:
				CHECK(cudaMemcpy(f->deg, g->f_deg, m * sizeof(long long), cudaMemcpyDeviceToHost));
				break;
			case TC_FOLD_UNION:
				CHECK(cudaMemcpy(f->parent, g->f_parent, m * sizeof(long long),
								 cudaMemcpyDeviceToHost));
				break;
			case TC_FOLD_DBSCAN_LINKS:
				CHECK(cudaMemcpy(f->parent, g->f_parent, m * sizeof(long long),
								 cudaMemcpyDeviceToHost));
				CHECK(cudaMemcpy(f->best_key, g->f_key, m * sizeof(long long),
								 cudaMemcpyDeviceToHost));
				break;
			case TC_FOLD_DBSCAN_TIES:
				CHECK(cudaMemcpy(f->best, g->f_best, m * sizeof(long long), cudaMemcpyDeviceToHost));
				break;
		}
	f->folded = true;
	return TC_OK;
}
