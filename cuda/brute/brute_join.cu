/*
 * gpu_brute.cu
 *		Exact brute-force self-join on FP16 tensor cores (FaSTED's scheme,
 *		made exact and symmetric).
 *
 * Preparation, on the device: the points' mean (the centre), the largest
 * centred coordinate (which fixes the power-of-two scale, fp16_filter.h),
 * then per point its FP16 coordinates h (rows padded to a multiple of 16
 * with zeros), and the filter's per-point values q and rc (fp16_filter.h).
 *
 * Points are ordered by recursive bisection so that each 128-point tile is
 * compact; each tile gets a centre and a radius, and a tile pair whose
 * balls lie more than eps apart is never joined (tile pruning).
 *
 * The join: 128 x 128 tiles of point pairs, only those on or above the
 * diagonal (each unordered pair once) that pruning kept, listed in 16 x 16
 * squares of tiles for L2 reuse.  On Hopper (sm_90a) a producer warp loads
 * 64-dimension slices by TMA and two consumer warpgroups run wgmma on one
 * tile against two (brute_wgmma_kernel), in clusters of two blocks that
 * share those two by TMA multicast; elsewhere four warps run mma.sync
 * m16n8k16 with ldmatrix fragments on cp.async-staged tiles (brute_kernel).  The epilogue
 * drops every pair that tc_f16_drop proves to lie beyond eps and lists the
 * rest as candidates; recheck_kernel decides them with the contract's exact
 * float8 sum on the input coordinates, which also gives dist.  Pairs are
 * staged per warp and appended with one atomic per stage into a bounded
 * buffer, and a batch of tiles that overflows its candidate or pair buffer
 * is rerun smaller (gpu_join.h), so no pair is lost.
 *
 * exact => false (FaSTED's semantics): the FP16-32 product decides, and
 * dist comes from an FP32 dot of the FP16 rows; nothing is rechecked.
 */
#include <cub/cub.cuh>
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <type_traits>

#include "batches.h"
#include "fp16_filter.h"

#define BT 128					/* tile: points per side */
#define KT 32					/* FP16 dimensions staged per step */
#define SROW (KT + 8)			/* padded shared row, in halves */
#define BRUTE_THREADS 128		/* 2 x 2 warps of 64 x 64 */
/* Two buffers of both tiles' KT-dimension slices: 40 KB, dynamic. */
#define TILE_SMEM (2 * 2 * BT * SROW * (int) sizeof(__half))

#define BRUTE_CAPACITY (8u << 20)	/* result buffer, pairs */
#define BRUTE_MIN_CAPACITY (2 * BT * BT)	/* one item's pairs (two tiles), at least */
#define CLUSTER_MIN_CAPACITY (4 * BT * BT)	/* a cluster item's (four): clusters only from there */
/*
 * Candidate pairs x padded dimensions per batch at most: about 20 ms of
 * tensor-core work, so that a cancel is seen soon (and 4e9 pairs at d =
 * 1024, 3e10 at d = 128: fewer batches where each is cheap).
 */
#define BRUTE_BATCH_WORK 4e12
#define BAND_PAIRS (1ull << 24)	/* tile pairs pruned at a time: a 128 MB list */

struct BruteDev
{
	const __half *h;			/* npad rows of hpitch halves, dpad used */
	const float *q;				/* npad: the filter's q, rc */
	const float *rc;
	const void *x;				/* n x d, the caller's coordinates */
	const unsigned int *order;	/* position -> the caller's index */
	unsigned int n;
	unsigned int ntiles;
	int			d;
	int			dpad;
	int			hpitch;
	/*
	 * A streamed join's two blocks: a position's caller row is order[p] +
	 * shift_lo below split_row, + shift_hi from it.
	 */
	unsigned int split_row;
	long long	shift_lo;
	long long	shift_hi;
	double		thr;
	/*
	 * exact => false (FaSTED's semantics): q is |h|^2 / 2, a pair is kept
	 * iff q_a + q_b - acc <= thr_half ((sigma eps)^2 / 2 in float4), and
	 * its dist comes from an FP32 dot of the FP16 rows.
	 */
	bool		approx;
	float		thr_half;
	double		inv_sigma;
	/* Hopper's kernel: the warpgroups take turns at the MMAs (brute_wgmma_kernel) */
	bool		pingpong;
};

/*
 * The epilogue's decision for one pair: keep it (for the recheck, or as
 * is).  keep_pair_as takes the mode at compile time (the Hopper kernel,
 * one instance per mode: no branch per pair); keep_pair reads it.
 */
template <bool APPROX>
__device__ __forceinline__ bool
keep_pair_as(const BruteDev &g, float acc, float q_a, float q_b, float rc_a, float rc_b)
{
	if (APPROX)
		return q_a + q_b - acc <= g.thr_half;
	return !tc_f16_drop(acc, q_a, q_b, rc_a, rc_b);
}

__device__ __forceinline__ bool
keep_pair(const BruteDev &g, float acc, float q_a, float q_b, float rc_a, float rc_b)
{
	return g.approx ? keep_pair_as<true>(g, acc, q_a, q_b, rc_a, rc_b) :
		keep_pair_as<false>(g, acc, q_a, q_b, rc_a, rc_b);
}

struct BruteBatch
{
	const unsigned long long *list;	/* tile pairs kept, (bi << 32) | bj (prune_kernel's modes) */
	unsigned long long lo;		/* entries [lo, hi) of list */
	unsigned long long hi;
	unsigned long long *queue;
	PairDev    *pairs;
	unsigned int capacity;
	unsigned int *count;
	unsigned int *overflow;		/* pairs or candidates overflowed: rerun */
	uint2	   *cand;			/* positions (i, j) the filter kept */
	unsigned int cand_capacity;
	unsigned int *ncand;
	unsigned long long *candidates;
	unsigned long long *rechecked;
	const volatile int *abort;
};

/* ---------- preparation ---------- */

/*
 * Column sums over total into c (atomics: any centre is correct, the mean
 * is small); x may be one block of the points, total all of them.
 */
template <typename T>
__global__ void
centre_kernel(const T *x, unsigned int n, int d, double total, double *c)
{
	int			k = blockIdx.x * blockDim.x + threadIdx.x;

	if (k >= d)
		return;
	for (size_t i0 = (size_t) blockIdx.y * 1024; i0 < n; i0 += (size_t) gridDim.y * 1024)
	{
		double		s = 0.0;

		for (size_t i = i0; i < n && i < i0 + 1024; i++)
			s += (double) x[i * d + k];
		atomicAdd(&c[k], s / total);
	}
}

/* The largest |fl(x - c)|, as the bits of a non-negative double. */
template <typename T>
__global__ void
maxabs_kernel(const T *x, unsigned int n, int d, const double *c, unsigned long long *out)
{
	size_t		t = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
	size_t		stride = (size_t) gridDim.x * blockDim.x;
	double		m = 0.0;

	for (; t < (size_t) n * d; t += stride)
		m = fmax(m, fabs(__dsub_rn((double) x[t], c[t % d])));
	for (int off = WARP / 2; off > 0; off /= 2)
		m = fmax(m, __shfl_down_sync(FULL_MASK, m, off));
	if (threadIdx.x % WARP == 0)
		atomicMax(out, (unsigned long long) __double_as_longlong(m));
}

/* One warp per point: h, q and rc (fp16_filter.h); padding rows are zero. */
template <typename T>
__global__ void
convert_kernel(const T *x, unsigned int n, unsigned int npad, int d, int pitch, bool approx,
			   const double *c, const unsigned int *order, TcF16Plan plan, __half *h,
			   float *q, float *rc)
{
	unsigned int i = (unsigned int) (((size_t) blockIdx.x * blockDim.x + threadIdx.x) / WARP);
	int			lane = threadIdx.x % WARP;
	double		hn2 = 0.0,
				r2 = 0.0,
				y2 = 0.0,
				A = 0.0,		/* the prefix bound's (fp16_filter.h), lane 0's */
				P = 0.0;		/* h^2 of the steps so far */
	/* the prefix bound's steps (fp16_filter.h) start below K */
	const int	ksteps = plan.dpad;
	/* whole warps (the shuffles below), past both the row and the steps */
	const int	kend = (max(pitch, ksteps) + WARP - 1) / WARP * WARP;

	if (i >= npad)
		return;
	for (int k0 = 0; k0 < kend; k0 += WARP)
	{
		const int	k = k0 + lane;
		double		hk = 0.0;

		if (i < n && k < d)
		{
			double		sy = __dmul_rn(plan.sigma,
									   __dsub_rn((double) x[(size_t) order[i] * d + k], c[k]));
			double		ek;

			hk = tc_f16_round(sy);
			ek = __dsub_rn(hk, sy);
			hn2 = __dadd_rn(hn2, __dmul_rn(hk, hk));
			r2 = __dadd_rn(r2, __dmul_rn(ek, ek));
			y2 = __dadd_rn(y2, __dmul_rn(sy, sy));
		}
		if (k < pitch)
			h[(size_t) i * pitch + k] = __double2half(hk);	/* exact: hk is an FP16 value */
		if (plan.prefix)
		{
			/* this warp's two steps (lanes 0-15, 16-31): their h^2, then A in order */
			double		v = __dmul_rn(hk, hk);

			for (int off = 8; off > 0; off /= 2)
				v += __shfl_xor_sync(FULL_MASK, v, off);
			for (int half = 0; half < 2; half++)
				if (k0 + 16 * half < ksteps)
				{
					A += P;
					P += __shfl_sync(FULL_MASK, v, 16 * half);
				}
		}
	}
	for (int off = WARP / 2; off > 0; off /= 2)
	{
		hn2 += __shfl_down_sync(FULL_MASK, hn2, off);
		r2 += __shfl_down_sync(FULL_MASK, r2, off);
		y2 += __shfl_down_sync(FULL_MASK, y2, off);
	}
	if (lane == 0)
	{
		TcF16Point	pt;

		if (i < n)
		{
			tc_f16_finish(&plan, d, hn2, r2, y2, A, &pt);
			q[i] = approx ? (float) (hn2 * 0.5) : pt.q;
			rc[i] = approx ? 0.0f : pt.rc;
		}
		else
			q[i] = rc[i] = 0.0f;
	}
}

/* ---------- order and tile pruning ---------- */

/*
 * Points are ordered so that tiles are compact: recursive bisection, each
 * segment sorted along the line through two far-apart points of a sample
 * (a cheap stand-in for its principal axis), halving segments down to one
 * tile.  Any order is correct; a compact one lets whole tile pairs go.
 */
#define DIR_SAMPLE 256
#define DIR_THREADS 512

/*
 * Per segment: a direction, p2 - p1, of two far-apart sampled points (p1
 * the farthest sample from the segment's first point, p2 the farthest from
 * p1).  A warp per sampled point reads its row coalesced.
 */
template <typename T>
__global__ void
__launch_bounds__(DIR_THREADS)
dir_kernel(const T *x, int d, const unsigned int *order, unsigned int n, unsigned int seg, float *dir)
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
				const T    *pa = x + (size_t) order[s0 + t * stride] * d;
				const T    *pf = x + (size_t) from * d;

				dd = 0.0f;
				for (int k = lane; k < d; k += WARP)
				{
					float		u = (float) ((double) pa[k] - (double) pf[k]);

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
		dir[(size_t) blockIdx.x * d + k] = (float) ((double) x[(size_t) s_far * d + k] -
													(double) x[(size_t) from * d + k]);
}

