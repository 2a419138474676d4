/*
 * prepare.cu
 *		The brute force's preparation, on the device: the points' mean (the
 *		centre), the largest centred coordinate (which fixes the power-of-two
 *		scale, fp16_filter.h), then per point its FP16 coordinates h (rows
 *		padded to a multiple of 16 with zeros), and the filter's per-point
 *		values q and rc (fp16_filter.h), in the order order.cu gives.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "brute.h"

/*
 * Column sums over total: lane blockIdx.y's share of the rows (chunks of
 * 1024, every gridDim.y-th) summed in order into part[lane][k]; x may be
 * one block of the points, total all of them.  No atomics: the sums, and
 * so the centre and every point's FP16 row, are the same on every run and
 * every GPU, which several GPUs sharing a join need (multi.cu).
 */
template <typename T>
__global__ void
centre_kernel(const T *x, const double *root, unsigned int n, int d, double total, double *part)
{
	int			k = blockIdx.x * blockDim.x + threadIdx.x;
	double		lane = 0.0;

	if (k >= d)
		return;
	for (size_t i0 = (size_t) blockIdx.y * 1024; i0 < n; i0 += (size_t) gridDim.y * 1024)
	{
		double		s = 0.0;

		for (size_t i = i0; i < n && i < i0 + 1024; i++)
			s += filter_coord(x, root, i, d, k);
		lane += s / total;
	}
	part[(size_t) blockIdx.y * d + k] = lane;
}

/* c[k] += the lanes' sums, in lane order. */
__global__ void
centre_sum_kernel(const double *part, int lanes, int d, double *c)
{
	int			k = blockIdx.x * blockDim.x + threadIdx.x;

	if (k >= d)
		return;

	double		s = c[k];

	for (int y = 0; y < lanes; y++)
		s += part[(size_t) y * d + k];
	c[k] = s;
}

/* The largest |fl(x - c)|, as the bits of a non-negative double. */
template <typename T>
__global__ void
maxabs_kernel(const T *x, const double *root, unsigned int n, int d, const double *c,
			  unsigned long long *out)
{
	size_t		t = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
	size_t		stride = (size_t) gridDim.x * blockDim.x;
	double		m = 0.0;

	for (; t < (size_t) n * d; t += stride)
		m = fmax(m, fabs(__dsub_rn(filter_coord(x, root, t / d, d, (int) (t % d)), c[t % d])));
	for (int off = WARP / 2; off > 0; off /= 2)
		m = fmax(m, __shfl_down_sync(FULL_MASK, m, off));
	if (threadIdx.x % WARP == 0)
		atomicMax(out, (unsigned long long) __double_as_longlong(m));
}

/*
 * Each row's squared norm in the contract's way (float8, index order, no
 * fused multiply-add) and its root; the first row (first + its index) whose
 * norm is not positive into *zero (a zero vector has no cosine distance).
 */
template <typename T>
__global__ void
norm_kernel(const T *x, unsigned int rows, int d, unsigned long long first, double *norm,
			double *root, unsigned long long *zero)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
	double		s = 0.0;

	if (i >= rows)
		return;
	for (int k = 0; k < d; k++)
	{
		double		v = (double) x[(size_t) i * d + k];

		s = __dadd_rn(s, __dmul_rn(v, v));
	}
	norm[i] = s;
	root[i] = __dsqrt_rn(s);
	if (!(s > 0.0))
		atomicMin(zero, first + i);
}

/*
 * One warp per point: h, q and rc (fp16_filter.h); padding rows are zero.
 * A gap row (a copy standing in a set's last tile, bd.gap_lo) gets a zero
 * row and q = infinity: tc_f16_drop (and the approximate test) drops every
 * pair it is in, so it is never a candidate.
 */
