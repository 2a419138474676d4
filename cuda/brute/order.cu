/*
 * order.cu
 *		The brute force's point order and tile bounds: recursive bisection,
 *		so that each 128-point tile is compact, and per tile a centre and a
 *		radius, for pruning tile pairs (prune.cu).
 */
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "brute.h"
#include "order_split.h"

/* ---------- order and tile pruning ---------- */

/*
 * Points are ordered so that tiles are compact: recursive bisection, each
 * segment sorted along the line through two far-apart points of a sample
 * (a cheap stand-in for its principal axis), halving segments down to one
 * tile.  Any order is correct; a compact one lets whole tile pairs go.
 */
constexpr int DIR_SAMPLE = 256;
constexpr int DIR_THREADS = 512;

/*
 * Per segment: a direction, p2 - p1, of two far-apart sampled points (p1
 * the farthest sample from the segment's first point, p2 the farthest from
 * p1).  A warp per sampled point reads its row coalesced.
 */
template <typename T>
__global__ void
__launch_bounds__(DIR_THREADS)
dir_kernel(const T *x, const double *root, int d, const unsigned int *order, unsigned int n,
		   unsigned int seg, float *dir)
{
	__shared__ float s_d[DIR_SAMPLE];
	__shared__ unsigned int s_far;
	const int	lane = threadIdx.x % WARP;
	const int	warp = threadIdx.x / WARP;
	unsigned int s0 = blockIdx.x * seg;
	unsigned int len = min(seg, n - s0);
	unsigned int stride = max(1u, len / DIR_SAMPLE);
	unsigned int from = order[s0];

	for (int round = 0; round < 2; round++)
	{
		for (int t = warp; t < DIR_SAMPLE; t += DIR_THREADS / WARP)
		{
			float		dd = -1.0f;

			if ((unsigned int) t * stride < len)
			{
				const size_t ra = order[s0 + t * stride];

				dd = 0.0f;
				for (int k = lane; k < d; k += WARP)
				{
					float		u = (float) (filter_coord(x, root, ra, d, k) -
											 filter_coord(x, root, from, d, k));

					dd += u * u;
				}
				for (int off = WARP / 2; off > 0; off /= 2)
					dd += __shfl_down_sync(FULL_MASK, dd, off);
			}
			if (lane == 0)
				s_d[t] = dd;
		}
		__syncthreads();
		if (warp == 0)
		{
			float		best = -2.0f;
			int			bt = 0;

			for (int t = lane; t < DIR_SAMPLE; t += WARP)
				if (s_d[t] > best)
				{
					best = s_d[t];
					bt = t;
				}
			for (int off = WARP / 2; off > 0; off /= 2)
			{
				float		ob = __shfl_down_sync(FULL_MASK, best, off);
				int			ot = __shfl_down_sync(FULL_MASK, bt, off);

				if (ob > best || (ob == best && ot < bt))
				{
					best = ob;
					bt = ot;
				}
			}
			if (lane == 0)
				s_far = order[s0 + (unsigned int) bt * stride];
		}
		__syncthreads();
		if (round == 0)
			from = s_far;		/* p1; the next round finds p2 */
		__syncthreads();
	}
	for (int k = threadIdx.x; k < d; k += blockDim.x)
		dir[(size_t) blockIdx.x * d + k] = (float) (filter_coord(x, root, s_far, d, k) -
													filter_coord(x, root, from, d, k));
}

/* Sort key of each position: its projection on its segment's direction. */
template <typename T>
__global__ void
proj_kernel(const T *x, const double *root, int d, const unsigned int *order, unsigned int n,
			unsigned int seg, const float *dir, unsigned int *key)
{
	unsigned int p = (unsigned int) (((size_t) blockIdx.x * blockDim.x + threadIdx.x) / WARP);
	int			lane = threadIdx.x % WARP;
	float		v = 0.0f;

	if (p >= n)
		return;
	const float *dv = dir + (size_t) (p / seg) * d;
	const size_t row = order[p];

	for (int k = lane; k < d; k += WARP)
		v += (float) filter_coord(x, root, row, d, k) * dv[k];
	for (int off = WARP / 2; off > 0; off /= 2)
		v += __shfl_down_sync(FULL_MASK, v, off);
	if (lane == 0)
	{
		unsigned int b = __float_as_uint(v);

		key[p] = (b & 0x80000000u) ? ~b : (b | 0x80000000u);	/* order-preserving */
	}
}

