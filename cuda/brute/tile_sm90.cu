/*
 * tile_sm90.cu
 *		The brute force's tile kernel on Hopper (sm_90a): TMA, wgmma and
 *		clusters of two blocks.
 *
 * A work item is two consecutive list entries, which share their first
 * tile (prune_kernel pads each tile row of the list to an even length): one
 * tile A against up to two tiles B0, B1, a 128 x 256 block of pairs.  A
 * block has three roles (pipeline_sm90.cuh).  One producer warp loads
 * 64-dimension slices of A, B0 and B1 by TMA into a ring of WG_STAGES
 * stages; the tensor map's 128-byte swizzle is the layout wgmma reads (row
 * r's 16-byte chunk c at chunk c ^ (r % 8) of its 128-byte row, 8-row
 * groups 1024 bytes apart), and a missing B1 is not loaded.  Two consumer
 * warpgroups each multiply 64 rows of A by all 256 columns
 * (wgmma.m64n256k16, both operands from shared memory), keeping one
 * slice's MMAs in flight while the next is issued.  A full and an empty
 * mbarrier per stage pass the stages between them, so the loads run up to
 * WG_STAGES slices ahead, through the consumers' epilogue, and no barrier
 * of the whole block sits in the loop.  Per FLOP, the 128 x 256 block
 * reads a third less from L2 than 128 x 128.
 *
 * With CLUSTER (a cluster of two blocks), a work item is two tiles A0, A1
 * (consecutive tile rows) against the same B0, B1: the list's entry pair
 * is (A0, B0), (A1, B1) (prune_kernel's LIST_ROWS lists, for each two rows
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
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

#include "brute.h"
#include "candidates.cuh"
#include "pipeline_sm90.cuh"
#include "ptx_sm80.cuh"
#include "ptx_sm90.cuh"

#ifdef TC_HAVE_WGMMA

/*
 * The list index of a block's k-th item: groups of WG_GROUP consecutive
 * items, dealt round robin.  Consecutive items mostly share tile A (the
 * list runs row by row through squares); the blocks together work through
 * a few squares at a time, whose tiles stay in L2.  A static deal needs no
 * atomic on the critical path.  A cluster's blocks take the same items.
 */
struct ItemDeal
{
	const BruteBatch &b;
	const unsigned int &unit;
	const unsigned int &units;

	__device__ unsigned long long operator() (unsigned long long k) const
	{
		return b.lo + 2 * (((k / WG_GROUP) * units + unit) * WG_GROUP + k % WG_GROUP);
	}
};

/*
 * The producer: one lane issues every copy (CLUSTER: the first block's,
 * for both blocks).  Per item, its first slice's stage carries the control
 * word: 1 when there are no more items, which ends the consumers.
 */
template <bool CLUSTER>
__device__ __forceinline__ void
wg_producer(const CUtensorMap *tm, const BruteBatch &b, const StageRing &ring, int *ctrl,
			const ItemDeal &item, int nk)
{
	unsigned int it = 0;		/* slices issued */
	/* CLUSTER: the second block's barriers and control words */
	const unsigned int peer_full0 = CLUSTER ? cluster_map(ring.full0, 1) : 0;
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
			const int	s = StageRing::stage(it);
			const unsigned int sa = ring.tiles(s);
			const unsigned int fb = ring.full(s);
			const unsigned int bbytes = (bj1 == TILE_NONE ? 1 : 2) * WG_TILE_BYTES;

			/* CLUSTER: both blocks' consumers have returned the stage */
			mbar_wait(ring.empty(s), StageRing::phase(it) ^ 1);
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
				tma_tile_mc(sa, tm, kb * WG_BK, (int) (bi0 * BT), fb, 1);
				if (bi1 != TILE_NONE)
					tma_tile_mc(sa, tm, kb * WG_BK, (int) (bi1 * BT), fb, 2);
				tma_tile_mc(sa + WG_TILE_BYTES, tm, kb * WG_BK, (int) (bj0 * BT), fb, 3);
				if (bj1 != TILE_NONE)
					tma_tile_mc(sa + 2 * WG_TILE_BYTES, tm, kb * WG_BK, (int) (bj1 * BT), fb, 3);
			}
			else
			{
				tma_tile(sa, tm, kb * WG_BK, (int) (bi0 * BT), fb);
				tma_tile(sa + WG_TILE_BYTES, tm, kb * WG_BK, (int) (bj0 * BT), fb);
				if (bj1 != TILE_NONE)
					tma_tile(sa + 2 * WG_TILE_BYTES, tm, kb * WG_BK, (int) (bj1 * BT), fb);
			}
		}
	}
}

