/*
 * prune.cu
 *		The brute force's tile-pair list: the tile pairs on or above the
 *		diagonal, in squares of PRUNE_SQ x PRUNE_SQ tiles, less those whose
 *		tiles' balls lie more than eps apart (tile pruning), in the modes the
 *		tile kernels read (BruteListMode); a band of squares at a time.
 */
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <cmath>

#include "brute.h"

/*
 * Of the tile pairs in squares [u0, u1) (squares numbered row by row over
 * the upper triangle of the nsq x nsq squares, or over the rectangle
 * across a split; pairs off the triangle are skipped), those that may hold a pair within eps: |cen_a - cen_b| <=
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

/*
 * Tile pair t of the band from square u0: false where it is off the
 * triangle or past the tiles.  With split > 0 the squares are those across
 * it (split_squares), row by row.
 */
__device__ __forceinline__ bool
tile_pair_at(unsigned long long t, unsigned long long u0, unsigned long long u1, unsigned int nt,
			 unsigned int split, unsigned long long *bi, unsigned long long *bj)
{
	const unsigned long long nsq = (nt + PRUNE_SQ - 1) / PRUNE_SQ;
	unsigned long long u = u0 + t / (PRUNE_SQ * PRUNE_SQ);
	unsigned int l = (unsigned int) (t % (PRUNE_SQ * PRUNE_SQ));
	double		b = 2.0 * (double) nsq + 1.0;
	long long	r;

	*bi = *bj = 0;
	if (u >= u1)
		return false;
	if (split > 0)
	{
		unsigned long long R,
					C0,
					W;

		split_squares(nt, split, &R, &C0, &W);
		*bi = (u / W) * PRUNE_SQ + l / PRUNE_SQ;
		*bj = (C0 + u % W) * PRUNE_SQ + l % PRUNE_SQ;
		return *bi < nt && *bj < nt && *bj >= *bi;
	}
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
 * centres itself read 16 times the bytes, a row each lane, a large share
 * of the pruning at high d.  They are staged as float8, converted
 * once a block, not twice a term by each of its 256 threads (the
 * conversions run at a quarter of float8's add rate); the sums are the
 * same, bit for bit.  Each thread still sums its terms in index order.
 */
constexpr int PRUNE_KC = 128;

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
	bool		keep = tile_pair_at(t, u0, u1, nt, split, &bi, &bj);
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
	tile_pair_at(t, u0, u1, nt, split, &bi, &bj);

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

/* ---------- host ---------- */

/* The scan's scratch for warps of prune_kernel. */
TcStatus
brute_prune_scan_bytes(int warps, cudaStream_t s, size_t *bytes, TcError *err)
{
	CHECK(cub::DeviceScan::ExclusiveSum(NULL, *bytes, (unsigned int *) NULL, (unsigned int *) NULL,
										warps, s));
	return TC_OK;
}

/*
 * The band of squares [u0, u1) (of the set's triangle, or with split > 0
 * the tile pairs across tile split) into pb.list: prune, scan the warps'
 * counts, emit.  nl gets the list's entries and the tile pairs kept.
 */
TcStatus
brute_prune_band(TcGpuJoin *g, const BrutePruneBufs &pb, const float *cen, const float *rad, int d,
				 unsigned int ntiles, double eps_hi, unsigned long long u0, unsigned long long u1,
				 unsigned int split, BruteListMode mode, unsigned long long nl[2], const TcSink *sink,
				 TcError *err)
{
	const unsigned int pblocks = (unsigned int) (u1 - u0);	/* a block a square */
	const int	nw = (int) ((u1 - u0) * PRUNE_SQ * PRUNE_SQ / WARP);
	size_t		scan_bytes = pb.scan_bytes;
	TcStatus	st;

	CHECK(cudaMemsetAsync(pb.nlist, 0, sizeof(*pb.nlist) * 2, g->stream[0]));
	prune_kernel<<<pblocks, PRUNE_SQ * PRUNE_SQ, 0, g->stream[0]>>>(cen, rad, d, ntiles, eps_hi, u0, u1,
																	split, mode, pb.mask, pb.count);
	CHECK(cudaGetLastError());
	CHECK(cub::DeviceScan::ExclusiveSum(pb.scan, scan_bytes, pb.count, pb.offset, nw, g->stream[0]));
	emit_kernel<<<pblocks, 256, 0, g->stream[0]>>>(ntiles, u0, u1, split, mode, pb.mask, pb.offset,
												   pb.list, pb.nlist);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpyAsync(nl, pb.nlist, sizeof(unsigned long long) * 2, cudaMemcpyDeviceToHost,
						  g->stream[0]));
	if ((st = wait_stream(g, g->stream[0], sink, err)) != TC_OK)
		return st;
	return TC_OK;
}
