/*
 * engine.h
 *		The tcjoin join engine: point sets in, pair batches out.
 *
 * This header is the one interface between the PostgreSQL glue and the join
 * back ends (CPU grid, CPU brute force, and the CUDA back ends).  It must not
 * include PostgreSQL headers: the engine is built and tested on its own.
 *
 * Contract (every exact mode, every back end): a pair (i, j) is returned iff
 *		s = sum over k = 0 .. d-1 of ((double) a_k - (double) b_k)^2,
 * accumulated in float8 in index order with no fused multiply-add, satisfies
 * sqrt(s) <= eps, and the returned dist is sqrt(s) bit for bit.
 */
#ifndef TCJOIN_ENGINE_H
#define TCJOIN_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* Element type of a point matrix, as stored by the caller. */
typedef enum TcElemType
{
	TC_FLOAT4 = 4,
	TC_FLOAT8 = 8
} TcElemType;

/*
 * A point set: n points of d coordinates, row-major and contiguous.  All
 * coordinates must be finite (the loader rejects NaN and infinity).  The
 * engine never writes to it and never frees it.
 */
typedef struct TcPoints
{
	const void *data;
	int64_t		n;
	int32_t		d;
	TcElemType	type;
} TcPoints;

typedef enum TcMethod
{
	TC_METHOD_AUTO = 0,
	TC_METHOD_GRID,
	TC_METHOD_BRUTE
} TcMethod;

/*
 * What dist is (README.md states each contract).  Euclidean: sqrt of the
 * sum of squared differences.  Dot-product metrics, from the dot product
 * and (cosine) both squared norms, each summed in float8 in index order:
 * inner product -dot; cosine 1 - clamp(dot / sqrt(na nb), -1, 1).  A pair
 * is returned iff dist <= eps.
 */
typedef enum TcMetric
{
	TC_METRIC_EUCLIDEAN = 0,
	TC_METRIC_COSINE,
	TC_METRIC_INNER_PRODUCT
} TcMetric;

typedef enum TcDevice
{
	TC_DEVICE_AUTO = 0,
	TC_DEVICE_CPU,
	TC_DEVICE_GPU
} TcDevice;

/* FP64 tensor cores for the GPU grid join's distance filter. */
typedef enum TcTensorCores
{
	TC_TENSOR_AUTO = 0,			/* where measurements say they pay */
	TC_TENSOR_ON,
	TC_TENSOR_OFF
} TcTensorCores;

/*
 * Developer overrides: force a path the engine would not choose, for tests
 * and measurements only.  Parsed in one place (tc_overrides_parse), set from
 * SQL by the superuser-only setting tcjoin.dev_overrides and from the test
 * programs' and tcbench's --override flag.  All zero: every choice as the
 * engine makes it.  A forced path must still be one the device can run; where
 * it cannot (a Hopper kernel on an A100), the engine's own choice stands.
 */
typedef enum TcTileKernel
{
	TC_TILE_AUTO = 0,
	TC_TILE_MMA					/* mma.sync, the sm_80 tile kernel, on Hopper too */
} TcTileKernel;

typedef enum TcRecheckKernel
{
	TC_RECHECK_AUTO = 0,
	TC_RECHECK_STAGED,			/* rows staged in shared memory (any alignment) */
	TC_RECHECK_LANE,			/* a lane a candidate (rows 16-byte aligned) */
	TC_RECHECK_BULK192,			/* Hopper: second rows by 192-byte bulk copies */
	TC_RECHECK_BULK256			/* Hopper: the same, 256 bytes a copy */
} TcRecheckKernel;

typedef enum TcDotFilterKind
{
	TC_DOT_FILTER_AUTO = 0,		/* int8 where the CPU has AVX-512 VNNI, else float32 */
	TC_DOT_FILTER_FLOAT32,		/* the float32 filter */
	TC_DOT_FILTER_INT8,			/* int8 (where the CPU cannot, auto's choice) */
	TC_DOT_FILTER_INT8_PORTABLE /* int8 through plain C: the same integers, any CPU */
} TcDotFilterKind;