template <typename T>
__global__ void
convert_kernel(const T *x, unsigned int n, unsigned int npad, int d, int pitch, const BruteDev g,
			   const double *c, TcF16Plan plan, __half *h, float *q, float *rc)
{
	const unsigned int *order = g.order;
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

	const bool	gap = i < n && order[i] >= g.gap_lo && order[i] < g.gap_hi;

	for (int k0 = 0; k0 < kend; k0 += WARP)
	{
		const int	k = k0 + lane;
		double		hk = 0.0;

		if (i < n && !gap && k < d)
		{
			double		sy = __dmul_rn(plan.sigma,
									   __dsub_rn(filter_coord(x, g.root, order[i], d, k), c[k]));
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

		if (gap)
		{
			q[i] = INFINITY;
			rc[i] = 0.0f;
		}
		else if (i < n)
		{
			const bool	ip = g.metric == TC_METRIC_INNER_PRODUCT;

			if (ip)
				tc_f16_ip_finish(&plan, d, hn2, r2, y2, A, g.ip_half, &pt);
			else
				tc_f16_finish(&plan, d, hn2, r2, y2, A, &pt);
			/* exact => false: the inner product's q is 0 (keep iff -acc <= thr_half) */
			q[i] = g.approx ? (ip ? 0.0f : (float) (hn2 * 0.5)) : pt.q;
			rc[i] = g.approx ? 0.0f : pt.rc;
		}
		else
			q[i] = rc[i] = 0.0f;
	}
}

/* ---------- host ---------- */

/*
 * The centre and the power-of-two scale (fp16_filter.h) of all the points:
 * pass 1 adds the column means, pass 2 takes the largest centred
 * coordinate, each over blocks of rows (fetch(fetch_arg, b, &rows) puts
 * block b on the device at bd.x; one block when the points fit).  Both are
 * global, so every point's q and rc hold against every other, block or no
 * block.
 */
/* The centre's lanes of rows at most: a block's partial sums take CENTRE_LANES x d doubles. */
#define CENTRE_LANES 256u

template <typename T>
static TcStatus
make_plan_as(TcGpuJoin *g, unsigned int n, int d, int nblocks, BruteFetch fetch, void *fetch_arg,
			 double thr, double eps, BruteDev &bd, TcF16Plan &plan, double **centre, TcError *err)
{
	double	   *d_c,
			   *d_part;
	unsigned long long *d_max,
				maxbits = 0;
	double		maxabs;
	TcStatus	st;
	cudaStream_t s = g->stream[0];

	if ((st = dev_alloc(g, (void **) &d_c, sizeof(double) * d, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_max, sizeof(*d_max), err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_part, sizeof(double) * CENTRE_LANES * d, err)) != TC_OK)
		return st;
	CHECK(cudaMemsetAsync(d_c, 0, sizeof(double) * d, s));
	CHECK(cudaMemsetAsync(d_max, 0, sizeof(*d_max), s));
	/* the inner product's points are not centred: c stays 0 */
	for (int pass = bd.metric == TC_METRIC_INNER_PRODUCT ? 1 : 0; pass < 2; pass++)
		for (int b = 0; b < nblocks; b++)
		{
			unsigned int rows = 0;

			if (nblocks > 1 && (st = fetch(fetch_arg, b, &rows)) != TC_OK)
				return st;
			if (nblocks == 1)
				rows = n;
			if (pass == 0)
			{
				const unsigned int lanes = std::max(1u, std::min(CENTRE_LANES, (rows + 1023) / 1024));

				centre_kernel<T><<<dim3((d + 127) / 128, lanes), 128, 0, s>>>(
					(const T *) bd.x, bd.root, rows, d, (double) n, d_part);
				CHECK(cudaGetLastError());
				centre_sum_kernel<<<(d + 127) / 128, 128, 0, s>>>(d_part, (int) lanes, d, d_c);
			}
			else
				maxabs_kernel<T><<<1024, 256, 0, s>>>((const T *) bd.x, bd.root, rows, d, d_c, d_max);
			CHECK(cudaGetLastError());
			/* before the next block overwrites it */
			if (nblocks > 1 && (st = gpu_sync(g, s, err)) != TC_OK)
				return st;
		}
	CHECK(cudaMemcpyAsync(&maxbits, d_max, sizeof(maxbits), cudaMemcpyDeviceToHost, s));
	if ((st = gpu_sync(g, s, err)) != TC_OK)
		return st;
	dev_free(g, d_max);
	dev_free(g, d_part);
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
	if (bd.metric == TC_METRIC_INNER_PRODUCT)
	{
		bd.ip_half = tc_f16_ip_half(&plan, eps);
		bd.thr_half = (float) (2.0 * bd.ip_half);	/* exact => false: keep iff -acc <= sigma^2 eps */
	}
	bd.inv_sigma = 1.0 / plan.sigma;
	bd.hpitch = plan.dpad % 512 == 0 ? plan.dpad + 64 : plan.dpad;
	bd.dpad = plan.dpad;
	*centre = d_c;
	return TC_OK;
}

TcStatus
brute_make_plan(TcGpuJoin *g, TcElemType type, unsigned int n, int d, int nblocks, BruteFetch fetch,
				void *fetch_arg, double thr, double eps, BruteDev &bd, TcF16Plan &plan,
				double **centre, TcError *err)
{
	return type == TC_FLOAT4 ?
		make_plan_as<float>(g, n, d, nblocks, fetch, fetch_arg, thr, eps, bd, plan, centre, err) :
		make_plan_as<double>(g, n, d, nblocks, fetch, fetch_arg, thr, eps, bd, plan, centre, err);
}

/* The rows at x: norm_kernel's squared norms, roots and first zero row (first: row 0's index). */
TcStatus
brute_norms(TcGpuJoin *g, TcElemType type, const void *x, unsigned int rows, int d,
			unsigned long long first, double *norm, double *root, unsigned long long *zero,
			TcError *err)
{
	cudaStream_t s = g->stream[0];

	if (rows == 0)
		return TC_OK;
	if (type == TC_FLOAT4)
		norm_kernel<float><<<(rows + 127) / 128, 128, 0, s>>>((const float *) x, rows, d, first, norm,
															  root, zero);
	else
		norm_kernel<double><<<(rows + 127) / 128, 128, 0, s>>>((const double *) x, rows, d, first, norm,
															   root, zero);
	CHECK(cudaGetLastError());
	return TC_OK;
}


/*
 * The n points at bd.x (npad with the padding), given the plan and the
 * centre: their order, and the buffers of their tile bounds, FP16 rows, q
 * and rc, into bd; brute_prepare_finish fills them (pp: what it needs).
 * The order is recursive bisection from segments of seg0 tiles (0: all
 * the points), so that segments given (two blocks of a streamed join)
 * never share a tile; part > 0: two sets, each ordered alone
 * (brute_order).  share: several GPUs prepare the same whole set(s) and
 * share the ordering's rounds; each GPU gathers the others' part of the
 * order once every buffer here is allocated, so that the driver's calls
 * (which the GPUs' threads take in turn) are not what starts their join
 * phases apart.
 */
TcStatus
brute_prepare(TcGpuJoin *g, TcElemType type, unsigned int n, int d, const TcF16Plan &plan,
			  const double *d_c, unsigned int seg0, unsigned int part, bool share, BruteDev &bd,
			  unsigned int npad, float **cen, float **rad, BrutePrepared *pp, TcJoinStats *stats,
			  TcError *err)
{
	__half	   *d_h;
	float	   *d_q,
			   *d_rc;
	unsigned int *d_order;
	TcStatus	st;
	const unsigned int ntiles = npad / BT;

	if ((st = brute_order(g, type, bd.x, bd.root, n, d, ntiles, seg0, part, share, &d_order, pp, stats,
						  err)) != TC_OK)
		return st;
	bd.order = d_order;

	/*
	 * Rows a multiple of 1 KB apart put a tile's 128 rows on few L2 sets
	 * and memory channels: such rows get 128 bytes more (zeros; make_plan).
	 */
	if ((st = dev_alloc(g, (void **) cen, sizeof(float) * (size_t) d * ntiles, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) rad, sizeof(float) * ntiles, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_h, sizeof(__half) * (size_t) npad * bd.hpitch, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_q, sizeof(float) * npad, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &d_rc, sizeof(float) * npad, err)) != TC_OK)
		return st;
	bd.h = d_h;
	bd.q = d_q;
	bd.rc = d_rc;
	bd.n = n;
	bd.ntiles = ntiles;
	pp->type = type;
	pp->plan = plan;
	pp->d_c = d_c;
	pp->cen = *cen;
	pp->rad = *rad;
	return TC_OK;
}

