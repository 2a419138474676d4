/*
 * brute_join.cu
 *		Exact brute-force self-join on FP16 tensor cores (FaSTED's scheme,
 *		made exact and symmetric): the host's run of one join.
 *
 * Preparation, on the device (prepare.cu, order.cu): the points' centre
 * and power-of-two scale, their order by recursive bisection so that each
 * 128-point tile is compact, each tile's centre and radius, and per point
 * its FP16 coordinates and the filter's values q and rc (fp16_filter.h).
 *
 * The join: 128 x 128 tiles of point pairs, only those on or above the
 * diagonal (each unordered pair once) that pruning kept (prune.cu), listed
 * in 16 x 16 squares of tiles for L2 reuse.  On Hopper (sm_90a) a producer
 * warp loads 64-dimension slices by TMA and two consumer warpgroups run
 * wgmma on one tile against two, in clusters of two blocks that share
 * those two by TMA multicast (tile_sm90.cu); elsewhere four warps run
 * mma.sync m16n8k16 with ldmatrix fragments on cp.async-staged tiles
 * (tile_sm80.cu).  The epilogue drops every pair that tc_f16_drop proves
 * to lie beyond eps and lists the rest as candidates; the recheck
 * (recheck.cu) decides them with the contract's exact float8 sum on the
 * input coordinates, which also gives dist.  Pairs are staged per warp and
 * appended with one atomic per stage into a bounded buffer, and a batch of
 * tiles that overflows its candidate or pair buffer is rerun smaller
 * (batches.h), so no pair is lost.  config.cu makes the join's choices.
 *
 * exact => false (FaSTED's semantics): the FP16-32 product decides, and
 * dist comes from an FP32 dot of the FP16 rows; nothing is rechecked.
 */
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "batches.h"
#include "brute_run.h"
#include "distance.h"

/* Device memory of the tile-pair list for a set of ntiles tiles (a band's). */
static size_t
list_need(unsigned long long ntiles)
{
	unsigned long long nsq = (ntiles + PRUNE_SQ - 1) / PRUNE_SQ;
	unsigned long long sq = std::min(nsq * (nsq + 1) / 2,
									 std::max(1ull, BAND_PAIRS / (PRUNE_SQ * PRUNE_SQ)));

	/* the list's entries, and per warp of prune_kernel three words and the scan's scratch */
	return (sizeof(unsigned long long) * WARP + 4 * sizeof(unsigned int)) * sq * PRUNE_SQ * PRUNE_SQ / WARP;
}

/* Device memory of two streams' result buffers of c pairs, with their candidates. */
static size_t
cap_need(unsigned int c)
{
	return (size_t) c * 2 * (sizeof(PairDev) + sizeof(uint2));
}


/* The input's checks; *done where there is nothing to join. */
TcStatus
BruteRun::check(bool *done)
{
	*done = false;
	stats->method = "brute";
	stats->tensor_cores = true;
	if (a->n + (b ? b->n : 0) > TC_GPU_BRUTE_MAX_N)
	{
		/* cub's sorts count items in an int; a join of two sets holds both */
		err->status = TC_ERR_INVALID;
		snprintf(err->message, sizeof(err->message),
				 "FP16 brute force on the GPU takes at most %d points", INT_MAX - BT);
		return TC_ERR_INVALID;
	}
	na = (unsigned int) a->n;
	nb = b ? (unsigned int) b->n : 0;
	n = na + nb;
	stats->gpu_blocks = 1;
	if (b ? na == 0 || nb == 0 : n < 2)
	{
		stats->index_seconds = tc_now() - t0;
		*done = true;
		return TC_OK;
	}
	CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, g->device));
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g->device));
	if (major < 8)
	{
		err->status = TC_ERR_INVALID;
		snprintf(err->message, sizeof(err->message),
				 "FP16 tensor cores need a GPU of compute capability 8.0 or higher");
		return TC_ERR_INVALID;
	}
	/* two sets: each set's rows start a tile */
	npad = b ? (na + BT - 1) / BT * BT + (nb + BT - 1) / BT * BT : (n + BT - 1) / BT * BT;
	memset(&bd, 0, sizeof(bd));
	bd.d = d;
	bd.thr = thr;
	bd.approx = !params->exact;
	bd.split_row = UINT_MAX;	/* one set: positions map to the caller's rows as they are */
	set_metric();
	return TC_OK;
}