/*
 * The epilogue's per-point values, requested before the MMAs so that their
 * latency hides behind them: the columns' q and rc into shared memory at
 * cq (16 bytes a thread, zeros for a missing B1), the rows' into registers.
 */
__device__ __forceinline__ void
wg_request_values(const BruteDev &g, const unsigned int (&bj)[2], float (*cq)[2 * BT], int tid,
				  unsigned int row0, float (&q_r)[2], float (&rc_r)[2])
{
	{
		const int	tw = tid % 128;
		const int	half = tw >> 6,
					which = (tw >> 5) & 1,
					part = tw & 31;
		const bool	in = bj[half] != TILE_NONE;
		const float *src = (which ? g.rc : g.q) + (in ? (size_t) bj[half] * BT + part * 4 : 0);

		cp_async16_group((unsigned int) __cvta_generic_to_shared(&cq[which][half * BT + part * 4]), src, in);
	}
#pragma unroll
	for (int h = 0; h < 2; h++)
	{
		q_r[h] = g.q[row0 + 8 * h];
		rc_r[h] = g.rc[row0 + 8 * h];
	}
}

/*
 * The consumers' mainloop over an item's nk slices: each slice's MMAs
 * issued while the previous slice's run, whose stage then goes back to the
 * producer.  On return the last slice's MMAs are in flight and its stage
 * (prev) is still held.
 */
template <bool CLUSTER>
__device__ __forceinline__ void
wg_mainloop(float (&d)[128], const StageRing &ring, int dpad, int nk, int wgi, int lane,
			unsigned int &it, int &prev)
{
	for (int kb = 0; kb < nk; kb++, it++)
	{
		const int	s = StageRing::stage(it);
		const unsigned int sa = ring.tiles(s);

		if (kb > 0)
			mbar_wait_all(ring.full(s), StageRing::phase(it));

		uint64_t	da = wg_desc(sa + wgi * 64 * 128);
		uint64_t	db = wg_desc(sa + WG_TILE_BYTES);

		wgmma_fence();
		if ((kb + 1) * WG_BK <= dpad)
			wgmma_slice(d, da, db, kb > 0);
		else
			for (int kk = 0; kb * WG_BK + kk * 16 < dpad; kk++)
				wgmma_m64n256k16(d, da + 2 * kk, db + 2 * kk, kb + kk > 0);
		wgmma_commit();
		/* The previous slice's MMAs are done: its stage goes back to the producer. */
		wgmma_wait<1>();
		if (prev >= 0 && lane == 0)
			ring.release<CLUSTER>(prev);
		prev = s;
	}
}

/*
 * The epilogue's drop test on tile B_half's 128 columns: survivors are bit
 * ((half * 16 + nf) * 2 + h) * 2 + e of keep.  With CHECK, the pairs off
 * the end of the points and on or below the diagonal are not pairs.
 */
template <bool APPROX, bool CHECK>
__device__ __forceinline__ void
wg_side(const BruteDev &g, const float (&d)[128], float (*cq)[2 * BT], const float (&q_r)[2],
		const float (&rc_r)[2], unsigned int row0, unsigned int bi, const unsigned int (&bj)[2],
		int half, int tg, uint32_t (&keep)[4], unsigned long long &cand)
{
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

				if (CHECK)
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
	if (!CHECK)
		cand += 64;
}

/*
 * Epilogue: d[nf * 4 + h * 2 + e] is row 64 wgi + 16 (warp % 4) + gr + 8 h
 * of A, column 8 nf + 2 tg + e of B0 B1 (the m16n8 layout per warp).  The
 * pairs the filter keeps go to the candidate list.  g by value: the
 * compiler then knows that the candidates' stores leave its fields as they
 * were, and reads them once, as in the kernel itself.
 */
template <bool APPROX>
__device__ __forceinline__ void
wg_epilogue(const BruteDev g, const BruteBatch &b, const float (&d)[128], float (*cq)[2 * BT],
			const float (&q_r)[2], const float (&rc_r)[2], unsigned int row0, unsigned int bi,
			const unsigned int (&bj)[2], int tg, int lane, unsigned long long &cand,
			unsigned long long &rech)
{
	uint32_t	keep[4] = {0, 0, 0, 0};

#pragma unroll
	for (int half = 0; half < 2; half++)
	{
		/* CLUSTER: a block without a tile, or a column below its diagonal */
		if (bj[half] == TILE_NONE || bi == TILE_NONE || bj[half] < bi)
			continue;
		if (bi != bj[half] && (bi + 1) * BT <= g.n && (bj[half] + 1) * BT <= g.n)
			wg_side<APPROX, false>(g, d, cq, q_r, rc_r, row0, bi, bj, half, tg, keep, cand);
		else
			wg_side<APPROX, true>(g, d, cq, q_r, rc_r, row0, bi, bj, half, tg, keep, cand);
	}
	append_kept(b, lane, keep, rech, [&] (int bit, unsigned int *i, unsigned int *j) {
		*i = row0 + 8 * ((bit >> 1) & 1);
		*j = bj[bit >> 6] * BT + 2 * tg + ((bit >> 2) & 15) * 8 + (bit & 1);
	});
}