/* Sort key of each position: its projection on its segment's direction. */
template <typename T>
__global__ void
proj_kernel(const T *x, int d, const unsigned int *order, unsigned int n, unsigned int seg,
			const float *dir, unsigned int *key)
{
	unsigned int p = (unsigned int) (((size_t) blockIdx.x * blockDim.x + threadIdx.x) / WARP);
	int			lane = threadIdx.x % WARP;
	float		v = 0.0f;

	if (p >= n)
		return;
	const float *dv = dir + (size_t) (p / seg) * d;
	const T    *xp = x + (size_t) order[p] * d;

	for (int k = lane; k < d; k += WARP)
		v += (float) xp[k] * dv[k];
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
bounds_kernel(const T *x, int d, const double *c, const unsigned int *order, unsigned int n,
			  float *cen, float *rad)
{
	__shared__ double s_r[BT];
	unsigned int t0 = blockIdx.x * BT;
	unsigned int cnt = min((unsigned int) BT, n - t0);
	double		cn2 = 0.0;

	for (int k = threadIdx.x; k < d; k += blockDim.x)
	{
		double		m = 0.0;

		for (unsigned int i = 0; i < cnt; i++)
			m += (double) x[(size_t) order[t0 + i] * d + k] - c[k];
		cen[(size_t) blockIdx.x * d + k] = (float) (m / (double) cnt);
	}
	__syncthreads();
	/* one point per thread: its distance to the centre as stored */
	{
		double		r2 = 0.0;

		if (threadIdx.x < cnt)
			for (int k = 0; k < d; k++)
			{
				double		u = ((double) x[(size_t) order[t0 + threadIdx.x] * d + k] - c[k]) -
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

/*
 * Tile pairs are enumerated, and joined, in squares of PRUNE_SQ x PRUNE_SQ:
 * the blocks at work at any time then share a few dozen tiles, which stay
 * in L2 (row by row, each block would bring its own second tile).
 */
#define PRUNE_SQ 16
#define TILE_NONE 0xFFFFFFFFu	/* a list entry's missing tile: a row's pad, a cluster's second row */

/*
 * Of the tile pairs in squares [u0, u1) (squares numbered row by row over
 * the upper triangle of the nsq x nsq squares; pairs off the triangle are
 * skipped), those that may hold a pair within eps: |cen_a - cen_b| <=
 * rad_a + rad_b + eps_hi, with |cen_a - cen_b| computed in float8 from the
 * float4 centres and shrunk by a generous margin for its roundings ((d + 4)
 * 2^-22 of the squared sum, each term a square).  Appended with one atomic
 * per warp, so the list keeps roughly the square order.
 */
__device__ __forceinline__ unsigned long long
tri_start(unsigned long long r, unsigned long long m)
{
	return r * m - r * (r - 1) / 2;		/* first entry of row r, m x m triangle */
}

/* Tile pair t of the band from square u0: false where it is off the triangle or past the tiles. */
__device__ __forceinline__ bool
tile_pair_at(unsigned long long t, unsigned long long u0, unsigned long long u1, unsigned int nt,
			 unsigned long long *bi, unsigned long long *bj)
{
	const unsigned long long nsq = (nt + PRUNE_SQ - 1) / PRUNE_SQ;
	unsigned long long u = u0 + t / (PRUNE_SQ * PRUNE_SQ);
	unsigned int l = (unsigned int) (t % (PRUNE_SQ * PRUNE_SQ));
	double		b = 2.0 * (double) nsq + 1.0;
	long long	r;

	*bi = *bj = 0;
	if (u >= u1)
		return false;
	r = (long long) ((b - sqrt(b * b - 8.0 * (double) u)) / 2.0);
	if (r < 0)
		r = 0;
	while (r > 0 && tri_start(r, nsq) > u)
		r--;
	while (r + 1 < (long long) nsq && tri_start(r + 1, nsq) <= u)
		r++;
	*bi = (unsigned long long) r * PRUNE_SQ + l / PRUNE_SQ;
	*bj = (r + (u - tri_start(r, nsq))) * PRUNE_SQ + l % PRUNE_SQ;
	return *bi < nt && *bj < nt && *bj >= *bi;
}

/*
 * The test, a block per square (PRUNE_SQ^2 = 256 threads, a tile pair
 * each), a warp's 32 tile pairs (two rows of the square, 16 lanes each)
 * at a time: mask[w] gets the warp's ballot of pairs kept, count[w] the
 * entries they take in the list, by mode (LIST_*).  LIST_PAIRS: a row
 * that kept an odd number takes one more, an entry (bi, TILE_NONE) after
 * them, so that every aligned pair of entries shares its first tile (the
 * Hopper kernel's items).  LIST_ROWS: the warp's two rows take one entry
 * for each column either kept, the entry pair (A0, B0), (A1, B1) an item
 * of both rows against B0 and B1 (the Hopper kernel's cluster items; A1
 * TILE_NONE past the tiles, B1 TILE_NONE for an odd count).  emit_kernel
 * then writes them at offsets scanned from count, so
 * the list keeps the square order exactly: an atomic append would mix
 * the rows of the thousands of squares tested at once, and the join's
 * blocks would no longer share their tiles in L2.
 *
 * The square's 16 row and 16 column centres come through shared memory,
 * PRUNE_KC dimensions at a time, read coalesced: a thread reading its two
 * centres itself read 16 times the bytes, a row each lane (on an H200, 3.4
 * ms of a 100,000 x 4,096 join).  They are staged as float8, converted
 * once a block, not twice a term by each of its 256 threads (the
 * conversions run at a quarter of float8's add rate); the sums are the
 * same, bit for bit.  Each thread still sums its terms in index order.
 */
#define PRUNE_KC 128

#define LIST_ONE 0				/* an entry a tile pair (brute_kernel) */
#define LIST_PAIRS 1			/* pairs of entries sharing tile A (brute_wgmma_kernel) */
#define LIST_ROWS 2				/* two rows against the same columns (its cluster items) */

/* The list entries of a warp's two rows of a square that kept mask m. */
__device__ __forceinline__ unsigned int
list_count(unsigned int m, int mode)
{
	unsigned int n_lo = __popc(m & 0xFFFFu),
				n_hi = __popc(m >> 16),
				u = __popc((m & 0xFFFFu) | (m >> 16));

	return mode == LIST_ROWS ? u + (u & 1) :
		mode == LIST_PAIRS ? n_lo + (n_lo & 1) + n_hi + (n_hi & 1) : n_lo + n_hi;
}

__global__ void
__launch_bounds__(PRUNE_SQ * PRUNE_SQ)
prune_kernel(const float *cen, const float *rad, int d, unsigned int nt, double eps_hi,
			 unsigned long long u0, unsigned long long u1, unsigned int split, int mode,
			 unsigned int *mask, unsigned int *count)
{
	/*
	 * row stride PRUNE_KC + 1 (odd): the 16 column centres' reads of one k
	 * fall in 16 distinct pairs of banks
	 */
	__shared__ double sc[2 * PRUNE_SQ][PRUNE_KC + 1];
	unsigned long long t = (unsigned long long) blockIdx.x * blockDim.x + threadIdx.x;
	int			lane = threadIdx.x % WARP;
	unsigned long long bi,
				bj;
	bool		keep = tile_pair_at(t, u0, u1, nt, &bi, &bj);
	/*
	 * the square's first row and column tiles: thread l's pair is (r0 + l /
	 * PRUNE_SQ, c0 + l % PRUNE_SQ), set even where it is no pair (u < u1:
	 * the grid is one block a square of the band)
	 */
	const unsigned long long r0 = bi - threadIdx.x / PRUNE_SQ,
				c0 = bj - threadIdx.x % PRUNE_SQ;

	if (split > 0 && !(bi < split && bj >= split))
		keep = false;			/* a streamed join's two blocks: only pairs across them */

	if (__syncthreads_or(keep && bj != bi))
	{
		/* in float8: a float4 sum of squares overflows from centres 1.8e19 apart */
		double		s2 = 0.0;
		const int	ri = (int) (threadIdx.x / PRUNE_SQ),
					cj = (int) (threadIdx.x % PRUNE_SQ) + PRUNE_SQ;

		for (int k0 = 0; k0 < d; k0 += PRUNE_KC)
		{
			const int	kn = min(PRUNE_KC, d - k0);

			__syncthreads();	/* the last chunk is read */
			for (int e = threadIdx.x; e < 2 * PRUNE_SQ * PRUNE_KC; e += blockDim.x)
			{
				const int	c = e / PRUNE_KC,
							k = e % PRUNE_KC;
				const unsigned long long tile = c < PRUNE_SQ ? r0 + c : c0 + (c - PRUNE_SQ);

				sc[c][k] = k < kn && tile < nt ? (double) cen[tile * d + k0 + k] : 0.0;
			}
			__syncthreads();
			if (keep && bj != bi)
				for (int k = 0; k < kn; k++)
				{
					double		v = sc[ri][k] - sc[cj][k];

					s2 += v * v;
				}
		}
		if (keep && bj != bi)
		{
			double		lower = sqrt(s2 * (1.0 - (double) (d + 4) * 0x1p-22));
			double		reach = (double) rad[bi] + (double) rad[bj] + eps_hi;

			/* a centre or radius past float4's range proves nothing: keep */
			keep = !(isfinite(lower) && lower > reach * (1.0 + 0x1p-20));
		}
	}

	unsigned int m = __ballot_sync(FULL_MASK, keep);

	if (lane == 0)
	{
		mask[t / WARP] = m;
		count[t / WARP] = list_count(m, mode);
	}
}

/*
 * The kept tile pairs of prune_kernel's warps, at the offsets scanned from
 * their counts; nlist[0] counts the entries, nlist[1] the tile pairs kept.
 */
__global__ void
emit_kernel(unsigned int nt, unsigned long long u0, unsigned long long u1, unsigned int split, int mode,
			const unsigned int *mask, const unsigned int *offset, unsigned long long *list,
			unsigned long long *nlist)
{
	unsigned long long t = (unsigned long long) blockIdx.x * blockDim.x + threadIdx.x;
	int			lane = threadIdx.x % WARP;
	unsigned int m = mask[t / WARP];
	unsigned long long bi,
				bj;

	if (m == 0)
		return;
	tile_pair_at(t, u0, u1, nt, &bi, &bj);

	unsigned int n_lo = __popc(m & 0xFFFFu),
				n_hi = __popc(m >> 16);
	unsigned int pad_lo = mode == LIST_PAIRS ? n_lo & 1 : 0,
				pad_hi = mode == LIST_PAIRS ? n_hi & 1 : 0;
	unsigned long long base = offset[t / WARP];

	if (lane == 0)
	{
		atomicAdd(nlist, (unsigned long long) list_count(m, mode));
		atomicAdd(nlist + 1, (unsigned long long) (n_lo + n_hi));
	}
	if (mode == LIST_ROWS)
	{
		/*
		 * lane l < 16 speaks for column l of both rows: bi is the first
		 * row's, bj the column.  No second row past the tiles, nor, in a
		 * streamed join, past the first block (its pairs are the second
		 * block's own).
		 */
		const unsigned int u = (m & 0xFFFFu) | (m >> 16);
		const unsigned long long a1 = bi + 1 < nt && (split == 0 || bi + 1 < split) ? bi + 1 : TILE_NONE;

		if (lane < 16 && (u & (1u << lane)))
		{
			unsigned int p = __popc(u & ((1u << lane) - 1));

			list[base + p] = ((p & 1 ? a1 : bi) << 32) | bj;
		}
		if (lane == 0 && (__popc(u) & 1))
			list[base + __popc(u)] = (a1 << 32) | TILE_NONE;
		return;
	}
	if (m & (1u << lane))
		list[base + __popc(m & ((1u << lane) - 1)) + (lane >= 16 ? pad_lo : 0)] = (bi << 32) | bj;
	/* a row's lanes share bi, and a row that kept a pair has it right in every lane */
	if (lane == 0 && pad_lo)
		list[base + n_lo] = (bi << 32) | TILE_NONE;
	if (lane == 16 && pad_hi)
		list[base + n_lo + pad_lo + n_hi] = (bi << 32) | TILE_NONE;
}

/* ---------- the join ---------- */

/* 16 bytes global -> shared, asynchronously; zero-filled when !in. */
__device__ __forceinline__ void
cp_async16(void *smem, const void *gmem, bool in)
{
	unsigned int saddr = (unsigned int) __cvta_generic_to_shared(smem);

	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
				 :: "r"(saddr), "l"(gmem), "r"(in ? 16 : 0));
}

__device__ __forceinline__ void
cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;");
}

/* Four 8 x 8 matrices of halves from shared memory, one per lane group. */
__device__ __forceinline__ void
ldmatrix_x4(uint32_t (&r)[4], const __half *row)
{
	unsigned int saddr = (unsigned int) __cvta_generic_to_shared(row);

	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
				 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
				 : "r"(saddr));
}

/* All but the most recent group of copies have landed. */
__device__ __forceinline__ void
cp_async_wait_1(void)
{
	asm volatile("cp.async.wait_group 1;" ::: "memory");
}

__device__ __forceinline__ void
mma_f16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
				 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
				 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
				 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}


/*
 * The epilogue's second stage: the pairs the filter kept (bits of keep;
 * pos(bit, &i, &j) gives a bit's positions) go to the batch's candidate
 * list, one atomic per warp; recheck_kernel then decides them.  Deciding
 * them here would leave the tensor cores idle while a lane reads two rows
 * of d coordinates from memory.
 */
template <int W, typename Pos>
__device__ __forceinline__ void
append_kept(const BruteBatch &b, int lane, uint32_t (&keep)[W], unsigned long long &rech, Pos pos)
{
	int			mine = 0,
				incl;
	unsigned int base = 0;

#pragma unroll
	for (int w = 0; w < W; w++)
		mine += __popc(keep[w]);
	incl = mine;
	for (int off = 1; off < WARP; off *= 2)
	{
		int			v = __shfl_up_sync(FULL_MASK, incl, off);

		if (lane >= off)
			incl += v;
	}

	int			total = __shfl_sync(FULL_MASK, incl, WARP - 1);

	if (total == 0)
		return;
	rech += mine;
	if (lane == WARP - 1)
		base = atomicAdd(b.ncand, (unsigned int) total);
	base = __shfl_sync(FULL_MASK, base, WARP - 1);
	if ((unsigned long long) base + total > b.cand_capacity)
	{
		if (lane == 0)
			atomicExch(b.overflow, 1u);
		return;
	}
	base += incl - mine;
#pragma unroll
	for (int w = 0; w < W; w++)
		while (keep[w] != 0)
		{
			int			lo = __ffs(keep[w]) - 1;
			unsigned int i,
						j;

			keep[w] &= keep[w] - 1;
			pos(w * 32 + lo, &i, &j);
			b.cand[base++] = make_uint2(i, j);
		}
}

/*
 * The candidates, decided by the contract's sum on the caller's
 * coordinates.  A warp takes 32 candidates, a lane each; 32 coordinates at
 * a time, the warp reads each candidate's two row pieces together (128
 * coalesced bytes per row for float4) into shared memory, and each lane
 * then adds its candidate's 32 squares in index order.  A lane walking its
 * own rows alone would touch 64 lines per load and lose them from L1.  The
 * list is in tile order, so most rows come from L2.
 */
#define RC_WARPS 4
#define RC_CHUNK 32
#define RC_ROW (RC_CHUNK + 1)	/* padded: lanes read different banks */

/* The batch's candidates to recheck: none when it overflowed (it is rerun). */
__device__ __forceinline__ unsigned int
batch_candidates(const BruteBatch &b)
{
	if (*(volatile unsigned int *) b.overflow != 0)
		return 0;
	return min(*(volatile unsigned int *) b.ncand, b.cand_capacity);
}

/*
 * Where position q's row starts, in elements: its FP16 row (exact => false)
 * or its caller's coordinates, through the order map.
 */
template <bool APPROX>
__device__ __forceinline__ size_t
cand_row(const BruteDev &g, unsigned int q)
{
	return APPROX ? (size_t) q * g.hpitch : (size_t) g.order[q] * g.d;
}

/* exact => false: the filter decided; dist^2 from |h_a|^2 + |h_b|^2 - 2 dot, in float4 */
__device__ __forceinline__ double
approx_dist2(const BruteDev &g, uint2 p, float dot)
{
	float		d2 = 2.0f * (g.q[p.x] + g.q[p.y] - dot);

	return (double) fmaxf(d2, 0.0f) * g.inv_sigma * g.inv_sigma;
}

/* Position q's row in the caller's numbering (a streamed block's shift added). */
__device__ __forceinline__ long long
caller_row(const BruteDev &g, unsigned int q)
{
	unsigned int r = g.order[q];

	return (long long) r + (r < g.split_row ? g.shift_lo : g.shift_hi);
}

