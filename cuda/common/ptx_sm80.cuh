/*
 * ptx_sm80.cuh
 *		Wrappers of the sm_80 instructions the tile kernels use: cp.async
 *		copies into shared memory, ldmatrix fragments and the mma.sync
 *		m16n8k16 FP16 product.  Device code, for cuda/ only.
 */
#ifndef TCJOIN_PTX_SM80_CUH
#define TCJOIN_PTX_SM80_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

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

/*
 * One 16-byte copy as a group of its own (zero-filled when !in), ordered
 * as a memory access: the Hopper kernel's per-item column values.
 */
__device__ __forceinline__ void
cp_async16_group(unsigned int saddr, const void *gmem, bool in)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\ncp.async.commit_group;"
				 :: "r"(saddr), "l"(gmem), "r"(in ? 16 : 0) : "memory");
}

/* All but the most recent group of copies have landed. */
__device__ __forceinline__ void
cp_async_wait_1(void)
{
	asm volatile("cp.async.wait_group 1;" ::: "memory");
}

/* Every copy has landed. */
__device__ __forceinline__ void
cp_async_wait_all(void)
{
	asm volatile("cp.async.wait_all;" ::: "memory");
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

/* c (16 x 8, float) += a (16 x 16, FP16, row) . b (16 x 8, FP16, col) */
__device__ __forceinline__ void
mma_f16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
				 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
				 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
				 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#endif							/* TCJOIN_PTX_SM80_CUH */
