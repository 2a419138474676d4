/*
 * device.cu
 *		Finding GPUs.  The CUDA runtime is linked statically, so this loads
 *		where no driver is installed; the runtime then reports no device.
 */
#include <cuda_runtime.h>

#include <pthread.h>
#include <signal.h>

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

static bool prewarm_running;	/* the caller's thread's only */
static pthread_t prewarm_thread;
static __thread bool in_prewarm;	/* this is the prewarm's thread */
static bool prewarm_made;		/* it made the context, and no join has said so yet */
static double prewarm_waited;	/* the caller's seconds blocked on it, since then */

static bool opened[TC_MAX_DEVICES];

/* On the caller's thread: the prewarm's work done first. */
static inline void
prewarm_done(void)
{
	if (!in_prewarm && prewarm_running)
	{
		double		t0 = tc_now();

		pthread_join(prewarm_thread, NULL);
		prewarm_running = false;
		prewarm_waited += tc_now() - t0;
		prewarm_made = opened[0];
	}
}

extern "C" int
tc_gpu_count(char *reason, size_t reasonlen)
{
	prewarm_done();
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

extern "C" bool
tc_gpu_ready(int device)
{
	prewarm_done();
	return device >= 0 && device < TC_MAX_DEVICES && opened[device];
}

/*
 * A device's context is created once, with every signal blocked, so that
 * the threads the driver starts with it never run the host's handlers.
 */
cudaError_t
gpu_open_device(int device)
{
	prewarm_done();
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

/*
 * The context made ahead, while the caller reads the table (a backend's
 * first GPU join otherwise waits for it): one thread, every signal blocked,
 * that starts the runtime and creates device 0's context.  Every entry
 * point below that touches CUDA state joins it first, so the runtime is
 * never used from two threads at once.
 */
static void (*prewarm_warm) (void);

static void *
prewarm_main(void *)
{
	in_prewarm = true;
	if (tc_gpu_count(NULL, 0) > 0 && gpu_open_device(0) == cudaSuccess && prewarm_warm != NULL)
		prewarm_warm();
	cudaGetLastError();
	return NULL;
}

extern "C" void
tc_gpu_prewarm(void (*warm) (void))
{
	sigset_t	all,
				old;

	if (prewarm_running || opened[0] || cached_count == 0)
		return;
	prewarm_warm = warm;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	prewarm_running = pthread_create(&prewarm_thread, NULL, prewarm_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

extern "C" void
tc_gpu_prewarm_wait(void)
{
	prewarm_done();
}

/* the GPUs' threads of one join claim at once (gpu_join_begin): one of them gets it */
static pthread_mutex_t prewarm_claim_mu = PTHREAD_MUTEX_INITIALIZER;

extern "C" bool
tc_gpu_prewarm_claim(double *waited)
{
	bool		made;

	prewarm_done();
	pthread_mutex_lock(&prewarm_claim_mu);
	made = prewarm_made;
	*waited = prewarm_waited;
	prewarm_made = false;
	prewarm_waited = 0;
	pthread_mutex_unlock(&prewarm_claim_mu);
	return made;
}

/* Properties are asked once a process: they do not change under it. */
static TcGpuInfo cached_info[TC_MAX_DEVICES];
static bool have_info[TC_MAX_DEVICES];

extern "C" bool
tc_gpu_info(int device, TcGpuInfo *out)
{
	cudaDeviceProp prop;

	prewarm_done();

	memset(out, 0, sizeof(*out));
	if (device < 0 || device >= TC_MAX_DEVICES || device >= tc_gpu_count(NULL, 0))
		return false;
	if (!have_info[device])
	{
		TcGpuInfo  *c = &cached_info[device];

		if (cudaGetDeviceProperties(&prop, device) != cudaSuccess)
		{
			cudaGetLastError();
			return false;
		}
		c->device = device;
		snprintf(c->name, sizeof(c->name), "%s", prop.name);
		c->major = prop.major;
		c->minor = prop.minor;
		c->total_memory = prop.totalGlobalMem;
		c->sm_count = prop.multiProcessorCount;
		have_info[device] = true;
	}
	*out = cached_info[device];
	return true;
}

extern "C" int
tc_gpu_list(TcGpuInfo *out, int max, char *reason, size_t reasonlen)
{
	int			n = tc_gpu_count(reason, reasonlen);

	for (int i = 0; i < n && i < max; i++)
	{
		size_t		free_b = 0,
					total_b = 0;

		if (!tc_gpu_info(i, &out[i]))
		{
			out[i].device = i;
			continue;
		}
		if (gpu_open_device(i) == cudaSuccess &&
			cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
			out[i].free_memory = free_b;
		cudaGetLastError();
	}
	return n;
}