/*
 * The metric's plan: Euclidean, the filter at the contract's threshold;
 * cosine, the Euclidean filter of the unit vectors at tc_cosine_unit_eps
 * (exact => false: at 2 eps, as 1 - cos is half their squared distance);
 * the inner product, its own q (fp16_filter.h), and no tile pruning (tile
 * balls bound distances, not dot products).  bd.thr is the recheck's
 * threshold: the squared Euclidean one, or eps.
 */
void
BruteRun::set_metric(void)
{
	bd.metric = params->metric;
	plan_thr = thr;
	if (params->metric == TC_METRIC_COSINE)
	{
		double		eg = tc_cosine_unit_eps(params->eps, d);

		plan_thr = bd.approx ? 2.0 * params->eps : tc_f16_cosine_thr(eg);
		bd.thr = params->eps;
	}
	else if (params->metric == TC_METRIC_INNER_PRODUCT)
	{
		plan_thr = 0.0;
		bd.thr = params->eps;
	}
}

/* Cosine: a zero vector (the first, by index) stops the join as the CPU's does. */
TcStatus
BruteRun::zero_rows(void)
{
	unsigned long long first = ULLONG_MAX;
	TcStatus	st;

	CHECK(cudaMemcpyAsync(&first, d_zero, sizeof(first), cudaMemcpyDeviceToHost, g->stream[0]));
	if ((st = gpu_sync(g, g->stream[0], err)) != TC_OK)
		return st;
	if (first == ULLONG_MAX)
		return TC_OK;
	err->status = TC_ERR_INVALID;
	err->point_set = first >= ZERO_IN_B ? 1 : 0;
	err->point = (int64_t) (first >= ZERO_IN_B ? first - ZERO_IN_B : first);
	snprintf(err->message, sizeof(err->message),
			 "a zero vector has no cosine distance (point %lld of set %c)", (long long) err->point,
			 err->point_set ? 'b' : 'a');
	return TC_ERR_INVALID;
}

/*
 * Device memory: per point its coordinates, FP16 row (at most d + 80
 * halves), order, q, rc and the ordering's scratch; per tile pair of a
 * band the list; the result buffers.  Where the whole set does not fit
 * (tcjoin.gpu_memory_limit, or the device's free memory), the points go in
 * blocks of B (a power of two of tiles): block pairs I <= J are joined in
 * turn, both on the device, block J after I's rows, each ordered within
 * itself, and only tile pairs across the two are joined when I < J.  The
 * centre and the scale are the whole set's (brute_make_plan).  Sets B and
 * capacity.
 */
TcStatus
BruteRun::plan_memory(void)
{
	const size_t per_pt = rowbytes + 2 * ((size_t) d + 80) + 64 + ((size_t) d * 4 + BT - 1) / BT +
		(bd.metric == TC_METRIC_COSINE ? 2 * sizeof(double) : 0);
	size_t		avail;

	B = 0;
	capacity = BRUTE_CAPACITY;
	if (params->gpu_result_pairs > 0)
		capacity = (unsigned int) std::min((size_t) capacity, params->gpu_result_pairs);
	capacity = std::max(capacity, (unsigned int) BRUTE_MIN_CAPACITY);
	{
		size_t		free_b = 0,
					total_b = 0;

		CHECK(cudaMemGetInfo(&free_b, &total_b));
		avail = free_b / 10 * 9;
		if (g->limit > 0)
			avail = std::min(avail, g->limit > g->used ? g->limit - g->used : 0);
	}
	unsigned int c = capacity;
	bool		stream = (size_t) npad * per_pt + list_need(npad / BT) + cap_need(BRUTE_MIN_CAPACITY) > avail;

	while (c > BRUTE_MIN_CAPACITY && cap_need(c) > avail / 4)
		c = std::max(c / 2, (unsigned int) BRUTE_MIN_CAPACITY);
	if (stream)
	{
		for (unsigned int b = BT; (unsigned long long) b * 2 < npad; b *= 2)
			if ((size_t) 2 * b * per_pt + list_need(2ull * b / BT) + cap_need(c) <= avail)
				B = b;
		/* else too small even for two tiles: the allocations below say so */
	}
	if (g->share != NULL)
	{
		/*
		 * Several GPUs stream alike or not at all, in the blocks of the one
		 * with the least room (the blocks number their units); where one
		 * has no room even for two tiles (1), none streams and its
		 * allocations fail the join.
		 */
		unsigned long long v = !stream ? ULLONG_MAX : B > 0 ? B : 1;
		TcStatus	st;

		if ((st = share_agree_min(g, &v)) != TC_OK)
			return st;
		B = v == ULLONG_MAX || v == 1 ? 0 : (unsigned int) v;
	}
	if (B > 0)
		capacity = c;
	return TC_OK;
}

