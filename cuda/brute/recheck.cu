/*
 * recheck.cu
 *		The brute force's exact recheck: the candidates the tile kernels'
 *		filter kept, decided by the contract's sum on the caller's
 *		coordinates (or, exact => false, by an FP32 dot of the FP16 rows for
 *		dist).  Three kernels: staged (any alignment), lane (rows 16-byte
 *		aligned) and bulk-copy (Hopper, 192 or 256 bytes a copy); and the
 *		candidates' grouping by first point, for the last two.
 */
#include <cub/cub.cuh>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "brute.h"
#include "ptx_sm90.cuh"

/*
 * The candidates, decided by the contract's sum on the caller's
 * coordinates.  A warp takes 32 candidates, a lane each; 32 coordinates at
 * a time, the warp reads each candidate's two row pieces together (128
 * coalesced bytes per row for float4) into shared memory, and each lane
 * then adds its candidate's 32 squares in index order.  A lane walking its
 * own rows alone would touch 64 lines per load and lose them from L1.  The
 * list is in tile order, so most rows come from L2.
 */
constexpr int RC_WARPS = 4;
constexpr int RC_CHUNK = 32;
constexpr int RC_ROW = RC_CHUNK + 1;	/* padded: lanes read different banks */

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

/*
 * The exact sum's term for one coordinate: the squared difference
 * (Euclidean), else the product (the dot-product metrics); float8, no fused
 * multiply-add, in index order, as the contract says.
 */
template <int METRIC>
__device__ __forceinline__ double
exact_term(double a, double b)
{
	if (METRIC == TC_METRIC_EUCLIDEAN)
	{
		double		t = __dsub_rn(a, b);

		return __dmul_rn(t, t);
	}
	return __dmul_rn(a, b);
}

/*
 * The contract's verdict on the pair at positions p from its exact sum s,
 * which becomes the value staged: the Euclidean s as it is (stage_hit takes
 * the root), the inner product's -dot, cosine's 1 - clamp(dot / sqrt(na nb))
 * (as distance.h's tc_cosine_dist rounds it).
 */
template <int METRIC>
__device__ __forceinline__ bool
exact_hit(const BruteDev &g, uint2 p, double &s)
{
	if (METRIC == TC_METRIC_INNER_PRODUCT)
		s = -s;
	else if (METRIC == TC_METRIC_COSINE)
	{
		double		sim = __ddiv_rn(s, __dsqrt_rn(__dmul_rn(g.norm[g.order[p.x]], g.norm[g.order[p.y]])));

		s = __dsub_rn(1.0, sim > 1.0 ? 1.0 : sim < -1.0 ? -1.0 : sim);
	}
	return s <= g.thr;
}

/*
 * exact => false: the value staged from the FP32 dot of the FP16 rows: the
 * squared distance; cosine's half of the unit vectors' (1 - cos); the
 * inner product's -dot (its rows not centred).
 */
template <int METRIC>
__device__ __forceinline__ double
approx_value(const BruteDev &g, uint2 p, float dot)
{
	if (METRIC == TC_METRIC_INNER_PRODUCT)
		return -(double) dot * g.inv_sigma * g.inv_sigma;
	return METRIC == TC_METRIC_COSINE ? approx_dist2(g, p, dot) * 0.5 : approx_dist2(g, p, dot);
}

/* Position q's row in the caller's numbering (a streamed block's shift added). */
__device__ __forceinline__ long long
caller_row(const BruteDev &g, unsigned int q)
{
	unsigned int r = g.order[q];

	return (long long) r + (r < g.split_row ? g.shift_lo : g.shift_hi);
}

template <typename T, bool APPROX, int METRIC>
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
						s = __dadd_rn(s, exact_term<METRIC>((double) sa[lane * RC_ROW + k],
															(double) sb[lane * RC_ROW + k]));
					/* Euclidean partial sums only grow: past thr, out */
					if (METRIC == TC_METRIC_EUCLIDEAN)
						live = s <= g.thr;
				}
			}
			__syncwarp();
		}
		if (APPROX && c < nc)
			s = approx_value<METRIC>(g, p, dot);
		else if (!APPROX && METRIC != TC_METRIC_EUCLIDEAN && live)
			live = exact_hit<METRIC>(g, p, s);
		stage_hit<METRIC == TC_METRIC_EUCLIDEAN>(b, st, nst, lane, live && c < nc, p.x, p.y, s,
												 [&] (unsigned int q) { return caller_row(g, q); });
	}
	flush_stage(st, nst, b, lane);
}

/* The staged kernel's dynamic shared memory, for rows of T. */
template <typename T>
constexpr int
rc_smem(void)
{
	return RC_WARPS * 2 * WARP * RC_ROW * (int) sizeof(T);
}

