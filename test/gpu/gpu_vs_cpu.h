/*
 * gpu_vs_cpu.h
 *		What the GPU-against-CPU program's files share: the run's random
 *		numbers, a join into a collecting sink, the report of a case, the
 *		comparison of two joins' pairs, the cosine and inner-product cases
 *		(gpu_vs_cpu_dot.c), the two-set joins (gpu_vs_cpu_join.c), their k
 *		nearest (gpu_vs_cpu_nearest.c) and the GPUs a join may use
 *		(gpu_vs_cpu_devices.c).
 */
#ifndef TCJOIN_GPU_VS_CPU_H
#define TCJOIN_GPU_VS_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "gpu.h"

/* A sink's pairs, and its polls (to stop a join on cue). */
typedef struct Collect
{
	TcPair	   *pairs;
	size_t		n;
	size_t		cap;
	uint64_t	digest;			/* order-independent sum of pair hashes */
	int			polls;
	int			stop_after_polls;	/* > 0: poll asks to stop */
	double		stop_at;		/* > 0: poll asks to stop from this time on */
	double		stopped_at;		/* when it first asked */
	size_t		stop_after_pairs;	/* > 0: poll asks to stop once this many came */
	bool		two_set;		/* set by run_join: pairs kept as (a, b), not swapped */
} Collect;

extern uint64_t next_u64(void);
extern double unit(void);
extern int	cmp_pair(const void *x, const void *y);
/* One self-join of p into c, with the run's --override. */
extern TcStatus run(const TcPoints *p, TcJoinParams params, Collect *c, TcJoinStats *stats,
					TcError *err);
/* The same for a join of a with b (b NULL: a self-join) */
extern TcStatus run_join(const TcPoints *a, const TcPoints *b, TcJoinParams params, Collect *c,
						 TcJoinStats *stats, TcError *err);
/* A case's line, counted as passed or failed. */
extern void report(int ok, const char *fmt,...) __attribute__((format(printf, 2, 3)));
/* The same pairs with the same dists, bit for bit (both may be sorted). */
extern bool same_pairs(Collect *c1, Collect *c2);

/* gpu_vs_cpu.c: the matrix's data (kinds: uniform, expo, gauss, fp16edge, far, dups, ...) */
extern float *make_points(const char *kind, int64_t n, int d);
/* eps with about k neighbours a point, from a sample of the first n points */
extern double eps_for(const float *x, int64_t n, int d, double k);
/* Gaussian clusters of about 128 points */
extern float *make_clusters(int64_t n, int d);
/* One case on the CPU, then on the GPU with tensor cores off and on: the same pairs. */
extern void compare_case(const char *kind, int64_t n, int d, double eps, bool include_self,
						 TcMethod method, const void *data, TcElemType type);
/* --override: the developer overrides every join of this run takes */
extern TcOverrides g_overrides;
/*
 * --devices (gpu_vs_cpu_devices.c): the GPUs every join of this run may
 * use, into params (the CPU ignores them); and, after a join, its GPUs and
 * shares checked against that list (gpus_summary's case counts the joins
 * unlike it).
 */
extern void take_devices(TcJoinParams *params);
/* How many GPUs (each counted once) the list lets a join use: work scaled to it stays long */
extern int	distinct_gpus(void);
extern void note_gpus(TcStatus st, const TcJoinStats *stats);
/* gpu_vs_cpu_devices.c: --devices parsed; checked against the GPUs seen; the closing case */
extern bool devices_option(const char *arg);
extern bool devices_start(int seen);
extern void gpus_summary(void);

/* gpu_vs_cpu_modes.c: the GPU's failure modes and its paths forced */
extern void clustered_cases(void);
extern void failure_modes(void);
extern void streamed_cases(void);
extern void cluster_choice(void);
extern void limit_too_small(void);
extern void result_buffer_halved(void);
extern void auto_cases(void);
extern void small_buffer(bool with_grid);

/* gpu_vs_cpu_graph.c: counts, degrees, components and DBSCAN folded on the device */
extern void graph_cases(bool quick);

/*
 * A graph's sink that counts the pairs the host was handed (none where the
 * GPU folded them, or kept the k nearest): counted_emit hands them to the
 * graph, counted_reduce is the graph's reducer for the CPU's workers.
 */
typedef struct Counted
{
	TcGraph    *g;
	uint64_t	emitted;
} Counted;
extern int	counted_emit(void *arg, const TcPair *pairs, size_t count);
extern void counted_reduce(void *arg, int64_t a, int64_t b, double dist);

/* gpu_vs_cpu_join.c: two-set joins (a against b) */
extern void join_cases(bool quick);
/* the contract's dist of row i of x and row j of y (norms: cosine's, else NULL) */
extern double ref_dist(TcMetric metric, const TcPoints *x, int64_t i, const double *nx,
					   const TcPoints *y, int64_t j, const double *ny);
/* eps with about k partners a point in a pool of n */
extern double pool_eps(const float *x, int64_t n, int d, double k);

/* gpu_vs_cpu_nearest.c: a two-set join's k nearest within eps */
extern void nearest_cases(bool quick);

/* gpu_vs_cpu_dot.c */
extern void dot_matrix(bool quick, double seconds, double start);
extern void dot_fixed_cases(bool quick);

#endif							/* TCJOIN_GPU_VS_CPU_H */
