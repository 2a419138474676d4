/*
 * gpu_vs_cpu.h
 *		What the GPU-against-CPU program's files share: the run's random
 *		numbers, a join into a collecting sink, the report of a case, the
 *		comparison of two joins' pairs, and the cosine and inner-product
 *		cases (gpu_vs_cpu_dot.c).
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
} Collect;

extern uint64_t next_u64(void);
extern double unit(void);
extern int	cmp_pair(const void *x, const void *y);
/* One self-join of p into c, with the run's --override. */
extern TcStatus run(const TcPoints *p, TcJoinParams params, Collect *c, TcJoinStats *stats,
					TcError *err);
/* A case's line, counted as passed or failed. */
extern void report(int ok, const char *fmt,...) __attribute__((format(printf, 2, 3)));
/* The same pairs with the same dists, bit for bit (both may be sorted). */
extern bool same_pairs(Collect *c1, Collect *c2);

/* gpu_vs_cpu_dot.c */
extern void dot_matrix(bool quick, double seconds, double start);
extern void dot_fixed_cases(bool quick);

#endif							/* TCJOIN_GPU_VS_CPU_H */