/*
 * The batch's candidates grouped by their first point (a counting sort:
 * count, scan, scatter), so that the lanes of a warp in recheck_vec_kernel
 * mostly share that row: its loads come to one line for the warp where
 * there were 32, and the first rows are half the lines the recheck reads.
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
 * spends some fifty (the staged kernel is issue-bound).  A lane's loads
 * take whole 128-byte lines back to back, so each line is used up before
 * L1 can lose it.  It is the faster recheck of exact => false (FP16 rows),
 * and, software-pipelined (below), as fast as the staged kernel on the
 * exact recheck at high d and faster below, so it serves both where rows
 * are 16-byte aligned; the staged kernel serves the rest.
 */
constexpr int RC_VEC_LOADS = 4;

/* Element e of a 16-byte vector of E (e known at compile time). */
template <typename E>
__device__ __forceinline__ E
vec_elem(const uint4 &v, int e)
{
	E			x[16 / sizeof(E)];

	memcpy(x, &v, 16);
	return x[e];
}

template <typename T, bool APPROX, int METRIC>
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
							s = __dadd_rn(s, exact_term<METRIC>((double) vec_elem<E>(va[u], e),
																(double) vec_elem<E>(vb[u], e)));
					}
				k += STEP;
				if (!APPROX && METRIC == TC_METRIC_EUCLIDEAN && s > g.thr)
					break;
#pragma unroll
				for (int u = 0; u < RC_VEC_LOADS; u++)
				{
					va[u] = na[u];
					vb[u] = nb[u];
				}
			}
			for (; k < len && (APPROX || METRIC != TC_METRIC_EUCLIDEAN || s <= g.thr); k++)
			{
				if (APPROX)
					dot = __fadd_rn(dot, __fmul_rn(__half2float(ra[k]), __half2float(rb[k])));
				else
					s = __dadd_rn(s, exact_term<METRIC>((double) ra[k], (double) rb[k]));
			}
			if (APPROX)
			{
				s = approx_value<METRIC>(g, p, dot);
				hit = true;
			}
			else
				hit = exact_hit<METRIC>(g, p, s);	/* Euclidean: a stop past thr rejects */
		}
		stage_hit<METRIC == TC_METRIC_EUCLIDEAN>(b, st, nst, lane, hit, p.x, p.y, s,
												 [&] (unsigned int q) { return caller_row(g, q); });
	}
	flush_stage(st, nst, b, lane);
}


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
 * 16 warps, 96 registers); shared memory holds each to that.  Slots are
 * CHUNK + 16 bytes apart, an odd multiple of 16 mod 128 for each CHUNK
 * (80 or 16), so that 16-byte reads of 8 lanes meet no bank conflict.
 */
__host__ __device__ constexpr int
rb_slot(int chunk)
{
	return chunk + 16;
}
static_assert(rb_slot(192) % 128 / 16 % 2 == 1 && rb_slot(256) % 128 / 16 % 2 == 1,
			  "bulk recheck slots an odd multiple of 16 bytes apart, mod 128");

/*
 * A lane's chunks in shared memory: one landing while it sums one.  Three
 * or four let fewer blocks fit an SM, and the recheck ran slower.
 */
constexpr int RB_SLOTS = 2;
/*
 * Pairs a warp stages before an append: 32, not STAGE's 128, so that a
 * block's stages take 3 KB, not 12, and a third block of 256-byte chunks
 * fits an SM (a fourth of 192-byte ones).  The kernel waits on its copies'
 * latency, so more warps means more rows in flight.
 */
constexpr int RB_STAGE = 32;
static_assert(RB_STAGE <= STAGE && RB_STAGE >= WARP, "a bulk warp stages fewer pairs, a warp's at least");

/* The bulk kernel's dynamic shared memory: the lanes' slots and the warps' barriers. */
constexpr int
rb_smem_bytes(int chunk)
{
	return RC_WARPS * RB_SLOTS * WARP * rb_slot(chunk) + RC_WARPS * RB_SLOTS * 8;
}

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
	unsigned char *const slot0 = rb_smem + (warp * RB_SLOTS * WARP + lane) * rb_slot(CHUNK);
	const unsigned int bar0 = (unsigned int) __cvta_generic_to_shared(rb_smem + RC_WARPS * RB_SLOTS * WARP * rb_slot(CHUNK)) +
		warp * RB_SLOTS * 8;
	unsigned int ph = 0;		/* bit i: the parity barrier i waits for next */
	unsigned int nc;

	auto		slot = [&] (int j) { return slot0 + (j % RB_SLOTS) * WARP * rb_slot(CHUNK); };
	auto		wait = [&] (int j) {
		mbar_wait(bar0 + (j % RB_SLOTS) * 8, (ph >> (j % RB_SLOTS)) & 1);
		ph ^= 1u << (j % RB_SLOTS);
	};

	if ((nc = batch_candidates(b)) == 0)
		return;
	if (lane == 0)
		for (int i = 0; i < RB_SLOTS; i++)
			mbar_init(bar0 + 8 * i, WARP);
	fence_mbarrier_init();
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
				fence_proxy_async_shared();	/* after our reads of the slot */
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

/* ---------- host ---------- */

typedef void (*RecheckFn) (BruteDev, BruteBatch);

