/*
 * config.cu
 *		The brute force's choices for one join, from the device (compute
 *		capability, the code it loads, the probe, occupancy) and the
 *		developers' overrides (g->ov): the tile kernel, clusters, ping-pong,
 *		the recheck and the candidates' grouping.  Each override forces a
 *		path for comparison or testing, and only where the device runs it.
 */
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "brute.h"

/*
 * The recheck's family: a lane a candidate where rows are 16-byte aligned
 * (the FP16 rows of exact => false always are), the staged one otherwise
 * (recheck.cu says why).  recheck=staged forces the staged one.
 */
static bool
lane_recheck(const TcGpuJoin *g, const BruteDev &bd, TcElemType type)
{
	const bool	rows16 = (size_t) bd.d * (type == TC_FLOAT4 ? 4 : 8) % 16 == 0;

	return (bd.approx || rows16) && g->ov.recheck != TC_RECHECK_STAGED;
}

/*
 * The tile kernel: Hopper's where this build carries sm_90a code for the
 * device and the driver encodes tensor maps (tile_kernel=mma forces the
 * mma.sync kernel), and its blocks an SM.  scratch: device memory for the
 * probe (a TMA descriptor of it tries the encoder).
 */
static TcStatus
choose_tile_kernel(TcGpuJoin *g, int major, void *scratch, CUtensorMap *tmap, BruteConfig *cfg,
				   TcError *err)
{
	TcStatus	st;
	int			version = 0;

	if ((st = brute_sm80_setup(err)) != TC_OK)
		return st;
	if (major == 9 && (st = brute_sm90_setup(err)) != TC_OK)
		return st;
	memset(tmap, 0, sizeof(*tmap));
	if ((st = brute_sm90_binary_version(&version, err)) != TC_OK)
		return st;
	cfg->wgmma = major == 9 && version == 90 && g->ov.tile_kernel != TC_TILE_MMA;
	if (cfg->wgmma)
	{
		int			have = 0;

		if ((st = brute_sm90_probe(g->stream[0], scratch, &have, err)) != TC_OK)
			return st;
		/* the encoder, tried on a map of the scratch (each set's own is made later) */
		cfg->wgmma = have == 1 && brute_make_tmap(tmap, (const __half *) scratch, BT, 16, 16);
	}
	cfg->per_sm = 0;
	st = cfg->wgmma ? brute_sm90_occupancy(&cfg->per_sm, err) : brute_sm80_occupancy(&cfg->per_sm, err);
	if (st != TC_OK)
		return st;
	cfg->per_sm = std::max(cfg->per_sm, 1);
	return TC_OK;
}

/*
 * Hopper's kernel in clusters of two blocks, B multicast to both
 * (brute_wgmma_kernel's CLUSTER); cfg->clusters is how many the device
 * holds at once.  Not where the result buffer is held under a cluster
 * item's pairs (a memory limit): a batch is at least one item, and one
 * that overflows at that size could not be rerun smaller.  clusters=off
 * keeps the blocks apart.
 */
static TcStatus
choose_clusters(TcGpuJoin *g, int sms, unsigned int capacity, BruteConfig *cfg, TcError *err)
{
	TcStatus	st;

	cfg->clusters = 0;
	if (cfg->wgmma && capacity >= CLUSTER_MIN_CAPACITY && !g->ov.no_clusters)
	{
		if ((st = brute_sm90_cluster_occupancy(2 * (unsigned int) (sms / 2), g->stream[0], &cfg->clusters,
											   err)) != TC_OK)
			return st;
		if (g->ov.trace)
			fprintf(stderr, "tcjoin trace: %d clusters of 2 blocks at once (%d multiprocessors)\n",
					cfg->clusters, sms);
	}
	return TC_OK;
}

/*
 * The recheck's kernel.  Where this build runs Hopper's code, the lane
 * kernel's work with the second rows brought by bulk copies
 * (recheck_bulk_kernel), which reads the rows at a far higher share of the
 * copy rate than the lane kernel's loads.  Rows of at most 4 KB go 192
 * bytes a copy, longer ones 256: each the faster there.  recheck=bulk192
 * or bulk256 forces 192 or 256 bytes, recheck=lane the lane kernel.  The
 * dot-product metrics take the lane kernel (their rechecks are few: the
 * bulk kernels stay the Euclidean metric's).
 */