template <typename T, bool APPROX>
__global__ void
__launch_bounds__(RC_WARPS * WARP)
recheck_kernel(BruteDev g, BruteBatch b)
{
	/* exact => false: the FP16 rows, as float4, and an FP32 dot */
	typedef typename std::conditional<APPROX, float, T>::type E;
	extern __shared__ __align__(16) unsigned char rc_raw[];
	__shared__ Stage stages[RC_WARPS];
	const int	lane = threadIdx.x % WARP;
	const int	warp = threadIdx.x / WARP;
	E		   *sa = (E *) rc_raw + (size_t) warp * 2 * WARP * RC_ROW;
	E		   *sb = sa + WARP * RC_ROW;
	Stage	   &st = stages[warp];
	int			nst = 0;
	const T    *x = (const T *) g.x;
	const int	len = APPROX ? g.dpad : g.d;
	unsigned int nc;

	if ((nc = batch_candidates(b)) == 0)
		return;
	for (unsigned int c0 = (blockIdx.x * RC_WARPS + warp) * WARP; c0 < nc;
		 c0 += gridDim.x * RC_WARPS * WARP)
	{
		unsigned int c = c0 + lane;
		uint2		p = make_uint2(0, 0);
		size_t		ra = 0,
					rb = 0;
		double		s = 0.0;
		float		dot = 0.0f;
		bool		live = c < nc;	/* not yet past thr */

		if (live)
		{
			p = b.cand[c];
			ra = cand_row<APPROX>(g, p.x);
			rb = cand_row<APPROX>(g, p.y);
		}
		for (int k0 = 0; k0 < len && __any_sync(FULL_MASK, live); k0 += RC_CHUNK)
		{
			int			m = min(RC_CHUNK, len - k0);

			/*
			 * Candidate u's pieces, from the lane that holds it: RC_BATCH
			 * candidates' loads in flight before their stores (the loads
			 * mostly miss L1, and the kernel is bound by their latency).
			 */
			constexpr int RC_BATCH = sizeof(E) == 8 ? 16 : 32;

			for (int u0 = 0; u0 < WARP; u0 += RC_BATCH)
			{
				E			va[RC_BATCH],
							vb[RC_BATCH];
				bool		in[RC_BATCH];

#pragma unroll
				for (int v = 0; v < RC_BATCH; v++)
				{
					size_t		ua = __shfl_sync(FULL_MASK, ra, u0 + v),
								ub = __shfl_sync(FULL_MASK, rb, u0 + v);

					in[v] = __shfl_sync(FULL_MASK, live, u0 + v) && lane < m;
					if (APPROX)
					{
						va[v] = in[v] ? (E) __half2float(g.h[ua + k0 + lane]) : (E) 0;
						vb[v] = in[v] ? (E) __half2float(g.h[ub + k0 + lane]) : (E) 0;
					}
					else
					{
						va[v] = in[v] ? (E) x[ua + k0 + lane] : (E) 0;
						vb[v] = in[v] ? (E) x[ub + k0 + lane] : (E) 0;
					}
				}
#pragma unroll
				for (int v = 0; v < RC_BATCH; v++)
					if (in[v])
					{
						sa[(u0 + v) * RC_ROW + lane] = va[v];
						sb[(u0 + v) * RC_ROW + lane] = vb[v];
					}
			}
			__syncwarp();
			if (live)
			{
				if (APPROX)
					for (int k = 0; k < m; k++)
						dot = __fadd_rn(dot, __fmul_rn((float) sa[lane * RC_ROW + k], (float) sb[lane * RC_ROW + k]));
				else
				{
					for (int k = 0; k < m; k++)
					{
						double		t = __dsub_rn((double) sa[lane * RC_ROW + k], (double) sb[lane * RC_ROW + k]);

						s = __dadd_rn(s, __dmul_rn(t, t));
					}
					live = s <= g.thr;	/* partial sums only grow */
				}
			}
			__syncwarp();
		}
		if (APPROX && c < nc)
			s = approx_dist2(g, p, dot);
		stage_hit(b, st, nst, lane, live && c < nc, p.x, p.y, s,
				  [&] (unsigned int q) { return caller_row(g, q); });
	}
	flush_stage(st, nst, b, lane);
}

#define RC_SMEM(T) (RC_WARPS * 2 * WARP * RC_ROW * (int) sizeof(T))

/*
 * The batch's candidates grouped by their first point (a counting sort:
 * count, scan, scatter), so that the lanes of a warp in recheck_vec_kernel
 * mostly share that row: its loads come to one line for the warp where
 * there were 32 (about 40 candidates a point at 64 neighbours), half the
 * lines the recheck reads.
 */
__global__ void
cand_count_kernel(BruteBatch b, unsigned int *count)
{
	const unsigned int nc = batch_candidates(b);

	for (unsigned int c = blockIdx.x * blockDim.x + threadIdx.x; c < nc; c += gridDim.x * blockDim.x)
		atomicAdd(&count[b.cand[c].x], 1u);
}

__global__ void
cand_scatter_kernel(BruteBatch b, unsigned int *offset, uint2 *out)
{
	const unsigned int nc = batch_candidates(b);

	for (unsigned int c = blockIdx.x * blockDim.x + threadIdx.x; c < nc; c += gridDim.x * blockDim.x)
	{
		const uint2 p = b.cand[c];

		out[atomicAdd(&offset[p.x], 1u)] = p;
	}
}

/*
 * The same decision, a lane per candidate walking its own two rows in
 * 16-byte loads, RC_VEC_LOADS of each row in flight: no shared memory, no
 * shuffles, a few instructions a coordinate where the staged kernel above
 * spends some fifty (Nsight Compute: issue-bound, a third of its issue
 * slots used, 10 warps an SM).  A lane's loads take whole 128-byte lines
 * back to back, so each line is used up before L1 can lose it.  On an H200
 * it halves the recheck of exact => false (FP16 rows: 0.031 s against
 * 0.064 s at 100,000 x 4,096); software-pipelined (below) it is as fast as
 * the staged kernel on the exact recheck at d = 4,096 (0.112 s against
 * 0.111 s) and faster below (0.017 s against 0.023 s at 1,024, 0.006 s
 * against 0.009 s at 384), so it serves both where rows are 16-byte
 * aligned; the staged kernel serves the rest.
 */
#define RC_VEC_LOADS 4

/* Element e of a 16-byte vector of E (e known at compile time). */
template <typename E>
__device__ __forceinline__ E
vec_elem(const uint4 &v, int e)
{
	E			x[16 / sizeof(E)];

	memcpy(x, &v, 16);
	return x[e];
}

template <typename T, bool APPROX>
__global__ void
__launch_bounds__(RC_WARPS * WARP)
recheck_vec_kernel(BruteDev g, BruteBatch b)
{
	/* exact => false: the FP16 rows and an FP32 dot */
	typedef typename std::conditional<APPROX, __half, T>::type E;
	constexpr int VEC = 16 / sizeof(E);
	constexpr int STEP = VEC * RC_VEC_LOADS;
	__shared__ Stage stages[RC_WARPS];
	const int	lane = threadIdx.x % WARP;
	const int	warp = threadIdx.x / WARP;
	Stage	   &st = stages[warp];
	int			nst = 0;
	const E    *x = APPROX ? (const E *) g.h : (const E *) g.x;
	const int	len = APPROX ? g.dpad : g.d;
	unsigned int nc;

	if ((nc = batch_candidates(b)) == 0)
		return;
	for (unsigned int c0 = (blockIdx.x * RC_WARPS + warp) * WARP; c0 < nc;
		 c0 += gridDim.x * RC_WARPS * WARP)
	{
		const unsigned int c = c0 + lane;
		uint2		p = make_uint2(0, 0);
		double		s = 0.0;
		float		dot = 0.0f;
		bool		hit = false;

		if (c < nc)
		{
			p = b.cand[c];

			const E    *ra = x + cand_row<APPROX>(g, p.x);
			const E    *rb = x + cand_row<APPROX>(g, p.y);
			int			k = 0;
			uint4		va[RC_VEC_LOADS],
						vb[RC_VEC_LOADS];
			auto		load = [&] (uint4 (&la)[RC_VEC_LOADS], uint4 (&lb)[RC_VEC_LOADS], int at) {
#pragma unroll
				for (int u = 0; u < RC_VEC_LOADS; u++)
				{
					la[u] = __ldg((const uint4 *) (ra + at) + u);
					lb[u] = __ldg((const uint4 *) (rb + at) + u);
				}
			};

			/*
			 * Software-pipelined: a step's loads go out before the previous
			 * step's sums, which form one dependent chain; without that the
			 * compiler kept a single step's loads in flight (40 registers)
			 * and the chain's latency stood between them.  On the last step
			 * the next loads reread this one (no branch, no read past the
			 * row).  A stop past thr leaves the next step's loads unused.
			 */
			if (STEP <= len)
				load(va, vb, 0);
			while (k + STEP <= len)
			{
				const bool	more = k + 2 * STEP <= len;
				uint4		na[RC_VEC_LOADS],
							nb[RC_VEC_LOADS];

				load(na, nb, more ? k + STEP : k);
#pragma unroll
				for (int u = 0; u < RC_VEC_LOADS; u++)
#pragma unroll
					for (int e = 0; e < VEC; e++)
					{
						if (APPROX)
							dot = __fadd_rn(dot, __fmul_rn(__half2float(vec_elem<__half>(va[u], e)),
														   __half2float(vec_elem<__half>(vb[u], e))));
						else
						{
							double		t = __dsub_rn((double) vec_elem<E>(va[u], e),
													  (double) vec_elem<E>(vb[u], e));

							s = __dadd_rn(s, __dmul_rn(t, t));
						}
					}
				k += STEP;
				if (!APPROX && s > g.thr)
					break;
#pragma unroll
				for (int u = 0; u < RC_VEC_LOADS; u++)
				{
					va[u] = na[u];
					vb[u] = nb[u];
				}
			}
			for (; k < len && (APPROX || s <= g.thr); k++)
			{
				if (APPROX)
					dot = __fadd_rn(dot, __fmul_rn(__half2float(ra[k]), __half2float(rb[k])));
				else
				{
					double		t = __dsub_rn((double) ra[k], (double) rb[k]);

					s = __dadd_rn(s, __dmul_rn(t, t));
				}
			}
			if (APPROX)
			{
				s = approx_dist2(g, p, dot);
				hit = true;
			}
			else
				hit = s <= g.thr;	/* partial sums only grow: a stop past thr rejects */
		}
		stage_hit(b, st, nst, lane, hit, p.x, p.y, s,
				  [&] (unsigned int q) { return caller_row(g, q); });
	}
	flush_stage(st, nst, b, lane);
}

__global__ void
__launch_bounds__(BRUTE_THREADS)
brute_kernel(BruteDev g, BruteBatch b)
{
	extern __shared__ __align__(16) __half tiles[];	/* [2 buffers][2 tiles][BT * SROW] */
	__shared__ unsigned long long s_tile;
	const int	tid = threadIdx.x;
	const int	lane = tid % WARP;
	const int	warp = tid / WARP;
	const int	wm = warp >> 1;
	const int	wn = warp & 1;
	const int	gr = lane >> 2;
	const int	tg = lane & 3;
	unsigned long long cand = 0,
				rech = 0;

	for (;;)
	{
		/* One thread decides, so that the whole block leaves together. */
		__syncthreads();
		if (tid == 0)
			s_tile = *(volatile unsigned int *) b.overflow != 0 || *b.abort != 0 ? b.hi :
				b.lo + atomicAdd(b.queue, 1ull);
		__syncthreads();

		unsigned long long t = s_tile;

		if (t >= b.hi)
			break;

		unsigned int bi,
					bj;
		float		acc[4][8][4];

		bi = (unsigned int) (b.list[t] >> 32);
		bj = (unsigned int) b.list[t];
#pragma unroll
		for (int mf = 0; mf < 4; mf++)
#pragma unroll
			for (int nf = 0; nf < 8; nf++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					acc[mf][nf][e] = 0.0f;

		/*
		 * K in chunks of KT: the next chunk's copies (cp.async, 16 bytes
		 * each, zero-filled past dpad) run while the tensor cores work on
		 * this one, in two shared-memory buffers.
		 */
		const int	nk = (g.dpad + KT - 1) / KT;
		auto		load_chunk = [&] (int buf, int k0) {
			__half	   *sa = tiles + buf * 2 * BT * SROW;
			__half	   *sb = sa + BT * SROW;

			for (int v = tid; v < BT * (KT / 8); v += BRUTE_THREADS)
			{
				int			row = v / (KT / 8);
				int			c8 = v % (KT / 8);
				int			kk = k0 + c8 * 8;
				bool		in = kk < g.dpad;

				cp_async16(sa + row * SROW + c8 * 8,
						   in ? g.h + ((size_t) bi * BT + row) * g.hpitch + kk : g.h, in);
				cp_async16(sb + row * SROW + c8 * 8,
						   in ? g.h + ((size_t) bj * BT + row) * g.hpitch + kk : g.h, in);
			}
			cp_async_commit();
		};

		load_chunk(0, 0);
		for (int kc = 0; kc < nk; kc++)
		{
			const __half *sa = tiles + (kc & 1) * 2 * BT * SROW;
			const __half *sb = sa + BT * SROW;
			const int	k0 = kc * KT;

			if (kc + 1 < nk)
				load_chunk((kc + 1) & 1, k0 + KT);
			else
				cp_async_commit();	/* an empty group keeps the count */
			cp_async_wait_1();
			__syncthreads();
#pragma unroll
			for (int ks = 0; ks < KT; ks += 16)
			{
				uint32_t	af[4][4],
							bf[8][2];

				if (k0 + ks >= g.dpad)
					break;
				/*
				 * ldmatrix: lane l names row (l & 7) of 8 x 8 matrix l / 8.
				 * A's four are (rows 0-7 | 8-15) x (k 0-7 | 8-15), giving
				 * a0..a3; B's, per pair of 8-candidate fragments, are
				 * (candidates 0-7 | 8-15) x (k 0-7 | 8-15).
				 */
#pragma unroll
				for (int mf = 0; mf < 4; mf++)
					ldmatrix_x4(af[mf], sa + (wm * 64 + mf * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * SROW +
								ks + (lane >> 4) * 8);
#pragma unroll
				for (int nf = 0; nf < 8; nf += 2)
				{
					uint32_t	r[4];

					ldmatrix_x4(r, sb + (wn * 64 + nf * 8 + (lane & 7) + (lane >> 4) * 8) * SROW +
								ks + ((lane >> 3) & 1) * 8);
					bf[nf][0] = r[0];
					bf[nf][1] = r[1];
					bf[nf + 1][0] = r[2];
					bf[nf + 1][1] = r[3];
				}
#pragma unroll
				for (int mf = 0; mf < 4; mf++)
#pragma unroll
					for (int nf = 0; nf < 8; nf++)
						mma_f16(acc[mf][nf], af[mf], bf[nf]);
			}
			/* Every warp is done with this buffer before it is refilled. */
			__syncthreads();
		}

		/*
		 * Epilogue.  First, unrolled (so acc stays in registers), the bound
		 * drops what is certainly beyond eps; survivors are bits of keep,
		 * bit ((mf * 2 + hf) * 8 + nf) * 2 + e.  Then each lane checks its
		 * survivors exactly, one a round, the warp staging hits together.
		 */
		uint32_t	keep[4] = {0, 0, 0, 0};
		float		q_c[8][2],
					rc_c[8][2];
		const unsigned int row0 = bi * BT + wm * 64 + gr;
		const unsigned int col0 = bj * BT + wn * 64 + 2 * tg;

#pragma unroll
		for (int nf = 0; nf < 8; nf++)
#pragma unroll
			for (int e = 0; e < 2; e++)
			{
				q_c[nf][e] = g.q[col0 + nf * 8 + e];
				rc_c[nf][e] = g.rc[col0 + nf * 8 + e];
			}
#pragma unroll
		for (int mf = 0; mf < 4; mf++)
#pragma unroll
			for (int hf = 0; hf < 2; hf++)
			{
				unsigned int i = row0 + mf * 16 + 8 * hf;
				float		q_r = g.q[i],
							rc_r = g.rc[i];

#pragma unroll
				for (int nf = 0; nf < 8; nf++)
#pragma unroll
					for (int e = 0; e < 2; e++)
					{
						unsigned int j = col0 + nf * 8 + e;
						int			bit = ((mf * 2 + hf) * 8 + nf) * 2 + e;
						bool		valid = i < g.n && j < g.n && (bi != bj || j > i);

						cand += valid;
						if (valid && keep_pair(g, acc[mf][nf][hf * 2 + e], q_r, q_c[nf][e], rc_r,
											   rc_c[nf][e]))
							keep[bit >> 5] |= 1u << (bit & 31);
					}
			}
		append_kept(b, lane, keep, rech, [&] (int bit, unsigned int *i, unsigned int *j) {
			*i = row0 + (bit >> 5) * 16 + 8 * ((bit >> 4) & 1);
			*j = col0 + ((bit >> 1) & 7) * 8 + (bit & 1);
		});
	}
	add_counts(b, lane, cand, rech);
}

/*
 * ---------- the join on Hopper: TMA and wgmma (sm_90a) ----------
 *
 * A work item is two consecutive list entries, which share their first
 * tile (prune_kernel pads each tile row of the list to an even length): one
 * tile A against up to two tiles B0, B1, a 128 x 256 block of pairs.  A
 * block has three roles.  One producer warp loads 64-dimension slices of
 * A, B0 and B1 by TMA into a ring of WG_STAGES stages; the tensor map's
 * 128-byte swizzle is the layout wgmma reads (row r's 16-byte chunk c at
 * chunk c ^ (r % 8) of its 128-byte row, 8-row groups 1024 bytes apart),
 * and a missing B1 is not loaded.  Two consumer warpgroups each multiply 64
 * rows of A by all 256 columns (wgmma.m64n256k16, both operands from
 * shared memory), keeping one slice's MMAs in flight while the next is
 * issued.  A full and an empty mbarrier per stage pass the stages between
 * them, so the loads run up to WG_STAGES slices ahead, through the
 * consumers' epilogue, and no barrier of the whole block sits in the loop.
 * Per FLOP, the 128 x 256 block reads a third less from L2 than 128 x 128.
 *
 * With CLUSTER (a cluster of two blocks), a work item is two tiles A0, A1
 * (consecutive tile rows) against the same B0, B1: the list's entry pair
 * is (A0, B0), (A1, B1) (prune_kernel's mode 2 lists, for each two rows
 * of a square, the columns either row kept), block r of the cluster
 * multiplies A_r by B0 and B1, and the first block's producer loads A0
 * into it, A1 into the second and each B into both by TMA multicast: per
 * item 4 tiles from L2 where two blocks alone read 6.  The stages' full
 * barriers are each block's own, the empty ones the first block's (both
 * blocks' consumers arrive there), and the producer writes each stage's
 * control word into both blocks.  A pair of a tile row with a column
 * below the diagonal, or that pruning dropped for that row alone, is
 * multiplied and skipped or filtered: the filter keeps every pair within
 * eps and the recheck decides, so extra tile pairs cost time, not answers.
 */
#define WG_BK 64				/* FP16 dimensions per slice: one 128-byte row */
#define WG_STAGES 4
#define WG_CONSUMERS 256		/* two warpgroups */
#define WG_THREADS (WG_CONSUMERS + WARP)	/* and the producer warp */
#define WG_GROUP 8				/* consecutive items a block takes */
#define WG_TILE_BYTES (BT * WG_BK * (int) sizeof(__half))
#define WG_STAGE_BYTES (3 * WG_TILE_BYTES)	/* A, B0, B1 */
#define WG_SMEM (WG_STAGES * WG_STAGE_BYTES + 1024)	/* + alignment to 1024 */

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TC_HAVE_WGMMA 1
#endif

#ifdef TC_HAVE_WGMMA
/* Shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups 1 KB apart. */
__device__ __forceinline__ uint64_t
wg_desc(unsigned int saddr)
{
	return (uint64_t) ((saddr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

/* The 128 accumulator registers of an m64n256 warpgroup MMA, as operands %0-%127. */
#define WG_REGS \
	"{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "\
	"%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "\
	"%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "\
	"%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "\
	"%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "\
	"%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "\
	"%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "\
	"%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define WG_OUTS(d) \
	"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
	"+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
	"+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
	"+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
	"+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
	"+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
	"+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
	"+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
	"+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
	"+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
	"+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
	"+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
	"+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
	"+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
	"+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
	"+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

/* d (64 x 256 per warpgroup) += A (64 x 16) . B (256 x 16)^T; d = A . B^T when !acc. */
__device__ __forceinline__ void
wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
				 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " WG_REGS ", %128, %129, p, 1, 1, 0, 0;\n}\n"
				 : WG_OUTS(d)
				 : "l"(da), "l"(db), "r"(acc));
}

/*
 * A whole 64-dimension slice: four k16 steps in one statement, so that the
 * compiler puts no register fence between them.
 */
__device__ __forceinline__ void
wgmma_slice(float (&d)[128], uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %136, 0;\n"
				 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " WG_REGS ", %128, %129, p, 1, 1, 0, 0;\n"
				 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " WG_REGS ", %130, %131, 1, 1, 1, 0, 0;\n"
				 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " WG_REGS ", %132, %133, 1, 1, 1, 0, 0;\n"
				 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " WG_REGS ", %134, %135, 1, 1, 1, 0, 0;\n}\n"
				 : WG_OUTS(d)
				 : "l"(da), "l"(db), "l"(da + 2), "l"(db + 2), "l"(da + 4), "l"(db + 4),
				   "l"(da + 6), "l"(db + 6), "r"(acc));
}

