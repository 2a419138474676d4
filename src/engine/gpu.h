/*
 * gpu.h
 *		The CUDA back ends behind a plain C interface.
 *
 * The engine (C) plans the join and calls these functions; everything CUDA
 * stays in cuda/.  Built without CUDA (USE_CUDA=0), gpu_none.c answers
 * instead, saying why no GPU is usable.
 *
 * The CUDA runtime is linked statically and first touched by
 * tc_gpu_count(), inside a join in a backend: never in the postmaster, and
 * where no driver exists it simply reports no GPU.
 */
#ifndef TCJOIN_GPU_H
#define TCJOIN_GPU_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "grid_plan.h"

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct TcGpuInfo
{
	int			device;
	char		name[256];
	int			major;			/* compute capability */
	int			minor;
	size_t		total_memory;
	size_t		free_memory;
	int			sm_count;
} TcGpuInfo;

/*
 * Usable GPUs (0 when none); with none, reason (if not NULL) says why, e.g.
 * "tcjoin was built without CUDA support" or the CUDA runtime's message.
 */
extern int	tc_gpu_count(char *reason, size_t reasonlen);

/* Fill up to max entries; returns how many GPUs there are. */
extern int	tc_gpu_list(TcGpuInfo *out, int max, char *reason, size_t reasonlen);

/*
 * One GPU's properties (free_memory left 0), without creating its context,
 * which costs a backend's first GPU join much of its time.  False when
 * there is no such GPU.
 */
extern bool tc_gpu_info(int device, TcGpuInfo *out);

/* Whether this process has made the device's context already (no CUDA call). */
extern bool tc_gpu_ready(int device);

/*
 * Start the runtime and device 0's context on a thread of their own, then
 * call warm (if not NULL) on that thread, so that the caller's work
 * meanwhile (reading the table) hides their cost; every other entry point
 * waits for it first.  warm may run GPU joins (tc_gpu_warm_kernels).
 * tc_gpu_prewarm_wait waits for it (before the process exits).
 */
extern void tc_gpu_prewarm(void (*warm) (void));
extern void tc_gpu_prewarm_wait(void);

/*
 * Whether a prewarm made the context since the last claim, and the seconds
 * the caller's thread waited for it meanwhile (both then cleared): the
 * first GPU join after it reports the context as its own.
 */
extern bool tc_gpu_prewarm_claim(double *waited);

typedef struct TcGpuJoin TcGpuJoin;

/*
 * Join on the GPU along the given grid plan (plan->k == 0: brute force over
 * one cell), streaming pairs to sink: a with itself where b is NULL, else a
 * against b (each pair (i of a, j of b) once, TcPair.a = i, TcPair.b = j;
 * a and b may differ in element type; sink->fold only TC_FOLD_NEAREST).  *handle
 * is set before anything is allocated, so that if sink leaves by longjmp
 * the caller can still release the GPU with tc_gpu_join_free(*handle).
 * stats is filled in as the join goes.
 */
extern TcStatus tc_gpu_grid_join(TcGpuJoin **handle, const TcPoints *a,
								 const TcPoints *b, const TcJoinParams *params,
								 const TcGridPlan *plan, double thr,
								 const TcSink *sink, TcJoinStats *stats,
								 TcError *err);

/* The most points FP16 brute force takes (positions are 32-bit; tiles of 128). */
#define TC_GPU_BRUTE_MAX_N ((int64_t) INT_MAX - 128)

/*
 * Join by brute force on FP16 tensor cores, exactly: a filter with a
 * proven error band (fp16_filter.h), then the contract's sum for every pair
 * it keeps.  With params->exact false, FaSTED's approximate semantics
 * instead (the FP16-32 product decides; dist from an FP32 dot).  b, handle,
 * sink and stats as for tc_gpu_grid_join; a and b of the same element type.
 */
extern TcStatus tc_gpu_brute_join(TcGpuJoin **handle, const TcPoints *a,
								  const TcPoints *b, const TcJoinParams *params,
								  double thr, const TcSink *sink,
								  TcJoinStats *stats, TcError *err);

/* Stop any kernel in flight, wait for it, and free everything.  NULL: no-op. */
extern void tc_gpu_join_free(TcGpuJoin *handle);

#ifdef __cplusplus
}
#endif

#endif							/* TCJOIN_GPU_H */
