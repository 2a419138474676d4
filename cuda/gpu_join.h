/*
 * gpu_join.h
 *		What the GPU joins share: the pair records and their staging on the
 *		device, and on the host a join's resources, CUDA error reporting,
 *		waits that poll the sink, and the pinned ring that brings pairs home.
 *		C++, for cuda/ only; the engine sees gpu.h.
 */
#ifndef TCJOIN_GPU_JOIN_H
#define TCJOIN_GPU_JOIN_H

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "gpu.h"

#define WARP 32
#define STAGE 128				/* pairs staged per warp before an append */
#define FULL_MASK 0xffffffffu
#define OUT_BATCH 8192			/* pairs per sink->emit */
/*
 * Pairs reach the host through a ring of pinned chunks, so that copies
 * overlap the sink and pinned memory stays small.  The ring is kept for the
 * process's next join: pinning costs about 0.3 ms per MB.
 */
#define RING_CHUNK (1u << 19)	/* pairs: 12 MB */
#define RING_SLOTS 4

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

/* ---------- device: the contract, and staging pairs ---------- */

/*
 * The contract's sum, in float8, index order, nothing contracted, with an
 * early exit once past thr (partial sums only grow, so it cannot change the
 * answer); true iff s <= thr.  T: float or double coordinates, widened
 * exactly.
 */
template <typename T>
__device__ __forceinline__ bool
contract_within(const T *a, const T *b, int d, double thr, double *s_out)
{
	double		s = 0.0;
	int			k = 0;

	for (; k + 8 <= d; k += 8)
	{
#pragma unroll
		for (int u = 0; u < 8; u++)
		{
			double		t = __dsub_rn((double) a[k + u], (double) b[k + u]);

			s = __dadd_rn(s, __dmul_rn(t, t));
		}
		if (s > thr)
			return false;
	}
	for (; k < d; k++)
	{
		double		t = __dsub_rn((double) a[k], (double) b[k]);

		s = __dadd_rn(s, __dmul_rn(t, t));
	}
	*s_out = s;
	return s <= thr;
}


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
 * caller's index (read only for hits).
 */
template <typename B, typename S, typename Id>
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
		st.pair[r].dist = __dsqrt_rn(s);
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

/* ---------- host ---------- */

struct TcGpuJoin
{
	int			device;
	cudaStream_t stream[2];
	int			nstreams;
	cudaEvent_t ring_ev[RING_SLOTS];
	int			nevents;
	cudaEvent_t kev[2][3];		/* per stream: kernel start, end, and the recheck's start */
	cudaEvent_t kev_base;		/* before a run's first batch: its batches' times from it */
	bool		have_kev_base;
	bool		kev_recheck;	/* kev[.][2] is recorded: the stats split the kernels' time */
	int			nkev;
	void	   *dev[48];
	size_t		dev_bytes[48];	/* each allocation's size, for used */
	int			ndev;
	size_t		used;
	size_t		limit;
	void	   *host[8];
	int			nhost;
	/*
	 * Stopping a kernel: the host copies *h_abort (pinned, 1) over *d_abort
	 * (device memory, which kernels poll per work item) on a stream of its
	 * own.  Kernels never read host memory: a read across the bus per item
	 * would cost more than the item at low d.
	 */
	int		   *h_abort;
	int		   *d_abort;
	cudaStream_t abort_stream;
	bool		have_abort_stream;
	unsigned long long *h_bounds;
	TcPair	   *out;
	TcPair	   *ring;			/* RING_SLOTS x RING_CHUNK pinned pairs */
	bool		ring_cached;	/* the process's ring, held by this join */
};

