/*
 * brute.h
 *		The FP16 tensor-core brute force's shared pieces: tile constants, the
 *		join's view of the prepared points (BruteDev) and of one batch
 *		(BruteBatch), the filter's decision for one pair, the tile-pair
 *		list's modes, and the host functions each of cuda/brute/'s files
 *		exports.  No relocatable device code: a file's kernels are launched
 *		only through its own host functions.
 */
#ifndef TCJOIN_BRUTE_H
#define TCJOIN_BRUTE_H

#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "fp16_filter.h"
#include "join_state.h"

/* ---------- tiles ---------- */

constexpr int BT = 128;			/* tile: points per side */
constexpr int KT = 32;			/* mma.sync kernel: FP16 dimensions staged per step */
constexpr int SROW = KT + 8;	/* its padded shared row, in halves */
constexpr int BRUTE_THREADS = 128;	/* 2 x 2 warps of 64 x 64 */
/* Two buffers of both tiles' KT-dimension slices, dynamic. */
constexpr int TILE_SMEM = 2 * 2 * BT * SROW * (int) sizeof(__half);

static_assert(BT == 128, "TC_GPU_BRUTE_MAX_N assumes tiles of 128 points");
static_assert(BRUTE_THREADS == 4 * WARP && BT == 2 * 64, "mma.sync: 2 x 2 warps of 64 x 64 pairs");
static_assert(KT % 16 == 0 && KT % 8 == 0, "mma.sync: whole k16 steps, 16-byte copies");
static_assert(SROW % 8 == 0, "ldmatrix and cp.async: 16-byte aligned rows");

/*
 * Hopper's kernel (tile_sm90.cu): 64-dimension slices of tile A and of
 * tiles B0, B1 in a ring of WG_STAGES stages; two consumer warpgroups and
 * a producer warp.
 */
constexpr int WG_BK = 64;		/* FP16 dimensions per slice: one 128-byte row */
constexpr int WG_STAGES = 4;
constexpr int WG_CONSUMERS = 256;	/* two warpgroups */
constexpr int WG_THREADS = WG_CONSUMERS + WARP;	/* and the producer warp */
constexpr int WG_GROUP = 8;		/* consecutive items a block takes */
constexpr int WG_TILE_BYTES = BT * WG_BK * (int) sizeof(__half);
constexpr int WG_STAGE_BYTES = 3 * WG_TILE_BYTES;	/* A, B0, B1 */
constexpr int WG_SMEM = WG_STAGES * WG_STAGE_BYTES + 1024;	/* + alignment to 1024 */

static_assert(WG_BK * (int) sizeof(__half) == 128, "a slice's row is one 128-byte swizzle row");
static_assert(WG_CONSUMERS == 2 * 128 && BT == 2 * 64, "two warpgroups of 64 rows of A");
static_assert(WG_TILE_BYTES % 1024 == 0, "tiles keep the swizzle's 1 KB alignment");
static_assert(WG_SMEM <= 227 * 1024, "a Hopper block's shared memory");

/* ---------- result buffers and batches ---------- */

constexpr unsigned int BRUTE_CAPACITY = 8u << 20;	/* result buffer, pairs */
constexpr unsigned int BRUTE_MIN_CAPACITY = 2 * BT * BT;	/* one item's pairs (two tiles), at least */
constexpr unsigned int CLUSTER_MIN_CAPACITY = 4 * BT * BT;	/* a cluster item's (four): clusters only from there */
static_assert(CLUSTER_MIN_CAPACITY == 2 * BRUTE_MIN_CAPACITY, "a cluster item is two blocks' items");
static_assert(BRUTE_CAPACITY >= CLUSTER_MIN_CAPACITY, "the default buffer takes clusters");

/*
 * Candidate pairs x padded dimensions per batch at most: a batch short
 * enough that a cancel is seen soon, and fewer batches where each is cheap.
 */
constexpr double BRUTE_BATCH_WORK = 4e12;
constexpr unsigned long long BAND_PAIRS = 1ull << 24;	/* tile pairs pruned at a time: a 128 MB list */

/* ---------- the tile-pair list (prune.cu) ---------- */

