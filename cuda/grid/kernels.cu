/*
 * kernels.cu
 *		The grid join's kernels: the walk over a cell's later neighbour
 *		cells, the cells' candidate counts it gives, and the join kernels,
 *		FP64 on CUDA cores or filtered on FP64 tensor cores.
 *
 * A warp takes work items (up to 32 query points of one cell) from an
 * atomic counter (the work queue).  Its lanes hold the item's queries (in
 * groups of lanes when it has fewer than 32, each group striding over the
 * candidates) and walk them: the rest of their own cell (j > q), the next
 * cell of the row, and the lexicographically positive neighbour rows, each
 * cell pair once.  In a join of two sets (TWO) the queries are the other
 * set's and walk every neighbour row of the index, each row's key range
 * from one cell before to one after.  The distance is the contract's:
 * __dsub_rn/__dmul_rn/__dadd_rn in index order, so no multiply-add is
 * contracted and every sum and dist equals the CPU's bit for bit; the sum
 * stops early once past thr, which cannot change an answer (partial sums
 * only grow).
 *
 * Results: each warp stages hits in shared memory and appends them with one
 * atomic per STAGE pairs into the batch's bounded buffer, as TcPair records
 * with the caller's indices, so the host hands them to the sink as they
 * are; a batch that overflows stops and is rerun smaller (batches.h).
 */
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "grid.h"

