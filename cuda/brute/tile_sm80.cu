/*
 * tile_sm80.cu
 *		The brute force's tile kernel for sm_80 and later (the only one
 *		before Hopper, and on Hopper with tile_kernel=mma): four warps run
 *		mma.sync m16n8k16 on a 128 x 128 tile pair, with ldmatrix fragments
 *		of cp.async-staged slices.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "brute.h"
#include "candidates.cuh"
#include "ptx_sm80.cuh"

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

/* Dynamic shared memory past the 48 KB a block gets by default. */
TcStatus
brute_sm80_setup(TcError *err)
{
	CHECK(cudaFuncSetAttribute(brute_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, TILE_SMEM));
	return TC_OK;
}

TcStatus
brute_sm80_occupancy(int *per_sm, TcError *err)
{
	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, brute_kernel, BRUTE_THREADS, TILE_SMEM));
	return TC_OK;
}

/* One batch's tile kernel. */
TcStatus
brute_sm80_launch(unsigned int blocks, cudaStream_t s, const BruteDev &bd, const BruteBatch &bb,
				  TcError *err)
{
	brute_kernel<<<blocks, BRUTE_THREADS, TILE_SMEM, s>>>(bd, bb);
	CHECK(cudaGetLastError());
	return TC_OK;
}