__global__ void
iota_kernel(unsigned int n, unsigned int *v)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] = i;
}

__global__ void
seg_offsets_kernel(unsigned int n, unsigned int seg, unsigned int nseg, unsigned int *off)
{
	unsigned int s = blockIdx.x * blockDim.x + threadIdx.x;

	if (s <= nseg)
		off[s] = (unsigned int) min((unsigned long long) s * seg, (unsigned long long) n);
}

/*
 * Each tile's centre (float8 mean of its points, in the centred frame) and
 * radius (the largest distance from it, rounded up), in float4 for the
 * pruning test: the centre rounded to float4 moves by at most
 * 2^-24 |centre|, which the radius absorbs.
 */
template <typename T>
__global__ void
bounds_kernel(const T *x, const double *root, int d, const double *c, const unsigned int *order,
			  unsigned int n, float *cen, float *rad)
{
	__shared__ double s_r[BT];
	unsigned int t0 = blockIdx.x * BT;
	unsigned int cnt = min((unsigned int) BT, n - t0);
	double		cn2 = 0.0;

	for (int k = threadIdx.x; k < d; k += blockDim.x)
	{
		double		m = 0.0;

		for (unsigned int i = 0; i < cnt; i++)
			m += filter_coord(x, root, order[t0 + i], d, k) - c[k];
		cen[(size_t) blockIdx.x * d + k] = (float) (m / (double) cnt);
	}
	__syncthreads();
	/* one point per thread: its distance to the centre as stored */
	{
		double		r2 = 0.0;

		if (threadIdx.x < cnt)
			for (int k = 0; k < d; k++)
			{
				double		u = (filter_coord(x, root, order[t0 + threadIdx.x], d, k) - c[k]) -
					(double) cen[(size_t) blockIdx.x * d + k];

				r2 += u * u;
			}
		s_r[threadIdx.x] = r2;
	}
	__syncthreads();
	if (threadIdx.x == 0)
	{
		double		m = 0.0;

		for (int t = 0; t < BT; t++)
			m = fmax(m, s_r[t]);
		for (int k = 0; k < d; k++)
			cn2 += (double) cen[(size_t) blockIdx.x * d + k] * (double) cen[(size_t) blockIdx.x * d + k];
		/*
		 * Roundings: the float8 sums, relative (d + 4) 2^-52; the centring
		 * fl(x - c), 2^-53 of |y| <= |centre| + radius.  Generously.
		 */
		rad[blockIdx.x] = nextafterf((float) (sqrt(m) * (1.0 + (double) (d + 8) * 0x1p-40) +
											  sqrt(cn2) * 0x1p-40 + 1e-300), INFINITY);
	}
}

/* ---------- host ---------- */

/*
 * share: several GPUs order the same whole set (the k-th, k < SHARE_SETS;
 * -1 alone): tc_order_split_round's rounds shared out, the other GPUs' ranges left
 * to gather (pp; base: the set's first row in the order given back).
 */