/*
 * The workspace for the points (all, or two blocks), the plan from all of
 * them, and, when they fit, the one set prepared.
 */
TcStatus
BruteRun::plan_and_place(void)
{
	const unsigned int ws_rows = B > 0 ? 2 * B : npad;
	unsigned int plan_rows = n;
	TcStatus	st;

	nblocks = B > 0 ? (int) ((n + B - 1) / B) : 1;
	nblk_a = 1;
	placed_a = -1;
	if (b && B > 0)
	{
		nblk_a = (int) ((na + B - 1) / B);
		nblocks = nblk_a + (int) ((nb + B - 1) / B);
	}
	stats->gpu_blocks = nblocks;
	if ((st = dev_alloc(g, &d_x, rowbytes * ws_rows, err)) != TC_OK)
		return st;
	bd.x = d_x;
	if (bd.metric == TC_METRIC_COSINE)
	{
		if ((st = dev_alloc(g, (void **) &d_norm, sizeof(double) * ws_rows, err)) != TC_OK ||
			(st = dev_alloc(g, (void **) &d_root, sizeof(double) * ws_rows, err)) != TC_OK ||
			(st = dev_alloc(g, (void **) &d_zero, sizeof(*d_zero), err)) != TC_OK)
			return st;
		CHECK(cudaMemsetAsync(d_zero, 0xFF, sizeof(*d_zero), g->stream[0]));
		bd.norm = d_norm;
		bd.root = d_root;
	}
	if (B == 0 && b == NULL)
	{
		unsigned int rows;

		/* The caller's coordinates stay on the device for the exact check. */
		if ((st = fetch_to(0, 0, &rows)) != TC_OK)
			return st;
	}
	else if (B == 0)
	{
		unsigned int sa,
					rb;

		/* both sets, a's last tile filled with copies: the centre is theirs, any centre holds */
		if ((st = place_two(0, 0, &sa, &rb)) != TC_OK)
			return st;
		plan_rows = sa + rb;
	}
	if ((st = brute_make_plan(g, a->type, plan_rows, d, nblocks, brute_fetch_block, this, plan_thr,
							  params->eps, bd, plan, &d_c, err)) != TC_OK)
		return st;
	t_planned = tc_now();
	/* every row has been on the device once: a zero vector stops the join before any pair */
	if (bd.metric == TC_METRIC_COSINE && (st = zero_rows()) != TC_OK)
		return st;
	stats->filter = bd.approx ? "fp16 tensor cores, approximate" : "fp16 tensor cores";
	/*
	 * What fits is prepared in the index phase, the self-join's set or the
	 * two sets: ordered and allocated here, finished once the join's other
	 * buffers are (run).
	 */
	if (B == 0 && b == NULL && (st = prepare_set(n, 0, 0, true)) != TC_OK)
		return st;
	if (B == 0 && b != NULL && (st = prepare_set(plan_rows, 0, (na + BT - 1) / BT * BT, true)) != TC_OK)
		return st;
	return TC_OK;
}

/*
 * The rows at bd.x prepared as the set to join (seg0, part: brute_prepare's);
 * defer: brute_prepare_finish left to run().
 */
TcStatus
BruteRun::prepare_set(unsigned int rows, unsigned int seg0, unsigned int part, bool defer)
{
	unsigned int np = (rows + BT - 1) / BT * BT;
	/* every GPU holds the whole set(s): they share the ordering */
	const bool	share = B == 0 && g->share != NULL && g->share->ngpus > 1;
	TcStatus	st;

	if ((st = brute_prepare(g, a->type, rows, d, plan, d_c, seg0, part, share, bd, np, &d_cen, &d_rad,
							&prepared, stats, err)) != TC_OK)
		return st;
	prepare_pending = defer;
	return defer ? TC_OK : brute_prepare_finish(g, prepared, bd, err);
}

