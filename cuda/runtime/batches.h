/*
 * batches.h
 *		The batch loop both GPU joins run: work units in batches through two
 *		result buffers, the host draining one while the GPU fills the other,
 *		a batch that overflowed rerun smaller.
 */
#ifndef TCJOIN_BATCHES_H
#define TCJOIN_BATCHES_H

#include "join_state.h"

/*
 * Work units [0, n) in batches through the two result buffers, one per
 * stream.  next(lo, rate, &bound) picks a batch [lo, hi) and the bound on
 * its pairs; launch(cur, lo, hi) enqueues it on g->stream[cur]: the kernel
 * between g->kev[cur][0] and [1] (and, with g->kev_recheck, its exact
 * recheck from [2]), writing d_pairs[cur], then its pair count and
 * overflow flag copied to h_meta[cur][0] and [1].  One batch is on the GPU
 * at a time; while it computes, the host drains the one before it to the
 * sink.  A batch that overflows is dropped and rerun smaller, so no pair is
 * lost.  rate: pairs per unit of bound seen so far, which sizes the next
 * batch; where a batch also fills a buffer of candidates,
 * h_meta[cur][rate_slot] is their count and the rate follows the larger.
 *
 * kept(s): called once for each batch whose pairs go to the sink (not for
 * one dropped and rerun), so that counts read from it are counted once.
 *
 * queue: RUN_ALONE, every unit here; RUN_SHARED, the units come from the
 * GPUs' queue (g->share), a batch at a time, so that a GPU that runs ahead
 * takes more; k >= 0, the same from band k of the queue (claim_band_units,
 * opened by the caller).  A batch that overflows is rerun in parts by the
 * GPU that took it.
 */
constexpr long long RUN_ALONE = -2;
constexpr long long RUN_SHARED = -1;

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
			int rate_slot = 0, Kept kept = Kept(), long long queue = RUN_ALONE)
{
	GpuShare   *share = queue != RUN_ALONE ? g->share : NULL;
	unsigned long long lo = 0;
	unsigned long long end = share ? 0 : n;	/* the units this GPU has taken */
	unsigned long long over_lo = 0,
				over_hi = 0;	/* the last batch that overflowed */
	unsigned long long r_lo[2] = {0, 0},
				r_hi[2] = {0, 0};
	double		r_bound[2] = {0, 0};
	int			pending = -1;	/* a finished batch whose pairs await the sink */
	TcStatus	st;

	/* each batch's times on stderr, for measuring (the trace override) */
	const bool	trace = g->ov.trace;
	const double h_base = tc_now();

	CHECK(cudaEventRecord(g->kev_base, g->stream[0]));
	for (;;)
	{
		int			s = -1;

		/* The next batch, into the buffer the sink is not waiting on. */
		if (lo >= end && share != NULL)
		{
			double		b;

			auto		upto = [&] (unsigned long long c) { return next(c, rate, &b); };

			if (!(queue >= 0 ? claim_band_units(share, (unsigned long long) queue, n, upto, &lo, &end) :
				  claim_units(share, n, upto, &lo, &end)))
				lo = end = n;
		}
		if (lo < end)
		{
			s = pending == 0 ? 1 : 0;
			r_lo[s] = lo;
			r_hi[s] = std::min(end, next(lo, rate, &r_bound[s]));
			if ((st = launch(s, r_lo[s], r_hi[s])) != TC_OK)
				return st;
			stats->gpu_batches++;
			lo = r_hi[s];
		}
		if (pending >= 0)
		{
			/* The finished batch's pairs, while the GPU computes the next. */
			double		td = tc_now();

			if ((st = drain(g, g->stream[pending], d_pairs[pending], h_meta[pending][0],
							sink, stats, err)) != TC_OK)
				return st;
			stats->gpu_drain_seconds += tc_now() - td;
			if (trace)
				fprintf(stderr, "tcjoin trace: drain of %u pairs, host %.3f-%.3f ms\n", h_meta[pending][0],
						(td - h_base) * 1e3, (tc_now() - h_base) * 1e3);
			pending = -1;
		}
		if (s < 0)
			break;

		/*
		 * The batch's end: the host waits for it, then adds its kernel's
		 * span and (with a recheck) the recheck's part of it.  The batch
		 * was launched after the one before it ended, so spans never
		 * overlap and plain sums are the GPU's busy time.
		 */
		double		tw = tc_now();
		float		ms[3] = {0, 0, 0};

		if ((st = wait_stream(g, g->stream[s], sink, err)) != TC_OK)
			return st;
		stats->gpu_wait_seconds += tc_now() - tw;
		CHECK(cudaEventElapsedTime(&ms[0], g->kev_base, g->kev[s][0]));
		CHECK(cudaEventElapsedTime(&ms[2], g->kev_base, g->kev[s][1]));
		ms[1] = ms[2];
		if (g->kev_recheck)
			CHECK(cudaEventElapsedTime(&ms[1], g->kev_base, g->kev[s][2]));

		const double t0 = ms[0] / 1e3,
					tm = ms[1] / 1e3,
					t1 = ms[2] / 1e3;

		stats->gpu_kernel_seconds += std::max(0.0, t1 - t0);
		if (g->kev_recheck)
			stats->gpu_recheck_seconds += t1 - tm;
		if (trace)
			fprintf(stderr, "tcjoin trace: %s batch [%llu, %llu) stream %d: gpu %.3f-%.3f ms (recheck from %.3f), "
					"host sees it %.3f ms, %u pairs, %u candidates%s\n", unit, r_lo[s], r_hi[s], s,
					t0 * 1e3, t1 * 1e3, tm * 1e3, (tc_now() - h_base) * 1e3, h_meta[s][0],
					rate_slot > 0 ? h_meta[s][rate_slot] : 0, h_meta[s][1] ? " (overflow)" : "");

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
			lo = r_lo[s];
			continue;
		}
		if (r_bound[s] > 0)
			rate = std::min(1.0, std::max(1e-7, 1.5 * std::max(h_meta[s][0], h_meta[s][rate_slot]) /
										  r_bound[s]));
		kept(s);
		pending = s;
	}
	return TC_OK;
}

#endif							/* TCJOIN_BATCHES_H */
