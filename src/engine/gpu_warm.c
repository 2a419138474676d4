/*
 * gpu_warm.c
 *		A backend's GPU kernels loaded ahead of its first GPU join.
 *
 * The CUDA runtime loads a kernel's code on its first launch, and the pinned
 * ring is allocated by a process's first join that streams pairs: together
 * a few tens of milliseconds that the first join would otherwise pay after
 * its table is read.  The prewarm thread (tc_device_prewarm) runs two tiny
 * self-joins through the very paths a user's join takes, the GPU grid on
 * 2-D points and FP16 brute force at 128 dimensions, so that their kernels,
 * the sorting library's and the ring are ready when the first join starts.
 * Their pairs are dropped; a failure (the GPU full, say) only leaves the
 * work to the first join, as before.
 */
#include <stdlib.h>

#include "engine_int.h"

#define WARM_GRID_N 4096
#define WARM_BRUTE_N 1024
#define WARM_BRUTE_D 128

static int
drop_pairs(void *arg, const TcPair *pairs, size_t count)
{
	(void) arg;
	(void) pairs;
	(void) count;
	return 0;
}

/* Uniform values in [0, 1) from a fixed linear congruential sequence. */
static void
fill_points(float *x, size_t count)
{
	uint64_t	s = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < count; i++)
	{
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		x[i] = (float) (s >> 40) / (float) (1 << 24);
	}
}

static void
warm_join(int64_t n, int32_t d, double eps)
{
	float	   *x = malloc(sizeof(float) * (size_t) n * (size_t) d);
	TcPoints	a = {x, n, d, TC_FLOAT4};
	TcJoinParams params = {0};
	TcSink		sink = {drop_pairs, NULL, NULL, 0, NULL, NULL, NULL};
	TcError		err;
	TcJoin	   *join;

	if (x == NULL)
		return;
	fill_points(x, (size_t) n * (size_t) d);
	params.eps = eps;
	params.method = TC_METHOD_AUTO;
	params.device = TC_DEVICE_GPU;
	params.tensor_cores = TC_TENSOR_AUTO;
	params.exact = true;
	params.threads = 1;
	params.gpu_full = TC_GPU_FULL_ERROR;
	params.ndevices = 1;		/* device 0's kernels: what the prewarm made */
	join = tc_join_create(&a, NULL, &params, &err);
	if (join != NULL)
		(void) tc_join_run(join, &sink, &err);
	tc_join_destroy(join);
	free(x);
}

void
tc_gpu_warm_kernels(void)
{
	warm_join(WARM_GRID_N, 2, 0.02);
	warm_join(WARM_BRUTE_N, WARM_BRUTE_D, 3.0);
}