/* Result buffers, counters, the ring. */
TcStatus
BruteRun::alloc_results(void)
{
	const unsigned long long nsq_max = (nt_max + PRUNE_SQ - 1) / PRUNE_SQ;
	TcStatus	st;

	band_sq = std::min(nsq_max * (nsq_max + 1) / 2, std::max(1ull, BAND_PAIRS / (PRUNE_SQ * PRUNE_SQ)));
	if (g->ov.band_squares > 0)
		band_sq = std::min(band_sq, (unsigned long long) g->ov.band_squares);	/* tests: many bands */
	if (B == 0 && g->limit > 0)
	{
		/* two streams' pair and candidate buffers, and the tile-pair list (and their pieces' alignment) */
		const size_t other = list_need(nt_max) + (16 << 10);
		size_t		room = g->limit > g->used + other ? g->limit - g->used - other : 0;

		while (capacity > BRUTE_MIN_CAPACITY && cap_need(capacity) > room)
			capacity = std::max(capacity / 2, (unsigned int) BRUTE_MIN_CAPACITY);
	}
	{
		void	  **const parts[] = {(void **) &d_pairs[0], (void **) &d_pairs[1], (void **) &d_cand[0],
			(void **) &d_cand[1], (void **) &d_meta[0], (void **) &d_meta[1], (void **) &d_cnt};
		const size_t sizes[] = {sizeof(PairDev) * capacity, sizeof(PairDev) * capacity,
			sizeof(uint2) * capacity, sizeof(uint2) * capacity, sizeof(unsigned int) * 3,
		sizeof(unsigned int) * 3, sizeof(*d_cnt) * 6};

		if ((st = dev_alloc_parts(g, 7, parts, sizes, err)) != TC_OK || (st = get_ring(g, err)) != TC_OK)
			return st;
	}
	/* the counters' pinned words: the ring's, no pinned allocation a join */
	h_meta[0] = (unsigned int *) g->ring_words;
	h_meta[1] = h_meta[0] + 4;
	h_cnt = (unsigned long long *) g->ring_words + 4;
	return TC_OK;
}

/* The tile-pair list of a band, and per warp of prune_kernel its ballot, count and offset. */
TcStatus
BruteRun::alloc_list(void)
{
	const size_t list_bytes = sizeof(*pb.list) * band_sq * PRUNE_SQ * PRUNE_SQ;
	const int	band_warps = (int) (band_sq * PRUNE_SQ * PRUNE_SQ / WARP);
	TcStatus	st;

	pb.scan = NULL;
	pb.scan_bytes = 0;
	if ((st = brute_prune_scan_bytes(band_warps, g->stream[0], &pb.scan_bytes, err)) != TC_OK)
		return st;
	{
		void	  **const parts[] = {(void **) &pb.list, (void **) &pb.nlist, (void **) &pb.mask,
			(void **) &pb.count, (void **) &pb.offset, &pb.scan};
		const size_t sizes[] = {list_bytes, sizeof(*pb.nlist) * 2, sizeof(unsigned int) * band_warps,
			sizeof(unsigned int) * band_warps, sizeof(unsigned int) * band_warps,
		std::max(pb.scan_bytes, (size_t) 16)};

		return dev_alloc_parts(g, 6, parts, sizes, err);
	}
}

/*
 * The grouping's buffers, last: only from what the list and the result
 * buffers left.  Where they do not fit, or an allocation fails, the
 * candidates stay as they came (cfg.group false).
 */
TcStatus
BruteRun::alloc_grouping(void)
{
	const size_t need = 2 * (sizeof(uint2) * capacity + sizeof(unsigned int) * 2 * nt_max * BT);
	size_t		free_b = 0,
				total_b = 0;
	TcStatus	st;

	if ((st = brute_group_scan_bytes((int) (nt_max * BT), g->stream[0], &gscan_bytes, err)) != TC_OK)
		return st;
	CHECK(cudaMemGetInfo(&free_b, &total_b));
	cfg.group = g->limit > 0 ? g->used + need + 2 * gscan_bytes + (64 << 10) <= g->limit :
		need + 2 * gscan_bytes + (256 << 20) <= free_b;
	if (cfg.group)
	{
		void	  **const parts[] = {(void **) &d_grouped[0], (void **) &d_grouped[1], (void **) &d_group[0],
			(void **) &d_group[1], &d_gscan[0], &d_gscan[1]};
		const size_t sizes[] = {sizeof(uint2) * capacity, sizeof(uint2) * capacity,
			sizeof(unsigned int) * 2 * nt_max * BT, sizeof(unsigned int) * 2 * nt_max * BT,
		std::max(gscan_bytes, (size_t) 16), std::max(gscan_bytes, (size_t) 16)};

		/* one allocation: it fails whole, leaving nothing to free */
		cfg.group = dev_alloc_parts(g, 6, parts, sizes, NULL) == TC_OK;
	}
	return TC_OK;
}

