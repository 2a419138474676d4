/*
 * candidates.cuh
 *		The tile kernels' epilogue hand-off: the pairs the filter kept go to
 *		the batch's candidate list, which the recheck (recheck.cu) decides.
 *		Device code.
 */
#ifndef TCJOIN_CANDIDATES_CUH
#define TCJOIN_CANDIDATES_CUH

#include "brute.h"

/*
 * The epilogue's second stage: the pairs the filter kept (bits of keep;
 * pos(bit, &i, &j) gives a bit's positions) go to the batch's candidate
 * list, one atomic per warp; the recheck (recheck.cu) then decides them.  Deciding
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

#endif							/* TCJOIN_CANDIDATES_CUH */
