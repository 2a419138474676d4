/*
 * device.cu
 *		Finding GPUs.  The CUDA runtime is linked statically, so this loads
 *		where no driver is installed; the runtime then reports no device.
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "gpu.h"
#include "join_state.h"

static void
set_reason(char *reason, size_t len, const char *msg)
{
	if (reason != NULL && len > 0)
		snprintf(reason, len, "%s", msg);
}

/*
 * Asked once per process: devices do not come and go under a backend, and
 * where there is no driver every join would otherwise pay for the lookup.
 */
static int	cached_count = -1;
static char cached_reason[256];

extern "C" int
tc_gpu_count(char *reason, size_t reasonlen)
{
	if (cached_count < 0)
	{
		int			n = 0;

		/* The runtime's first call starts the driver, and its threads. */
		cudaError_t rc = with_signals_blocked([&n] { return cudaGetDeviceCount(&n); });

		cached_reason[0] = '\0';
		if (rc != cudaSuccess)
		{
			snprintf(cached_reason, sizeof(cached_reason),
					 "CUDA reports no usable device: %s", cudaGetErrorString(rc));
			cudaGetLastError();
			n = 0;
		}
		else if (n == 0)
			snprintf(cached_reason, sizeof(cached_reason), "CUDA found no device");
		cached_count = n;
	}
	if (cached_count == 0)
		set_reason(reason, reasonlen, cached_reason);
	return cached_count;
}

/*
 * A device's context is created once, with every signal blocked, so that
 * the threads the driver starts with it never run the host's handlers.
 */
cudaError_t
gpu_open_device(int device)
{
	static bool opened[TC_MAX_DEVICES];
	bool		known = device >= 0 && device < TC_MAX_DEVICES;
	cudaError_t rc;

	if (known && opened[device])
		return cudaSetDevice(device);
	rc = with_signals_blocked([device] {
		cudaError_t r = cudaSetDevice(device);

		/* cudaFree(0) creates the context where cudaSetDevice does not */
		return r == cudaSuccess ? cudaFree(0) : r;
	});
	if (rc == cudaSuccess && known)
		opened[device] = true;
	return rc;
}

extern "C" int
tc_gpu_list(TcGpuInfo *out, int max, char *reason, size_t reasonlen)
{
	int			n = tc_gpu_count(reason, reasonlen);

	for (int i = 0; i < n && i < max; i++)
	{
		cudaDeviceProp prop;
		size_t		free_b = 0,
					total_b = 0;

		memset(&out[i], 0, sizeof(out[i]));
		out[i].device = i;
		if (cudaGetDeviceProperties(&prop, i) != cudaSuccess)
			continue;
		snprintf(out[i].name, sizeof(out[i].name), "%s", prop.name);
		out[i].major = prop.major;
		out[i].minor = prop.minor;
		out[i].total_memory = prop.totalGlobalMem;
		out[i].sm_count = prop.multiProcessorCount;
		if (gpu_open_device(i) == cudaSuccess &&
			cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
			out[i].free_memory = free_b;
		cudaGetLastError();
	}
	return n;
}