/*
 * The join of the set prepared in bd: every tile pair of its triangle, or
 * with split > 0 those across tile split (bi < split <= bj), a band of at
 * most band_sq squares at a time: a list of at most BAND_PAIRS tile pairs.
 * shared (several GPUs, each with the whole set prepared alike): every GPU
 * lists each band alike and takes its batches of list entries from the
 * GPUs' queue, band after band (claim_band_units), so that no GPU waits
 * at a band's end and only the last band's batches are cut short for the
 * GPUs to finish together.
 */
TcStatus
BruteRun::join_set(unsigned int split, bool shared)
{
	GpuShare   *sh = shared ? g->share : NULL;
	const unsigned long long nt = bd.ntiles;
	const unsigned long long nsq = (nt + PRUNE_SQ - 1) / PRUNE_SQ;
	unsigned long long nsq_all = nsq * (nsq + 1) / 2;
	TcStatus	st;

	if (split > 0)
	{
		unsigned long long R,
					C0,
					W;

		/* only the squares across the split: a small set against a large one is a thin strip */
		split_squares(nt, split, &R, &C0, &W);
		nsq_all = R * W;
	}

	/* the encoder worked on the probe's map; a set's own failing would be a bug */
	if (cfg.wgmma && !brute_make_tmap(&tmap, bd.h, bd.ntiles * BT, bd.dpad, bd.hpitch))
	{
		err->status = TC_ERR_INTERNAL;
		snprintf(err->message, sizeof(err->message), "could not encode a TMA descriptor");
		return TC_ERR_INTERNAL;
	}
	if (sh != NULL)
	{
		/* entries number the same tile pairs on every GPU only in one list mode */
		int			mode = -1;

		if (!sh->list_mode.compare_exchange_strong(mode, (int) cfg.list_mode) && mode != (int) cfg.list_mode)
		{
			err->status = TC_ERR_INTERNAL;
			snprintf(err->message, sizeof(err->message),
					 "the GPUs of one join list their tile pairs in different modes");
			return TC_ERR_INTERNAL;
		}
	}
	/* the triangle's tile pairs, once for the GPUs that share it */
	if (sh == NULL || g->share_index == 0)
		stats->gpu_tile_pairs += split > 0 ? (unsigned long long) split * (nt - split) : nt * (nt + 1) / 2;

	guide_squares = sh != NULL ? nsq_all : 0;
	for (unsigned long long k = 0; k * band_sq < nsq_all; k++)
	{
		/* a band the other GPUs have already taken whole is passed over unlisted */
		const long long at = sh != NULL ? queue_band(sh) : 0;

		if (at > (long long) k)
		{
			k = (unsigned long long) at - 1;
			continue;
		}
		if ((st = join_band(k, k * band_sq, std::min(nsq_all, (k + 1) * band_sq), split, sh)) != TC_OK)
			return st;
	}
	return TC_OK;
}

/*
 * Several GPUs: this one's digest of what numbers the units (the order
 * of a set prepared whole, or the plan that orders every block pair), so
 * that the join can check the GPUs agree (multi.cu).
 */
TcStatus
BruteRun::record_digest(void)
{
	unsigned long long dg = 0,
				dp = 0;
	TcStatus	st;

	if (g->share == NULL)
		return TC_OK;
	if (B == 0 && (st = device_digest(g, bd.order, sizeof(*bd.order) * (size_t) bd.n, &dg,
									  err)) != TC_OK)
		return st;
	if ((st = device_digest(g, d_c, sizeof(double) * (size_t) d, &dp, err)) != TC_OK)
		return st;
	g->share->digest[g->share_index] = dg * 31 + dp + (unsigned long long) (plan.sigma * 1e3) +
		(unsigned long long) bd.ntiles + ((unsigned long long) B << 32);
	g->share->has_digest[g->share_index] = true;
	return TC_OK;
}