/*
 * Tile pairs are enumerated, and joined, in squares of PRUNE_SQ x PRUNE_SQ:
 * the blocks at work at any time then share a few dozen tiles, which stay
 * in L2 (row by row, each block would bring its own second tile).
 */
constexpr int PRUNE_SQ = 16;

/*
 * With split > 0 (two blocks of a streamed join, or two sets) only tile
 * pairs across tile split are joined: the squares of rows [0, R) against
 * columns [C0, nsq), all on or above the diagonal, numbered row by row
 * (the rest of the triangle holds none of them).
 */
__host__ __device__ __forceinline__ void
split_squares(unsigned long long nt, unsigned int split, unsigned long long *R,
			  unsigned long long *C0, unsigned long long *W)
{
	const unsigned long long nsq = (nt + PRUNE_SQ - 1) / PRUNE_SQ;

	*R = ((unsigned long long) split + PRUNE_SQ - 1) / PRUNE_SQ;
	*C0 = split / PRUNE_SQ;
	*W = nsq > *C0 ? nsq - *C0 : 0;
}
constexpr unsigned int TILE_NONE = 0xFFFFFFFFu;	/* a list entry's missing tile: a row's pad, a cluster's second row */
static_assert(2 * PRUNE_SQ == WARP, "a warp of prune_kernel: two rows of a square, 16 lanes each");

/* The list's modes: what an entry, or an aligned pair of entries, stands for. */
enum BruteListMode
{
	LIST_ONE = 0,				/* an entry a tile pair (brute_kernel) */
	LIST_PAIRS = 1,				/* pairs of entries sharing tile A (brute_wgmma_kernel) */
	LIST_ROWS = 2				/* two rows against the same columns (its cluster items) */
};

/* ---------- the join's view of the points and of a batch ---------- */

struct BruteDev
{
	const __half *h;			/* npad rows of hpitch halves, dpad used */
	const float *q;				/* npad: the filter's q, rc */
	const float *rc;
	const void *x;				/* n x d, the caller's coordinates */
	const unsigned int *order;	/* position -> the caller's index */
	unsigned int n;
	unsigned int ntiles;
	int			d;
	int			dpad;
	int			hpitch;
	/*
	 * A streamed join's two blocks: a position's caller row is order[p] +
	 * shift_lo below split_row, + shift_hi from it.
	 */
	unsigned int split_row;
	long long	shift_lo;
	long long	shift_hi;
	/*
	 * Workspace rows [gap_lo, gap_hi): copies of a set's first row that
	 * fill its last tile in a join of two sets, never a candidate
	 * (convert_kernel).  Empty (gap_lo == gap_hi) otherwise.
	 */
	unsigned int gap_lo;
	unsigned int gap_hi;
	double		thr;
	/*
	 * exact => false (FaSTED's semantics): q is |h|^2 / 2, a pair is kept
	 * iff q_a + q_b - acc <= thr_half ((sigma eps)^2 / 2 in float4), and
	 * its dist comes from an FP32 dot of the FP16 rows.
	 */
	bool		approx;
	float		thr_half;
	double		inv_sigma;
	/* Hopper's kernel: the warpgroups take turns at the MMAs (brute_wgmma_kernel) */
	bool		pingpong;
	/*
	 * The metric (TcMetric).  The dot-product metrics: thr is eps, and a
	 * pair is kept iff its dist is at most thr.  Cosine: per workspace row
	 * its squared norm and that norm's root, the filter seeing x / root
	 * (fp16_filter.h).  The inner product: the points uncentred, and
	 * ip_half = tc_f16_ip_half(eps) in each q.
	 */
	int			metric;
	const double *norm;
	const double *root;
	double		ip_half;
};

/*
 * Coordinate k of workspace row row as the filter sees it: under cosine
 * the unit vector's (x over the root of the row's squared norm, rounded as
 * the host's unit vectors are), else x's.
 */
template <typename T>
__device__ __forceinline__ double
filter_coord(const T *x, const double *root, size_t row, int d, int k)
{
	double		v = (double) x[row * d + k];

	return root ? __ddiv_rn(v, root[row]) : v;
}