typedef struct TcOverrides
{
	TcTileKernel tile_kernel;	/* FP16 brute force's tile kernel */
	TcRecheckKernel recheck;	/* FP16 brute force's exact recheck */
	bool		no_recheck_group;	/* candidates not grouped by first point */
	bool		no_clusters;	/* Hopper: blocks apart, not in clusters of 2 */
	bool		no_pingpong;	/* Hopper: warpgroups in step at d <= 128 */
	bool		whole_dot_bound;	/* the filter's whole-dot bound, not the prefix bound */
	double		batch_rate;		/* GPU: first batch's pairs per unit (0: 1) */
	bool		trace;			/* GPU: each batch's times on stderr */
	bool		no_prefault;	/* loading: the matrix's pages faulted by its writes only */
	bool		no_direct_load; /* loading: through SPI even where the pages could be read */
	TcDotFilterKind dot_filter; /* CPU brute force's dot-product filter */
	bool		split_all;		/* several GPUs: every one listed, however small the join */
	uint32_t	band_squares;	/* GPU brute force: squares of tiles a band at most (0: the default) */
} TcOverrides;

/* What a GPU join does when the GPU's memory is exhausted. */
typedef enum TcGpuFull
{
	TC_GPU_FULL_CPU = 0,		/* run on the CPU instead (device auto only) */
	TC_GPU_FULL_WAIT,			/* wait for memory, polling the sink */
	TC_GPU_FULL_ERROR			/* fail with TC_ERR_GPU_FULL */
} TcGpuFull;

/* The most GPUs tc_device_list reports, and one join may use. */
#define TC_MAX_DEVICES 16

typedef struct TcJoinParams
{
	double		eps;			/* finite; >= 0 but for the inner product */
	TcMetric	metric;
	TcMethod	method;
	TcDevice	device;
	TcTensorCores tensor_cores; /* GPU only; the CPU ignores it */
	bool		exact;			/* false: approximate arithmetic allowed */
	bool		include_self;	/* self-join only: also emit (i, i, 0) */
	int			threads;		/* CPU compute threads, >= 1; at most
								 * tc_cpu_count() are used */
	size_t		gpu_memory_limit;	/* bytes a GPU join may take; 0: no limit */
	size_t		gpu_result_pairs;	/* GPU result buffer, in pairs; 0: default */
	TcGpuFull	gpu_full;
	/*
	 * The GPUs one join may use (tcjoin.devices), by CUDA's numbering: 0
	 * entries for every GPU the process sees; a number may repeat (the
	 * same GPU twice runs the several-GPU path on one).
	 */
	int			ndevices;
	int			devices[TC_MAX_DEVICES];
	TcOverrides overrides;		/* developers' only; zero for users */
} TcJoinParams;

/*
 * tcjoin.devices' syntax: "all" (*n = 0), or GPU numbers separated by
 * commas, each below TC_MAX_DEVICES, at most TC_MAX_DEVICES of them.
 * False with a message in msg where s is neither.  devices.c.
 */
extern bool tc_devices_parse(const char *s, int *devices, int *n, char *msg, size_t msglen);

/*
 * One result pair.  a indexes the first point set, b the second (or the same
 * one in a self-join, where each unordered pair appears once, in either
 * order).
 */
typedef struct TcPair
{
	int64_t		a;
	int64_t		b;
	double		dist;
} TcPair;

/*
 * Where pairs go.  Both callbacks run only on the thread that called
 * tc_join_run, never on a worker thread, so they may call into the host
 * (PostgreSQL).  They may also leave by longjmp (an error or a cancel): the
 * join is then abandoned mid-run, and the caller must still call
 * tc_join_destroy, which stops and joins every worker.
 *
 * emit: a batch of pairs; return nonzero to stop the join early.
 * poll: called at least every 20 ms while the join runs; return nonzero to
 *		 stop the join.
 */
/*
 * What a GPU join may fold its pairs into on the device instead of handing
 * them to the sink's emit (graph.c's answers): per point arrays the back
 * end copies in before the first pair and out after the last, so that only
 * they cross the bus, never the pairs.  The CPU ignores it (its workers
 * take TcSink.reduce), and so does a join whose pairs are not final (the
 * unit vectors' grid rechecks its candidates on the host).
 */