/*
 * Band k, squares [u0, u1): pruned into the list, then its entries in
 * batches, from the GPUs' queue where sh is set.
 */
TcStatus
BruteRun::join_band(unsigned long long k, unsigned long long u0, unsigned long long u1,
					unsigned int split, GpuShare *sh)
{
	unsigned long long nl[2] = {0, 0};	/* list entries, tile pairs kept */
	TcStatus	st;

	/* the inner product's tiles are not pruned (set_metric) */
	const double eps_hi = bd.metric == TC_METRIC_INNER_PRODUCT ? INFINITY : 2.0 * plan.e_half / plan.sigma;

	if ((st = brute_prune_band(g, pb, d_cen, d_rad, bd.d, bd.ntiles, eps_hi, u0, u1, split,
							   cfg.list_mode, nl, sink, err)) != TC_OK)
		return st;
	band_entries = nl[0];
	band_u0 = u0;
	band_u1 = u1;
	if (g->ov.trace)
		fprintf(stderr, "tcjoin trace: band of squares [%llu, %llu): %llu tile pairs kept in %llu list "
				"entries, pruned by %.3f ms into the join\n", u0, u1, nl[1], band_entries,
				(tc_now() - t1) * 1e3);
	/* the band's kept tile pairs, counted by the GPU that opens it */
	if (sh == NULL || open_band(sh, k))
		stats->gpu_tile_pairs_kept += nl[1];

	g->kev_recheck = true;
	st = run_batches(g, band_entries, d_pairs, h_meta, rate,
					 [this] (unsigned long long lo, double r, double *bound) { return next(lo, r, bound); },
					 [this] (int cur, unsigned long long lo, unsigned long long hi) { return launch(cur, lo, hi); },
					 "tile", sink, stats, err, 2, [this] (int cur) { kept(cur); },
					 sh != NULL ? (long long) k : RUN_ALONE);
	g->kev_recheck = false;
	return st;
}

/* A batch from entry lo: as many entries as should fit the buffer at the rate seen. */
unsigned long long
BruteRun::next(unsigned long long lo, double r, double *bound)
{
	const unsigned long long ntp = band_entries;
	double		per_tile = (double) BT * BT * cfg.entry_pairs;
	unsigned long long want = (unsigned long long) std::max(1.0,
															std::min(0.8 * capacity / (per_tile * r),
																	 BRUTE_BATCH_WORK / bd.dpad / per_tile));

	if (guide_squares > 0 && band_u1 > band_u0)
	{
		/*
		 * Several GPUs: at most a GPU's share of what is left, this band's
		 * entries and the later bands' by this one's density (guided
		 * scheduling): long batches first, short ones at the end, so that
		 * the GPUs finish together; none below a 16th of a GPU's share of
		 * the whole, as each batch's kernels cost a fixed part besides.
		 */
		const double per_sq = (double) ntp / (double) (band_u1 - band_u0);
		const double left = (double) (ntp - lo) + per_sq * (double) (guide_squares - band_u1);
		const double G = (double) g->share->ngpus;

		want = std::min(want, (unsigned long long) std::max(left / G,
															per_sq * (double) guide_squares / (16.0 * G)));
	}
	if (cfg.wgmma)
		want = std::max(2ull, want & ~1ull);	/* whole items, rounded down (up could pass the buffer) */

	unsigned long long hi = std::min(ntp, lo + want);

	/*
	 * The band's last batch goes to the sink only after the GPU is done
	 * with it (the others while the next one runs), so where it would carry
	 * over a million pairs by the rate seen, its last eighth becomes a
	 * batch of its own, which the GPU runs while the host drains this one:
	 * the last drain then hides behind a kernel.
	 */
	if (hi == ntp && lo > 0 && 2 * (hi - lo) >= want &&	/* not the eighth again */
		(double) (hi - lo) * per_tile * r / 1.5 > (double) (1 << 20))
	{
		unsigned long long tail = (hi - lo) / 8;

		if (cfg.wgmma)
			tail &= ~1ull;
		if (tail >= 2 && hi - tail > lo)
			hi -= tail;
	}
	*bound = (double) (hi - lo) * per_tile;
	return hi;
}