/*
 * The epilogue's decision for one pair: keep it (for the recheck, or as
 * is).  keep_pair_as takes the mode at compile time (the Hopper kernel,
 * one instance per mode: no branch per pair); keep_pair reads it.
 */
template <bool APPROX>
__device__ __forceinline__ bool
keep_pair_as(const BruteDev &g, float acc, float q_a, float q_b, float rc_a, float rc_b)
{
	if (APPROX)
		return q_a + q_b - acc <= g.thr_half;
	return !tc_f16_drop(acc, q_a, q_b, rc_a, rc_b);
}

__device__ __forceinline__ bool
keep_pair(const BruteDev &g, float acc, float q_a, float q_b, float rc_a, float rc_b)
{
	return g.approx ? keep_pair_as<true>(g, acc, q_a, q_b, rc_a, rc_b) :
		keep_pair_as<false>(g, acc, q_a, q_b, rc_a, rc_b);
}

struct BruteBatch
{
	const unsigned long long *list;	/* tile pairs kept, (bi << 32) | bj (prune_kernel's modes) */
	unsigned long long lo;		/* entries [lo, hi) of list */
	unsigned long long hi;
	unsigned long long *queue;
	PairDev    *pairs;
	unsigned int capacity;
	unsigned int *count;
	unsigned int *overflow;		/* pairs or candidates overflowed: rerun */
	uint2	   *cand;			/* positions (i, j) the filter kept */
	unsigned int cand_capacity;
	unsigned int *ncand;
	unsigned long long *candidates;
	unsigned long long *rechecked;
	const volatile int *abort;
};

/* ---------- the recheck's kinds (recheck.cu) ---------- */

enum BruteRecheck
{
	BRUTE_RECHECK_STAGED,		/* rows staged in shared memory: any alignment */
	BRUTE_RECHECK_LANE,			/* a lane a candidate: rows 16-byte aligned */
	BRUTE_RECHECK_BULK192,		/* Hopper: second rows by 192-byte bulk copies */
	BRUTE_RECHECK_BULK256		/* the same, 256 bytes a copy */
};

/* ---------- the join's configuration (config.cu) ---------- */

struct BruteConfig
{
	bool		wgmma;			/* Hopper's tile kernel, else mma.sync */
	int			per_sm;			/* the tile kernel's blocks an SM, at least 1 */
	int			clusters;		/* > 0: Hopper's kernel in clusters of two, this many at once */
	int			entry_pairs;	/* tile pairs a list entry stands for */
	BruteListMode list_mode;
	BruteRecheck recheck;
	unsigned int recheck_grid;
	bool		group;			/* candidates grouped by first point, where memory allows */
};

/* ---------- host functions ---------- */

/* prepare.cu: fetch(arg, b, &rows) puts block b of the points on the device at bd.x. */
typedef TcStatus (*BruteFetch) (void *arg, int b, unsigned int *rows);
extern TcStatus brute_make_plan(TcGpuJoin *g, TcElemType type, unsigned int n, int d, int nblocks,
								BruteFetch fetch, void *fetch_arg, double thr, double eps,
								BruteDev &bd, TcF16Plan &plan, double **centre, TcError *err);
extern TcStatus brute_norms(TcGpuJoin *g, TcElemType type, const void *x, unsigned int rows, int d,
							unsigned long long first, double *norm, double *root,
							unsigned long long *zero, TcError *err);
/*
 * What brute_prepare leaves to brute_prepare_finish: the order's ranges
 * still to gather from the other GPUs (several GPUs sharing the order:
 * set key's, bounds in bytes of the order), then the kernels that read it.
 */
struct BrutePrepared
{
	TcElemType	type;
	TcF16Plan	plan;
	const double *d_c;
	float	   *cen;
	float	   *rad;
	int			gathers;
	int			key[2];
	size_t		bounds[2][TC_MAX_DEVICES + 1];
};

extern TcStatus brute_prepare(TcGpuJoin *g, TcElemType type, unsigned int n, int d,
							  const TcF16Plan &plan, const double *d_c, unsigned int seg0,
							  unsigned int part, bool share, BruteDev &bd, unsigned int npad,
							  float **cen, float **rad, BrutePrepared *pp, TcJoinStats *stats,
							  TcError *err);