typedef enum TcFoldKind
{
	TC_FOLD_COUNT = 1,			/* the join's pair count alone */
	TC_FOLD_DEGREES,			/* deg (n, zeros in): each pair adds 1 to both */
	TC_FOLD_UNION,				/* parent (n, in and out): union-find, roots link under the
								 * smaller index */
	TC_FOLD_DBSCAN_LINKS,		/* core pairs unite in parent; best_key (out): a non-core
								 * point's least distance to a core neighbour, as an
								 * unsigned key of the same order (-0 as +0) */
	TC_FOLD_DBSCAN_TIES,		/* best (in -1, out): the core neighbour of smallest id
								 * among those at exactly best_key */
	TC_FOLD_NEAREST				/* nb_len, nb_who, nb_dist (out): each point's k nearest
								 * by (dist, id), nearest first; a self-join's pair feeds
								 * both points (both), a two-set join's its point of a */
} TcFoldKind;

/*
 * The most neighbours a point the device keeps (TC_FOLD_NEAREST): larger k
 * takes the pairs on the host (its arrays would be n k entries a GPU).
 */
#define TC_FOLD_MAX_K 32

typedef struct TcDeviceFold
{
	TcFoldKind	kind;
	int64_t		n;				/* the points; the arrays' length */
	int64_t    *deg;
	int64_t    *parent;
	const bool *core;
	uint64_t   *best_key;
	int64_t    *best;
	const int64_t *ids;			/* ties by id; TC_FOLD_NEAREST: the neighbours' (ids_n) */
	int64_t		ids_n;
	int			k;				/* TC_FOLD_NEAREST: 1 to TC_FOLD_MAX_K */
	bool		both;
	/*
	 * TC_FOLD_NEAREST's answer, made by the back end that folds
	 * (tc_fold_lists_make; the caller frees them with tc_fold_lists_free,
	 * set or not, after the join): nb_len n, nb_who
	 * and nb_dist n k, point i's at i k, nb_who indices into ids.
	 */
	int32_t    *nb_len;
	int64_t    *nb_who;
	double	   *nb_dist;
	bool		folded;			/* set by the GPU back end once it folded every pair */
} TcDeviceFold;

/*
 * TC_FOLD_NEAREST's lists for rows points (f->k each), made again where
 * they were (false where memory runs out), and freed; graph.c.
 */
extern bool tc_fold_lists_make(TcDeviceFold *f, size_t rows);
extern void tc_fold_lists_free(TcDeviceFold *f);

typedef struct TcSink
{
	int			(*emit) (void *arg, const TcPair *pairs, size_t count);
	int			(*poll) (void *arg);
	void	   *arg;
	/*
	 * Pairs an emit may take at once where a back end holds more (the GPU's
	 * ring chunks): 0 for the engine's own size, small enough that a
	 * row-writing sink polls often; an aggregating sink takes more.
	 */
	size_t		batch_hint;
	/*
	 * Where set, the CPU's workers hand it each pair on their own threads
	 * instead of batching the pairs for emit (an aggregate: it must be
	 * thread-safe and must not call into the host); the join's pair count
	 * still counts them.  The GPU's pairs still come through emit.  In a
	 * two-set join the workers split the work by points of a: every pair
	 * of one point of a reaches reduce on one thread, so state kept per
	 * point of a needs no lock there (the CPU back ends keep this).
	 */
	void		(*reduce) (void *arg, int64_t a, int64_t b, double dist);
	/* Where set, a GPU join folds its pairs on the device (above). */
	TcDeviceFold *fold;
	/*
	 * Where set with reduce, a hint: the CPU's grid, in a two-set join,
	 * names each point of a some points before its pairs come, so that
	 * reduce's state for it (a list in memory far larger than the caches)
	 * is on its way.  It must not block or fail.
	 */
	void		(*prefetch) (void *arg, int64_t a);
} TcSink;

typedef enum TcStatus
{
	TC_OK = 0,
	TC_STOPPED,					/* a sink callback asked to stop */
	TC_ERR_NOMEM,
	TC_ERR_INVALID,
	TC_ERR_NO_GPU,
	TC_ERR_GPU,					/* a CUDA call failed; message has its error */
	TC_ERR_GPU_FULL,			/* the GPU's (or pinned) memory is exhausted */
	TC_ERR_INTERNAL
} TcStatus;