/* Entries [lo, hi) on stream cur: the tile kernel, the grouping, the recheck, the counts home. */
TcStatus
BruteRun::launch(int cur, unsigned long long lo, unsigned long long hi)
{
	BruteBatch	bb;
	cudaStream_t s = g->stream[cur];
	unsigned long long units = cfg.wgmma ? (hi - lo) / 2 : hi - lo;
	unsigned int blocks = cfg.clusters > 0 ?
		2 * (unsigned int) std::min((unsigned long long) cfg.clusters, units) :
		(unsigned int) std::min((unsigned long long) sms * cfg.per_sm, units);
	TcStatus	st;

	batch_entries[cur] = hi - lo;
	bb.list = pb.list;
	bb.lo = lo;
	bb.hi = hi;
	bb.queue = d_cnt + cur;
	bb.pairs = d_pairs[cur];
	bb.capacity = capacity;
	bb.count = d_meta[cur];
	bb.overflow = d_meta[cur] + 1;
	bb.ncand = d_meta[cur] + 2;
	bb.cand = d_cand[cur];
	bb.cand_capacity = capacity;
	bb.candidates = d_cnt + 2 + 2 * cur;
	bb.rechecked = d_cnt + 3 + 2 * cur;
	bb.abort = g->d_abort;
	CHECK(cudaMemsetAsync(d_meta[cur], 0, sizeof(unsigned int) * 3, s));
	CHECK(cudaMemsetAsync(d_cnt + cur, 0, sizeof(*d_cnt), s));
	CHECK(cudaMemsetAsync(d_cnt + 2 + 2 * cur, 0, sizeof(*d_cnt) * 2, s));
	CHECK(cudaEventRecord(g->kev[cur][0], s));
	st = cfg.wgmma ? brute_sm90_launch(cfg.clusters > 0, blocks, s, tmap, bd, bb, err) :
		brute_sm80_launch(blocks, s, bd, bb, err);
	if (st != TC_OK)
		return st;
	CHECK(cudaEventRecord(g->kev[cur][2], s));
	if (cfg.group)
	{
		if ((st = brute_group_candidates(sms, (int) (bd.ntiles * BT), s, bb, d_group[cur],
										 d_group[cur] + nt_max * BT, d_gscan[cur], gscan_bytes,
										 d_grouped[cur], err)) != TC_OK)
			return st;
		bb.cand = d_grouped[cur];
	}
	if ((st = brute_recheck_launch(cfg.recheck, a->type, cfg.recheck_grid, s, bd, bb, err)) != TC_OK)
		return st;
	CHECK(cudaEventRecord(g->kev[cur][1], s));
	CHECK(cudaMemcpyAsync(h_meta[cur], d_meta[cur], sizeof(unsigned int) * 3, cudaMemcpyDeviceToHost, s));
	CHECK(cudaMemcpyAsync(h_cnt + 2 * cur, d_cnt + 2 + 2 * cur, sizeof(*h_cnt) * 2,
						  cudaMemcpyDeviceToHost, s));
	return TC_OK;
}

/* A batch's counts, once: not those of a batch dropped and rerun. */
void
BruteRun::kept(int cur)
{
	stats->candidates += h_cnt[2 * cur];
	stats->gpu_work += batch_entries[cur];
	if (!bd.approx)				/* approximate: nothing rechecked */
		stats->rechecked += h_cnt[2 * cur + 1];
}