/*
 * The order's other ranges (several GPUs), then the tile bounds, FP16 rows,
 * q and rc into bd's buffers (const there for the join's kernels; this
 * writes them, as brute_prepare allocated them).
 */
TcStatus
brute_prepare_finish(TcGpuJoin *g, const BrutePrepared &pp, BruteDev &bd, TcError *err)
{
	cudaStream_t s = g->stream[0];
	const unsigned int npad = bd.ntiles * BT;
	const unsigned int blocks = (unsigned int) (((size_t) npad * WARP + 255) / 256);
	__half	   *h = const_cast<__half *>(bd.h);
	float	   *q = const_cast<float *>(bd.q);
	float	   *rc = const_cast<float *>(bd.rc);
	TcStatus	st;

	for (int i = 0; i < pp.gathers; i++)
		if ((st = share_gather(g, pp.key[i], (void *) bd.order, pp.bounds[i], err)) != TC_OK)
			return st;
	if ((st = brute_tile_bounds(g, pp.type, bd.x, bd.root, bd.d, pp.d_c, bd.order, bd.n, bd.ntiles,
								 pp.cen, pp.rad, err)) != TC_OK)
		return st;
	if (pp.type == TC_FLOAT4)
		convert_kernel<float><<<blocks, 256, 0, s>>>((const float *) bd.x, bd.n, npad, bd.d, bd.hpitch,
													  bd, pp.d_c, pp.plan, h, q, rc);
	else
		convert_kernel<double><<<blocks, 256, 0, s>>>((const double *) bd.x, bd.n, npad, bd.d, bd.hpitch,
													   bd, pp.d_c, pp.plan, h, q, rc);
	CHECK(cudaGetLastError());
	return gpu_sync(g, s, err);
}