typedef struct TcError
{
	TcStatus	status;
	char		message[256];
	/*
	 * A point the error is about (a zero vector under cosine), so that the
	 * caller can name its row: its index, in set a (0) or b (1); point < 0
	 * for none.
	 */
	int64_t		point;
	int			point_set;
} TcError;

/* What a join did; filled in as it goes. */
typedef struct TcJoinStats
{
	const char *device;			/* "cpu" or "gpu" */
	const char *method;			/* "grid" or "brute" */
	const char *metric;			/* "euclidean", "cosine" or "inner_product" */
	bool		tensor_cores;	/* a tensor-core filter ran */
	int			threads;
	int			grid_dims;		/* dimensions indexed (grid only) */
	int			grid_dim_ids[8];	/* which dimensions, 0-based */
	int64_t		cells;			/* non-empty grid cells */
	uint64_t	candidates;		/* pairs whose distance was evaluated (a GPU
								 * batch rerun after an overflow counts once) */
	uint64_t	rechecked;		/* candidates a filter kept for the exact sum */
	uint64_t	pairs;			/* pairs emitted */
	double		index_seconds;	/* building the index (or blocks) */
	double		join_seconds;	/* from first work to last pair emitted */
	/* GPU joins: where the join phase's time went. */
	int64_t		gpu_batches;	/* kernel launches, reruns included */
	int64_t		gpu_reruns;		/* batches dropped (a buffer overflowed) and run again */
	double		gpu_kernel_seconds; /* the kernels, by device events (two
									 * batches at once count once) */
	/* FP16 brute force: of those, the time the exact recheck adds (not the
	 * part that runs beside the next batch's tensor-core kernel) */
	double		gpu_recheck_seconds;
	double		gpu_wait_seconds;	/* the host waiting for kernels */
	double		gpu_drain_seconds;	/* pairs copied to the host and emitted */
	/* GPU brute force: tile pairs of the triangle, and those pruning kept. */
	uint64_t	gpu_tile_pairs;
	uint64_t	gpu_tile_pairs_kept;
	/* GPU brute force: the list entries (tile pairs and pads) this join ran, for each GPU's share */
	uint64_t	gpu_work;
	const char *gpu_kernel;		/* "wgmma" (Hopper; ", clusters of 2", ", ping-pong") or "mma.sync" */
	const char *gpu_recheck;	/* its second kernel: "bulk-copy, 192 B", "lane", ... */
	/*
	 * What filtered candidates before the exact sum: "none", "float32"
	 * (CPU brute force), "fp64 tensor cores" (GPU grid), "fp16 tensor
	 * cores" (GPU brute force), or "fp16 tensor cores, approximate"
	 * (exact => false: the filter decides).
	 */
	const char *filter;
	double		gpu_upload_seconds; /* coordinates to the device */
	double		gpu_order_seconds;	/* ordering points into compact tiles */
	int			gpu_blocks;		/* FP16 brute force: row blocks streamed (1: the points fit) */
	/* auto on the GPU below 12 dimensions: the cost model's seconds (0: not asked) */
	double		auto_grid_seconds;
	double		auto_brute_seconds;
	/* Where the join ran and why: the setting, or auto's estimates. */
	char		device_choice[128];
	double		auto_cpu_seconds;	/* auto's estimates (0: not asked) */
	double		auto_gpu_seconds;
	double		gpu_full_wait_seconds;	/* waiting for GPU memory (tcjoin.gpu_full = wait) */
	double		gpu_setup_seconds;	/* the GPU's context (if new), streams and buffers */
	bool		gpu_cold;		/* this join created the process's CUDA context */
	/*
	 * The GPUs that ran the join (0 on the CPU), in tcjoin.devices' order,
	 * and each one's share of the join phase's work: of the tile pairs it
	 * joined (FP16 brute force) or of the candidate pairs (the grid).
	 */
	int			gpus;
	int			gpu_ids[TC_MAX_DEVICES];
	double		gpu_share[TC_MAX_DEVICES];
} TcJoinStats;

typedef struct TcJoin TcJoin;

/*
 * Set up a join of a with b (b == NULL: self-join of a), checking its
 * arguments.  Returns NULL and fills err on failure.  The point sets must
 * outlive the join.
 */
extern TcJoin *tc_join_create(const TcPoints *a, const TcPoints *b,
							  const TcJoinParams *params, TcError *err);