template <typename T>
static TcStatus
order_as(TcGpuJoin *g, const T *x, const double *root, unsigned int n, int d, unsigned int ntiles,
		 unsigned int seg0, int share, size_t base, unsigned int **order, BrutePrepared *pp,
		 TcJoinStats *stats, TcError *err)
{
	cudaStream_t s = g->stream[0];
	unsigned int *d_order,
			   *d_order2,
			   *d_key,
			   *d_key2,
			   *d_off;
	float	   *d_dir;
	void	   *d_tmp = NULL;
	size_t		tmp_have = 0;
	unsigned int seg_tiles = 1,
				split = 0,
				lo = 0,
				hi = n;			/* the rows this GPU bisects: all, until the split */
	TcStatus	st;

	while (seg_tiles < ntiles)
		seg_tiles *= 2;
	if (seg0 > 0)
		seg_tiles = seg0;
	if (share >= 0 && seg0 == 0 && g->share != NULL && g->share->ngpus > 1)
		split = tc_order_split_round(n, seg_tiles, g->share->ngpus, BT);
	if ((st = dev_alloc(g, (void **) &d_order, sizeof(unsigned int) * n, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_order2, sizeof(unsigned int) * n, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_key, sizeof(unsigned int) * n, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_key2, sizeof(unsigned int) * n, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_off, sizeof(unsigned int) * (ntiles + 2), err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_dir, sizeof(float) * (size_t) d * (ntiles / 2 + 1), err)) != TC_OK)
		return st;
	double		t_order = tc_now();

	iota_kernel<<<(n + 255) / 256, 256, 0, s>>>(n, d_order);
	CHECK(cudaGetLastError());
	for (; seg_tiles > 1; seg_tiles /= 2)
	{
		unsigned int seg = seg_tiles * BT;
		unsigned int nseg,
					m;
		size_t		need = 0;

		if (seg_tiles == split)
			tc_order_share_rows(n, seg, g->share_index, g->share->ngpus, &lo, &hi);
		/* rows [lo, hi): lo a multiple of seg, so the segments are the whole set's */
		m = hi - lo;
		nseg = (m + seg - 1) / seg;
		if (m == 0)
			continue;
		dir_kernel<T><<<nseg, DIR_THREADS, 0, s>>>(x, root, d, d_order + lo, m, seg, d_dir);
		CHECK(cudaGetLastError());
		proj_kernel<T><<<(unsigned int) (((size_t) m * WARP + 255) / 256), 256, 0, s>>>(
			x, root, d, d_order + lo, m, seg, d_dir, d_key + lo);
		CHECK(cudaGetLastError());
		seg_offsets_kernel<<<(nseg + 1 + 255) / 256, 256, 0, s>>>(m, seg, nseg, d_off);
		CHECK(cudaGetLastError());
		CHECK(cub::DeviceSegmentedRadixSort::SortPairs(NULL, need, d_key + lo, d_key2 + lo, d_order + lo,
													   d_order2 + lo, (int) m, (int) nseg, d_off,
													   d_off + 1, 0, 32, s));
		if (need > tmp_have)
		{
			if (d_tmp)
				dev_free(g, d_tmp);
			if ((st = dev_alloc(g, &d_tmp, need, err)) != TC_OK)
				return st;
			tmp_have = need;
		}
		CHECK(cub::DeviceSegmentedRadixSort::SortPairs(d_tmp, need, d_key + lo, d_key2 + lo,
													   d_order + lo, d_order2 + lo, (int) m, (int) nseg,
													   d_off, d_off + 1, 0, 32, s));
		std::swap(d_order, d_order2);
		/* a round at a time: a cancel then waits for one round's sorts, not all */
		if ((st = gpu_sync(g, s, err)) != TC_OK)
			return st;
	}
	if ((st = gpu_sync(g, s, err)) != TC_OK)
		return st;
	if (split > 0)
	{
		size_t	   *bounds = pp->bounds[pp->gathers];
		unsigned int l,
					h;

		for (int i = 0; i < g->share->ngpus; i++)
		{
			tc_order_share_rows(n, (uint64_t) split * BT, i, g->share->ngpus, &l, &h);
			bounds[i] = sizeof(unsigned int) * (base + l);
			bounds[i + 1] = sizeof(unsigned int) * (base + h);
		}
		pp->key[pp->gathers++] = share;
	}
	stats->gpu_order_seconds += tc_now() - t_order;
	if (d_tmp)
		dev_free(g, d_tmp);
	dev_free(g, d_order2);
	dev_free(g, d_key);
	dev_free(g, d_key2);
	dev_free(g, d_off);
	dev_free(g, d_dir);
	*order = d_order;
	return TC_OK;
}

__global__ void
offset_kernel(const unsigned int *src, unsigned int n, unsigned int base, unsigned int *dst)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		dst[i] = src[i] + base;
}