/*
 * The consumers: per item, wait for its first slice (or the producer's
 * word that there is none), request the epilogue's values, run the
 * mainloop, return the last stage, and decide the item's pairs.
 *
 * Ping-pong (g.pingpong: where an item's slices fill at most half the
 * stages, so that the next item's load while both warpgroups still hold
 * this one's): the warpgroups take turns at the tensor cores, one issuing
 * an item's MMAs while the other runs its epilogue of the item before,
 * instead of both multiplying and then both deciding, tensor cores idle.
 */
template <bool APPROX, bool CLUSTER>
__device__ __forceinline__ void
wg_consumer(const BruteDev &g, const BruteBatch &b, const StageRing &ring, const int *ctrl,
			float (*qrc)[2][2][2 * BT], const ItemDeal &item, int nk, unsigned int rank, int tid,
			int lane, int warp)
{
	const int	wgi = wg_group(warp);
	const int	gr = lane >> 2;
	const int	tg = lane & 3;
	unsigned long long cand = 0,
				rech = 0;
	unsigned int it = 0;		/* slices consumed */

	for (unsigned long long k = 0;; k++)
	{
		float		d[128];
		int			prev = -1;

		/*
		 * The item's first slice, or the producer's word that there is none.
		 * (d is cleared here, outside the slice loop, where no MMA is in
		 * flight: a write inside it would make the compiler wait for them.)
		 */
		mbar_wait_as<true, CLUSTER>(ring.full(StageRing::stage(it)), StageRing::phase(it));
		/*
		 * Lane 0 alone reads the word: its own arrival on the stage's empty
		 * barrier then orders the read before the producer's next write; the
		 * other lanes' reads would be ordered by nothing.
		 */
		int			no_more = 0;

		if (lane == 0)
			no_more = ctrl[it % WG_STAGES];
		if (__shfl_sync(FULL_MASK, no_more, 0))
		{
			/* the turn warpgroup 1 passed after its last item, taken, so no barrier is left half met */
			if (g.pingpong && wgi == 0 && k > 0)
				turn_wait(wgi);
			break;
		}
		/* warpgroup 0 waits for 1 to have issued the item before; 1 for 0 to have issued this one */
		if (g.pingpong && (wgi == 1 || k > 0))
			turn_wait(wgi);

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

		wg_request_values(g, bj, cq, tid, row0, q_r, rc_r);
#pragma unroll
		for (int q = 0; q < 128; q++)
			d[q] = 0.0f;		/* the first MMA ignores them; no undefined reads */
		wg_mainloop<CLUSTER>(d, ring, g.dpad, nk, wgi, lane, it, prev);
		/* issued: the other warpgroup's turn, while this one waits for its MMAs and decides */
		if (g.pingpong)
			turn_pass(wgi);
		wgmma_wait<0>();
		if (lane == 0)
			ring.release<CLUSTER>(prev);
		/*
		 * The warpgroup's copies have landed.  (Its other buffer, the next
		 * item's, is free: every warp of the group passed this barrier of
		 * the previous item after its epilogue.)
		 */
		cp_async_wait_all();
		named_barrier_sync<128>(epilogue_barrier(wgi));
		wg_epilogue<APPROX>(g, b, d, cq, q_r, rc_r, row0, bi, bj, tg, lane, cand, rech);
	}
	add_counts(b, lane, cand, rech);
}
#endif							/* TC_HAVE_WGMMA */

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

/*
 * The kernel: the stage ring's barriers set, then each warp to its role;
 * a block of a cluster leaves only when the other no longer reaches its
 * shared memory.
 */
template <bool APPROX, bool CLUSTER>
__global__ void
__launch_bounds__(WG_THREADS, 1)
brute_wgmma_kernel(const __grid_constant__ CUtensorMap tm, BruteDev g, BruteBatch b)
{
#ifdef TC_HAVE_WGMMA
	extern __shared__ __align__(128) unsigned char wg_raw[];
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
	const StageRing ring = {base, full0, empty0, lead_empty0};
	const ItemDeal item = {b, unit, units};

	if (tid == 0)
		ring.init<CLUSTER>();
	/* CLUSTER: no block arrives at, or copies into, the other's barriers before they are set */
	if (CLUSTER)
		cluster_sync_all();
	else
		__syncthreads();

	if (wg_role(warp) == WgRole::Producer)
	{
		/* The others wait at the end: a block of a cluster leaves only with the other. */
		if (lane == 0 && rank == 0)
			wg_producer<CLUSTER>(&tm, b, ring, ctrl, item, nk);
	}
	else
		wg_consumer<APPROX, CLUSTER>(g, b, ring, ctrl, qrc, item, nk, rank, tid, lane, warp);
	if (CLUSTER)
		cluster_sync_all();
#endif
}