/* A recheck's kernel for the rows' type, and its dynamic shared memory. */
struct RecheckKernel
{
	RecheckFn	fn;
	size_t		smem;
};

/* The lane and staged kernels of a metric M. */
template <int M>
static RecheckKernel
recheck_metric_kernel(BruteRecheck kind, bool approx, TcElemType type)
{
	const bool	f4 = type == TC_FLOAT4;

	if (kind == BRUTE_RECHECK_LANE)
		return {approx ? recheck_vec_kernel<float, true, M> :
				f4 ? recheck_vec_kernel<float, false, M> : recheck_vec_kernel<double, false, M>, 0};
	return {approx ? recheck_kernel<float, true, M> :
			f4 ? recheck_kernel<float, false, M> : recheck_kernel<double, false, M>,
			(size_t) (!approx && type == TC_FLOAT8 ? rc_smem<double>() : rc_smem<float>())};
}

/* The bulk-copy kernels are the Euclidean metric's only (config.cu). */
static RecheckKernel
recheck_kernel_of(BruteRecheck kind, const BruteDev &bd, TcElemType type)
{
	const bool	approx = bd.approx;
	const bool	f4 = type == TC_FLOAT4;

	if (bd.metric == TC_METRIC_COSINE)
		return recheck_metric_kernel<TC_METRIC_COSINE>(kind, approx, type);
	if (bd.metric == TC_METRIC_INNER_PRODUCT)
		return recheck_metric_kernel<TC_METRIC_INNER_PRODUCT>(kind, approx, type);
	switch (kind)
	{
		case BRUTE_RECHECK_BULK192:
			return {approx ? recheck_bulk_kernel<float, true, 192> :
					f4 ? recheck_bulk_kernel<float, false, 192> : recheck_bulk_kernel<double, false, 192>,
					(size_t) rb_smem_bytes(192)};
		case BRUTE_RECHECK_BULK256:
			return {approx ? recheck_bulk_kernel<float, true, 256> :
					f4 ? recheck_bulk_kernel<float, false, 256> : recheck_bulk_kernel<double, false, 256>,
					(size_t) rb_smem_bytes(256)};
		default:
			break;
	}
	return recheck_metric_kernel<TC_METRIC_EUCLIDEAN>(kind, approx, type);
}

/*
 * The recheck's kernel set up for this join: its shared memory, and its
 * grid (8 blocks an SM; the bulk kernel's, as many as fit at once, which
 * shared memory bounds).
 */
TcStatus
brute_recheck_setup(BruteRecheck kind, const BruteDev &bd, TcElemType type, int sms,
					unsigned int *grid, TcError *err)
{
	const RecheckKernel rk = recheck_kernel_of(kind, bd, type);

	*grid = (unsigned int) sms * 8;
	/* dynamic shared memory past the 48 KB a block gets by default */
	if (rk.smem > 0)
		CHECK(cudaFuncSetAttribute(rk.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) rk.smem));
	if (kind == BRUTE_RECHECK_BULK192 || kind == BRUTE_RECHECK_BULK256)
	{
		int			rb_per_sm = 0;

		CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&rb_per_sm, rk.fn, RC_WARPS * WARP, rk.smem));
		*grid = (unsigned int) (sms * std::max(rb_per_sm, 1));
	}
	return TC_OK;
}

/* One batch's recheck, on stream s after its tile kernel. */
TcStatus
brute_recheck_launch(BruteRecheck kind, TcElemType type, unsigned int grid, cudaStream_t s,
					 const BruteDev &bd, const BruteBatch &bb, TcError *err)
{
	const RecheckKernel rk = recheck_kernel_of(kind, bd, type);

	rk.fn<<<grid, RC_WARPS * WARP, rk.smem, s>>>(bd, bb);
	CHECK(cudaGetLastError());
	return TC_OK;
}

/* The grouping scan's scratch, for rows positions. */
TcStatus
brute_group_scan_bytes(int rows, cudaStream_t s, size_t *bytes, TcError *err)
{
	CHECK(cub::DeviceScan::ExclusiveSum(NULL, *bytes, (unsigned int *) NULL, (unsigned int *) NULL,
										rows, s));
	return TC_OK;
}

/*
 * A batch's candidates grouped by first point into grouped: group counts
 * them per position, offset gets the scan (cand_count_kernel says why).
 */
TcStatus
brute_group_candidates(int sms, int rows, cudaStream_t s, const BruteBatch &bb, unsigned int *group,
					   unsigned int *offset, void *scan, size_t scan_bytes, uint2 *grouped,
					   TcError *err)
{
	CHECK(cudaMemsetAsync(group, 0, sizeof(unsigned int) * rows, s));
	cand_count_kernel<<<sms * 4, 256, 0, s>>>(bb, group);
	CHECK(cudaGetLastError());
	CHECK(cub::DeviceScan::ExclusiveSum(scan, scan_bytes, group, offset, rows, s));
	cand_scatter_kernel<<<sms * 4, 256, 0, s>>>(bb, offset, grouped);
	CHECK(cudaGetLastError());
	return TC_OK;
}
