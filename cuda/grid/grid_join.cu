/*
 * gpu_grid.cu
 *		Exact epsilon-grid self-join on the GPU, FP64 on CUDA cores.
 *
 * Index, built on the device: cell keys from the engine's grid plan (the
 * same tc_cell_coord as the CPU), a radix sort of (key, point), the points
 * gathered into cell order as float8, non-empty cells by run-length
 * encoding.  Work items are up to 32 query points of one cell; each gets an
 * upper bound on its pairs (queries x candidates), and items are sorted by
 * that bound, largest first (sort by workload).  Warps take items from an
 * atomic counter (the work queue).
 *
 * A warp's lanes hold the item's queries (in groups of lanes when it has
 * fewer than 32, each group striding over the candidates) and walk them:
 * the rest of their own cell (j > q), the next cell of the row, and the
 * lexicographically positive neighbour rows, each cell pair once.  The
 * distance is the contract's: __dsub_rn/__dmul_rn/__dadd_rn in index order,
 * so no multiply-add is contracted and every sum and dist equals the CPU's
 * bit for bit; the sum stops early once past thr, which cannot change an
 * answer (partial sums only grow).
 *
 * Results: each warp stages hits in shared memory and appends them with one
 * atomic per STAGE pairs into a bounded device buffer, as TcPair records
 * with the caller's indices, so the host hands them to the sink as they are.  Batches are ranges
 * of items whose bounds, scaled by the hit rate seen so far, fit the
 * buffer; a batch that overflows anyway is dropped and rerun in halves, so
 * no pair is ever lost, and no single item can overflow (its bound is at
 * most half the buffer).  Two streams alternate: while one batch computes,
 * the previous one is copied to pinned memory and handed to the sink.
 */
#include <cuda_runtime.h>
#include <cub/cub.cuh>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "batches.h"

#define BLOCK_THREADS 256
#define WARPS_PER_BLOCK (BLOCK_THREADS / WARP)
#define MAX_OFFS ((TC_GRID_MAX_ROWS - 1) / 2)	/* positive rows, k = 6 */

/* Default result buffer (pairs), halved until it fits the memory limit. */
#define DEFAULT_CAPACITY (8u << 20)
#define MIN_CAPACITY (1u << 16)	/* with a memory limit; tests may go lower */
/* Candidates per batch at most, so a cancel is seen within milliseconds. */
#define MAX_BATCH_CANDIDATES 4e9

__constant__ int8_t c_offs[MAX_OFFS][TC_GRID_MAX_DIMS];
__constant__ long long c_delta[MAX_OFFS];

struct GridDev
{
	TcGridPlan	p;				/* the engine's plan, as the CPU bins */
	const double *pts;			/* n x d, cell order */
	const unsigned int *perm;	/* cell order -> caller's index */
	int			d;
	int			noffs;
	const unsigned long long *cell_key;
	const unsigned int *cell_start; /* ncells + 1 */
	unsigned int ncells;
	double		thr;
	/* Tensor-core filter: margin factor and absolute term (see below). */
	double		tc_rel;
	double		tc_abs;
};

struct BatchDev
{
	const unsigned long long *items;	/* (cell << 32) | (first query) */
	const unsigned char *item_nq;		/* queries per item */
	unsigned int lo;
	unsigned int hi;
	unsigned int *queue;
	PairDev    *pairs;
	unsigned int capacity;
	unsigned int *count;
	unsigned int *overflow;
	unsigned long long *candidates;
	unsigned long long *rechecked;	/* pairs the tensor-core filter passed */
	const volatile int *abort;
};

/* ---------- device code ---------- */

/*
 * The contract's sum, in float8, index order, nothing contracted, with an
 * early exit once past thr (partial sums only grow, so it cannot change the
 * answer); true iff s <= thr.  T: float or double coordinates, widened
 * exactly.
 */
template <typename T>
__device__ __forceinline__ bool
contract_within(const T *a, const T *b, int d, double thr, double *s_out)
{
	double		s = 0.0;
	int			k = 0;

	for (; k + 8 <= d; k += 8)
	{
#pragma unroll
		for (int u = 0; u < 8; u++)
		{
			double		t = __dsub_rn((double) a[k + u], (double) b[k + u]);

			s = __dadd_rn(s, __dmul_rn(t, t));
		}
		if (s > thr)
			return false;
	}
	for (; k < d; k++)
	{
		double		t = __dsub_rn((double) a[k], (double) b[k]);

		s = __dadd_rn(s, __dmul_rn(t, t));
	}
	*s_out = s;
	return s <= thr;
}