/* ---------- host ---------- */

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

bool
brute_make_tmap(CUtensorMap *tm, const __half *h, unsigned int npad, int dpad, int pitch)
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

/*
 * Dynamic shared memory past the 48 KB a block gets by default.  Only on
 * Hopper: an A100 gives a block at most 163 KB, and the runtime refuses a
 * limit past the device's.
 */
TcStatus
brute_sm90_setup(TcError *err)
{
	CHECK(cudaFuncSetAttribute(brute_wgmma_kernel<false, false>,
							   cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
	CHECK(cudaFuncSetAttribute(brute_wgmma_kernel<true, false>,
							   cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
	CHECK(cudaFuncSetAttribute(brute_wgmma_kernel<false, true>,
							   cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
	CHECK(cudaFuncSetAttribute(brute_wgmma_kernel<true, true>,
							   cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
	return TC_OK;
}

/* The architecture of the kernel's code the device loads (90: sm_90a's, not a JIT of PTX). */
TcStatus
brute_sm90_binary_version(int *version, TcError *err)
{
	cudaFuncAttributes fa;

	CHECK(cudaFuncGetAttributes(&fa, brute_wgmma_kernel<false, false>));
	*version = fa.binaryVersion;
	return TC_OK;
}

/*
 * Whether the device runs the kernel's code: a JIT from the compute_90 PTX
 * would run an empty kernel.  scratch: an int of device memory.
 */
TcStatus
brute_sm90_probe(cudaStream_t s, void *scratch, int *have, TcError *err)
{
	wgmma_probe_kernel<<<1, 1, 0, s>>>((int *) scratch);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpyAsync(have, scratch, sizeof(*have), cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamSynchronize(s));
	return TC_OK;
}

TcStatus
brute_sm90_occupancy(int *per_sm, TcError *err)
{
	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, brute_wgmma_kernel<false, false>,
														WG_THREADS, WG_SMEM));	/* 1 */
	return TC_OK;
}

/* A launch of blocks (an even number) in clusters of two; attr is the launch's attribute. */
static cudaLaunchConfig_t
cluster_cfg(unsigned int blocks, cudaStream_t s, cudaLaunchAttribute *attr)
{
	cudaLaunchConfig_t cfg = {};

	*attr = {};
	attr->id = cudaLaunchAttributeClusterDimension;
	attr->val.clusterDim.x = 2;
	attr->val.clusterDim.y = 1;
	attr->val.clusterDim.z = 1;
	cfg.gridDim = dim3(blocks, 1, 1);
	cfg.blockDim = dim3(WG_THREADS, 1, 1);
	cfg.dynamicSmemBytes = WG_SMEM;
	cfg.stream = s;
	cfg.attrs = attr;
	cfg.numAttrs = 1;
	return cfg;
}

/* How many clusters of two the device holds at once, for a launch of blocks. */
TcStatus
brute_sm90_cluster_occupancy(unsigned int blocks, cudaStream_t s, int *clusters, TcError *err)
{
	cudaLaunchAttribute attr;
	cudaLaunchConfig_t cfg = cluster_cfg(blocks, s, &attr);

	CHECK(cudaOccupancyMaxActiveClusters(clusters, brute_wgmma_kernel<false, true>, &cfg));
	return TC_OK;
}

/* One batch's tile kernel, in clusters of two or not. */
TcStatus
brute_sm90_launch(bool clusters, unsigned int blocks, cudaStream_t s, const CUtensorMap &tm,
				  const BruteDev &bd, const BruteBatch &bb, TcError *err)
{
	if (clusters)
	{
		cudaLaunchAttribute attr;
		cudaLaunchConfig_t cfg = cluster_cfg(blocks, s, &attr);

		CHECK(cudaLaunchKernelEx(&cfg, bd.approx ? brute_wgmma_kernel<true, true> :
								 brute_wgmma_kernel<false, true>, tm, bd, bb));
	}
	else
	{
		(bd.approx ? brute_wgmma_kernel<true, false> : brute_wgmma_kernel<false, false>)
			<<<blocks, WG_THREADS, WG_SMEM, s>>>(tm, bd, bb);
	}
	CHECK(cudaGetLastError());
	return TC_OK;
}
