/*
 * ptx_sm90.cuh
 *		Wrappers of the Hopper (sm_90a) instructions: mbarriers, TMA tile
 *		loads (multicast too), the cluster's ranks, barriers and remote
 *		arrivals and stores, bulk copies and L2 prefetches, and the wgmma
 *		descriptor and m64n256k16 products.  Device code, for cuda/ only;
 *		each wrapper exists only where the compiler targets sm_90a
 *		(TC_HAVE_WGMMA), and kernels that use them compile to an empty
 *		body elsewhere.
 */
#ifndef TCJOIN_PTX_SM90_CUH
#define TCJOIN_PTX_SM90_CUH

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "pairs.cuh"

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
wgmma_fence(void)
{
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void
wgmma_commit(void)
{
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

/* Until at most N groups of this warpgroup's MMAs are in flight. */
template <int N>
__device__ __forceinline__ void
wgmma_wait(void)
{
	asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
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
__device__ __forceinline__ void
mbar_wait(unsigned int bar, unsigned int ph)
{
	mbar_wait_as<false>(bar, ph);
}

__device__ __forceinline__ void
mbar_wait_all(unsigned int bar, unsigned int ph)
{
	mbar_wait_as<true>(bar, ph);
}

/* The barriers' initialization is seen by the cluster's copies and arrivals. */
__device__ __forceinline__ void
fence_mbarrier_init(void)
{
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/* This thread's generic-proxy accesses to shared memory before its next bulk copies. */
__device__ __forceinline__ void
fence_proxy_async_shared(void)
{
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}


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
 * scope on every slice, the arrival holds the producer back and slows the
 * whole filter.)
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
#endif							/* TC_HAVE_WGMMA */

#endif							/* TCJOIN_PTX_SM90_CUH */
