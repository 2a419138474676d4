/*
 * gpu_none.c
 *		The GPU interface (gpu.h) in a build without CUDA: no GPU is
 *		ever usable, and the reason says so.
 */
#include <stdio.h>

#include "gpu.h"

static const char *const no_cuda = "tcjoin was built without CUDA support";

int
tc_gpu_count(char *reason, size_t reasonlen)
{
	if (reason != NULL && reasonlen > 0)
		snprintf(reason, reasonlen, "%s", no_cuda);
	return 0;
}

int
tc_gpu_list(TcGpuInfo *out, int max, char *reason, size_t reasonlen)
{
	(void) out;
	(void) max;
	return tc_gpu_count(reason, reasonlen);
}

bool
tc_gpu_info(int device, TcGpuInfo *out)
{
	(void) device;
	(void) out;
	return false;
}

bool
tc_gpu_ready(int device)
{
	(void) device;
	return false;
}

void
tc_gpu_prewarm(void (*warm) (void))
{
	(void) warm;
}

void
tc_gpu_prewarm_wait(void)
{
}

bool
tc_gpu_prewarm_claim(double *waited)
{
	*waited = 0;
	return false;
}

/* Every join: no handle, and the reason. */
static TcStatus
no_gpu(TcGpuJoin **handle, TcError *err)
{
	*handle = NULL;
	err->status = TC_ERR_NO_GPU;
	snprintf(err->message, sizeof(err->message), "%s", no_cuda);
	return TC_ERR_NO_GPU;
}

TcStatus
tc_gpu_grid_join(TcGpuJoin **handle, const TcPoints *a, const TcPoints *b,
				 const TcJoinParams *params, const TcGridPlan *plan, double thr,
				 const TcSink *sink, TcJoinStats *stats, TcError *err)
{
	(void) a;
	(void) b;
	(void) params;
	(void) plan;
	(void) thr;
	(void) sink;
	(void) stats;
	return no_gpu(handle, err);
}

TcStatus
tc_gpu_brute_join(TcGpuJoin **handle, const TcPoints *a, const TcPoints *b,
				  const TcJoinParams *params, double thr, const TcSink *sink,
				  TcJoinStats *stats, TcError *err)
{
	(void) a;
	(void) b;
	(void) params;
	(void) thr;
	(void) sink;
	(void) stats;
	return no_gpu(handle, err);
}

void
tc_gpu_join_free(TcGpuJoin *handle)
{
	(void) handle;
}
