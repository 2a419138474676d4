/*
 * pipeline_sm90.cuh
 *		The Hopper tile kernel's pipeline (tile_sm90.cu): the block's roles,
 *		the ring of stages the producer fills and the consumers return, and
 *		the named barriers the consumer warpgroups meet at.  Device code.
 */
#ifndef TCJOIN_PIPELINE_SM90_CUH
#define TCJOIN_PIPELINE_SM90_CUH

#include "brute.h"
#include "ptx_sm90.cuh"

#ifdef TC_HAVE_WGMMA

/*
 * A block's roles: warps 0-7 are the two consumer warpgroups (warpgroup
 * wgi takes rows 64 wgi .. 64 wgi + 63 of tile A), warp 8 the producer.
 */
enum class WgRole
{
	Consumer,
	Producer
};

constexpr int WG_PRODUCER_WARP = WG_CONSUMERS / WARP;
constexpr int WG_WARPS_PER_GROUP = 4;
static_assert(WG_CONSUMERS == 2 * WG_WARPS_PER_GROUP * WARP, "two consumer warpgroups of four warps");

__device__ __forceinline__ WgRole
wg_role(int warp)
{
	return warp == WG_PRODUCER_WARP ? WgRole::Producer : WgRole::Consumer;
}

/* A consumer warp's warpgroup, 0 or 1. */
__device__ __forceinline__ int
wg_group(int warp)
{
	return warp / WG_WARPS_PER_GROUP;
}

/*
 * Named barriers (0 is __syncthreads').  EpilogueWg0 + wgi: warpgroup
 * wgi's own 128 threads, once its column values have landed.  TurnToWg1
 * and TurnToWg0: ping-pong's turn at the tensor cores, passed from
 * warpgroup 0 to 1 and back (arrive by the one, sync by the other: 256
 * threads).
 */
enum class NamedBarrier : int
{
	EpilogueWg0 = 1,
	EpilogueWg1 = 2,
	TurnToWg1 = 3,
	TurnToWg0 = 4
};

template <int THREADS>
__device__ __forceinline__ void
named_barrier_sync(NamedBarrier id)
{
	asm volatile("bar.sync %0, %1;" :: "r"((int) id), "n"(THREADS) : "memory");
}

template <int THREADS>
__device__ __forceinline__ void
named_barrier_arrive(NamedBarrier id)
{
	asm volatile("bar.arrive %0, %1;" :: "r"((int) id), "n"(THREADS) : "memory");
}

/* Warpgroup wgi's epilogue barrier. */
__device__ __forceinline__ NamedBarrier
epilogue_barrier(int wgi)
{
	return (NamedBarrier) ((int) NamedBarrier::EpilogueWg0 + wgi);
}

/*
 * Ping-pong: warpgroup wgi waits for its turn, and passes it to the other.
 * Each barrier instance completes before its next arrive, since the
 * arriving group has to pass the other barrier in between.
 */
__device__ __forceinline__ void
turn_wait(int wgi)
{
	named_barrier_sync<WG_CONSUMERS>(wgi == 0 ? NamedBarrier::TurnToWg0 : NamedBarrier::TurnToWg1);
}

__device__ __forceinline__ void
turn_pass(int wgi)
{
	named_barrier_arrive<WG_CONSUMERS>(wgi == 0 ? NamedBarrier::TurnToWg1 : NamedBarrier::TurnToWg0);
}

/*
 * The ring of WG_STAGES stages, each A, B0 and B1's slices of one 64-
 * dimension step, with a full barrier (the producer's copies landed) and
 * an empty one (the consumers are done reading).  Slice it (counted from
 * the block's start, by producer and consumers alike) takes stage
 * it % WG_STAGES in phase (it / WG_STAGES) & 1.  With clusters the full
 * barriers are each block's own, the empty ones the first block's (both
 * blocks' consumers arrive there: lead_empty0).
 */
struct StageRing
{
	unsigned int base;			/* stage 0's tiles (shared, 1 KB aligned) */
	unsigned int full0;			/* stage s's full barrier at full0 + 8 s */
	unsigned int empty0;		/* its empty barrier at empty0 + 8 s */
	unsigned int lead_empty0;	/* the empty barriers the consumers arrive at */

	__device__ static int stage(unsigned int it)
	{
		return it % WG_STAGES;
	}
	__device__ static unsigned int phase(unsigned int it)
	{
		return (it / WG_STAGES) & 1;
	}
	__device__ unsigned int tiles(int s) const
	{
		return base + s * WG_STAGE_BYTES;
	}
	__device__ unsigned int full(int s) const
	{
		return full0 + 8 * s;
	}
	__device__ unsigned int empty(int s) const
	{
		return empty0 + 8 * s;
	}

	/* One thread: the barriers, before any block of the cluster uses them. */
	template <bool CLUSTER>
	__device__ void init() const
	{
		for (int s = 0; s < WG_STAGES; s++)
		{
			mbar_init(full0 + 8 * s, 1);
			mbar_init(empty0 + 8 * s, (CLUSTER ? 2 : 1) * WG_CONSUMERS / WARP);
		}
		fence_mbarrier_init();
	}

	/* A consumer warp returns stage s to the producer. */
	template <bool CLUSTER>
	__device__ void release(int s) const
	{
		CLUSTER ? mbar_arrive_remote<false>(lead_empty0 + 8 * s) : mbar_arrive(empty0 + 8 * s);
	}

};

#endif							/* TC_HAVE_WGMMA */

#endif							/* TCJOIN_PIPELINE_SM90_CUH */