__constant__ int8_t c_offs[MAX_OFFS][TC_GRID_MAX_DIMS];
__constant__ long long c_delta[MAX_OFFS];

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
 * Call f(p) for every indexed cell p in the rows of constant memory around
 * the cell of key (coordinates cc): in each row inside the grid, the keys
 * from one cell before to one after, clipped at the grid's edges in the
 * last dimension (there key - 1 or key + 1 is another row's cell).
 */
template <typename F>
__device__ __forceinline__ void
walk_rows(const GridDev &g, unsigned long long key, const long long (&cc)[TC_GRID_MAX_DIMS], F f)
{
	const int	last = g.p.k - 1;

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

/* The grid coordinates of a cell key. */
__device__ __forceinline__ void
cell_coords(const GridDev &g, unsigned long long key, long long (&cc)[TC_GRID_MAX_DIMS])
{
	for (int j = 0; j < g.p.k; j++)
		cc[j] = (long long) ((key / g.p.stride[j]) % (unsigned long long) g.p.ncell[j]);
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
	cell_coords(g, key, cc);
	if (cc[last] + 1 < g.p.ncell[last] && c + 1 < g.ncells && g.cell_key[c + 1] == key + 1)
		f(c + 1);
	walk_rows(g, key, cc, f);
}

/*
 * Call f(p) for every indexed cell p adjacent to query cell c or equal to
 * it (two sets: every row, with its own).  Without grid dimensions the
 * index is one cell.
 */
template <typename F>
__device__ __forceinline__ void
for_each_neighbour(const GridDev &g, unsigned int c, F f)
{
	unsigned long long key = g.qcell_key[c];
	long long	cc[TC_GRID_MAX_DIMS];

	if (g.p.k == 0)
	{
		for (unsigned int p = 0; p < g.ncells; p++)
			f(p);
		return;
	}
	cell_coords(g, key, cc);
	walk_rows(g, key, cc, f);
}

/*
 * Stage the lanes' hits with the caller's indices, read only for hits: a
 * self-join maps both points through perm; two sets map the query through
 * qperm and write a's index first.
 */
template <bool TWO>
__device__ __forceinline__ void
stage_pair(const GridDev &g, const BatchDev &b, Stage &st, int &n, int lane, bool hit,
		   unsigned int q, unsigned int j, double s)
{
	if (!TWO)
	{
		stage_hit(b, st, n, lane, hit, q, j, s, [&](unsigned int i) { return g.perm[i]; });
		return;
	}

	unsigned int qi = hit ? g.qperm[q] : 0,
				ji = hit ? g.perm[j] : 0;

	stage_hit(b, st, n, lane, hit, g.a_indexed ? ji : qi, g.a_indexed ? qi : ji, s,
			  [](unsigned int i) { return (long long) i; });
}

/*
 * Each query of the item against candidates [j0, j1) (tri: only j > q).
 * The warp's lanes form groups of `width` lanes, one group per query, each
 * lane taking every width-th candidate, so that an item of few queries
 * still keeps every lane busy.
 */
template <bool TWO>
__device__ void
scan_range(const GridDev &g, const BatchDev &b, Stage &st, int &n, int lane,
		   bool active, unsigned int q, unsigned int sub, unsigned int width,
		   unsigned int j0, unsigned int j1, bool tri, unsigned long long &cand)
{
	const double *a = (TWO ? g.qpts : g.pts) + (size_t) q * g.d;

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
		stage_pair<TWO>(g, b, st, n, lane, hit, q, j, s);
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

template <bool TWO>
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
			/* Lane groups: the widest power of two that fits nq of them. */
			unsigned int width = WARP;

			while (width > 1 && (WARP / width) < nq)
				width /= 2;

			unsigned int qi = lane / width;
			unsigned int sub = lane % width;
			unsigned int q = q0 + qi;
			bool		active = qi < nq;

			if (TWO)
			{
				/* Every neighbour cell of the index, the query's own included. */
				for_each_neighbour(g, c, [&](unsigned int p) {
					scan_range<true>(g, b, st, n, lane, active, q, sub, width, g.cell_start[p],
									 g.cell_start[p + 1], false, cand);
				});
				continue;
			}

			/* Own cell (j > q), then the later neighbour cells. */
			scan_range<false>(g, b, st, n, lane, active, q, sub, width, q0 + 1,
							  g.cell_start[c + 1], true, cand);
			for_each_later_neighbour(g, c, [&](unsigned int p) {
				scan_range<false>(g, b, st, n, lane, active, q, sub, width, g.cell_start[p],
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
 * computed, by the contract's exact sum (within).  Two sets change
 * nothing in it: queries and candidates come from different arrays, both
 * centred at the item's first query.
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
a_frag(const GridDev &g, const double *qp, const double (&af)[4][KS > 0 ? KS : 1], int grp,
	   int ks, unsigned int q0, unsigned int nq, int r, int t)
{
	if (KS > 0)
		return af[grp][KS > 0 ? ks : 0];

	unsigned int qi = grp * 8 + r;
	int			k = ks * 4 + t;

	if (qi >= nq || k >= g.d)
		return 0.0;
	return __dsub_rn(qp[(size_t) (q0 + qi) * g.d + k], qp[(size_t) q0 * g.d + k]);
}

/*
 * KS > 0: d <= 4 KS, the queries' fragments held in registers; 0: any d.
 * TWO: a join of two sets, the queries from the other set.
 */
template <int KS, bool TWO>
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
		const int	ng = (int) (nq + 7) / 8;
		const double *qp = TWO ? g.qpts : g.pts;
		const double *ctr = qp + (size_t) q0 * d;
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
					v = __dsub_rn(qp[(size_t) (q0 + qi) * d + k], ctr[k]);
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
										a_frag<KS>(g, qp, af, grp, ks, q0, nq, r, t), bv);
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
							/*
							 * Dropped only where proven beyond: a norm or dot
							 * that overflowed (coordinates near float8's
							 * limits) gives NaN, and such a pair is checked.
							 */
							if (!(stc > lim))
							{
								rech++;
								hit = contract_within(qp + (size_t) q * d, g.pts + (size_t) j * d, d, g.thr, &s);
							}
						}
						stage_pair<TWO>(g, b, st, n, lane, hit, q, j, s);
					}
				}
			}
		};

		if (TWO)
		{
			/* Every neighbour cell of the index, the query's own included. */
			for_each_neighbour(g, c, [&](unsigned int p) {
				scan(g.cell_start[p], g.cell_start[p + 1], false);
			});
			continue;
		}

		/* Own cell (j > q), then the later neighbour cells. */
		scan(q0 + 1, g.cell_start[c + 1], true);
		for_each_later_neighbour(g, c, [&](unsigned int p) {
			scan(g.cell_start[p], g.cell_start[p + 1], false);
		});
	}
	finish_warp(b, st, n, lane, cand, rech);
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