__device__ __forceinline__ void
mbar_init(unsigned int bar, unsigned int count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void
mbar_arrive(unsigned int bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}

/* The producer's arrival, announcing the bytes its copies will bring. */
__device__ __forceinline__ void
mbar_expect(unsigned int bar, unsigned int bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}

/*
 * Until the phase of parity ph has completed.  A wait of seconds means a
 * lost arrival, a bug: trap, so that the join fails instead of hanging.
 * With WHOLE_WARP the warp leaves the loop together: the compiler then
 * sees no divergence around the wgmma that follow (mbar_wait_all).
 */
template <bool WHOLE_WARP, bool CLUSTER = false>
__device__ __forceinline__ void
mbar_wait_as(unsigned int bar, unsigned int ph)
{
	unsigned long long t0 = 0;

	for (unsigned int spin = 0;; spin++)
	{
		unsigned int done;

		/* CLUSTER: the other block's writes before its arrival (the control word) are seen */
		if (CLUSTER)
			asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
						 "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(bar), "r"(ph) : "memory");
		else
			asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
						 "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(bar), "r"(ph) : "memory");
		if (WHOLE_WARP ? __all_sync(FULL_MASK, done) : done)
			return;
		if ((spin & 1023) == 1023)
		{
			unsigned long long now;

			asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
			t0 = t0 ? t0 : now;
			if (now - t0 > 10000000000ull)
				__trap();
		}
	}
}

/* One thread's wait (the producer's), and a whole warp's (the consumers'). */
#define mbar_wait(bar, ph) mbar_wait_as<false>(bar, ph)
#define mbar_wait_all(bar, ph) mbar_wait_as<true>(bar, ph)

/* Rows [row, row + 128) x dimensions [k, k + 64) of the FP16 matrix into shared memory. */
__device__ __forceinline__ void
tma_tile(unsigned int dst, const CUtensorMap *tm, int k, int row, unsigned int bar)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
				 "[%0], [%1, {%2, %3}], [%4];"
				 :: "r"(dst), "l"(tm), "r"(k), "r"(row), "r"(bar) : "memory");
}

/*
 * The same tile into the blocks of the cluster in mask, at the same offset
 * dst in each, completing on each one's barrier at offset bar.
 */
__device__ __forceinline__ void
tma_tile_mc(unsigned int dst, const CUtensorMap *tm, int k, int row, unsigned int bar, unsigned short mask)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
				 "[%0], [%1, {%2, %3}], [%4], %5;"
				 :: "r"(dst), "l"(tm), "r"(k), "r"(row), "r"(bar), "h"(mask) : "memory");
}

__device__ __forceinline__ unsigned int
cluster_rank(void)
{
	unsigned int r;

	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	return r;
}

/* The address of shared variable addr (this block's) in block rank of the cluster. */
__device__ __forceinline__ unsigned int
cluster_map(unsigned int addr, unsigned int rank)
{
	unsigned int r;

	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
	return r;
}

/* Every thread of both blocks; what each wrote before is seen by all after. */
__device__ __forceinline__ void
cluster_sync_all(void)
{
	asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

/*
 * An arrival on a barrier of any block of the cluster (addr from
 * cluster_map).  CLUSTER_RELEASE: what this thread wrote before is seen by
 * the other block's threads that see the phase complete (the producer's
 * control word); a consumer's arrival, which only returns a stage its
 * MMAs have finished reading, needs no more than the default.
 */
template <bool CLUSTER_RELEASE>
__device__ __forceinline__ void
mbar_arrive_remote(unsigned int addr)
{
	if (CLUSTER_RELEASE)
		asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(addr) : "memory");
	else
		asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" :: "r"(addr) : "memory");
}

/*
 * The producer's arrival on the other block's barrier, announcing its
 * bytes; CLUSTER_RELEASE as for mbar_arrive_remote.  (Released at cluster
 * scope on every slice, the arrival held the producer back: the join's
 * filter ran at half its rate.)
 */
template <bool CLUSTER_RELEASE>
__device__ __forceinline__ void
mbar_expect_remote(unsigned int addr, unsigned int bytes)
{
	if (CLUSTER_RELEASE)
		asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;"
					 :: "r"(addr), "r"(bytes) : "memory");
	else
		asm volatile("mbarrier.arrive.expect_tx.shared::cluster.b64 _, [%0], %1;"
					 :: "r"(addr), "r"(bytes) : "memory");
}

__device__ __forceinline__ void
st_remote(unsigned int addr, int v)
{
	asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
#endif

/*
 * The recheck with the second rows moved by bulk copies (sm_90a: Hopper's
 * default where rows are 16-byte aligned).  In recheck_vec_kernel each
 * 16-byte load of a warp touches 32 lines, one per lane's second row,
 * through the load/store unit and its miss tracking; here each lane has the
 * copy engine bring its second row CHUNK bytes at a time into its own
 * slot of shared memory, the next chunk in flight while it sums this one,
 * and reads the first row (shared by most of the warp once candidates are
 * grouped) as before.  The sums are the lane kernel's, in the same order.
 *
 * CHUNK: bytes of a second row a copy brings, 256 (rows over 4 KB: 3
 * blocks, 12 warps an SM, 128 registers) or 192 (rows up to 4 KB: 4 blocks,
 * 16 warps, 96 registers); 128 for comparison (5 blocks, 20 warps, 72
 * registers); shared memory holds each to that.  Slots are
 * CHUNK + 16 bytes apart, an odd multiple of 16 mod 128 for each CHUNK
 * (16 or 80), so that 16-byte reads of 8 lanes meet no bank conflict.
 */
#define RB_SLOT(CHUNK) ((CHUNK) + 16)
/*
 * A lane's chunks in shared memory: one landing while it sums one.  Three
 * or four let fewer blocks fit an SM, and the recheck at 4,096 fell from
 * 64% to 37% of the copy rate.
 */
#define RB_SLOTS 2
/*
 * Pairs a warp stages before an append: 32, not STAGE's 128, so that a
 * block's stages take 3 KB, not 12, and a third block of 256-byte chunks
 * fits an SM (a fourth of 192-byte ones, a fifth of 128-byte ones).  The
 * kernel waits on its copies' latency, so more warps means more rows in
 * flight: on an H200 at 100,000 x 4,096 the recheck went from 65% to 86%
 * of the copy rate (0.0218 s to 0.0165 s, in the same run); at 1,024 (128
 * bytes a copy) it came at 89%, where runs before it gave 80-81%.
 */
#define RB_STAGE 32
#define RB_SMEM(CHUNK) (RC_WARPS * RB_SLOTS * WARP * RB_SLOT(CHUNK) + RC_WARPS * RB_SLOTS * 8)

#ifdef TC_HAVE_WGMMA
/* bytes [src, src + bytes) into L2, asking nothing back */
__device__ __forceinline__ void
bulk_prefetch_l2(const void *src, unsigned int bytes)
{
	asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;"
				 :: "l"(__cvta_generic_to_global(src)), "r"(bytes) : "memory");
}

/* bytes [src, src + bytes) into shared memory at dst, completing on bar */
__device__ __forceinline__ void
bulk_copy(unsigned int dst, const void *src, unsigned int bytes, unsigned int bar)
{
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
				 :: "r"(dst), "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(bar) : "memory");
}
#endif

template <typename T, bool APPROX, int CHUNK>
__global__ void
__launch_bounds__(RC_WARPS * WARP)
recheck_bulk_kernel(BruteDev g, BruteBatch b)
{
#ifdef TC_HAVE_WGMMA
	typedef typename std::conditional<APPROX, __half, T>::type E;
	constexpr int VEC = 16 / sizeof(E);
	constexpr int CE = CHUNK / (int) sizeof(E);	/* elements a chunk */
	extern __shared__ __align__(128) unsigned char rb_smem[];
	__shared__ StageOf<RB_STAGE> stages[RC_WARPS];
	const int	lane = threadIdx.x % WARP;
	const int	warp = threadIdx.x / WARP;
	StageOf<RB_STAGE> &st = stages[warp];
	int			nst = 0;
	const E    *x = APPROX ? (const E *) g.h : (const E *) g.x;
	const int	len = APPROX ? g.dpad : g.d;
	const int	nchunks = (len + CE - 1) / CE;
	/*
	 * this lane's slot for chunks j % RB_SLOTS == 0 (those for the next
	 * residues WARP slots on each), the warp's RB_SLOTS barriers
	 */
	unsigned char *const slot0 = rb_smem + (warp * RB_SLOTS * WARP + lane) * RB_SLOT(CHUNK);
	const unsigned int bar0 = (unsigned int) __cvta_generic_to_shared(rb_smem + RC_WARPS * RB_SLOTS * WARP * RB_SLOT(CHUNK)) +
		warp * RB_SLOTS * 8;
	unsigned int ph = 0;		/* bit i: the parity barrier i waits for next */
	unsigned int nc;

	auto		slot = [&] (int j) { return slot0 + (j % RB_SLOTS) * WARP * RB_SLOT(CHUNK); };
	auto		wait = [&] (int j) {
		mbar_wait(bar0 + (j % RB_SLOTS) * 8, (ph >> (j % RB_SLOTS)) & 1);
		ph ^= 1u << (j % RB_SLOTS);
	};

	if ((nc = batch_candidates(b)) == 0)
		return;
	if (lane == 0)
		for (int i = 0; i < RB_SLOTS; i++)
			mbar_init(bar0 + 8 * i, WARP);
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	__syncwarp();

	for (unsigned int c0 = (blockIdx.x * RC_WARPS + warp) * WARP; c0 < nc;
		 c0 += gridDim.x * RC_WARPS * WARP)
	{
		const unsigned int c = c0 + lane;
		const bool	live = c < nc;
		const uint2 p = live ? b.cand[c] : make_uint2(0, 0);
		const E    *ra = x + cand_row<APPROX>(g, p.x);
		const E    *rb = x + cand_row<APPROX>(g, p.y);
		double		s = 0.0;
		float		dot = 0.0f;
		bool		done = !live;
		bool		hit = false;

		/*
		 * Chunk j of the second row into slot j % RB_SLOTS: every lane arrives
		 * on the barrier, announcing its bytes (none once it is done), so
		 * the phase completes when the warp's copies have landed.
		 */
		auto		issue = [&] (int j) {
			const int	k0 = j * CE;
			const unsigned int bytes = done ? 0 : (unsigned int) (min(CE, len - k0) * (int) sizeof(E));

			mbar_expect(bar0 + (j % RB_SLOTS) * 8, bytes);
			if (bytes > 0)
			{
				asm volatile("fence.proxy.async.shared::cta;" ::: "memory");	/* after our reads of the slot */
				bulk_copy((unsigned int) __cvta_generic_to_shared(slot(j)), rb + k0, bytes,
						  bar0 + (j % RB_SLOTS) * 8);
				/* the first row's chunk toward L2, so that its loads a round later wait less */
				bulk_prefetch_l2(ra + k0, bytes);
			}
		};

		/* RB_SLOTS - 1 chunks in flight while the lane sums one */
		for (int j = 0; j < RB_SLOTS - 1 && j < nchunks; j++)
			issue(j);
		for (int j = 0; j < nchunks; j++)
		{
			const int	k0 = j * CE;
			const int	k1 = min(len, k0 + CE);

			const int	nv = (k1 - k0) / VEC;	/* 16-byte vectors in this chunk */
			uint4		va[CHUNK / 16];

			if (j + RB_SLOTS - 1 < nchunks)
				issue(j + RB_SLOTS - 1);
			/* the first row's chunk: its loads out before the wait, all at once */
#pragma unroll
			for (int v = 0; v < CHUNK / 16; v++)
				if (!done && v < nv)
					va[v] = __ldg((const uint4 *) (ra + k0) + v);
			wait(j);
			if (!done)
			{
				const uint4 *sb = (const uint4 *) slot(j);

#pragma unroll
				for (int v = 0; v < CHUNK / 16; v++)
				{
					if (v >= nv)
						break;

					const uint4 vb = sb[v];

#pragma unroll
					for (int e = 0; e < VEC; e++)
					{
						if (APPROX)
							dot = __fadd_rn(dot, __fmul_rn(__half2float(vec_elem<__half>(va[v], e)),
														   __half2float(vec_elem<__half>(vb, e))));
						else
						{
							double		t = __dsub_rn((double) vec_elem<E>(va[v], e),
													  (double) vec_elem<E>(vb, e));

							s = __dadd_rn(s, __dmul_rn(t, t));
						}
					}
				}
				if (!APPROX && s > g.thr)
					done = true;	/* partial sums only grow: rejected */
			}
			if (__all_sync(FULL_MASK, done || j + 1 == nchunks))
			{
				/* the chunks in flight land before their slots and barriers serve again */
				for (int i = j + 1; i < j + RB_SLOTS && i < nchunks; i++)
					wait(i);
				break;
			}
		}
		if (live && APPROX)
		{
			s = approx_dist2(g, p, dot);
			hit = true;
		}
		else if (live)
			hit = s <= g.thr;
		stage_hit(b, st, nst, lane, hit, p.x, p.y, s,
				  [&] (unsigned int q) { return caller_row(g, q); });
	}
	flush_stage(st, nst, b, lane);
#endif
}