/*
 * Two sets' rows, [0, part) and [part, n): each ordered on its own, from
 * one segment (a tile never mixes them, and each set's tiles are as
 * compact as its size allows), into one order.
 */
template <typename T>
static TcStatus
order_parts(TcGpuJoin *g, const T *x, const double *root, unsigned int n, int d, unsigned int part,
			bool share, unsigned int **order, BrutePrepared *pp, TcJoinStats *stats, TcError *err)
{
	const unsigned int n2 = n - part;
	unsigned int *o1,
			   *o2,
			   *d_order;
	cudaStream_t s = g->stream[0];
	TcStatus	st;

	/* each set's ranges gathered later into the one order, b's at part */
	if ((st = order_as<T>(g, x, root, part, d, part / BT, 0, share ? 0 : -1, 0, &o1, pp, stats,
						  err)) != TC_OK ||
		(st = order_as<T>(g, x + (size_t) part * d, root ? root + part : NULL, n2, d,
						  (n2 + BT - 1) / BT, 0, share ? 1 : -1, part, &o2, pp, stats, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_order, sizeof(unsigned int) * n, err)) != TC_OK)
		return st;
	CHECK(cudaMemcpyAsync(d_order, o1, sizeof(unsigned int) * part, cudaMemcpyDeviceToDevice, s));
	offset_kernel<<<(n2 + 255) / 256, 256, 0, s>>>(o2, n2, part, d_order + part);
	CHECK(cudaGetLastError());
	if ((st = gpu_sync(g, s, err)) != TC_OK)
		return st;
	dev_free(g, o1);
	dev_free(g, o2);
	*order = d_order;
	return TC_OK;
}

/*
 * The order of the n points at x (position -> index) into *order, by
 * recursive bisection down to single tiles, from segments of seg0 tiles
 * (0: all the points), so that segments given (two blocks of a streamed
 * join) never share a tile.  part > 0 (a multiple of BT, below n): two
 * sets, rows [0, part) and the rest, each ordered alone (seg0 unused).
 * share: several GPUs order the same whole sets, each bisecting a share
 * of the segments (order_as); the others' ranges are left in pp for
 * share_gather, once every buffer is allocated (brute_prepare_finish).
 */
TcStatus
brute_order(TcGpuJoin *g, TcElemType type, const void *x, const double *root, unsigned int n, int d,
			unsigned int ntiles, unsigned int seg0, unsigned int part, bool share,
			unsigned int **order, BrutePrepared *pp, TcJoinStats *stats, TcError *err)
{
	const int	k = share ? 0 : -1;

	pp->gathers = 0;
	if (part > 0)
		return type == TC_FLOAT4 ?
			order_parts<float>(g, (const float *) x, root, n, d, part, share, order, pp, stats, err) :
			order_parts<double>(g, (const double *) x, root, n, d, part, share, order, pp, stats, err);
	return type == TC_FLOAT4 ?
		order_as<float>(g, (const float *) x, root, n, d, ntiles, seg0, k, 0, order, pp, stats, err) :
		order_as<double>(g, (const double *) x, root, n, d, ntiles, seg0, k, 0, order, pp, stats, err);
}

/* Tile bounds, for pruning tile pairs: ntiles centres (d floats each, at d_cen) and radii. */
TcStatus
brute_tile_bounds(TcGpuJoin *g, TcElemType type, const void *x, const double *root, int d,
				  const double *d_c, const unsigned int *order, unsigned int n, unsigned int ntiles,
				  float *d_cen, float *d_rad, TcError *err)
{
	cudaStream_t s = g->stream[0];

	if (type == TC_FLOAT4)
		bounds_kernel<float><<<ntiles, BT, 0, s>>>((const float *) x, root, d, d_c, order, n, d_cen, d_rad);
	else
		bounds_kernel<double><<<ntiles, BT, 0, s>>>((const double *) x, root, d, d_c, order, n, d_cen,
													 d_rad);
	CHECK(cudaGetLastError());
	return TC_OK;
}