/*
 * Two sets: the candidates of each query cell's neighbour cells in the
 * index (every one, its own included), which every query of it meets.
 */
__global__ void
cell_nbr_two_kernel(GridDev g, unsigned long long *nbr, unsigned long long *per_query,
					unsigned long long *cell_bound)
{
	unsigned int c = blockIdx.x * blockDim.x + threadIdx.x;

	if (c >= g.qncells)
		return;
	unsigned int cnt = g.qcell_start[c + 1] - g.qcell_start[c];
	unsigned long long sum = 0;

	for_each_neighbour(g, c, [&](unsigned int p) {
		sum += g.cell_start[p + 1] - g.cell_start[p];
	});
	nbr[c] = sum;
	per_query[c] = sum;
	cell_bound[c] = (unsigned long long) cnt * sum;
}

/* ---------- host wrappers ---------- */

TcStatus
grid_set_rows(const TcGridPlan *plan, bool positive_only, int *noffs, TcError *err)
{
	int8_t		offs[TC_GRID_MAX_ROWS][TC_GRID_MAX_DIMS];
	int64_t		delta[TC_GRID_MAX_ROWS];

	*noffs = tc_grid_rows(plan, positive_only, offs, delta);
	if (*noffs > MAX_OFFS)
	{
		err->status = TC_ERR_INTERNAL;
		snprintf(err->message, sizeof(err->message), "too many neighbour rows");
		return TC_ERR_INTERNAL;
	}
	CHECK(cudaMemcpyToSymbol(c_offs, offs, sizeof(offs[0]) * MAX_OFFS));
	CHECK(cudaMemcpyToSymbol(c_delta, delta, sizeof(delta[0]) * MAX_OFFS));
	return TC_OK;
}

TcStatus
grid_cell_bounds(const GridDev &gd, unsigned long long *nbr, unsigned long long *per_query,
				 unsigned long long *cell_bound, cudaStream_t s, TcError *err)
{
	if (gd.two)
		cell_nbr_two_kernel<<<(gd.qncells + 255) / 256, 256, 0, s>>>(gd, nbr, per_query, cell_bound);
	else
		cell_nbr_kernel<<<(gd.ncells + 255) / 256, 256, 0, s>>>(gd, nbr, per_query, cell_bound);
	CHECK(cudaGetLastError());
	return TC_OK;
}

/* KS: the tensor-core kernel holding d <= 4 KS dimensions in registers. */
template <bool TWO>
static void
launch_join(const GridDev &gd, const BatchDev &bd, bool tc, unsigned int blocks, cudaStream_t s)
{
	if (!tc)
		join_kernel<TWO><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
	else if (gd.d <= 4)
		join_tc_kernel<1, TWO><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
	else if (gd.d <= 8)
		join_tc_kernel<2, TWO><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
	else if (gd.d <= 12)
		join_tc_kernel<3, TWO><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
	else if (gd.d <= 16)
		join_tc_kernel<4, TWO><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
	else
		join_tc_kernel<0, TWO><<<blocks, BLOCK_THREADS, 0, s>>>(gd, bd);
}

TcStatus
grid_launch_join(const GridDev &gd, const BatchDev &bd, bool tc, unsigned int blocks,
				 cudaStream_t s, TcError *err)
{
	if (gd.two)
		launch_join<true>(gd, bd, tc, blocks, s);
	else
		launch_join<false>(gd, bd, tc, blocks, s);
	CHECK(cudaGetLastError());
	return TC_OK;
}