/*
 * Plan the join, build its index, and run it, sending every pair to sink;
 * the sink is polled throughout, index building included.  Returns TC_OK,
 * TC_STOPPED, or an error status with err filled in.  A join runs at most
 * once.
 */
extern TcStatus tc_join_run(TcJoin *join, const TcSink *sink, TcError *err);

/* Current statistics (valid after create, complete after run). */
extern void tc_join_get_stats(const TcJoin *join, TcJoinStats *stats);

/*
 * Stop any running workers, wait for them, and free everything the join
 * owns.  Safe at any point after tc_join_create, including after a longjmp
 * out of tc_join_run.  NULL is a no-op.
 */
extern void tc_join_destroy(TcJoin *join);

/*
 * Parse developer overrides: "key=value" items separated by commas or
 * spaces (tcjoin.dev_overrides' syntax; docs/developing.md lists them).
 * Empty or NULL text gives all zero.  Returns false with msg filled on a bad
 * item; out is then left all zero.
 */
extern bool tc_overrides_parse(const char *text, TcOverrides *out, char *msg,
							   size_t msglen);

/*
 * The largest float8 s with sqrt(s) <= eps.  Since sqrt is correctly rounded
 * and monotone, sqrt(s) <= eps iff s <= tc_sq_threshold(eps), so partial sums
 * can be compared against it without a square root.
 */
extern double tc_sq_threshold(double eps);

/* A GPU the engine can use, as tc_devices() shows it. */
typedef struct TcDeviceInfo
{
	int			device;			/* CUDA device number */
	char		name[256];
	int			major;			/* compute capability */
	int			minor;
	size_t		total_memory;	/* bytes */
	size_t		free_memory;	/* bytes */
	int			sm_count;
} TcDeviceInfo;

/*
 * Make the GPU's context ahead of a join that will likely run there, on a
 * thread of the engine's while the caller reads the table; a no-op without
 * a GPU, or once made.  tc_device_prewarm_wait waits for that thread: call
 * it before the process exits.
 */
extern void tc_device_prewarm(void);
extern void tc_device_prewarm_wait(void);

/*
 * Make a fresh buffer's pages present on up to threads helper threads (all
 * signals blocked), from its start, while the caller fills it: the kernel's
 * zeroing of new pages then runs beside the caller instead of inside its
 * writes.  Contents are never written.  tc_prefault_stop stops and joins
 * them (call it before the buffer is freed); NULL (nothing started, or the
 * kernel cannot) is a no-op for it.  prefault.c.
 */
typedef struct TcPrefault TcPrefault;
extern TcPrefault *tc_prefault_start(void *buf, size_t bytes, int threads);
extern void tc_prefault_stop(TcPrefault *pf);

/*
 * Start a thread with every signal blocked, as the engine's own are (the
 * host's signal handlers then run on its thread alone); pthread_create's
 * result, 0: started.  engine.c.
 */
extern int	tc_start_thread(pthread_t *th, void *(*fn) (void *), void *arg);

/*
 * malloc for a large buffer filled at once (big_buffers.c): on 2 MB pages
 * marked for transparent huge pages, and kept in the process when freed,
 * while the kept ones stay under tc_keep_limit, for a later request of
 * about its size, whose pages are then present already.  Free with
 * tc_free_huge alone (never free()); NULL: out of memory.
 */
extern void *tc_malloc_huge(size_t bytes);
/* The same, zeroed (a fresh mapping is zero already: no pass of zeros). */
extern void *tc_calloc_huge(size_t bytes);
extern void tc_free_huge(void *p);
/* A larger buffer with the first min(old_bytes, bytes) bytes of p; p freed.  NULL: p kept. */
extern void *tc_realloc_huge(void *p, size_t old_bytes, size_t bytes);
/* The most bytes of freed buffers the process keeps (0, the default: none); the excess released now. */
extern void tc_keep_limit(size_t bytes);
/* Every kept buffer released, from a signal handler; nothing if a thread is at the list now. */
extern void tc_keep_release_idle(void);
/* The bytes kept now. */
extern size_t tc_kept_bytes(void);
/*
 * The most bytes the buffers of these functions held at once (requested
 * sizes, kept ones not counted) since tc_big_peak_reset, which starts the
 * count again from the bytes held now.
 */