static BruteRecheck
choose_recheck(const TcGpuJoin *g, const BruteDev &bd, size_t rowbytes, bool lane, bool wgmma)
{
	const TcRecheckKernel force = g->ov.recheck;
	const size_t rc_row_bytes = bd.approx ? (size_t) bd.dpad * sizeof(__half) : rowbytes;
	const int	rb_chunk = !(lane && wgmma) || bd.metric != TC_METRIC_EUCLIDEAN ||
		force == TC_RECHECK_LANE || force == TC_RECHECK_STAGED ? 0 :
		force == TC_RECHECK_BULK192 ? 192 :
		force == TC_RECHECK_BULK256 ? 256 :
		rc_row_bytes <= 4096 ? 192 : 256;

	return rb_chunk == 192 ? BRUTE_RECHECK_BULK192 :
		rb_chunk == 256 ? BRUTE_RECHECK_BULK256 :
		lane ? BRUTE_RECHECK_LANE : BRUTE_RECHECK_STAGED;
}

static const char *
recheck_name(BruteRecheck kind)
{
	switch (kind)
	{
		case BRUTE_RECHECK_BULK192:
			return "bulk-copy, 192 B";
		case BRUTE_RECHECK_BULK256:
			return "bulk-copy, 256 B";
		case BRUTE_RECHECK_LANE:
			return "lane";
		case BRUTE_RECHECK_STAGED:
		default:
			break;
	}
	return "staged";
}

/*
 * This join's configuration into cfg (and bd.pingpong), with the stats'
 * names of its kernels.  streamed: the points go in blocks; capacity: the
 * result buffer's pairs; scratch: device memory the probe may write.
 */
TcStatus
brute_configure(TcGpuJoin *g, int major, int sms, TcElemType type, size_t rowbytes, bool streamed,
				unsigned int capacity, void *scratch, BruteDev &bd, CUtensorMap *tmap,
				BruteConfig *cfg, TcJoinStats *stats, TcError *err)
{
	TcStatus	st;
	const bool	lane = lane_recheck(g, bd, type);

	/*
	 * The lane kernels' candidates grouped by first point
	 * (cand_count_kernel) where memory allows: a second candidate buffer
	 * and two words a position, per stream.  Streamed (the points did not
	 * fit), under a tight tcjoin.gpu_memory_limit, or with
	 * recheck_group=off, they stay as they came.
	 */
	cfg->group = lane && !streamed && !g->ov.no_recheck_group;

	if ((st = choose_tile_kernel(g, major, scratch, tmap, cfg, err)) != TC_OK)
		return st;

	/*
	 * The warpgroups take turns at the MMAs where an item's slices fill at
	 * most half the stages (d <= 128): there the epilogue weighs as much as
	 * the MMAs.  pingpong=off keeps them in step.
	 */
	bd.pingpong = cfg->wgmma && 2 * ((bd.dpad + WG_BK - 1) / WG_BK) <= WG_STAGES &&
		!g->ov.no_pingpong;

	if ((st = choose_clusters(g, sms, capacity, cfg, err)) != TC_OK)
		return st;
	stats->gpu_kernel = !cfg->wgmma ? "mma.sync" :
		cfg->clusters > 0 ? (bd.pingpong ? "wgmma, clusters of 2, ping-pong" : "wgmma, clusters of 2") :
		bd.pingpong ? "wgmma, ping-pong" : "wgmma";
	/* tile pairs an entry of the list stands for; Hopper's kernel takes entries in pairs */
	cfg->entry_pairs = cfg->clusters > 0 ? 2 : 1;
	cfg->list_mode = cfg->clusters > 0 ? LIST_ROWS : cfg->wgmma ? LIST_PAIRS : LIST_ONE;

	cfg->recheck = choose_recheck(g, bd, rowbytes, lane, cfg->wgmma);
	stats->gpu_recheck = recheck_name(cfg->recheck);
	return brute_recheck_setup(cfg->recheck, bd, type, sms, &cfg->recheck_grid, err);
}
