/*
 * pairs.cuh
 *		The pair records the GPU joins write, and the warps' staging of
 *		pairs into a batch's result buffer.  Device code, for cuda/ only.
 */
#ifndef TCJOIN_PAIRS_CUH
#define TCJOIN_PAIRS_CUH

#include <cuda_runtime.h>

#include "engine.h"

#define WARP 32
#define STAGE 128				/* pairs staged per warp before an append */
#define FULL_MASK 0xffffffffu

/* The engine's TcPair, written by the kernel so the host passes it on as is. */
struct PairDev
{
	long long	a;
	long long	b;
	double		dist;
};
static_assert(sizeof(PairDev) == sizeof(TcPair), "PairDev must match TcPair");

template <int N>
struct StageOf
{
	static constexpr int size = N;
	PairDev		pair[N];
};
typedef StageOf<STAGE> Stage;

/* Append the warp's staged pairs to the batch buffer (warp-uniform call). */
template <typename S, typename B>
__device__ void
flush_stage(S &st, int &n, const B &b, int lane)
{
	unsigned int base = 0;

	if (n == 0)
		return;
	if (lane == 0)
		base = atomicAdd(b.count, (unsigned int) n);
	base = __shfl_sync(FULL_MASK, base, 0);
	if ((unsigned long long) base + n > b.capacity)
	{
		/* The batch will be rerun smaller; what was staged is dropped. */
		if (lane == 0)
			atomicExch(b.overflow, 1u);
	}
	else
		for (int i = lane; i < n; i += WARP)
		{
			b.pairs[base + i] = st.pair[i];
		}
	__syncwarp();
	n = 0;
}

/*
 * Stage the lanes' hits (warp-uniform call): one ballot, each hit to its
 * slot, a flush when the stage would overflow.  id maps a point to the
 * caller's index (read only for hits).  dist is s's root (ROOT: s is the
 * squared Euclidean distance), or s itself.
 */
template <bool ROOT = true, typename B, typename S, typename Id>
__device__ __forceinline__ void
stage_hit(const B &b, S &st, int &n, int lane, bool hit, unsigned int q,
		  unsigned int j, double s, Id id)
{
	unsigned int m = __ballot_sync(FULL_MASK, hit);

	if (m == 0)
		return;

	int			cnt = __popc(m);

	if (n + cnt > S::size)
		flush_stage(st, n, b, lane);
	if (hit)
	{
		int			r = n + __popc(m & ((1u << lane) - 1));

		st.pair[r].a = id(q);
		st.pair[r].b = id(j);
		st.pair[r].dist = ROOT ? __dsqrt_rn(s) : s;
	}
	n += cnt;
	__syncwarp();
}

/* A warp's counts of pairs evaluated and kept, into the batch's totals. */
template <typename B>
__device__ __forceinline__ void
add_counts(const B &b, int lane, unsigned long long cand, unsigned long long rech)
{
	for (int off = WARP / 2; off > 0; off /= 2)
	{
		cand += __shfl_down_sync(FULL_MASK, cand, off);
		rech += __shfl_down_sync(FULL_MASK, rech, off);
	}
	if (lane == 0)
	{
		atomicAdd(b.candidates, cand);
		atomicAdd(b.rechecked, rech);
	}
}

/*
 * A warp's last act: append what it staged, and add its counts of pairs
 * evaluated and pairs a filter kept to the batch's totals (one atomic each
 * per warp).
 */
template <typename B, typename S>
__device__ void
finish_warp(const B &b, S &st, int &n, int lane, unsigned long long cand,
			unsigned long long rech)
{
	flush_stage(st, n, b, lane);
	add_counts(b, lane, cand, rech);
}

#endif							/* TCJOIN_PAIRS_CUH */