#define CHECK(call) \
	do { \
		cudaError_t rc_ = (call); \
		if (rc_ != cudaSuccess) \
			return gpu_error(err, #call, rc_); \
	} while (0)

/* The CUDA call's name and message into err; returns TC_ERR_GPU. */
extern TcStatus gpu_error(TcError *err, const char *what, cudaError_t rc);
/* Device memory, counted against tcjoin.gpu_memory_limit; freed with the join. */
extern TcStatus dev_alloc(TcGpuJoin *g, void **ptr, size_t bytes, TcError *err);
extern void dev_free(TcGpuJoin *g, void *ptr);
/* Pinned host memory, freed with the join. */
extern TcStatus host_alloc(TcGpuJoin *g, void **ptr, size_t bytes, unsigned int flags,
						   TcError *err);
/* Ask running kernels to stop at their next work item. */
extern void request_abort(TcGpuJoin *g);
/* Wait for a stream or an event, polling the sink about every millisecond. */
extern TcStatus wait_stream(TcGpuJoin *g, cudaStream_t s, const TcSink *sink, TcError *err);
extern TcStatus wait_event(TcGpuJoin *g, cudaEvent_t ev, const TcSink *sink, TcError *err);
/* Hand pairs (in TcPair layout) to the sink. */
extern TcStatus emit_pairs(const TcPair *pairs, size_t count, const TcSink *sink,
						   TcJoinStats *stats);
/* The pinned ring: the process's cached one when free, else the join's. */
extern TcStatus get_ring(TcGpuJoin *g, TcError *err);
/* bytes of the caller's memory to the device through the ring; waits for them. */
extern TcStatus upload(TcGpuJoin *g, void *dst, const void *src, size_t bytes, cudaStream_t s,
					   const TcSink *sink, TcError *err);
/* A finished batch's count pairs through the ring to the sink. */
extern TcStatus drain(TcGpuJoin *g, cudaStream_t s, const PairDev *d_pairs, unsigned int count,
					  const TcSink *sink, TcJoinStats *stats, TcError *err);
/*
 * A GPU join's start: its resources (*handle set first, so the caller can
 * always free them), the GPU, streams, the abort flag, and the (i, i, 0)
 * pairs of include_self.
 */
extern TcStatus gpu_join_begin(TcGpuJoin **handle, const TcPoints *a,
							   const TcJoinParams *params, const TcSink *sink,
							   TcJoinStats *stats, TcError *err);

/*
 * Work units [0, n) in batches through the two result buffers, one per
 * stream.  next(lo, rate, &bound) picks a batch [lo, hi) and the bound on
 * its pairs; launch(cur, lo, hi) enqueues it on g->stream[cur]: the kernel
 * between g->kev[cur][0] and [1] (and, with g->kev_recheck, its exact
 * recheck from [2]), writing d_pairs[cur], then its pair count and
 * overflow flag copied to h_meta[cur][0] and [1].  While the GPU computes,
 * the host drains a finished batch to the sink; a batch that overflows is
 * dropped and rerun smaller, so no pair is lost.  rate: pairs per unit of
 * bound seen so far, which sizes the next batch; where a batch also fills a
 * buffer of candidates, h_meta[cur][rate_slot] is their count and the rate
 * follows the larger.
 *
 * depth: batches on the GPU at once.  With 2 (brute force), the next batch
 * is launched before the last one ends, on the other stream, so that one
 * batch's recheck runs beside the next one's tensor-core kernel (a
 * memory-bound kernel beside a compute-bound one).  Batches end in launch
 * order; when one overflows, the one after it (already running, on a range
 * sized before the overflow was known) is waited for and dropped too, and
 * both ranges are done again from the first one's start: nothing past that
 * start has reached the sink.  A second batch is launched only once a batch
 * has given the rate.
 *
 * kept(s): called once for each batch whose pairs go to the sink (not for
 * one dropped and rerun), so that counts read from it are counted once.
 */
struct NoKept
{
	void		operator() (int) const
	{
	}
};

template <typename Next, typename Launch, typename Kept = NoKept>
TcStatus
run_batches(TcGpuJoin *g, unsigned long long n, PairDev *const *d_pairs,
			unsigned int *const *h_meta, double &rate, Next next, Launch launch,
			const char *unit, const TcSink *sink, TcJoinStats *stats, TcError *err,
			int rate_slot = 0, int depth = 1, Kept kept = Kept())
{
	unsigned long long lo = 0;
	unsigned long long over_lo = 0,
				over_hi = 0;	/* the last batch that overflowed */
	unsigned long long r_lo[2] = {0, 0},
				r_hi[2] = {0, 0};
	double		r_bound[2] = {0, 0};
	int			fly[2] = {-1, -1};	/* the slots in flight, oldest first */
	int			nfly = 0,
				pending = -1;	/* a finished batch whose pairs await the sink */
	bool		rate_seen = false;
	TcStatus	st;

	/* TCJOIN_TRACE: each batch's times on stderr, for measuring */
	const bool	trace = getenv("TCJOIN_TRACE") != NULL;
	const double h_base = tc_now();

	/*
	 * One launched batch's end: the host waits for it and adds its kernel
	 * time.  With two batches on the GPU their spans overlap, so the
	 * kernels' time is the union of the spans (times from an event recorded
	 * before the first), and the recheck's time leaves out what another
	 * batch's tensor-core kernel ran beside: it is the time the recheck
	 * adds.  At depth 1 both are plain sums.
	 */
	double		prev[3] = {0, 0, 0};	/* the last finished batch's start, recheck, end */
	double		busy = 0;		/* the spans' union ends here */
	bool		have_prev = false;
	auto		overlap = [] (double a0, double a1, double b0, double b1) {
		return std::max(0.0, std::min(a1, b1) - std::max(a0, b0));
	};
	auto		finish = [&] (int s) -> TcStatus {
		double		tw = tc_now();
		float		ms[3] = {0, 0, 0};
		TcStatus	s2;

		if ((s2 = wait_stream(g, g->stream[s], sink, err)) != TC_OK)
			return s2;
		stats->gpu_wait_seconds += tc_now() - tw;
		CHECK(cudaEventElapsedTime(&ms[0], g->kev_base, g->kev[s][0]));
		CHECK(cudaEventElapsedTime(&ms[2], g->kev_base, g->kev[s][1]));
		ms[1] = ms[2];
		if (g->kev_recheck)
			CHECK(cudaEventElapsedTime(&ms[1], g->kev_base, g->kev[s][2]));

		const double t0 = ms[0] / 1e3,
					tm = ms[1] / 1e3,
					t1 = ms[2] / 1e3;

		stats->gpu_kernel_seconds += std::max(0.0, t1 - std::max(t0, have_prev ? busy : t0));
		busy = have_prev ? std::max(busy, t1) : t1;
		if (g->kev_recheck)
		{
			stats->gpu_recheck_seconds += t1 - tm;
			if (have_prev)
				stats->gpu_recheck_seconds -= overlap(tm, t1, prev[0], prev[1]) +
					overlap(prev[1], prev[2], t0, tm);
		}
		prev[0] = t0;
		prev[1] = tm;
		prev[2] = t1;
		have_prev = true;
		if (trace)
			fprintf(stderr, "tcjoin trace: %s batch [%llu, %llu) stream %d: gpu %.3f-%.3f ms (recheck from %.3f), "
					"host sees it %.3f ms, %u pairs, %u candidates%s\n", unit, r_lo[s], r_hi[s], s,
					t0 * 1e3, t1 * 1e3, tm * 1e3, (tc_now() - h_base) * 1e3, h_meta[s][0],
					rate_slot > 0 ? h_meta[s][rate_slot] : 0, h_meta[s][1] ? " (overflow)" : "");
		return TC_OK;
	};
	/* the oldest batch in flight, taken off the list */
	auto		pop = [&] () {
		const int	s = fly[0];

		fly[0] = fly[1];
		nfly--;
		return s;
	};

	CHECK(cudaEventRecord(g->kev_base, g->stream[0]));
	depth = depth < 1 ? 1 : depth > 2 ? 2 : depth;
	for (;;)
	{
		/* Launch into free slots: not in flight, not waiting for the sink. */
		while (nfly < depth && lo < n && (nfly == 0 || rate_seen))
		{
			int			s = -1;

			for (int c = 0; c < 2 && s < 0; c++)
				if (c != pending && (nfly == 0 || fly[0] != c))
					s = c;
			if (s < 0)
				break;
			r_lo[s] = lo;
			r_hi[s] = next(lo, rate, &r_bound[s]);
			if ((st = launch(s, r_lo[s], r_hi[s])) != TC_OK)
				return st;
			stats->gpu_batches++;
			fly[nfly++] = s;
			lo = r_hi[s];
		}
		if (pending >= 0)
		{
			/* A finished batch's pairs, while the GPU computes the next. */
			double		td = tc_now();

			if ((st = drain(g, g->stream[pending], d_pairs[pending], h_meta[pending][0],
							sink, stats, err)) != TC_OK)
				return st;
			stats->gpu_drain_seconds += tc_now() - td;
			if (trace)
				fprintf(stderr, "tcjoin trace: drain of %u pairs, host %.3f-%.3f ms\n", h_meta[pending][0],
						(td - h_base) * 1e3, (tc_now() - h_base) * 1e3);
			pending = -1;
			continue;			/* its slot is free: launch into it first */
		}
		if (nfly == 0)
			break;

		const int	s = pop();

		if ((st = finish(s)) != TC_OK)
			return st;
		if (h_meta[s][1] != 0)
		{
			/*
			 * Overflow: rerun fewer units; the rate was too low.  A batch
			 * of one unit, or the same range overflowing again with the
			 * rate already at its top (next() can make it no smaller): a
			 * rerun cannot help.  Below the top the same range may come
			 * again (next() capped it by its own limit, not the rate) and
			 * shrinks once the rate has grown past that cap.
			 */
			const bool	top = rate >= 1.0;

			rate = rate * 4 < 1.0 ? rate * 4 : 1.0;
			if (r_hi[s] - r_lo[s] == 1 || (top && r_lo[s] == over_lo && r_hi[s] == over_hi))
			{
				err->status = TC_ERR_INTERNAL;
				snprintf(err->message, sizeof(err->message),
						 "a GPU %s overflowed its result buffer", unit);
				return TC_ERR_INTERNAL;
			}
			over_lo = r_lo[s];
			over_hi = r_hi[s];
			stats->gpu_reruns++;
			/* the batch after it is dropped: its range comes again */
			while (nfly > 0)
			{
				if ((st = finish(pop())) != TC_OK)
					return st;
				stats->gpu_reruns++;
			}
			lo = r_lo[s];
			continue;
		}
		if (r_bound[s] > 0)
			rate = std::min(1.0, std::max(1e-7, 1.5 * std::max(h_meta[s][0], h_meta[s][rate_slot]) /
										  r_bound[s]));
		rate_seen = true;
		kept(s);
		pending = s;
	}
	return TC_OK;
}

#endif							/* TCJOIN_GPU_JOIN_H */
