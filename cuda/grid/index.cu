/*
 * index.cu
 *		The grid join's index and work items, built on the device.
 *
 * Index: cell keys from the engine's grid plan (the same tc_cell_coord as
 * the CPU), a radix sort of (key, point), the points gathered into cell
 * order as float8, non-empty cells by run-length encoding.
 *
 * Work items are up to 32 query points of one cell (of the query set,
 * which is the index itself in a self-join); each gets an upper bound on
 * its pairs (queries x candidates), and items are sorted by that bound,
 * largest first (sort by workload).  The candidates of each cell's
 * neighbour cells come from kernels.cu, which holds the neighbour walk.
 */
#include <cuda_runtime.h>
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdint>

#include "grid.h"

/* ---------- the index ---------- */

/* Cell key of every point. */
template <typename T>
__global__ void
keys_kernel(const T *raw, unsigned int n, GridDev g, unsigned long long *keys,
			unsigned int *idx)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	unsigned long long key = 0;

	for (int j = 0; j < g.p.k; j++)
		key += (unsigned long long) tc_cell_coord(&g.p, j, (double) raw[(size_t) i * g.d + g.p.dims[j]]) *
			g.p.stride[j];
	keys[i] = key;
	idx[i] = i;
}

/* Points in cell order, as float8. */
template <typename T>
__global__ void
gather_kernel(const T *raw, unsigned int n, int d, const unsigned int *idx, double *pts)
{
	size_t		t = (size_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (t >= (size_t) n * d)
		return;
	size_t		i = t / d;
	int			k = (int) (t % d);

	pts[t] = (double) raw[(size_t) idx[i] * d + k];
}

template <typename T>
static TcStatus
build_index(TcGpuJoin *g, const TcPoints *a, GridDev &gd, const T *d_raw,
			unsigned int **d_perm_out, TcError *err)
{
	unsigned int n = (unsigned int) a->n;
	unsigned long long *d_keys,
			   *d_keys2;
	unsigned int *d_idx,
			   *d_idx2,
			   *d_counts,
			   *d_nruns;
	void	   *d_tmp = NULL;
	size_t		tmp_bytes = 0,
				need;
	int			end_bit = 1;
	unsigned int ncells = 0;
	double	   *d_pts;
	unsigned long long *d_cell_key;
	unsigned int *d_cell_start;
	TcStatus	st;
	unsigned long long maxkey = 1;
	cudaStream_t s = g->stream[0];

	for (int j = 0; j < gd.p.k; j++)
		maxkey *= (unsigned long long) gd.p.ncell[j];
	while (end_bit < 64 && (maxkey >> end_bit) != 0)
		end_bit++;

	if ((st = dev_alloc(g, (void **) &d_keys, sizeof(*d_keys) * n, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_keys2, sizeof(*d_keys2) * n, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_idx, sizeof(*d_idx) * n, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_idx2, sizeof(*d_idx2) * n, err)) != TC_OK)
		return st;
	keys_kernel<T><<<(n + 255) / 256, 256, 0, s>>>(d_raw, n, gd, d_keys, d_idx);
	CHECK(cudaGetLastError());

	CHECK(cub::DeviceRadixSort::SortPairs(NULL, tmp_bytes, d_keys, d_keys2, d_idx, d_idx2,
										  n, 0, end_bit, s));
	need = tmp_bytes;
	CHECK(cub::DeviceRunLengthEncode::Encode(NULL, tmp_bytes, d_keys2, d_keys, d_idx,
											 d_idx + 1, n, s));
	need = std::max(need, tmp_bytes);
	CHECK(cub::DeviceScan::ExclusiveSum(NULL, tmp_bytes, d_idx, d_idx, n + 1, s));
	need = std::max(need, tmp_bytes);
	if ((st = dev_alloc(g, &d_tmp, need, err)) != TC_OK)
		return st;
	tmp_bytes = need;
	CHECK(cub::DeviceRadixSort::SortPairs(d_tmp, tmp_bytes, d_keys, d_keys2, d_idx, d_idx2,
										  n, 0, end_bit, s));

	/* Points into cell order, then cells: unique keys and their counts. */
	if ((st = dev_alloc(g, (void **) &d_pts, sizeof(double) * (size_t) n * a->d, err)) != TC_OK)
		return st;
	{
		size_t		total = (size_t) n * a->d;

		gather_kernel<T><<<(unsigned int) ((total + 255) / 256), 256, 0, s>>>(d_raw, n, a->d, d_idx2, d_pts);
		CHECK(cudaGetLastError());
	}
	if ((st = dev_alloc(g, (void **) &d_counts, sizeof(unsigned int) * (n + 1), err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_nruns, sizeof(unsigned int), err)) != TC_OK)
		return st;
	tmp_bytes = need;
	CHECK(cub::DeviceRunLengthEncode::Encode(d_tmp, tmp_bytes, d_keys2, d_keys, d_counts,
											 d_nruns, n, s));
	CHECK(cudaMemcpyAsync(&ncells, d_nruns, sizeof(unsigned int), cudaMemcpyDeviceToHost, s));
	if ((st = gpu_sync(g, s, err)) != TC_OK)
		return st;
	CHECK(cudaMemsetAsync(d_counts + ncells, 0, sizeof(unsigned int), s));
	tmp_bytes = need;
	CHECK(cub::DeviceScan::ExclusiveSum(d_tmp, tmp_bytes, d_counts, d_counts, ncells + 1, s));

	d_cell_key = d_keys;		/* first ncells entries */
	d_cell_start = d_counts;	/* ncells + 1 entries */
	dev_free(g, d_keys2);
	dev_free(g, d_idx);
	dev_free(g, d_tmp);
	dev_free(g, d_nruns);

	gd.pts = d_pts;
	gd.cell_key = d_cell_key;
	gd.cell_start = d_cell_start;
	gd.ncells = ncells;
	*d_perm_out = d_idx2;
	return TC_OK;
}

TcStatus
grid_build_index(TcGpuJoin *g, const TcPoints *a, GridDev *gd, const void *d_raw,
				 unsigned int **d_perm, TcError *err)
{
	return a->type == TC_FLOAT4 ?
		build_index<float>(g, a, *gd, (const float *) d_raw, d_perm, err) :
		build_index<double>(g, a, *gd, (const double *) d_raw, d_perm, err);
}

/* ---------- work items ---------- */

/*
 * Queries per item, so that no item's bound exceeds max_bound.  A query
 * cell of two sets without candidates gets no items: they would find
 * nothing.
 */
__global__ void
cell_items_kernel(GridDev g, unsigned long long max_bound, const unsigned long long *per_query,
				  unsigned int *nq_out, unsigned int *nitems)
{
	unsigned int c = blockIdx.x * blockDim.x + threadIdx.x;

	if (c >= g.qncells)
		return;
	unsigned int cnt = g.qcell_start[c + 1] - g.qcell_start[c];
	unsigned long long nq = per_query[c] > 0 ? max_bound / per_query[c] : WARP;

	nq = nq > WARP ? WARP : nq < 1 ? 1 : nq;
	nq_out[c] = (unsigned int) nq;
	nitems[c] = g.two && per_query[c] == 0 ? 0 : (cnt + (unsigned int) nq - 1) / (unsigned int) nq;
}

__global__ void
fill_items_kernel(GridDev g, const unsigned long long *nbr, const unsigned int *nq_in,
				  const unsigned int *item_off, unsigned long long *items,
				  unsigned char *item_nq, unsigned long long *bounds)
{
	unsigned int c = blockIdx.x * blockDim.x + threadIdx.x;

	if (c >= g.qncells || (g.two && nbr[c] == 0))
		return;
	unsigned int cs = g.qcell_start[c],
				ce = g.qcell_start[c + 1];
	unsigned int nq = nq_in[c];
	unsigned int out = item_off[c];

	for (unsigned int q0 = cs; q0 < ce; q0 += nq, out++)
	{
		unsigned int m = min(nq, ce - q0);
		/* a self-join's query also meets the rest of its own cell */
		unsigned long long own = g.two ? 0 : ce - q0 - 1;

		items[out] = ((unsigned long long) c << 32) | q0;
		item_nq[out] = (unsigned char) m;
		bounds[out] = (unsigned long long) m * (own + nbr[c]);
	}
}

TcStatus
grid_bound_totals(TcGpuJoin *g, unsigned long long *per_query, unsigned long long *cell_bound,
				  unsigned int ncells, cudaStream_t s, unsigned long long *max_pq,
				  unsigned long long *total_bound, TcError *err)
{
	void	   *d_tmp;
	size_t		tmp_bytes = 0,
				tmp2 = 0;
	TcStatus	st;

	CHECK(cub::DeviceReduce::Max(NULL, tmp_bytes, per_query, per_query + ncells, ncells, s));
	CHECK(cub::DeviceReduce::Sum(NULL, tmp2, cell_bound, cell_bound + ncells, ncells, s));
	tmp_bytes = std::max(tmp_bytes, tmp2);
	if ((st = dev_alloc(g, &d_tmp, tmp_bytes, err)) != TC_OK)
		return st;
	CHECK(cub::DeviceReduce::Max(d_tmp, tmp_bytes, per_query, per_query + ncells, ncells, s));
	CHECK(cub::DeviceReduce::Sum(d_tmp, tmp_bytes, cell_bound, cell_bound + ncells, ncells, s));
	CHECK(cudaMemcpyAsync(max_pq, per_query + ncells, sizeof(*max_pq), cudaMemcpyDeviceToHost, s));
	CHECK(cudaMemcpyAsync(total_bound, cell_bound + ncells, sizeof(*total_bound), cudaMemcpyDeviceToHost, s));
	if ((st = gpu_sync(g, s, err)) != TC_OK)
		return st;
	dev_free(g, d_tmp);
	return TC_OK;
}

TcStatus
grid_count_items(TcGpuJoin *g, const GridDev &gd, unsigned long long max_bound,
				 const unsigned long long *per_query, unsigned int *nq, unsigned int *item_off,
				 cudaStream_t s, unsigned int *nitems, TcError *err)
{
	unsigned int ncells = gd.qncells;
	unsigned int last_off = 0,
				last_cnt = 0;
	void	   *d_tmp;
	size_t		tmp_bytes = 0;
	TcStatus	st;

	cell_items_kernel<<<(ncells + 255) / 256, 256, 0, s>>>(gd, max_bound, per_query, nq, item_off);
	CHECK(cudaGetLastError());
	/* item_off holds counts until the scan: keep the last one */
	CHECK(cudaMemcpyAsync(&last_cnt, item_off + ncells - 1, sizeof(unsigned int), cudaMemcpyDeviceToHost, s));
	CHECK(cub::DeviceScan::ExclusiveSum(NULL, tmp_bytes, item_off, item_off, ncells, s));
	if ((st = dev_alloc(g, &d_tmp, tmp_bytes, err)) != TC_OK)
		return st;
	CHECK(cub::DeviceScan::ExclusiveSum(d_tmp, tmp_bytes, item_off, item_off, ncells, s));
	CHECK(cudaMemcpyAsync(&last_off, item_off + ncells - 1, sizeof(unsigned int), cudaMemcpyDeviceToHost, s));
	if ((st = gpu_sync(g, s, err)) != TC_OK)
		return st;
	dev_free(g, d_tmp);
	*nitems = last_off + last_cnt;
	return TC_OK;
}

TcStatus
grid_sort_items(TcGpuJoin *g, const GridDev &gd, const unsigned long long *nbr,
				const unsigned int *nq, const unsigned int *item_off, unsigned int nitems,
				cudaStream_t s, unsigned long long **d_items_out,
				unsigned char **d_item_nq_out, unsigned long long **d_bounds_out,
				TcError *err)
{
	unsigned int ncells = gd.qncells;
	unsigned long long *d_items,
			   *d_items2,
			   *d_bounds,
			   *d_bounds2;
	unsigned char *d_item_nq,
			   *d_item_nq_tmp;
	void	   *d_tmp;
	size_t		tmp_bytes = 0,
				tmp2 = 0;
	TcStatus	st;

	if ((st = dev_alloc(g, (void **) &d_items, sizeof(*d_items) * nitems, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_items2, sizeof(*d_items2) * nitems, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_bounds, sizeof(*d_bounds) * nitems, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_bounds2, sizeof(*d_bounds2) * nitems, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_item_nq, nitems, err)) != TC_OK)
		return st;
	if ((st = dev_alloc(g, (void **) &d_item_nq_tmp, nitems, err)) != TC_OK)
		return st;
	fill_items_kernel<<<(ncells + 255) / 256, 256, 0, s>>>(gd, nbr, nq, item_off, d_items,
															d_item_nq_tmp, d_bounds);
	CHECK(cudaGetLastError());
	/* Sort items by bound, largest first; the queries count follows. */
	CHECK(cub::DeviceRadixSort::SortPairsDescending(NULL, tmp_bytes, d_bounds, d_bounds2,
													d_items, d_items2, nitems, 0, 64, s));
	CHECK(cub::DeviceRadixSort::SortPairsDescending(NULL, tmp2, d_bounds, d_bounds2,
													d_item_nq_tmp, d_item_nq, nitems, 0, 64, s));
	if ((st = dev_alloc(g, &d_tmp, std::max(tmp_bytes, tmp2), err)) != TC_OK)
		return st;
	tmp_bytes = std::max(tmp_bytes, tmp2);
	CHECK(cub::DeviceRadixSort::SortPairsDescending(d_tmp, tmp_bytes, d_bounds, d_bounds2,
													d_items, d_items2, nitems, 0, 64, s));
	tmp_bytes = std::max(tmp_bytes, tmp2);
	CHECK(cub::DeviceRadixSort::SortPairsDescending(d_tmp, tmp_bytes, d_bounds, d_bounds2,
													d_item_nq_tmp, d_item_nq, nitems, 0, 64, s));
	if ((st = gpu_sync(g, s, err)) != TC_OK)
		return st;
	dev_free(g, d_tmp);
	dev_free(g, d_item_nq_tmp);
	dev_free(g, d_items);
	dev_free(g, d_bounds);
	*d_items_out = d_items2;
	*d_item_nq_out = d_item_nq;
	*d_bounds_out = d_bounds2;
	return TC_OK;
}