extern size_t tc_big_peak(void);
extern void tc_big_peak_reset(void);

/*
 * The usable GPUs: fills up to max (at most TC_MAX_DEVICES) entries of out
 * and returns how many it filled; 0 without CUDA or a usable GPU.
 */
extern int	tc_device_list(TcDeviceInfo *out, int max);

/* Whether a usable GPU exists, without making its context. */
extern bool tc_device_any(void);

/* Monotonic clock, in seconds. */
extern double tc_now(void);

/* Number of online CPUs (at least 1). */
extern int	tc_cpu_count(void);

/* Name of a status, for messages. */
extern const char *tc_status_name(TcStatus status);

/*
 * Answers that are not pair lists (graph.c), from a self-join's pairs: the
 * pair count, each point's degree, its neighbours (all, or the k nearest),
 * the connected components of the eps-graph and DBSCAN's clusters; from a
 * two-set join's pairs, each point of the first set's nearest points of
 * the second (all, or the k nearest).
 *
 * A TcGraph is fed a join's pairs through tc_graph_emit (a TcSink's emit:
 * it runs on the caller's thread, as every sink does) and keeps per point
 * state only: memory grows with n (and with k, or with the neighbours
 * themselves where k is not given), never with the pair count.  DBSCAN
 * takes two joins of the same points: the first counts degrees, which fix
 * the core points (tc_graph_dbscan_cores); the second links them.
 */
typedef enum TcGraphKind
{
	TC_GRAPH_COUNT = 0,			/* the pairs */
	TC_GRAPH_DEGREES,			/* each point's neighbours, counted */
	TC_GRAPH_NEIGHBORS,			/* each point's neighbours (the k nearest, k > 0) */
	TC_GRAPH_COMPONENTS,		/* union-find over the pairs */
	TC_GRAPH_DBSCAN,			/* degrees, then (after tc_graph_dbscan_cores) links */
	TC_GRAPH_NEAREST			/* a two-set join: each point of a's neighbours in b */
} TcGraphKind;

typedef struct TcGraph TcGraph;

/*
 * A graph of n points with ids (the caller's, kept: ties and names are by
 * id); k for TC_GRAPH_NEIGHBORS (0: every neighbour); threads for large
 * batches of degrees, components and DBSCAN (1: the caller's alone).  NULL
 * with err set where memory runs out.
 */
extern TcGraph *tc_graph_create(TcGraphKind kind, int64_t n, const int64_t *ids, int k, int threads,
								TcError *err);
/*
 * TC_GRAPH_NEAREST: for each of the n_a points of a two-set join's first
 * set, its neighbours in the second, named by ids_b (n_b of them; ties by
 * the smaller id); k as above, the threads for large batches.  It takes the join's
 * (a, b) pairs, each from any back end (a CPU's workers through the
 * reducer where k > 0, or batches through tc_graph_emit), and
 * tc_graph_neighbors gives point i of a's list.  Memory: n_a lists, each
 * at most k long (every neighbour without k).  Its reducer relies on
 * reduce's split by points of a (TcSink).
 */
extern TcGraph *tc_graph_create_nearest(int64_t n_a, const int64_t *ids_b, int64_t n_b, int k,
										int threads, TcError *err);
/* Stops and joins the threads, frees everything; NULL is a no-op. */
extern void tc_graph_destroy(TcGraph *g);
/* Batches from this many pairs go to the threads (tests: a small one splits every batch). */
extern void tc_graph_set_split(TcGraph *g, size_t pairs);

/* The batch a graph's sink takes at once (TcSink.batch_hint): its threads share each. */
#define TC_GRAPH_BATCH_HINT ((size_t) 1 << 19)

/*
 * A TcSink's emit: the pairs of a self-join (each unordered pair once, no
 * self pairs), or of a two-set join for TC_GRAPH_NEAREST.  Nonzero (stop
 * the join) where memory ran out.
 */
extern int	tc_graph_emit(void *graph, const TcPair *pairs, size_t count);
/*
 * A TcSink's reduce, the same for one pair on a worker's thread (a count's
 * does nothing: the join's own pair count is the answer); NULL for a
 * self-join's neighbour lists, which take their pairs on the caller's
 * thread only, and for the nearest without k, whose lists grow (emit
 * stops the join where memory runs out; a reduce could not).
 */