/* 1 iff this device runs brute_wgmma_kernel's code (not an empty PTX body). */
__global__ void
wgmma_probe_kernel(int *out)
{
#ifdef TC_HAVE_WGMMA
	*out = 1;
#else
	*out = 0;
#endif
}

template <bool APPROX, bool CLUSTER>
__global__ void
__launch_bounds__(WG_THREADS, 1)
brute_wgmma_kernel(const __grid_constant__ CUtensorMap tm, BruteDev g, BruteBatch b)
{
#ifdef TC_HAVE_WGMMA
	extern __shared__ __align__(16) unsigned char wg_raw[];
	__shared__ __align__(8) unsigned long long full[WG_STAGES],
				empty[WG_STAGES];
	__shared__ int ctrl[WG_STAGES];	/* 1: no more items (set with a stage's first slice) */
	/* per warpgroup and item parity: q, then rc, of the item's 256 columns */
	__shared__ __align__(16) float qrc[2][2][2][2 * BT];
	const int	tid = threadIdx.x;
	const int	lane = tid % WARP;
	/* a shuffle tells the compiler the role is uniform per warp (wgmma needs that) */
	const int	warp = __shfl_sync(FULL_MASK, tid / WARP, 0);
	const unsigned int base = ((unsigned int) __cvta_generic_to_shared(wg_raw) + 1023u) & ~1023u;
	const unsigned int full0 = (unsigned int) __cvta_generic_to_shared(full);
	const unsigned int empty0 = (unsigned int) __cvta_generic_to_shared(empty);
	const int	nk = (g.dpad + WG_BK - 1) / WG_BK;
	/* CLUSTER: this block's rank, and the stages' empty barriers (the first block's) */
	const unsigned int rank = CLUSTER ? cluster_rank() : 0;
	const unsigned int lead_empty0 = CLUSTER ? cluster_map(empty0, 0) : empty0;
	/* a cluster's blocks take the same items */
	const unsigned int unit = CLUSTER ? blockIdx.x / 2 : blockIdx.x,
				units = CLUSTER ? gridDim.x / 2 : gridDim.x;

	/*
	 * The list index of the block's k-th item: groups of WG_GROUP
	 * consecutive items, dealt round robin.  Consecutive items mostly share
	 * tile A (the list runs row by row through squares); the blocks together
	 * work through a few squares at a time, whose tiles stay in L2.  A
	 * static deal needs no atomic on the critical path.
	 */
	auto		item = [&] (unsigned long long k) {
		return b.lo + 2 * (((k / WG_GROUP) * units + unit) * WG_GROUP + k % WG_GROUP);
	};

	if (tid == 0)
	{
		for (int s = 0; s < WG_STAGES; s++)
		{
			mbar_init(full0 + 8 * s, 1);
			mbar_init(empty0 + 8 * s, (CLUSTER ? 2 : 1) * WG_CONSUMERS / WARP);
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	/* CLUSTER: no block arrives at, or copies into, the other's barriers before they are set */
	if (CLUSTER)
		cluster_sync_all();
	else
		__syncthreads();

	if (warp == WG_CONSUMERS / WARP)
	{
		/*
		 * The producer: one lane issues every copy (CLUSTER: the first
		 * block's, for both).  The others wait at the end: a block of a
		 * cluster leaves only with the other.
		 */
		if (lane == 0 && rank == 0)
		{
			unsigned int it = 0;	/* slices issued */
			/* CLUSTER: the second block's barriers and control words */
			const unsigned int peer_full0 = CLUSTER ? cluster_map(full0, 1) : 0;
			const unsigned int peer_ctrl0 = CLUSTER ? cluster_map((unsigned int) __cvta_generic_to_shared(ctrl), 1) : 0;
			bool		stop = false;

			for (unsigned long long k = 0; !stop; k++)
			{
				const unsigned long long t = item(k);
				unsigned int bi0 = 0,
							bi1 = TILE_NONE,
							bj0 = 0,
							bj1 = TILE_NONE;

				stop = t >= b.hi || *(volatile unsigned int *) b.overflow != 0 || *b.abort != 0;
				if (!stop)
				{
					unsigned long long e0 = b.list[t],
								e1 = b.list[t + 1];

					bi0 = (unsigned int) (e0 >> 32);
					bi1 = (unsigned int) (e1 >> 32);
					bj0 = (unsigned int) e0;
					bj1 = (unsigned int) e1;
				}
				for (int kb = 0; kb < (stop ? 1 : nk); kb++, it++)
				{
					const int	s = it % WG_STAGES;
					const unsigned int sa = base + s * WG_STAGE_BYTES;
					const unsigned int fb = full0 + 8 * s;
					const unsigned int bbytes = (bj1 == TILE_NONE ? 1 : 2) * WG_TILE_BYTES;

					/* CLUSTER: both blocks' consumers have returned the stage */
					mbar_wait(empty0 + 8 * s, ((it / WG_STAGES) & 1) ^ 1);
					if (kb == 0)
					{
						ctrl[s] = stop;
						if (CLUSTER)
							st_remote(peer_ctrl0 + 4 * s, stop);
					}
					if (stop)
					{
						mbar_arrive(fb);
						if (CLUSTER)
							mbar_arrive_remote<true>(peer_full0 + 8 * s);
						break;
					}
					mbar_expect(fb, WG_TILE_BYTES + bbytes);
					if (CLUSTER)
					{
						/* an item's first slice: the release orders the control word before the arrival */
						const unsigned int pbytes = (bi1 == TILE_NONE ? 0 : WG_TILE_BYTES) + bbytes;

						if (kb == 0)
							mbar_expect_remote<true>(peer_full0 + 8 * s, pbytes);
						else
							mbar_expect_remote<false>(peer_full0 + 8 * s, pbytes);
						tma_tile_mc(sa, &tm, kb * WG_BK, (int) (bi0 * BT), fb, 1);
						if (bi1 != TILE_NONE)
							tma_tile_mc(sa, &tm, kb * WG_BK, (int) (bi1 * BT), fb, 2);
						tma_tile_mc(sa + WG_TILE_BYTES, &tm, kb * WG_BK, (int) (bj0 * BT), fb, 3);
						if (bj1 != TILE_NONE)
							tma_tile_mc(sa + 2 * WG_TILE_BYTES, &tm, kb * WG_BK, (int) (bj1 * BT), fb, 3);
					}
					else
					{
						tma_tile(sa, &tm, kb * WG_BK, (int) (bi0 * BT), fb);
						tma_tile(sa + WG_TILE_BYTES, &tm, kb * WG_BK, (int) (bj0 * BT), fb);
						if (bj1 != TILE_NONE)
							tma_tile(sa + 2 * WG_TILE_BYTES, &tm, kb * WG_BK, (int) (bj1 * BT), fb);
					}
				}
			}
		}
	}
	else
	{
		/* The consumers: warpgroup wgi takes rows 64 wgi .. 64 wgi + 63 of A. */
		const int	wgi = warp / 4;
		const int	gr = lane >> 2;
		const int	tg = lane & 3;
		unsigned long long cand = 0,
					rech = 0;
		unsigned int it = 0;		/* slices consumed */

		/*
		 * Ping-pong (g.pingpong: where an item's slices fill at most half the
		 * stages, so that the next item's load while both warpgroups still
		 * hold this one's): the warpgroups take turns at the tensor cores, one
		 * issuing an item's MMAs while the other runs its epilogue of the item
		 * before, instead of both multiplying and then both deciding, tensor
		 * cores idle.  Named barrier 3 passes the turn from warpgroup 0 to 1
		 * (arrive by the one, sync by the other: 256 threads), 4 back; each
		 * instance completes before its next arrive, since the arriving group
		 * has to pass the other barrier in between.
		 */
		auto		turn_wait = [&] () {
			asm volatile("bar.sync %0, 256;" :: "r"(wgi == 0 ? 4 : 3) : "memory");
		};
		auto		turn_pass = [&] () {
			asm volatile("bar.arrive %0, 256;" :: "r"(wgi == 0 ? 3 : 4) : "memory");
		};

		for (unsigned long long k = 0;; k++)
		{
			float		d[128];
			int			prev = -1;

			/*
			 * The item's first slice, or the producer's word that there is none.
			 * (d is cleared here, outside the slice loop, where no MMA is in
			 * flight: a write inside it would make the compiler wait for them.)
			 */
			mbar_wait_as<true, CLUSTER>(full0 + 8 * (it % WG_STAGES), (it / WG_STAGES) & 1);
			if (__shfl_sync(FULL_MASK, ctrl[it % WG_STAGES], 0))
			{
				/* the turn warpgroup 1 passed after its last item, taken, so no barrier is left half met */
				if (g.pingpong && wgi == 0 && k > 0)
					turn_wait();
				break;
			}
			/* warpgroup 0 waits for 1 to have issued the item before; 1 for 0 to have issued this one */
			if (g.pingpong && (wgi == 1 || k > 0))
				turn_wait();

			/*
			 * The epilogue's per-point values, requested now so that their
			 * latency hides behind the MMAs: the columns' q and rc into shared
			 * memory (16 bytes a thread, zeros for a missing B1), the rows' into
			 * registers.
			 */
			const unsigned long long t = item(k);
			const unsigned long long e0 = b.list[t],
						e1 = b.list[t + 1];
			/* CLUSTER: the second block's tile A is the second entry's (TILE_NONE past the tiles) */
			const unsigned int bi = (unsigned int) ((rank == 0 ? e0 : e1) >> 32);
			const unsigned int bj[2] = {(unsigned int) e0, (unsigned int) e1};
			const unsigned int row0 = (bi == TILE_NONE ? 0 : bi * BT) + wgi * 64 + (warp % 4) * 16 + gr;
			float		(*cq)[2 * BT] = qrc[wgi][k & 1];
			float		q_r[2],
						rc_r[2];

			{
				const int	tw = tid % 128;
				const int	half = tw >> 6,
							which = (tw >> 5) & 1,
							part = tw & 31;
				const bool	in = bj[half] != TILE_NONE;
				const float *src = (which ? g.rc : g.q) + (in ? (size_t) bj[half] * BT + part * 4 : 0);

				asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\ncp.async.commit_group;"
							 :: "r"((unsigned int) __cvta_generic_to_shared(&cq[which][half * BT + part * 4])),
							 "l"(src), "r"(in ? 16 : 0) : "memory");
			}
#pragma unroll
			for (int h = 0; h < 2; h++)
			{
				q_r[h] = g.q[row0 + 8 * h];
				rc_r[h] = g.rc[row0 + 8 * h];
			}
#pragma unroll
			for (int q = 0; q < 128; q++)
				d[q] = 0.0f;		/* the first MMA ignores them; no undefined reads */
			for (int kb = 0; kb < nk; kb++, it++)
			{
				const int	s = it % WG_STAGES;
				const unsigned int sa = base + s * WG_STAGE_BYTES;

				if (kb > 0)
					mbar_wait_all(full0 + 8 * s, (it / WG_STAGES) & 1);

				uint64_t	da = wg_desc(sa + wgi * 64 * 128);
				uint64_t	db = wg_desc(sa + WG_TILE_BYTES);

				asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
				if ((kb + 1) * WG_BK <= g.dpad)
					wgmma_slice(d, da, db, kb > 0);
				else
					for (int kk = 0; kb * WG_BK + kk * 16 < g.dpad; kk++)
						wgmma_m64n256k16(d, da + 2 * kk, db + 2 * kk, kb + kk > 0);
				asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
				/* The previous slice's MMAs are done: its stage goes back to the producer. */
				asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
				if (prev >= 0 && lane == 0)
					CLUSTER ? mbar_arrive_remote<false>(lead_empty0 + 8 * prev) : mbar_arrive(empty0 + 8 * prev);
				prev = s;
			}
			/* issued: the other warpgroup's turn, while this one waits for its MMAs and decides */
			if (g.pingpong)
				turn_pass();
			asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
			if (lane == 0)
				CLUSTER ? mbar_arrive_remote<false>(lead_empty0 + 8 * prev) : mbar_arrive(empty0 + 8 * prev);
			/*
			 * The warpgroup's copies have landed.  (Its other buffer, the next
			 * item's, is free: every warp of the group passed this barrier of
			 * the previous item after its epilogue.)
			 */
			asm volatile("cp.async.wait_all;" ::: "memory");
			asm volatile("bar.sync %0, 128;" :: "r"(1 + wgi) : "memory");

			/*
			 * Epilogue: d[nf * 4 + h * 2 + e] is row 64 wgi + 16 (warp % 4) +
			 * gr + 8 h of A, column 8 nf + 2 tg + e of B0 B1 (the m16n8 layout
			 * per warp).  Survivors of the drop test are bit (nf * 2 + h) * 2 + e
			 * of keep.
			 */
			uint32_t	keep[4] = {0, 0, 0, 0};

			/*
			 * Tile B_half's 128 columns; with CHECK, the pairs off the end of the
			 * points and on or below the diagonal are not pairs.
			 */
			auto		side = [&] (int half, auto check) {
				const unsigned int col0 = bj[half] * BT + 2 * tg;

#pragma unroll
				for (int nf = 0; nf < 16; nf++)
#pragma unroll
					for (int e = 0; e < 2; e++)
					{
						const unsigned int j = col0 + nf * 8 + e;
						const float q_c = cq[0][half * BT + 2 * tg + nf * 8 + e],
									rc_c = cq[1][half * BT + 2 * tg + nf * 8 + e];

#pragma unroll
						for (int h = 0; h < 2; h++)
						{
							const unsigned int i = row0 + 8 * h;
							const int	bit = ((half * 16 + nf) * 2 + h) * 2 + e;
							bool		valid = true;

							if (decltype(check)::value)
							{
								valid = i < g.n && j < g.n && (bi != bj[half] || j > i);
								cand += valid;
							}
							/* decided before valid is consulted: no branch per pair */
							const bool	kp = keep_pair_as<APPROX>(g, d[(half * 16 + nf) * 4 + h * 2 + e],
																  q_r[h], q_c, rc_r[h], rc_c);

							if (valid && kp)
								keep[bit >> 5] |= 1u << (bit & 31);
						}
					}
				if (!decltype(check)::value)
					cand += 64;
			};
#pragma unroll
			for (int half = 0; half < 2; half++)
			{
				/* CLUSTER: a block without a tile, or a column below its diagonal */
				if (bj[half] == TILE_NONE || bi == TILE_NONE || bj[half] < bi)
					continue;
				if (bi != bj[half] && (bi + 1) * BT <= g.n && (bj[half] + 1) * BT <= g.n)
					side(half, std::false_type());
				else
					side(half, std::true_type());
			}
			append_kept(b, lane, keep, rech, [&] (int bit, unsigned int *i, unsigned int *j) {
				*i = row0 + 8 * ((bit >> 1) & 1);
				*j = bj[bit >> 6] * BT + 2 * tg + ((bit >> 2) & 15) * 8 + (bit & 1);
			});
		}
		add_counts(b, lane, cand, rech);
	}
	/* a block of a cluster leaves only when the other no longer reaches its shared memory */
	if (CLUSTER)
		cluster_sync_all();
#endif
}

/* ---------- host ---------- */

/*
 * The centre and the power-of-two scale (fp16_filter.h) of all the points:
 * pass 1 adds the column means, pass 2 takes the largest centred
 * coordinate, each over blocks of rows (fetch(b, &rows) puts block b on the
 * device at bd.x; one block when the points fit).  Both are global, so
 * every point's q and rc hold against every other, block or no block.
 */
template <typename T, typename Fetch>
static TcStatus
make_plan(TcGpuJoin *g, unsigned int n, int d, int nblocks, Fetch fetch, double thr, BruteDev &bd,
		  TcF16Plan &plan, double **centre, TcError *err)
{
	double	   *d_c;
	unsigned long long *d_max,
				maxbits = 0;
	double		maxabs;
	TcStatus	st;
	cudaStream_t s = g->stream[0];

	if ((st = dev_alloc(g, (void **) &d_c, sizeof(double) * d, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_max, sizeof(*d_max), err)) != TC_OK)
		return st;
	CHECK(cudaMemsetAsync(d_c, 0, sizeof(double) * d, s));
	CHECK(cudaMemsetAsync(d_max, 0, sizeof(*d_max), s));
	for (int pass = 0; pass < 2; pass++)
		for (int b = 0; b < nblocks; b++)
		{
			unsigned int rows = 0;

			if (nblocks > 1 && (st = fetch(b, &rows)) != TC_OK)
				return st;
			if (nblocks == 1)
				rows = n;
			if (pass == 0)
				centre_kernel<T><<<dim3((d + 127) / 128, std::min(4096u, (rows + 1023) / 1024)), 128, 0, s>>>(
					(const T *) bd.x, rows, d, (double) n, d_c);
			else
				maxabs_kernel<T><<<1024, 256, 0, s>>>((const T *) bd.x, rows, d, d_c, d_max);
			CHECK(cudaGetLastError());
			if (nblocks > 1)
				CHECK(cudaStreamSynchronize(s));	/* before the next block overwrites it */
		}
	CHECK(cudaMemcpyAsync(&maxbits, d_max, sizeof(maxbits), cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamSynchronize(s));
	dev_free(g, d_max);
	memcpy(&maxabs, &maxbits, sizeof(maxabs));
	tc_f16_plan(&plan, d, thr, maxabs);
	/*
	 * The filter's prefix bound (fp16_filter.h): a narrower band than the
	 * whole-dot bound's, never wider.  The filter_bound=whole override, for
	 * measuring and testing, keeps the whole-dot bound (what K > 2^16 gets).
	 */
	tc_f16_use_prefix(&plan, !g->ov.whole_dot_bound);
	if (bd.approx && maxabs > 0.0 && !(maxabs * plan.sigma > 0x1p14))
		bd.approx = false;		/* too small to scale into FP16's range: exact instead */
	bd.thr_half = (float) (plan.sigma * plan.sigma * thr * 0.5);
	bd.inv_sigma = 1.0 / plan.sigma;
	bd.hpitch = plan.dpad % 512 == 0 ? plan.dpad + 64 : plan.dpad;
	bd.dpad = plan.dpad;
	*centre = d_c;
	return TC_OK;
}

/*
 * The n points at bd.x (npad with the padding), given the plan and the
 * centre: their order, tile bounds, FP16 rows, q and rc.  The order is
 * recursive bisection from segments of seg0 tiles (0: all the points), so
 * that segments given (two blocks of a streamed join) never share a tile.
 */
template <typename T>
static TcStatus
prepare(TcGpuJoin *g, unsigned int n, int d, const TcF16Plan &plan, const double *d_c,
		unsigned int seg0, BruteDev &bd, unsigned int npad, float **cen, float **rad,
		TcJoinStats *stats, TcError *err)
{
	__half	   *d_h;
	float	   *d_q,
			   *d_rc;
	TcStatus	st;
	cudaStream_t s = g->stream[0];

	/* The order: recursive bisection down to single tiles. */
	unsigned int ntiles = npad / BT;
	unsigned int *d_order,
			   *d_order2,
			   *d_key,
			   *d_key2,
			   *d_off;
	float	   *d_dir;
	void	   *d_tmp = NULL;
	size_t		tmp_have = 0;
	unsigned int seg_tiles = 1;

	while (seg_tiles < ntiles)
		seg_tiles *= 2;
	if (seg0 > 0)
		seg_tiles = seg0;
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
		unsigned int nseg = (n + seg - 1) / seg;
		size_t		need = 0;

		dir_kernel<T><<<nseg, DIR_THREADS, 0, s>>>((const T *) bd.x, d, d_order, n, seg, d_dir);
		CHECK(cudaGetLastError());
		proj_kernel<T><<<(unsigned int) (((size_t) n * WARP + 255) / 256), 256, 0, s>>>(
			(const T *) bd.x, d, d_order, n, seg, d_dir, d_key);
		CHECK(cudaGetLastError());
		seg_offsets_kernel<<<(nseg + 1 + 255) / 256, 256, 0, s>>>(n, seg, nseg, d_off);
		CHECK(cudaGetLastError());
		CHECK(cub::DeviceSegmentedRadixSort::SortPairs(NULL, need, d_key, d_key2, d_order, d_order2,
													   (int) n, (int) nseg, d_off, d_off + 1, 0, 32, s));
		if (need > tmp_have)
		{
			if (d_tmp)
				dev_free(g, d_tmp);
			if ((st = dev_alloc(g, &d_tmp, need, err)) != TC_OK)
				return st;
			tmp_have = need;
		}
		CHECK(cub::DeviceSegmentedRadixSort::SortPairs(d_tmp, need, d_key, d_key2, d_order, d_order2,
													   (int) n, (int) nseg, d_off, d_off + 1, 0, 32, s));
		std::swap(d_order, d_order2);
	}
	CHECK(cudaStreamSynchronize(s));
	stats->gpu_order_seconds += tc_now() - t_order;
	if (d_tmp)
		dev_free(g, d_tmp);
	dev_free(g, d_order2);
	dev_free(g, d_key);
	dev_free(g, d_key2);
	dev_free(g, d_off);
	dev_free(g, d_dir);
	bd.order = d_order;

	/* Tile bounds, for pruning tile pairs. */
	float	   *d_cen,
			   *d_rad;

	if ((st = dev_alloc(g, (void **) &d_cen, sizeof(float) * (size_t) d * ntiles, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_rad, sizeof(float) * ntiles, err)) != TC_OK)
		return st;
	bounds_kernel<T><<<ntiles, BT, 0, s>>>((const T *) bd.x, d, d_c, d_order, n, d_cen, d_rad);
	CHECK(cudaGetLastError());
	*cen = d_cen;
	*rad = d_rad;

	/*
	 * Rows a multiple of 1 KB apart put a tile's 128 rows on few L2 sets
	 * and memory channels: such rows get 128 bytes more (zeros; make_plan).
	 */
	if ((st = dev_alloc(g, (void **) &d_h, sizeof(__half) * (size_t) npad * bd.hpitch, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_q, sizeof(float) * npad, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_rc, sizeof(float) * npad, err)) != TC_OK)
		return st;
	convert_kernel<T><<<(unsigned int) (((size_t) npad * WARP + 255) / 256), 256, 0, s>>>(
		(const T *) bd.x, n, npad, d, bd.hpitch, bd.approx, d_c, d_order, plan, d_h, d_q, d_rc);
	CHECK(cudaGetLastError());
	CHECK(cudaStreamSynchronize(s));

	bd.h = d_h;
	bd.q = d_q;
	bd.rc = d_rc;
	bd.n = n;
	bd.ntiles = npad / BT;
	return TC_OK;
}

/*
 * The TMA descriptor of the FP16 matrix (npad rows of dpad halves, hpitch apart): boxes
 * of 128 rows x 64 dimensions, 128-byte swizzled, zeros past dpad.  The
 * driver's encoder is looked up at run time (the runtime is linked
 * statically, the driver is not linked at all); false where it is missing.
 */
typedef CUresult (*EncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
								const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
								const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
								CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static bool
make_tmap(CUtensorMap *tm, const __half *h, unsigned int npad, int dpad, int pitch)
{
	void	   *fn = NULL;
	cudaDriverEntryPointQueryResult q;
	cuuint64_t	dims[2] = {(cuuint64_t) dpad, (cuuint64_t) npad};
	cuuint64_t	strides[1] = {(cuuint64_t) pitch * sizeof(__half)};
	cuuint32_t	box[2] = {WG_BK, BT};
	cuuint32_t	elem[2] = {1, 1};

	if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
		q != cudaDriverEntryPointSuccess || fn == NULL)
	{
		cudaGetLastError();
		return false;
	}
	memset(tm, 0, sizeof(*tm));
	return ((EncodeTiled) fn) (tm, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void *) h, dims, strides, box, elem,
							   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
							   CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
							   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

extern "C" TcStatus
tc_gpu_brute_selfjoin(TcGpuJoin **handle, const TcPoints *a, const TcJoinParams *params,
					  double thr, const TcSink *sink, TcJoinStats *stats, TcError *err)
{
	TcGpuJoin  *g;
	TcStatus	st;
	double		t0 = tc_now();
	unsigned int n,
				npad;
	const int	d = a->d;
	const size_t rowbytes = (size_t) d * (size_t) a->type;
	void	   *d_x;
	double	   *d_c = NULL;
	BruteDev	bd;
	TcF16Plan	plan;
	float	   *d_cen = NULL,
			   *d_rad = NULL;
	unsigned long long *d_list,
			   *d_nlist;
	unsigned int capacity;
	int			major = 0,
				sms = 0;

	if ((st = gpu_join_begin(handle, a, params, sink, stats, err)) != TC_OK)
		return st;
	g = *handle;
	stats->method = "brute";
	stats->tensor_cores = true;
	static_assert(BT == 128, "TC_GPU_BRUTE_MAX_N assumes tiles of 128 points");
	if (a->n > TC_GPU_BRUTE_MAX_N)
	{
		/* cub's sorts count items in an int */
		err->status = TC_ERR_INVALID;
		snprintf(err->message, sizeof(err->message),
				 "FP16 brute force on the GPU takes at most %d points", INT_MAX - BT);
		return TC_ERR_INVALID;
	}
	n = (unsigned int) a->n;
	stats->gpu_blocks = 1;
	if (n < 2)
	{
		stats->index_seconds = tc_now() - t0;
		return TC_OK;
	}
	CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, g->device));
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g->device));
	if (major < 8)
	{
		err->status = TC_ERR_INVALID;
		snprintf(err->message, sizeof(err->message),
				 "FP16 tensor cores need a GPU of compute capability 8.0 or higher");
		return TC_ERR_INVALID;
	}
	npad = (n + BT - 1) / BT * BT;
	memset(&bd, 0, sizeof(bd));
	bd.d = d;
	bd.thr = thr;
	bd.approx = !params->exact;
	bd.split_row = UINT_MAX;	/* one set: positions map to the caller's rows as they are */

	/*
	 * Device memory: per point its coordinates, FP16 row (at most d + 80
	 * halves), order, q, rc and the ordering's scratch; per tile pair of a
	 * band the list; the result buffers.  Where the whole set does not fit
	 * (tcjoin.gpu_memory_limit, or the device's free memory), the points go
	 * in blocks of B (a power of two of tiles): block pairs I <= J are
	 * joined in turn, both on the device, block J after I's rows, each
	 * ordered within itself, and only tile pairs across the two are joined
	 * when I < J.  The centre and the scale are the whole set's (make_plan).
	 */
	auto		list_need = [&] (unsigned long long ntiles) -> size_t {
		unsigned long long nsq = (ntiles + PRUNE_SQ - 1) / PRUNE_SQ;
		unsigned long long sq = std::min(nsq * (nsq + 1) / 2,
										 std::max(1ull, BAND_PAIRS / (PRUNE_SQ * PRUNE_SQ)));

		/* the list's entries, and per warp of prune_kernel three words and the scan's scratch */
		return (sizeof(unsigned long long) * WARP + 4 * sizeof(unsigned int)) * sq * PRUNE_SQ * PRUNE_SQ / WARP;
	};
	auto		cap_need = [&] (unsigned int c) -> size_t {
		return (size_t) c * 2 * (sizeof(PairDev) + sizeof(uint2));
	};
	const size_t per_pt = rowbytes + 2 * ((size_t) d + 80) + 64 + ((size_t) d * 4 + BT - 1) / BT;
	size_t		avail;
	unsigned int B = 0;

	capacity = BRUTE_CAPACITY;
	if (params->gpu_result_pairs > 0)
		capacity = (unsigned int) std::min((size_t) capacity, params->gpu_result_pairs);
	capacity = std::max(capacity, (unsigned int) BRUTE_MIN_CAPACITY);
	{
		size_t		free_b = 0,
					total_b = 0;

		CHECK(cudaMemGetInfo(&free_b, &total_b));
		avail = free_b / 10 * 9;
		if (g->limit > 0)
			avail = std::min(avail, g->limit > g->used ? g->limit - g->used : 0);
	}
	if ((size_t) npad * per_pt + list_need(npad / BT) + cap_need(BRUTE_MIN_CAPACITY) > avail)
	{
		unsigned int c = capacity;

		while (c > BRUTE_MIN_CAPACITY && cap_need(c) > avail / 4)
			c = std::max(c / 2, (unsigned int) BRUTE_MIN_CAPACITY);
		for (unsigned int b = BT; (unsigned long long) b * 2 < npad; b *= 2)
			if ((size_t) 2 * b * per_pt + list_need(2ull * b / BT) + cap_need(c) <= avail)
				B = b;
		if (B > 0)
			capacity = c;
		/* else too small even for two tiles: the allocations below say so */
	}

	const int	nblocks = B > 0 ? (int) ((n + B - 1) / B) : 1;
	const unsigned int ws_rows = B > 0 ? 2 * B : n;

	stats->gpu_blocks = nblocks;
	if ((st = dev_alloc(g, &d_x, rowbytes * ws_rows, err)) != TC_OK)
		return st;
	bd.x = d_x;

	/* Block b's rows to the device at row dst of the workspace; whole, when there are no blocks. */
	auto		fetch_to = [&] (int b, unsigned int dst, unsigned int *rows) -> TcStatus {
		double		tu = tc_now();
		size_t		first = B > 0 ? (size_t) b * B : 0;
		unsigned int r = B > 0 ? (unsigned int) std::min((size_t) B, (size_t) n - first) : n;
		TcStatus	s2 = upload(g, (char *) d_x + rowbytes * dst, (const char *) a->data + rowbytes * first,
								rowbytes * r, g->stream[0], sink, err);

		stats->gpu_upload_seconds += tc_now() - tu;
		*rows = r;
		return s2;
	};
	auto		fetch = [&] (int b, unsigned int *rows) { return fetch_to(b, 0, rows); };

	if (B == 0)
	{
		unsigned int rows;

		/* The caller's coordinates stay on the device for the exact check. */
		if ((st = fetch_to(0, 0, &rows)) != TC_OK)
			return st;
	}
	st = a->type == TC_FLOAT4 ? make_plan<float>(g, n, d, nblocks, fetch, thr, bd, plan, &d_c, err) :
		make_plan<double>(g, n, d, nblocks, fetch, thr, bd, plan, &d_c, err);
	if (st != TC_OK)
		return st;
	stats->filter = bd.approx ? "fp16 tensor cores, approximate" : "fp16 tensor cores";

	auto		prepare_set = [&] (unsigned int rows, unsigned int seg0) -> TcStatus {
		unsigned int np = (rows + BT - 1) / BT * BT;

		return a->type == TC_FLOAT4 ?
			prepare<float>(g, rows, d, plan, d_c, seg0, bd, np, &d_cen, &d_rad, stats, err) :
			prepare<double>(g, rows, d, plan, d_c, seg0, bd, np, &d_cen, &d_rad, stats, err);
	};

	if (B == 0 && (st = prepare_set(n, 0)) != TC_OK)
		return st;

	/* Result buffers, counters, the ring. */
	PairDev    *d_pairs[2];
	unsigned int *d_meta[2],
			   *h_meta[2];		/* pair count, overflow, candidate count */
	uint2	   *d_cand[2],
			   *d_grouped[2] = {NULL, NULL};	/* the candidates grouped by first point */
	unsigned int *d_group[2] = {NULL, NULL};	/* per position: count, then offset */
	void	   *d_gscan[2] = {NULL, NULL};
	size_t		gscan_bytes = 0;
	unsigned long long *d_cnt,	/* queue x 2, then (candidates, rechecked) x 2 */
			   *h_cnt;			/* (candidates, rechecked) x 2: a batch's, read when kept */

	/* Squares of tiles, numbered row by row over their upper triangle: for the largest set. */
	const unsigned long long nt_max = B > 0 ? 2ull * B / BT : npad / BT;
	const unsigned long long nsq_max = (nt_max + PRUNE_SQ - 1) / PRUNE_SQ;
	const unsigned long long band_sq = std::min(nsq_max * (nsq_max + 1) / 2,
												std::max(1ull, BAND_PAIRS / (PRUNE_SQ * PRUNE_SQ)));
	const size_t list_bytes = sizeof(*d_list) * band_sq * PRUNE_SQ * PRUNE_SQ;

	if (B == 0 && g->limit > 0)
	{
		/* two streams' pair and candidate buffers, and the tile-pair list */
		size_t		room = g->limit > g->used + list_need(nt_max) ? g->limit - g->used - list_need(nt_max) : 0;

		while (capacity > BRUTE_MIN_CAPACITY && cap_need(capacity) > room)
			capacity = std::max(capacity / 2, (unsigned int) BRUTE_MIN_CAPACITY);
	}
	for (int i = 0; i < 2; i++)
	{
		if ((st = dev_alloc(g, (void **) &d_pairs[i], sizeof(PairDev) * capacity, err)) != TC_OK ||
			(st = dev_alloc(g, (void **) &d_cand[i], sizeof(uint2) * capacity, err)) != TC_OK ||
			(st = dev_alloc(g, (void **) &d_meta[i], sizeof(unsigned int) * 3, err)) != TC_OK ||
			(st = host_alloc(g, (void **) &h_meta[i], sizeof(unsigned int) * 3, cudaHostAllocDefault, err)) != TC_OK)
			return st;
	}
	if ((st = dev_alloc(g, (void **) &d_cnt, sizeof(*d_cnt) * 6, err)) != TC_OK ||
		(st = host_alloc(g, (void **) &h_cnt, sizeof(*h_cnt) * 4, cudaHostAllocDefault, err)) != TC_OK ||
		(st = get_ring(g, err)) != TC_OK)
		return st;

	/*
	 * The recheck's kernel: a lane a candidate where rows are 16-byte
	 * aligned (the FP16 rows of exact => false always are), the staged one
	 * otherwise (recheck_vec_kernel says why).  TCJOIN_RECHECK=staged
	 * forces the staged one, for comparison.
	 */
	const bool	rows16 = (size_t) d * (a->type == TC_FLOAT4 ? 4 : 8) % 16 == 0;
	const TcRecheckKernel rc_force = g->ov.recheck;
	const bool	rc_vec = (bd.approx || rows16) && rc_force != TC_RECHECK_STAGED;
	/*
	 * The lane kernel's candidates grouped by first point (cand_count_kernel)
	 * where memory allows: a second candidate buffer and two words a
	 * position, per stream.  Streamed (the points did not fit), under a
	 * tight tcjoin.gpu_memory_limit, or with TCJOIN_RECHECK_GROUP=0 (for
	 * comparison), they stay as they came.  On an H200 it took the exact
	 * recheck from 0.112 s to 0.092 s at 100,000 x 4,096.
	 */
	bool		group = rc_vec && B == 0 && !g->ov.no_recheck_group;

	/* Dynamic shared memory past the 48 KB a block gets by default. */
	CHECK(cudaFuncSetAttribute(brute_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, TILE_SMEM));
	/*
	 * Hopper's kernel only on Hopper: an A100 gives a block at most 163 KB,
	 * and the runtime refuses a limit past the device's.
	 */
	if (major == 9)
	{
		CHECK(cudaFuncSetAttribute(brute_wgmma_kernel<false, false>,
								   cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
		CHECK(cudaFuncSetAttribute(brute_wgmma_kernel<true, false>,
								   cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
		CHECK(cudaFuncSetAttribute(brute_wgmma_kernel<false, true>,
								   cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
		CHECK(cudaFuncSetAttribute(brute_wgmma_kernel<true, true>,
								   cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
	}

	/*
	 * Hopper's kernel where this build carries sm_90a code for the device
	 * and the driver encodes tensor maps (TCJOIN_BRUTE_KERNEL=mma forces
	 * the mma.sync kernel, for comparison).
	 */
	bool		wgmma = false;
	int			per_sm = 0;
	CUtensorMap tmap;

	memset(&tmap, 0, sizeof(tmap));
	{
		cudaFuncAttributes fa;
		CHECK(cudaFuncGetAttributes(&fa, brute_wgmma_kernel<false, false>));
		wgmma = major == 9 && fa.binaryVersion == 90 && g->ov.tile_kernel != TC_TILE_MMA;
		if (wgmma)
		{
			/* a JIT from the compute_90 PTX would run an empty kernel: ask the device */
			int			have = 0;

			wgmma_probe_kernel<<<1, 1, 0, g->stream[0]>>>((int *) d_cnt);
			CHECK(cudaGetLastError());
			CHECK(cudaMemcpyAsync(&have, d_cnt, sizeof(have), cudaMemcpyDeviceToHost, g->stream[0]));
			CHECK(cudaStreamSynchronize(g->stream[0]));
			/* the encoder, tried on a map of the counters (each set's own is made below) */
			wgmma = have == 1 && make_tmap(&tmap, (const __half *) d_cnt, BT, 16, 16);
		}
		if (wgmma)
			CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, brute_wgmma_kernel<false, false>,
																WG_THREADS, WG_SMEM));	/* 1 */
		else
			CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, brute_kernel,
																BRUTE_THREADS, TILE_SMEM));
		per_sm = std::max(per_sm, 1);
	}

	/*
	 * The warpgroups take turns at the MMAs where an item's slices fill at
	 * most half the stages (d <= 128): there the epilogue weighs as much as
	 * the MMAs.  TCJOIN_PINGPONG=0 keeps them in step, for comparison.
	 */
	bd.pingpong = wgmma && 2 * ((bd.dpad + WG_BK - 1) / WG_BK) <= WG_STAGES &&
		!g->ov.no_pingpong;

	/*
	 * Hopper's kernel in clusters of two blocks, B multicast to both
	 * (brute_wgmma_kernel's CLUSTER); clusters is how many the device holds
	 * at once.  On an H100 the filter at 100,000 x 4,096 took 0.059 s
	 * against 0.060-0.061 s one block at a time, at x 1,024 0.015 s against
	 * 0.016 s.  TCJOIN_CLUSTER=0 keeps the blocks apart, for comparison.
	 */
	int			clusters = 0;
	cudaLaunchAttribute cluster_attr = {};

	cluster_attr.id = cudaLaunchAttributeClusterDimension;
	cluster_attr.val.clusterDim.x = 2;
	cluster_attr.val.clusterDim.y = 1;
	cluster_attr.val.clusterDim.z = 1;

	/* a launch of blocks (an even number) in clusters of two */
	auto		cluster_cfg = [&] (unsigned int blocks, cudaStream_t s) {
		cudaLaunchConfig_t cfg = {};

		cfg.gridDim = dim3(blocks, 1, 1);
		cfg.blockDim = dim3(WG_THREADS, 1, 1);
		cfg.dynamicSmemBytes = WG_SMEM;
		cfg.stream = s;
		cfg.attrs = &cluster_attr;
		cfg.numAttrs = 1;
		return cfg;
	};

	/*
	 * Not where the result buffer is held under a cluster item's pairs (a
	 * memory limit): a batch is at least one item, and one that overflows
	 * at that size could not be rerun smaller.
	 */
	if (wgmma && capacity >= CLUSTER_MIN_CAPACITY && !g->ov.no_clusters)
	{
		cudaLaunchConfig_t cfg = cluster_cfg(2 * (unsigned int) (sms / 2), g->stream[0]);

		CHECK(cudaOccupancyMaxActiveClusters(&clusters, brute_wgmma_kernel<false, true>, &cfg));
		if (g->ov.trace)
			fprintf(stderr, "tcjoin trace: %d clusters of 2 blocks at once (%d multiprocessors)\n", clusters, sms);
	}
	stats->gpu_kernel = !wgmma ? "mma.sync" :
		clusters > 0 ? (bd.pingpong ? "wgmma, clusters of 2, ping-pong" : "wgmma, clusters of 2") :
		bd.pingpong ? "wgmma, ping-pong" : "wgmma";
	/* tile pairs an entry of the list stands for */
	const int	entry_pairs = clusters > 0 ? 2 : 1;

	/*
	 * Where this build runs Hopper's code, the lane kernel's work with the
	 * second rows brought by bulk copies (recheck_bulk_kernel).  On an H200
	 * it took the exact recheck from 0.097 s to 0.044 s at 100,000 x 4,096
	 * and from 0.0145 s to 0.0094 s at 1,024 (the rows' read rate from 32%
	 * to 71% of the copy rate).  Rows of at most 4 KB go 192 bytes a copy,
	 * longer ones 256.  With RB_STAGE's warps (recheck_bulk_kernel), in one
	 * run on an H200: at 384 to 1,024 dimensions 192 bytes brought the rows
	 * at 87-97% of the copy rate against 81-89% for 128 (1,024: 0.0035 s
	 * against 0.0038 s), at 128 alike; at 4,096 256 bytes 88%, 192 86%,
	 * 128 75%.  TCJOIN_RECHECK=bulk128, bulk192 or bulk forces 128, 192 or
	 * 256 bytes, TCJOIN_RECHECK=lane the lane kernel, for comparison.
	 */
	const size_t rc_row_bytes = bd.approx ? (size_t) bd.dpad * sizeof(__half) : rowbytes;
	const int	rb_chunk = !(rc_vec && wgmma) ||
		rc_force == TC_RECHECK_LANE || rc_force == TC_RECHECK_STAGED ? 0 :
		rc_force == TC_RECHECK_BULK192 ? 192 :
		rc_force == TC_RECHECK_BULK256 ? 256 :
		rc_row_bytes <= 4096 ? 192 : 256;

	/* The recheck's kernel for this join, its grid and its shared memory. */
	typedef void (*RecheckFn) (BruteDev, BruteBatch);
	auto		by_type = [&] (RecheckFn approx_k, RecheckFn f4_k, RecheckFn f8_k) {
		return bd.approx ? approx_k : a->type == TC_FLOAT4 ? f4_k : f8_k;
	};
	RecheckFn	rk;
	unsigned int rk_grid = (unsigned int) sms * 8;
	size_t		rk_smem = 0;

	if (rb_chunk == 192)
	{
		rk = by_type(recheck_bulk_kernel<float, true, 192>, recheck_bulk_kernel<float, false, 192>,
					 recheck_bulk_kernel<double, false, 192>);
		rk_smem = RB_SMEM(192);
		stats->gpu_recheck = "bulk-copy, 192 B";
	}
	else if (rb_chunk == 256)
	{
		rk = by_type(recheck_bulk_kernel<float, true, 256>, recheck_bulk_kernel<float, false, 256>,
					 recheck_bulk_kernel<double, false, 256>);
		rk_smem = RB_SMEM(256);
		stats->gpu_recheck = "bulk-copy, 256 B";
	}
	else if (rc_vec)
	{
		rk = by_type(recheck_vec_kernel<float, true>, recheck_vec_kernel<float, false>,
					 recheck_vec_kernel<double, false>);
		stats->gpu_recheck = "lane";
	}
	else
	{
		rk = by_type(recheck_kernel<float, true>, recheck_kernel<float, false>, recheck_kernel<double, false>);
		rk_smem = !bd.approx && a->type == TC_FLOAT8 ? RC_SMEM(double) : RC_SMEM(float);
		stats->gpu_recheck = "staged";
	}
	/* dynamic shared memory past the 48 KB a block gets by default */
	if (rk_smem > 0)
		CHECK(cudaFuncSetAttribute(rk, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) rk_smem));
	if (rb_chunk > 0)
	{
		/* the bulk kernel's blocks, as many as fit at once (shared memory bounds them) */
		int			rb_per_sm = 0;

		CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&rb_per_sm, rk, RC_WARPS * WARP, rk_smem));
		rk_grid = (unsigned int) (sms * std::max(rb_per_sm, 1));
	}
	/* Counters cleared (the probe used them) before either stream's first batch. */
	CHECK(cudaMemsetAsync(d_cnt, 0, sizeof(*d_cnt) * 6, g->stream[0]));
	CHECK(cudaStreamSynchronize(g->stream[0]));

	/*
	 * Pairs per tile pair, as a share of all, that the first batch is
	 * sized for.  TCJOIN_BATCH_RATE sets it, for tests: a tiny one makes
	 * the first batches overflow and be rerun.
	 */
	double		rate = g->ov.batch_rate > 0 ? std::max(1e-7, g->ov.batch_rate) : 1.0;	/* 0 would never grow */
	/* per warp of prune_kernel: its ballot, its count of entries, their offset */
	const int	band_warps = (int) (band_sq * PRUNE_SQ * PRUNE_SQ / WARP);
	unsigned int *d_mask,
			   *d_count,
			   *d_offset;
	void	   *d_scan = NULL;
	size_t		scan_bytes = 0;

	CHECK(cub::DeviceScan::ExclusiveSum(NULL, scan_bytes, (unsigned int *) NULL, (unsigned int *) NULL,
										band_warps, g->stream[0]));
	if ((st = dev_alloc(g, (void **) &d_list, list_bytes, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_nlist, sizeof(*d_nlist) * 2, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_mask, sizeof(unsigned int) * band_warps, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_count, sizeof(unsigned int) * band_warps, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_offset, sizeof(unsigned int) * band_warps, err)) != TC_OK ||
		(st = dev_alloc(g, &d_scan, std::max(scan_bytes, (size_t) 16), err)) != TC_OK)
		return st;

	/*
	 * The grouping's buffers, last: only from what the list and the result
	 * buffers left.  Where they do not fit, or an allocation fails, the
	 * candidates stay as they came.
	 */
	if (group)
	{
		const size_t need = 2 * (sizeof(uint2) * capacity + sizeof(unsigned int) * 2 * nt_max * BT);
		size_t		free_b = 0,
					total_b = 0;

		CHECK(cub::DeviceScan::ExclusiveSum(NULL, gscan_bytes, (unsigned int *) NULL, (unsigned int *) NULL,
											(int) (nt_max * BT), g->stream[0]));
		CHECK(cudaMemGetInfo(&free_b, &total_b));
		group = g->limit > 0 ? g->used + need + 2 * gscan_bytes + (64 << 10) <= g->limit :
			need + 2 * gscan_bytes + (256 << 20) <= free_b;
		for (int i = 0; i < 2 && group; i++)
			if (dev_alloc(g, (void **) &d_grouped[i], sizeof(uint2) * capacity, NULL) != TC_OK ||
				dev_alloc(g, (void **) &d_group[i], sizeof(unsigned int) * 2 * nt_max * BT, NULL) != TC_OK ||
				dev_alloc(g, &d_gscan[i], std::max(gscan_bytes, (size_t) 16), NULL) != TC_OK)
				group = false;
		if (!group)
		{
			/* what was allocated goes (the rest is NULL, which dev_free passes over) */
			for (int i = 0; i < 2; i++)
			{
				dev_free(g, d_grouped[i]);
				dev_free(g, d_group[i]);
				dev_free(g, d_gscan[i]);
			}
		}
	}

	/*
	 * The join phase's clock starts with every buffer in place: allocating
	 * the list's and the grouping's (about 0.5 ms at 100,000 points) is
	 * setup, as the result buffers' is, and counts in the index phase.
	 */
	stats->index_seconds = tc_now() - t0;
	double		t1 = tc_now();

	/*
	 * The join of the set prepared in bd: every tile pair of its triangle,
	 * or with split > 0 those across tile split (bi < split <= bj).
	 */
	auto		join_set = [&] (unsigned int split) -> TcStatus {
		const unsigned long long nt = bd.ntiles;
		const unsigned long long nsq = (nt + PRUNE_SQ - 1) / PRUNE_SQ;
		const unsigned long long nsq_all = nsq * (nsq + 1) / 2;

		/* the encoder worked on the probe's map; a set's own failing would be a bug */
		if (wgmma && !make_tmap(&tmap, bd.h, bd.ntiles * BT, bd.dpad, bd.hpitch))
		{
			err->status = TC_ERR_INTERNAL;
			snprintf(err->message, sizeof(err->message), "could not encode a TMA descriptor");
			return TC_ERR_INTERNAL;
		}
		stats->gpu_tile_pairs += split > 0 ? (unsigned long long) split * (nt - split) : nt * (nt + 1) / 2;
		for (unsigned long long u0 = 0; u0 < nsq_all;)
		{
			/* A band of at most band_sq squares: a list of at most BAND_PAIRS tile pairs. */
			unsigned long long u1 = std::min(nsq_all, u0 + band_sq);
			unsigned long long nl[2] = {0, 0};	/* list entries, tile pairs kept */

			/* Hopper's kernel takes entries in pairs: pad its list, or pair its rows (prune_kernel) */
			const unsigned int pblocks = (unsigned int) (u1 - u0);	/* a block a square */
			const int	nw = (int) ((u1 - u0) * PRUNE_SQ * PRUNE_SQ / WARP);

			CHECK(cudaMemsetAsync(d_nlist, 0, sizeof(*d_nlist) * 2, g->stream[0]));
			const int	mode = clusters > 0 ? LIST_ROWS : wgmma ? LIST_PAIRS : LIST_ONE;

			prune_kernel<<<pblocks, PRUNE_SQ * PRUNE_SQ, 0, g->stream[0]>>>(d_cen, d_rad, bd.d, bd.ntiles,
															2.0 * plan.e_half / plan.sigma, u0, u1, split,
															mode, d_mask, d_count);
			CHECK(cudaGetLastError());
			CHECK(cub::DeviceScan::ExclusiveSum(d_scan, scan_bytes, d_count, d_offset, nw, g->stream[0]));
			emit_kernel<<<pblocks, 256, 0, g->stream[0]>>>(bd.ntiles, u0, u1, split, mode, d_mask, d_offset,
														   d_list, d_nlist);
			CHECK(cudaGetLastError());
			CHECK(cudaMemcpyAsync(nl, d_nlist, sizeof(nl), cudaMemcpyDeviceToHost, g->stream[0]));
			if ((st = wait_stream(g, g->stream[0], sink, err)) != TC_OK)
				return st;

			const unsigned long long ntp = nl[0];

			if (g->ov.trace)
				fprintf(stderr, "tcjoin trace: band of squares [%llu, %llu): %llu tile pairs kept in %llu list "
						"entries, pruned by %.3f ms into the join\n", u0, u1, nl[1], ntp, (tc_now() - t1) * 1e3);

			stats->gpu_tile_pairs_kept += nl[1];
			u0 = u1;

			/* As many list entries as should fit the buffer at the rate seen. */
			auto		next = [&] (unsigned long long lo, double r, double *bound) {
				double		per_tile = (double) BT * BT * entry_pairs;
				unsigned long long want = (unsigned long long) std::max(1.0,
																		std::min(0.8 * capacity / (per_tile * r),
																				 BRUTE_BATCH_WORK / bd.dpad / per_tile));
				if (wgmma)
					want = std::max(2ull, want & ~1ull);	/* whole items, rounded down (up could pass the buffer) */
				unsigned long long hi = std::min(ntp, lo + want);

				/*
				 * The band's last batch goes to the sink only after the GPU
				 * is done with it (the others while the next one runs), so
				 * where it would carry over a million pairs by the rate seen,
				 * its last eighth becomes a batch of its own, which the GPU
				 * runs while the host drains this one.  On an H200 the last
				 * drain was 1.7 ms of a 27.8 ms join phase at 100,000 x 1,024.
				 */
				if (hi == ntp && lo > 0 && 2 * (hi - lo) >= want &&	/* not the eighth again */
					(double) (hi - lo) * per_tile * r / 1.5 > (double) (1 << 20))
				{
					unsigned long long tail = (hi - lo) / 8;

					if (wgmma)
						tail &= ~1ull;
					if (tail >= 2 && hi - tail > lo)
						hi -= tail;
				}
				*bound = (double) (hi - lo) * per_tile;
				return hi;
			};
			auto		launch = [&] (int cur, unsigned long long lo, unsigned long long hi) -> TcStatus {
				BruteBatch	bb;
				cudaStream_t s = g->stream[cur];
				unsigned long long units = wgmma ? (hi - lo) / 2 : hi - lo;
				unsigned int blocks = clusters > 0 ?
					2 * (unsigned int) std::min((unsigned long long) clusters, units) :
					(unsigned int) std::min((unsigned long long) sms * per_sm, units);

				bb.list = d_list;
				bb.lo = lo;
				bb.hi = hi;
				bb.queue = d_cnt + cur;
				bb.pairs = d_pairs[cur];
				bb.capacity = capacity;
				bb.count = d_meta[cur];
				bb.overflow = d_meta[cur] + 1;
				bb.ncand = d_meta[cur] + 2;
				bb.cand = d_cand[cur];
				bb.cand_capacity = capacity;
				bb.candidates = d_cnt + 2 + 2 * cur;
				bb.rechecked = d_cnt + 3 + 2 * cur;
				bb.abort = g->d_abort;
				CHECK(cudaMemsetAsync(d_meta[cur], 0, sizeof(unsigned int) * 3, s));
				CHECK(cudaMemsetAsync(d_cnt + cur, 0, sizeof(*d_cnt), s));
				CHECK(cudaMemsetAsync(d_cnt + 2 + 2 * cur, 0, sizeof(*d_cnt) * 2, s));
				CHECK(cudaEventRecord(g->kev[cur][0], s));
				if (clusters > 0)
				{
					cudaLaunchConfig_t cfg = cluster_cfg(blocks, s);

					CHECK(cudaLaunchKernelEx(&cfg, bd.approx ? brute_wgmma_kernel<true, true> :
											 brute_wgmma_kernel<false, true>, tmap, bd, bb));
				}
				else if (wgmma)
				{
					(bd.approx ? brute_wgmma_kernel<true, false> : brute_wgmma_kernel<false, false>)
						<<<blocks, WG_THREADS, WG_SMEM, s>>>(tmap, bd, bb);
				}
				else
					brute_kernel<<<blocks, BRUTE_THREADS, TILE_SMEM, s>>>(bd, bb);
				CHECK(cudaGetLastError());
				CHECK(cudaEventRecord(g->kev[cur][2], s));
				if (group)
				{
					const int	rows = (int) (bd.ntiles * BT);
					unsigned int *offset = d_group[cur] + nt_max * BT;

					CHECK(cudaMemsetAsync(d_group[cur], 0, sizeof(unsigned int) * rows, s));
					cand_count_kernel<<<sms * 4, 256, 0, s>>>(bb, d_group[cur]);
					CHECK(cudaGetLastError());
					CHECK(cub::DeviceScan::ExclusiveSum(d_gscan[cur], gscan_bytes, d_group[cur], offset, rows, s));
					cand_scatter_kernel<<<sms * 4, 256, 0, s>>>(bb, offset, d_grouped[cur]);
					CHECK(cudaGetLastError());
					bb.cand = d_grouped[cur];
				}
				rk<<<rk_grid, RC_WARPS * WARP, rk_smem, s>>>(bd, bb);
				CHECK(cudaGetLastError());
				CHECK(cudaEventRecord(g->kev[cur][1], s));
				CHECK(cudaMemcpyAsync(h_meta[cur], d_meta[cur], sizeof(unsigned int) * 3,
									  cudaMemcpyDeviceToHost, s));
				CHECK(cudaMemcpyAsync(h_cnt + 2 * cur, d_cnt + 2 + 2 * cur, sizeof(*h_cnt) * 2,
									  cudaMemcpyDeviceToHost, s));
				return TC_OK;
			};
			/* a batch's counts, once: not those of a batch dropped and rerun */
			auto		kept = [&] (int cur) {
				stats->candidates += h_cnt[2 * cur];
				if (!bd.approx)	/* approximate: nothing rechecked */
					stats->rechecked += h_cnt[2 * cur + 1];
			};

			g->kev_recheck = true;
			st = run_batches(g, ntp, d_pairs, h_meta, rate, next, launch, "tile", sink, stats, err, 2, kept);
			g->kev_recheck = false;
			if (st != TC_OK)
				return st;
		}
		return TC_OK;
	};

	if (B == 0)
	{
		if ((st = join_set(0)) != TC_OK)
			return st;
	}
	else
		for (int bi = 0; bi < nblocks; bi++)
			for (int bj = bi; bj < nblocks; bj++)
			{
				unsigned int ri = 0,
							rj = 0;

				/*
				 * Block bi at row 0 (it stays there while the bj > bi pass
				 * after it, and is full: B rows), bj at row B.
				 */
				if ((st = bj == bi ? fetch_to(bi, 0, &ri) : fetch_to(bj, B, &rj)) != TC_OK)
					return st;
				if ((st = prepare_set(bj > bi ? B + rj : ri, bj > bi ? B / BT : 0)) != TC_OK)
					return st;
				bd.split_row = B;
				bd.shift_lo = (long long) bi * B;
				bd.shift_hi = (long long) bj * B - B;
				st = join_set(bj > bi ? B / BT : 0);
				if (st != TC_OK)
					return st;
				/* the set's batches are drained: its arrays can go */
				CHECK(cudaDeviceSynchronize());
				dev_free(g, (void *) bd.order);
				dev_free(g, (void *) bd.h);
				dev_free(g, (void *) bd.q);
				dev_free(g, (void *) bd.rc);
				dev_free(g, d_cen);
				dev_free(g, d_rad);
			}
	stats->join_seconds = tc_now() - t1;
	if (g->ov.trace)
		fprintf(stderr, "tcjoin trace: join phase %.3f ms\n", stats->join_seconds * 1e3);
	return TC_OK;
}