extern TcStatus brute_prepare_finish(TcGpuJoin *g, const BrutePrepared &pp, BruteDev &bd,
									 TcError *err);

/* order.cu */
extern TcStatus brute_order(TcGpuJoin *g, TcElemType type, const void *x, const double *root,
							unsigned int n, int d, unsigned int ntiles, unsigned int seg0,
							unsigned int part, bool share, unsigned int **order,
							BrutePrepared *pp, TcJoinStats *stats, TcError *err);
extern TcStatus brute_tile_bounds(TcGpuJoin *g, TcElemType type, const void *x, const double *root,
								  int d, const double *d_c, const unsigned int *order,
								  unsigned int n, unsigned int ntiles, float *cen, float *rad,
								  TcError *err);

/* prune.cu: one band of squares [u0, u1) into the list; nl: entries, tile pairs kept. */
struct BrutePruneBufs
{
	unsigned long long *list;
	unsigned long long *nlist;	/* [2] */
	unsigned int *mask;			/* per warp of prune_kernel: its ballot, */
	unsigned int *count;		/* its count of entries, */
	unsigned int *offset;		/* their offset */
	void	   *scan;
	size_t		scan_bytes;
};
extern TcStatus brute_prune_scan_bytes(int warps, cudaStream_t s, size_t *bytes, TcError *err);
extern TcStatus brute_prune_band(TcGpuJoin *g, const BrutePruneBufs &pb, const float *cen,
								 const float *rad, int d, unsigned int ntiles, double eps_hi,
								 unsigned long long u0, unsigned long long u1, unsigned int split,
								 BruteListMode mode, unsigned long long nl[2], const TcSink *sink,
								 TcError *err);

/* tile_sm80.cu: the mma.sync kernel */
extern TcStatus brute_sm80_setup(TcError *err);
extern TcStatus brute_sm80_occupancy(int *per_sm, TcError *err);
extern TcStatus brute_sm80_launch(unsigned int blocks, cudaStream_t s, const BruteDev &bd,
								  const BruteBatch &bb, TcError *err);

/* tile_sm90.cu: Hopper's kernel */
extern TcStatus brute_sm90_setup(TcError *err);
extern TcStatus brute_sm90_binary_version(int *version, TcError *err);
extern TcStatus brute_sm90_probe(cudaStream_t s, void *scratch, int *have, TcError *err);
extern bool brute_make_tmap(CUtensorMap *tm, const __half *h, unsigned int npad, int dpad, int pitch);
extern TcStatus brute_sm90_occupancy(int *per_sm, TcError *err);
extern TcStatus brute_sm90_cluster_occupancy(unsigned int blocks, cudaStream_t s, int *clusters,
											 TcError *err);
extern TcStatus brute_sm90_launch(bool clusters, unsigned int blocks, cudaStream_t s,
								  const CUtensorMap &tm, const BruteDev &bd, const BruteBatch &bb,
								  TcError *err);

/* recheck.cu */
extern TcStatus brute_recheck_setup(BruteRecheck kind, const BruteDev &bd, TcElemType type, int sms,
									unsigned int *grid, TcError *err);
extern TcStatus brute_recheck_launch(BruteRecheck kind, TcElemType type, unsigned int grid,
									 cudaStream_t s, const BruteDev &bd, const BruteBatch &bb,
									 TcError *err);
extern TcStatus brute_group_scan_bytes(int rows, cudaStream_t s, size_t *bytes, TcError *err);
extern TcStatus brute_group_candidates(int sms, int rows, cudaStream_t s, const BruteBatch &bb,
									   unsigned int *group, unsigned int *offset, void *scan,
									   size_t scan_bytes, uint2 *grouped, TcError *err);

/* config.cu */
extern TcStatus brute_configure(TcGpuJoin *g, int major, int sms, TcElemType type, size_t rowbytes,
								bool streamed, unsigned int capacity, void *scratch, BruteDev &bd,
								CUtensorMap *tmap, BruteConfig *cfg, TcJoinStats *stats,
								TcError *err);

#endif							/* TCJOIN_BRUTE_H */