extern void (*tc_graph_reducer(const TcGraph *g)) (void *graph, int64_t a, int64_t b, double dist);
/* A TcSink's prefetch for the graph, or NULL where its reduce keeps nothing per point worth it. */
extern void (*tc_graph_prefetcher(const TcGraph *g)) (void *graph, int64_t a);

/* Nonzero where memory ran out while pairs came (neighbour lists, the nearest). */
extern bool tc_graph_failed(const TcGraph *g);

/*
 * TC_GRAPH_NEIGHBORS and TC_GRAPH_NEAREST: at most bytes for the entries
 * of lists that grow (without k, or k past 16; smaller k take n rows made
 * whole), so that every match of a dense join cannot take the host's
 * memory; 0: no limit.  Past it the graph has failed and
 * tc_graph_over_limit says why.  Before the first pair.
 */
extern void tc_graph_limit_lists(TcGraph *g, size_t bytes);
extern bool tc_graph_over_limit(const TcGraph *g);
/*
 * Whether g keeps lists that grow (TC_GRAPH_NEIGHBORS or
 * TC_GRAPH_NEAREST without k, or k past 16): its memory then follows the
 * pairs, not the rows.
 */
extern bool tc_graph_lists_grow(const TcGraph *g);

/* Point i's degree (TC_GRAPH_DEGREES, TC_GRAPH_DBSCAN). */
extern int64_t tc_graph_degree(const TcGraph *g, int64_t i);

/*
 * Point i's neighbours, nearest first, ties by smaller id (the k nearest
 * where k was given): *len indices into *idx and dists into *dist, valid
 * until the next call.  Sorts i's list on its first call.
 */
extern void tc_graph_neighbors(TcGraph *g, int64_t i, const int64_t **idx, const double **dist,
							   int *len);

/* Each point's component, named by its smallest id, into out[n]. */
extern void tc_graph_components(TcGraph *g, int64_t *out);

/*
 * DBSCAN: after the first join, the core points (degree + 1 >= min_points:
 * min_points counts the point itself); the graph then takes the second
 * join's pairs as links.
 */
extern void tc_graph_dbscan_cores(TcGraph *g, int64_t min_points);

/*
 * After the second join: each point's cluster (-1: noise) and core flag.
 * Core points linked by pairs share a cluster; a border point (not core,
 * within eps of a core point) joins the cluster of its nearest core
 * neighbour, ties by the smaller id; clusters are numbered 0, 1, ... in
 * the order of their smallest member id.
 */
extern void tc_graph_dbscan(TcGraph *g, int32_t *cluster, bool *is_core);

/*
 * DBSCAN of p into g (TC_GRAPH_DBSCAN) on the caller's thread without the
 * joins, in two or three dimensions under the Euclidean metric: a grid of
 * cells eps / sqrt(d) wide, proven bounds on whole cells, and the
 * contract's distance for every other decision (dbscan_grid.c); the same
 * answer as the joins (then tc_graph_dbscan).  *done false where it does
 * not apply (other d, eps 0, a grid too fine for its keys): run the joins.
 * threads share its independent phases (the caller's among them).  poll is
 * called now and then on the caller's thread and must return (not leave by
 * longjmp: threads may be running); non-zero stops it (TC_STOPPED), and a
 * later call starts again.
 */
extern TcStatus tc_graph_dbscan_grid(TcGraph *g, const TcPoints *p, double eps, int64_t min_points,
									 int threads, int (*poll) (void *arg), void *poll_arg,
									 bool *done, TcError *err);

/*
 * The fold (TcSink.fold) a GPU join may run on the device for the graph's
 * next join, or NULL (neighbour lists without k or with k past
 * TC_FOLD_MAX_K; out of memory: tc_graph_failed).  Call
 * tc_graph_after_join after each join: it takes in what the device
 * folded (a list's k nearest), and says whether the graph needs one more
 * join over the same points: DBSCAN's border ties, after links folded on
 * the device.
 */
extern TcDeviceFold *tc_graph_fold(TcGraph *g);
extern bool tc_graph_after_join(TcGraph *g);

#ifdef __cplusplus
}
#endif

#endif							/* TCJOIN_ENGINE_H */
