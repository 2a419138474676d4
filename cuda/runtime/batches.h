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
 * overflow flag copied to h_meta[cur][0] and [1].  While the GPU computes,
 * the host drains a finished batch to the sink; a batch that overflows is
 * dropped and rerun smaller, so no pair is lost.  rate: pairs per unit of
 * bound seen so far, which sizes the next batch; where a batch also fills a
 * buffer of candidates, h_meta[cur][rate_slot] is their count and the rate
 * follows the larger.
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
			int rate_slot = 0, Kept kept = Kept())
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

	/* each batch's times on stderr, for measuring (the trace override) */
	const bool	trace = g->ov.trace;
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
	const int	depth = 1;		/* batches on the GPU at once */
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

#endif							/* TCJOIN_BATCHES_H */