__device__ __forceinline__ unsigned int
lower_bound_key(const unsigned long long *keys, unsigned int n, unsigned long long key)
{
	unsigned int lo = 0,
				hi = n;

	while (lo < hi)
	{
		unsigned int mid = lo + (hi - lo) / 2;

		if (keys[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Call f(p) for every cell p a cell c meets after itself: the next cell of
 * its row and the cells of the lexicographically positive neighbour rows,
 * so that each pair of adjacent cells is visited once.
 */
template <typename F>
__device__ __forceinline__ void
for_each_later_neighbour(const GridDev &g, unsigned int c, F f)
{
	unsigned long long key = g.cell_key[c];
	long long	cc[TC_GRID_MAX_DIMS];
	const int	last = g.p.k - 1;

	if (g.p.k == 0)
		return;
	for (int j = 0; j < g.p.k; j++)
		cc[j] = (long long) ((key / g.p.stride[j]) % (unsigned long long) g.p.ncell[j]);
	if (cc[last] + 1 < g.p.ncell[last] && c + 1 < g.ncells && g.cell_key[c + 1] == key + 1)
		f(c + 1);
	for (int o = 0; o < g.noffs; o++)
	{
		bool		inside = true;

		for (int j = 0; j < last; j++)
		{
			long long	x = cc[j] + c_offs[o][j];

			inside = inside && x >= 0 && x < g.p.ncell[j];
		}
		if (!inside)
			continue;

		long long	lo_key = (long long) key + c_delta[o] - (cc[last] > 0 ? 1 : 0);
		long long	hi_key = (long long) key + c_delta[o] + (cc[last] + 1 < g.p.ncell[last] ? 1 : 0);

		for (unsigned int p = lower_bound_key(g.cell_key, g.ncells, (unsigned long long) lo_key);
			 p < g.ncells && (long long) g.cell_key[p] <= hi_key; p++)
			f(p);
	}
}

/*
 * Each query of the item against candidates [j0, j1) (tri: only j > q).
 * The warp's lanes form groups of `width` lanes, one group per query, each
 * lane taking every width-th candidate, so that an item of few queries
 * still keeps every lane busy.
 */
__device__ void
scan_range(const GridDev &g, const BatchDev &b, Stage &st, int &n, int lane,
		   bool active, unsigned int q, unsigned int sub, unsigned int width,
		   unsigned int j0, unsigned int j1, bool tri, unsigned long long &cand)
{
	const double *a = g.pts + (size_t) q * g.d;

	for (unsigned int base = j0; base < j1; base += width)
	{
		unsigned int j = base + sub;
		bool		hit = false;
		double		s = 0.0;

		if (active && j < j1 && (!tri || j > q))
		{
			cand++;
			hit = contract_within(a, g.pts + (size_t) j * g.d, g.d, g.thr, &s);
		}
		stage_hit(b, st, n, lane, hit, q, j, s, [&](unsigned int i) { return g.perm[i]; });
	}
}

/* The warp's next work item; b.hi once the batch is done, overflowed or aborted. */
__device__ __forceinline__ unsigned int
next_item(const BatchDev &b, int lane)
{
	unsigned int it = 0;

	if (lane == 0)
		it = b.lo + atomicAdd(b.queue, 1u);
	it = __shfl_sync(FULL_MASK, it, 0);
	if (it >= b.hi || *(volatile unsigned int *) b.overflow != 0 || *b.abort != 0)
		return b.hi;
	return it;
}

__global__ void
__launch_bounds__(BLOCK_THREADS)
join_kernel(GridDev g, BatchDev b)
{
	__shared__ Stage stages[WARPS_PER_BLOCK];
	const int	lane = threadIdx.x % WARP;
	Stage	   &st = stages[threadIdx.x / WARP];
	int			n = 0;
	unsigned long long cand = 0;

	for (;;)
	{
		unsigned int it = next_item(b, lane);

		if (it >= b.hi)
			break;

		{
			unsigned long long item = b.items[it];
			unsigned int c = (unsigned int) (item >> 32);
			unsigned int q0 = (unsigned int) item;
			unsigned int nq = b.item_nq[it];
			unsigned int ce = g.cell_start[c + 1];
			/* Lane groups: the widest power of two that fits nq of them. */
			unsigned int width = WARP;

			while (width > 1 && (WARP / width) < nq)
				width /= 2;

			unsigned int qi = lane / width;
			unsigned int sub = lane % width;
			unsigned int q = q0 + qi;
			bool		active = qi < nq;

			/* Own cell (j > q), then the later neighbour cells. */
			scan_range(g, b, st, n, lane, active, q, sub, width, q0 + 1, ce, true, cand);
			for_each_later_neighbour(g, c, [&](unsigned int p) {
				scan_range(g, b, st, n, lane, active, q, sub, width, g.cell_start[p],
						   g.cell_start[p + 1], false, cand);
			});
		}
	}
	finish_warp(b, st, n, lane, cand, 0ull);
}

/* ---------- the tensor-core filter ---------- */

/* One mma.sync m8n8k4 FP64 step: (c0, c1) += A (8x4, row) * B (4x8, col). */
__device__ __forceinline__ void
dmma_m8n8k4(double &c0, double &c1, double a, double b)
{
	asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
				 : "+d"(c0), "+d"(c1)
				 : "d"(a), "d"(b));
}

/* Sum over the four lanes of a quad (the same value in all four). */
__device__ __forceinline__ double
quad_sum(double x)
{
	x = __dadd_rn(x, __shfl_xor_sync(FULL_MASK, x, 1));
	x = __dadd_rn(x, __shfl_xor_sync(FULL_MASK, x, 2));
	return x;
}

/*
 * The TED-Join scheme on FP64 tensor cores.  A warp takes an item (up to 32
 * queries of one cell) as four groups of 8 queries and meets its candidates
 * 8 at a time, 4 dimensions per mma.sync m8n8k4, for
 *		s~ = |a'|^2 + |b'|^2 - 2 a'.b',
 * on coordinates centred at the item's first point (a' = fl(a - c)), which
 * keeps the expanded formula's cancellation small.  s~ only filters: a pair
 * with s~ > lim is dropped, every other pair is decided, and its dist
 * computed, by the contract's exact sum (within).
 *
 * Why no pair is lost, with u = 2^-53 and D = |a - b| over the reals:
 * (1) s <= thr gives D^2 <= thr (1 + gamma_{d+3}): each term of s is
 *     (a_i - b_i)^2 (1 + theta), |theta| <= gamma_3, and a sum of d
 *     non-negative terms loses at most gamma_{d-1}.
 * (2) Centring moves each coordinate difference by at most
 *     1.01 u (|a'_i| + |b'_i|), so |a' - b'| <= D + 1.01 u R, with
 *     R = |a'| + |b'|, R^2 <= 2 (|a'|^2 + |b'|^2).
 * (3) The norms qn, cn and the dot product, summed in any order (the mma's
 *     included), are off by at most gamma_d of |a'|^2, |b'|^2 and |a'||b'|;
 *     two more roundings form s~.  So |s~ - |a' - b'|^2| <= gamma_{d+2} R^2.
 * With (x + y)^2 <= (1 + u) x^2 + (1 + 1/u) y^2, s <= thr implies
 *		s~ <= thr + u ((d + 5) thr + (2.1 d + 6.2) (qn + cn)) (1 + 2^-40)
 *		   <  thr + (d + 8) 2^-51 (thr + qn + cn) = lim,
 * with room to spare for the rounding of lim itself.  Underflow adds at most
 * 2^-1022 per operation (a flushed product included), fewer than 4 (d + 8)
 * of them: tc_abs = (d + 8) 2^-1018 covers it.
 */
template <int KS>
__device__ __forceinline__ double
a_frag(const GridDev &g, const double (&af)[4][KS > 0 ? KS : 1], int grp, int ks,
	   unsigned int q0, unsigned int nq, int r, int t)
{
	if (KS > 0)
		return af[grp][KS > 0 ? ks : 0];

	unsigned int qi = grp * 8 + r;
	int			k = ks * 4 + t;

	if (qi >= nq || k >= g.d)
		return 0.0;
	return __dsub_rn(g.pts[(size_t) (q0 + qi) * g.d + k], g.pts[(size_t) q0 * g.d + k]);
}

/* KS > 0: d <= 4 KS, the queries' fragments held in registers; 0: any d. */
template <int KS>
__global__ void
__launch_bounds__(BLOCK_THREADS)
join_tc_kernel(GridDev g, BatchDev b)
{
	__shared__ Stage stages[WARPS_PER_BLOCK];
	const int	lane = threadIdx.x % WARP;
	const int	r = lane >> 2;
	const int	t = lane & 3;
	const int	d = g.d;
	const int	nks = KS > 0 ? KS : (d + 3) / 4;
	Stage	   &st = stages[threadIdx.x / WARP];
	int			n = 0;
	unsigned long long cand = 0,
				rech = 0;

	for (;;)
	{
		unsigned int it = next_item(b, lane);

		if (it >= b.hi)
			break;

		unsigned long long item = b.items[it];
		unsigned int c = (unsigned int) (item >> 32);
		unsigned int q0 = (unsigned int) item;
		unsigned int nq = b.item_nq[it];
		unsigned int ce = g.cell_start[c + 1];
		const int	ng = (int) (nq + 7) / 8;
		const double *ctr = g.pts + (size_t) q0 * d;
		double		af[4][KS > 0 ? KS : 1];
		double		qn[4];

		/* Centred query fragments and their squared norms. */
#pragma unroll
		for (int grp = 0; grp < 4; grp++)
		{
			unsigned int qi = grp * 8 + r;
			double		acc = 0.0;

			for (int ks = 0; ks < nks; ks++)
			{
				int			k = ks * 4 + t;
				double		v = 0.0;

				if (qi < nq && k < d)
					v = __dsub_rn(g.pts[(size_t) (q0 + qi) * d + k], ctr[k]);
				if (KS > 0)
					af[grp][KS > 0 ? ks : 0] = v;
				acc = __dadd_rn(acc, __dmul_rn(v, v));
			}
			qn[grp] = quad_sum(acc);
		}

		auto scan = [&](unsigned int j0, unsigned int j1, bool tri) {
			for (unsigned int base = j0; base < j1; base += 8)
			{
				double		c0[4] = {0.0, 0.0, 0.0, 0.0};
				double		c1[4] = {0.0, 0.0, 0.0, 0.0};
				unsigned int jb = base + r;
				double		cacc = 0.0;

				for (int ks = 0; ks < nks; ks++)
				{
					int			k = ks * 4 + t;
					double		bv = 0.0;

					if (jb < j1 && k < d)
						bv = __dsub_rn(g.pts[(size_t) jb * d + k], ctr[k]);
					cacc = __dadd_rn(cacc, __dmul_rn(bv, bv));
#pragma unroll
					for (int grp = 0; grp < 4; grp++)
						if (grp < ng)
							dmma_m8n8k4(c0[grp], c1[grp],
										a_frag<KS>(g, af, grp, ks, q0, nq, r, t), bv);
				}

				/* Candidate r's norm, then those of this lane's two columns. */
				double		cn = quad_sum(cacc);
				double		cnc[2];

				cnc[0] = __shfl_sync(FULL_MASK, cn, (2 * t) * 4);
				cnc[1] = __shfl_sync(FULL_MASK, cn, (2 * t + 1) * 4);
#pragma unroll
				for (int grp = 0; grp < 4; grp++)
				{
					if (grp >= ng)
						break;

					unsigned int qi = grp * 8 + r;
					unsigned int q = q0 + qi;

#pragma unroll
					for (int i = 0; i < 2; i++)
					{
						unsigned int j = base + 2 * t + i;
						bool		valid = qi < nq && j < j1 && (!tri || j > q);
						double		dot = i ? c1[grp] : c0[grp];
						double		stc = __dsub_rn(__dadd_rn(qn[grp], cnc[i]), __dmul_rn(2.0, dot));
						double		lim = __dadd_rn(__dadd_rn(g.thr,
															  __dmul_rn(__dadd_rn(__dadd_rn(g.thr, qn[grp]), cnc[i]),
																		g.tc_rel)),
													g.tc_abs);
						bool		hit = false;
						double		s = 0.0;

						if (valid)
						{
							cand++;
							if (stc <= lim)
							{
								rech++;
								hit = contract_within(g.pts + (size_t) q * d, g.pts + (size_t) j * d, d, g.thr, &s);
							}
						}
						stage_hit(b, st, n, lane, hit, q, j, s, [&](unsigned int i) { return g.perm[i]; });
					}
				}
			}
		};

		/* Own cell (j > q), then the later neighbour cells. */
		scan(q0 + 1, ce, true);
		for_each_later_neighbour(g, c, [&](unsigned int p) {
			scan(g.cell_start[p], g.cell_start[p + 1], false);
		});
	}
	finish_warp(b, st, n, lane, cand, rech);
}

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

/*
 * Candidates of each cell's neighbour cells (unidirectional), and the most
 * candidates any one query of the cell can have.
 */
__global__ void
cell_nbr_kernel(GridDev g, unsigned long long *nbr, unsigned long long *per_query,
				unsigned long long *cell_bound)
{
	unsigned int c = blockIdx.x * blockDim.x + threadIdx.x;

	if (c >= g.ncells)
		return;
	unsigned int cs = g.cell_start[c],
				ce = g.cell_start[c + 1];
	unsigned long long sum = 0;

	for_each_later_neighbour(g, c, [&](unsigned int p) {
		sum += g.cell_start[p + 1] - g.cell_start[p];
	});
	nbr[c] = sum;
	per_query[c] = (ce - cs - 1) + sum;
	cell_bound[c] = (unsigned long long) (ce - cs) * (ce - cs - 1) / 2 +
		(unsigned long long) (ce - cs) * sum;
}

/* Queries per item, so that no item's bound exceeds max_bound. */
__global__ void
cell_items_kernel(GridDev g, unsigned long long max_bound, const unsigned long long *per_query,
				  unsigned int *nq_out, unsigned int *nitems)
{
	unsigned int c = blockIdx.x * blockDim.x + threadIdx.x;

	if (c >= g.ncells)
		return;
	unsigned int cnt = g.cell_start[c + 1] - g.cell_start[c];
	unsigned long long nq = per_query[c] > 0 ? max_bound / per_query[c] : WARP;

	nq = nq > WARP ? WARP : nq < 1 ? 1 : nq;
	nq_out[c] = (unsigned int) nq;
	nitems[c] = (cnt + (unsigned int) nq - 1) / (unsigned int) nq;
}

__global__ void
fill_items_kernel(GridDev g, const unsigned long long *nbr, const unsigned int *nq_in,
				  const unsigned int *item_off, unsigned long long *items,
				  unsigned char *item_nq, unsigned long long *bounds)
{
	unsigned int c = blockIdx.x * blockDim.x + threadIdx.x;

	if (c >= g.ncells)
		return;
	unsigned int cs = g.cell_start[c],
				ce = g.cell_start[c + 1];
	unsigned int nq = nq_in[c];
	unsigned int out = item_off[c];

	for (unsigned int q0 = cs; q0 < ce; q0 += nq, out++)
	{
		unsigned int m = min(nq, ce - q0);

		items[out] = ((unsigned long long) c << 32) | q0;
		item_nq[out] = (unsigned char) m;
		bounds[out] = (unsigned long long) m * ((ce - q0 - 1) + nbr[c]);
	}
}

/* ---------- host code ---------- */

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
	CHECK(cudaStreamSynchronize(s));
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

extern "C" TcStatus
tc_gpu_selfjoin(TcGpuJoin **handle, const TcPoints *a, const TcJoinParams *params,
				const TcGridPlan *plan, double thr, const TcSink *sink,
				TcJoinStats *stats, TcError *err)
{
	TcGpuJoin  *g;
	GridDev		gd;
	unsigned int n;
	void	   *d_raw;
	unsigned int *d_perm;
	TcStatus	st;
	double		t0 = tc_now();
	size_t		rowbytes = (size_t) a->d * (size_t) a->type;
	unsigned int capacity;

	if ((st = gpu_join_begin(handle, a, params, sink, stats, err)) != TC_OK)
		return st;
	g = *handle;
	n = (unsigned int) a->n;
	stats->method = plan->k > 0 ? "grid" : "brute";
	stats->grid_dims = plan->k;
	for (int j = 0; j < plan->k; j++)
		stats->grid_dim_ids[j] = plan->dims[j];
	if (n < 2)
	{
		stats->index_seconds = tc_now() - t0;
		return TC_OK;
	}

	/* Upload, then the index. */
	memset(&gd, 0, sizeof(gd));
	gd.p = *plan;
	gd.d = a->d;
	gd.thr = thr;
	gd.tc_rel = (double) (a->d + 8) * 0x1p-51;
	gd.tc_abs = (double) (a->d + 8) * 0x1p-1018;
	{
		int8_t		offs[TC_GRID_MAX_ROWS][TC_GRID_MAX_DIMS];
		int64_t		delta[TC_GRID_MAX_ROWS];

		gd.noffs = tc_grid_rows(plan, true, offs, delta);
		if (gd.noffs > MAX_OFFS)
		{
			err->status = TC_ERR_INTERNAL;
			snprintf(err->message, sizeof(err->message), "too many neighbour rows");
			return TC_ERR_INTERNAL;
		}
		CHECK(cudaMemcpyToSymbol(c_offs, offs, sizeof(offs[0]) * MAX_OFFS));
		CHECK(cudaMemcpyToSymbol(c_delta, delta, sizeof(delta[0]) * MAX_OFFS));
	}
	if ((st = dev_alloc(g, &d_raw, rowbytes * n, err)) != TC_OK)
		return st;
	if ((st = upload(g, d_raw, a->data, rowbytes * n, g->stream[0], sink, err)) != TC_OK)
		return st;
	st = a->type == TC_FLOAT4 ?
		build_index<float>(g, a, gd, (const float *) d_raw, &d_perm, err) :
		build_index<double>(g, a, gd, (const double *) d_raw, &d_perm, err);
	if (st != TC_OK)
		return st;
	CHECK(cudaStreamSynchronize(g->stream[0]));
	dev_free(g, d_raw);

	/* The kernel writes the caller's indices, through the permutation. */
	gd.perm = d_perm;
	stats->cells = gd.ncells;

	/* Work items: bounds, queries per item, sorted by bound. */
	unsigned long long *d_nbr,
			   *d_pq,
			   *d_cb,
			   *d_items,
			   *d_items2,
			   *d_bounds,
			   *d_bounds2;
	unsigned int *d_nq,
			   *d_nit;
	unsigned char *d_item_nq;
	unsigned int nitems = 0,
				last_off = 0,
				last_cnt = 0;
	unsigned long long max_pq = 0,
				total_bound = 0;
	unsigned int ncells = gd.ncells;
	cudaStream_t s0 = g->stream[0];

	if ((st = dev_alloc(g, (void **) &d_nbr, sizeof(*d_nbr) * ncells, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_pq, sizeof(*d_pq) * (ncells + 1), err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_cb, sizeof(*d_cb) * (ncells + 1), err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_nq, sizeof(*d_nq) * ncells, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_nit, sizeof(*d_nit) * (ncells + 1), err)) != TC_OK)
		return st;
	cell_nbr_kernel<<<(ncells + 255) / 256, 256, 0, s0>>>(gd, d_nbr, d_pq, d_cb);
	CHECK(cudaGetLastError());
	{
		void	   *d_tmp;
		size_t		tmp_bytes = 0,
					tmp2 = 0;

		CHECK(cub::DeviceReduce::Max(NULL, tmp_bytes, d_pq, d_pq + ncells, ncells, s0));
		CHECK(cub::DeviceReduce::Sum(NULL, tmp2, d_cb, d_cb + ncells, ncells, s0));
		tmp_bytes = std::max(tmp_bytes, tmp2);
		if ((st = dev_alloc(g, &d_tmp, tmp_bytes, err)) != TC_OK)
			return st;
		CHECK(cub::DeviceReduce::Max(d_tmp, tmp_bytes, d_pq, d_pq + ncells, ncells, s0));
		CHECK(cub::DeviceReduce::Sum(d_tmp, tmp_bytes, d_cb, d_cb + ncells, ncells, s0));
		CHECK(cudaMemcpyAsync(&max_pq, d_pq + ncells, sizeof(max_pq), cudaMemcpyDeviceToHost, s0));
		CHECK(cudaMemcpyAsync(&total_bound, d_cb + ncells, sizeof(total_bound), cudaMemcpyDeviceToHost, s0));
		CHECK(cudaStreamSynchronize(s0));
		dev_free(g, d_tmp);
		dev_free(g, d_cb);
	}

	/*
	 * Result buffers: two (one per stream), as large as the memory limit
	 * allows after the work items, up to DEFAULT_CAPACITY pairs, and never
	 * below twice the candidates of one query, so that an item of a single
	 * query always fits half a buffer.
	 */
	{
		size_t		items_bytes = (size_t) n * (8 + 1 + 8 + 8 + 8 + 1) + (1 << 20);
		size_t		per_pair = 2 * sizeof(PairDev);
		unsigned long long floor_cap = std::max((unsigned long long) MIN_CAPACITY / 16, 2 * max_pq);

		capacity = DEFAULT_CAPACITY;
		if (params->gpu_result_pairs > 0)
			capacity = (unsigned int) std::min((size_t) DEFAULT_CAPACITY, params->gpu_result_pairs);
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
					 "a point has %llu candidates, more than the GPU join handles", max_pq);
			return TC_ERR_INVALID;
		}
		/* No larger than every candidate pair: small joins stay cheap. */
		if (total_bound + 1 < capacity)
			capacity = (unsigned int) (total_bound + 1);
		capacity = std::max(capacity, (unsigned int) floor_cap);
	}
	cell_items_kernel<<<(ncells + 255) / 256, 256, 0, s0>>>(gd, capacity / 2, d_pq, d_nq, d_nit);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpyAsync(&last_cnt, d_nit + ncells - 1, sizeof(unsigned int), cudaMemcpyDeviceToHost, s0));
	{
		void	   *d_tmp;
		size_t		tmp_bytes = 0;

		CHECK(cub::DeviceScan::ExclusiveSum(NULL, tmp_bytes, d_nit, d_nit, ncells, s0));
		if ((st = dev_alloc(g, &d_tmp, tmp_bytes, err)) != TC_OK)
			return st;
		CHECK(cub::DeviceScan::ExclusiveSum(d_tmp, tmp_bytes, d_nit, d_nit, ncells, s0));
		CHECK(cudaMemcpyAsync(&last_off, d_nit + ncells - 1, sizeof(unsigned int), cudaMemcpyDeviceToHost, s0));
		CHECK(cudaStreamSynchronize(s0));
		dev_free(g, d_tmp);
	}
	nitems = last_off + last_cnt;
	if ((st = dev_alloc(g, (void **) &d_items, sizeof(*d_items) * nitems, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_items2, sizeof(*d_items2) * nitems, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_bounds, sizeof(*d_bounds) * nitems, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_bounds2, sizeof(*d_bounds2) * nitems, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_item_nq, nitems, err)) != TC_OK)
		return st;
	{
		unsigned char *d_item_nq_tmp;
		void	   *d_tmp;
		size_t		tmp_bytes = 0,
					tmp2 = 0;

		if ((st = dev_alloc(g, (void **) &d_item_nq_tmp, nitems, err)) != TC_OK)
			return st;
		fill_items_kernel<<<(ncells + 255) / 256, 256, 0, s0>>>(gd, d_nbr, d_nq, d_nit, d_items,
																 d_item_nq_tmp, d_bounds);
		CHECK(cudaGetLastError());
		/* Sort items by bound, largest first; the queries count follows. */
		CHECK(cub::DeviceRadixSort::SortPairsDescending(NULL, tmp_bytes, d_bounds, d_bounds2,
														d_items, d_items2, nitems, 0, 64, s0));
		CHECK(cub::DeviceRadixSort::SortPairsDescending(NULL, tmp2, d_bounds, d_bounds2,
														d_item_nq_tmp, d_item_nq, nitems, 0, 64, s0));
		if ((st = dev_alloc(g, &d_tmp, std::max(tmp_bytes, tmp2), err)) != TC_OK)
			return st;
		tmp_bytes = std::max(tmp_bytes, tmp2);
		CHECK(cub::DeviceRadixSort::SortPairsDescending(d_tmp, tmp_bytes, d_bounds, d_bounds2,
														d_items, d_items2, nitems, 0, 64, s0));
		tmp_bytes = std::max(tmp_bytes, tmp2);
		CHECK(cub::DeviceRadixSort::SortPairsDescending(d_tmp, tmp_bytes, d_bounds, d_bounds2,
														d_item_nq_tmp, d_item_nq, nitems, 0, 64, s0));
		CHECK(cudaStreamSynchronize(s0));
		dev_free(g, d_tmp);
		dev_free(g, d_item_nq_tmp);
		dev_free(g, d_items);
		dev_free(g, d_bounds);
		dev_free(g, d_nq);
		dev_free(g, d_nit);
		dev_free(g, d_nbr);
		dev_free(g, d_pq);
	}
	unsigned long long *h_bounds;

	if ((st = heap_alloc(g, (void **) &h_bounds, sizeof(*h_bounds) * nitems + 8, err)) != TC_OK)
		return st;
	CHECK(cudaMemcpy(h_bounds, d_bounds2, sizeof(*h_bounds) * nitems, cudaMemcpyDeviceToHost));
	dev_free(g, d_bounds2);

	/* Result buffers and per-batch counters, one set per stream. */
	PairDev    *d_pairs[2];
	unsigned int *d_meta[2],
			   *h_meta[2];		/* count, overflow, queue */
	unsigned long long *d_cand,
			   *h_cand;

	for (int i = 0; i < 2; i++)
	{
		if ((st = dev_alloc(g, (void **) &d_pairs[i], sizeof(PairDev) * capacity, err)) != TC_OK ||
			(st = dev_alloc(g, (void **) &d_meta[i], sizeof(unsigned int) * 4, err)) != TC_OK ||
			(st = host_alloc(g, (void **) &h_meta[i], sizeof(unsigned int) * 4, cudaHostAllocDefault, err)) != TC_OK)
			return st;
	}
	if ((st = get_ring(g, err)) != TC_OK)
		return st;
	/* (candidates, rechecked) for each stream's batch, read when it is kept */
	if ((st = dev_alloc(g, (void **) &d_cand, sizeof(*d_cand) * 4, err)) != TC_OK ||
		(st = host_alloc(g, (void **) &h_cand, sizeof(*h_cand) * 4, cudaHostAllocDefault, err)) != TC_OK)
		return st;
	stats->index_seconds = tc_now() - t0;

	/* The batches. */
	double		t1 = tc_now();
	int			sms = 0,
				major = 0;
	double		rate = 1.0;		/* pairs per unit of bound, conservatively */
	bool		tc;

	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g->device));
	CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, g->device));
	tc = use_tensor_cores(params, a->d, major);
	if (params->tensor_cores == TC_TENSOR_ON && !tc)
	{
		err->status = TC_ERR_INVALID;
		snprintf(err->message, sizeof(err->message),
				 "FP64 tensor cores need a GPU of compute capability 8.0 or higher");
		return TC_ERR_INVALID;
	}
	stats->tensor_cores = tc;
	stats->filter = tc ? "fp64 tensor cores" : "none";

	/* As many items as should fit the buffer at the rate seen. */
	auto		next = [&] (unsigned long long lo, double r, double *bound) {
		unsigned long long hi = lo;
		double		sum = 0;

		while (hi < nitems &&
			   (hi == lo ||
				((sum + (double) h_bounds[hi]) * r <= 0.8 * capacity &&
				 sum + (double) h_bounds[hi] <= MAX_BATCH_CANDIDATES)))
			sum += (double) h_bounds[hi++];
		*bound = sum;
		return hi;
	};
	auto		launch = [&] (int cur, unsigned long long lo, unsigned long long hi) -> TcStatus {
		BatchDev	bd;
		unsigned int blocks = std::min((unsigned int) sms * 8,
									   (unsigned int) (hi - lo + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK);
		cudaStream_t s = g->stream[cur];

		bd.items = d_items2;
		bd.item_nq = d_item_nq;
		bd.lo = (unsigned int) lo;
		bd.hi = (unsigned int) hi;
		bd.count = d_meta[cur];
		bd.overflow = d_meta[cur] + 1;
		bd.queue = d_meta[cur] + 2;
		bd.pairs = d_pairs[cur];
		bd.capacity = capacity;
		bd.candidates = d_cand + 2 * cur;
		bd.rechecked = d_cand + 2 * cur + 1;
		bd.abort = g->d_abort;
		CHECK(cudaMemsetAsync(d_meta[cur], 0, sizeof(unsigned int) * 4, s));
		CHECK(cudaMemsetAsync(d_cand + 2 * cur, 0, sizeof(*d_cand) * 2, s));
		CHECK(cudaEventRecord(g->kev[cur][0], s));
		if (!tc)
			join_kernel<<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
		else if (a->d <= 4)
			join_tc_kernel<1><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
		else if (a->d <= 8)
			join_tc_kernel<2><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
		else if (a->d <= 12)
			join_tc_kernel<3><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
		else if (a->d <= 16)
			join_tc_kernel<4><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
		else
			join_tc_kernel<0><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
		CHECK(cudaGetLastError());
		CHECK(cudaEventRecord(g->kev[cur][1], s));
		CHECK(cudaMemcpyAsync(h_meta[cur], d_meta[cur], sizeof(unsigned int) * 4,
							  cudaMemcpyDeviceToHost, s));
		CHECK(cudaMemcpyAsync(h_cand + 2 * cur, d_cand + 2 * cur, sizeof(*h_cand) * 2,
							  cudaMemcpyDeviceToHost, s));
		return TC_OK;
	};
	/* a batch's counts, once: not those of a batch dropped and rerun */
	auto		kept = [&] (int cur) {
		stats->candidates += h_cand[2 * cur];
		if (tc)
			stats->rechecked += h_cand[2 * cur + 1];
	};

	if ((st = run_batches(g, nitems, d_pairs, h_meta, rate, next, launch, "work item",
						  sink, stats, err, 0, kept)) != TC_OK)
		return st;
	stats->join_seconds = tc_now() - t1;
	return TC_OK;
}