/* The join after the checks: memory, preparation, buffers, choices, then the sets. */
TcStatus
BruteRun::run(void)
{
	TcStatus	st;

	/* the trace's marks: placed and ordered, result buffers, configured, list and grouping, prepared */
	double		mark[5];

	if ((st = plan_memory()) != TC_OK || (st = plan_and_place()) != TC_OK)
		return st;
	mark[0] = tc_now();
	nt_max = B > 0 ? 2ull * B / BT : npad / BT;
	if ((st = alloc_results()) != TC_OK)
		return st;
	mark[1] = tc_now();
	if ((st = brute_configure(g, major, sms, a->type, rowbytes, B > 0, capacity, d_cnt, bd, &tmap,
							  &cfg, stats, err)) != TC_OK)
		return st;
	mark[2] = tc_now();
	/* Counters cleared (the probe used them) before either stream's first batch. */
	CHECK(cudaMemsetAsync(d_cnt, 0, sizeof(*d_cnt) * 6, g->stream[0]));
	CHECK(cudaStreamSynchronize(g->stream[0]));

	/*
	 * Pairs per tile pair, as a share of all, that the first batch is sized
	 * for.  batch_rate=R sets it, for tests: a tiny one makes the first
	 * batches overflow and be rerun.
	 */
	rate = g->ov.batch_rate > 0 ? std::max(1e-7, g->ov.batch_rate) : 1.0;	/* 0 would never grow */
	if ((st = alloc_list()) != TC_OK)
		return st;
	if (cfg.group && (st = alloc_grouping()) != TC_OK)
		return st;
	mark[3] = tc_now();
	if (prepare_pending && (st = brute_prepare_finish(g, prepared, bd, err)) != TC_OK)
		return st;
	prepare_pending = false;
	if ((st = record_digest()) != TC_OK)
		return st;
	mark[4] = tc_now();

	/*
	 * The join phase's clock starts with every buffer in place: allocating
	 * the list's and the grouping's is setup, as the result buffers' is,
	 * and counts in the index phase.
	 */
	stats->index_seconds = tc_now() - t0;
	t1 = tc_now();
	if (b != NULL)
	{
		if ((st = join_pairs_of_blocks()) != TC_OK)
			return st;
	}
	else if (B == 0)
	{
		if ((st = join_set(0, true)) != TC_OK)
			return st;
	}
	else if ((st = join_blocks()) != TC_OK)
		return st;
	stats->join_seconds = tc_now() - t1;
	if (g->ov.trace)
		fprintf(stderr, "tcjoin trace: join phase %.3f ms\n", stats->join_seconds * 1e3);
	/* where each GPU's time went, on the join's clock (several GPUs: the first one's start) */
	if (g->ov.trace)
	{
		const double base = g->share != NULL ? g->share->t0 : t0;

		fprintf(stderr, "tcjoin trace: GPU %d (entry %d), ms from the join's start: started %.1f, "
				"uploaded %.1f, planned %.1f, placed and ordered %.1f, result buffers %.1f, configured %.1f, "
				"list and grouping %.1f, prepared and digest %.1f, join phase %.1f to %.1f\n", g->device,
				g->share != NULL ? g->share_index : 0, (t0 - base) * 1e3, (t_uploaded - base) * 1e3,
				(t_planned - base) * 1e3, (mark[0] - base) * 1e3, (mark[1] - base) * 1e3,
				(mark[2] - base) * 1e3, (mark[3] - base) * 1e3, (mark[4] - base) * 1e3,
				(t1 - base) * 1e3, (tc_now() - base) * 1e3);
	}
	return TC_OK;
}

/* The join's points and threshold, for each GPU's run. */
struct BruteArgs
{
	const TcPoints *a;
	const TcPoints *b;
	double		thr;
};

/* The join on one GPU, alone or as one of several sharing it (GpuJoinOne). */
static TcStatus
brute_one(void *ctx, TcGpuJoin **handle, const TcJoinParams *params, const TcSink *sink,
		  TcJoinStats *stats, TcError *err, GpuShare *share, int index)
{
	const BruteArgs *args = (const BruteArgs *) ctx;
	BruteRun	run = {};
	TcStatus	st;
	bool		done;

	run.t0 = tc_now();
	if ((st = gpu_join_begin(handle, args->a, params, share, index, sink, stats, err)) != TC_OK)
		return st;
	if ((st = fold_begin(*handle, args->a->n, args->b != NULL, err)) != TC_OK)
		return st;
	run.g = *handle;
	run.a = args->a;
	run.b = args->b;
	run.params = params;
	run.thr = args->thr;
	run.sink = sink;
	run.stats = stats;
	run.err = err;
	run.d = args->a->d;
	run.rowbytes = (size_t) run.d * (size_t) args->a->type;
	if ((st = run.check(&done)) != TC_OK || (!done && (st = run.run()) != TC_OK))
		return st;
	return fold_end(*handle, err);
}

extern "C" TcStatus
tc_gpu_brute_join(TcGpuJoin **handle, const TcPoints *a, const TcPoints *b,
				  const TcJoinParams *params, double thr, const TcSink *sink,
				  TcJoinStats *stats, TcError *err)
{
	BruteArgs	args = {a, b, thr};

	return gpu_join_devices(handle, brute_one, &args, a, params, sink, stats, err);
}
