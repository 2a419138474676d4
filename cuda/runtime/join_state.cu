/*
 * join_state.cu
 *		Host code the GPU joins share (see join_state.h).
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>

#include "join_state.h"

/* The process's rings, kept for its next joins: one a GPU a join on several uses at once. */
static TcPair *ring_cache[TC_MAX_DEVICES];
static std::atomic<int> ring_cache_busy[TC_MAX_DEVICES];

TcStatus
gpu_error(TcError *err, const char *what, cudaError_t rc)
{
	/* Name the CUDA call, not its arguments. */
	const char *paren = strchr(what, '(');
	int			len = paren ? (int) (paren - what) : (int) strlen(what);

	/* out of device or pinned memory: the engine may wait or go to the CPU */
	TcStatus	st = rc == cudaErrorMemoryAllocation ? TC_ERR_GPU_FULL : TC_ERR_GPU;

	if (err)
	{
		err->status = st;
		snprintf(err->message, sizeof(err->message), "%.*s failed: %s", len, what,
				 cudaGetErrorString(rc));
	}
	cudaGetLastError();
	return st;
}

TcStatus
dev_alloc(TcGpuJoin *g, void **ptr, size_t bytes, TcError *err)
{
	*ptr = NULL;
	if (bytes == 0)
		bytes = 8;
	if (g->limit > 0 && g->used + bytes > g->limit)
	{
		if (err)
		{
			err->status = TC_ERR_NOMEM;
			snprintf(err->message, sizeof(err->message),
					 "tcjoin.gpu_memory_limit (%zu MB) is too small for this join: it needs more than %zu MB",
					 g->limit >> 20, (g->used + bytes + (1 << 20) - 1) >> 20);
		}
		return TC_ERR_NOMEM;
	}
	if (g->ndev >= (int) (sizeof(g->dev) / sizeof(g->dev[0])))
	{
		if (err)
		{
			err->status = TC_ERR_INTERNAL;
			snprintf(err->message, sizeof(err->message), "too many GPU allocations");
		}
		return TC_ERR_INTERNAL;
	}
	CHECK(cudaMalloc(ptr, bytes));
	g->dev_bytes[g->ndev] = bytes;
	g->dev[g->ndev++] = *ptr;
	g->used += bytes;
	return TC_OK;
}

/*
 * n pieces of one allocation, each 256-byte aligned: one call into the
 * driver, which several GPUs' threads otherwise take in turn.  They go
 * together, by dev_free of the first (or with the join).
 */
TcStatus
dev_alloc_parts(TcGpuJoin *g, int n, void **const ptrs[], const size_t sizes[], TcError *err)
{
	size_t		total = 0;
	char	   *base;
	TcStatus	st;

	for (int i = 0; i < n; i++)
	{
		*ptrs[i] = NULL;
		total += (std::max(sizes[i], (size_t) 8) + 255) & ~(size_t) 255;
	}
	if ((st = dev_alloc(g, (void **) &base, total, err)) != TC_OK)
		return st;
	for (int i = 0; i < n; i++)
	{
		*ptrs[i] = base;
		base += (std::max(sizes[i], (size_t) 8) + 255) & ~(size_t) 255;
	}
	return TC_OK;
}

void
dev_free(TcGpuJoin *g, void *ptr)
{
	for (int i = 0; i < g->ndev; i++)
		if (g->dev[i] == ptr)
		{
			cudaFree(ptr);
			g->used -= g->dev_bytes[i];
			--g->ndev;
			g->dev[i] = g->dev[g->ndev];
			g->dev_bytes[i] = g->dev_bytes[g->ndev];
			return;
		}
}

TcStatus
host_alloc(TcGpuJoin *g, void **ptr, size_t bytes, unsigned int flags, TcError *err)
{
	*ptr = NULL;
	if (g->nhost >= (int) (sizeof(g->host) / sizeof(g->host[0])))
	{
		err->status = TC_ERR_INTERNAL;
		snprintf(err->message, sizeof(err->message), "too many pinned host allocations");
		return TC_ERR_INTERNAL;
	}
	CHECK(cudaHostAlloc(ptr, bytes > 0 ? bytes : 8, flags));
	g->host[g->nhost++] = *ptr;
	return TC_OK;
}

TcStatus
heap_alloc(TcGpuJoin *g, void **ptr, size_t bytes, TcError *err)
{
	*ptr = NULL;
	if (g->nheap >= (int) (sizeof(g->heap) / sizeof(g->heap[0])))
	{
		err->status = TC_ERR_INTERNAL;
		snprintf(err->message, sizeof(err->message), "too many host allocations");
		return TC_ERR_INTERNAL;
	}
	*ptr = malloc(bytes);
	if (*ptr == NULL)
	{
		err->status = TC_ERR_NOMEM;
		snprintf(err->message, sizeof(err->message), "out of memory");
		return TC_ERR_NOMEM;
	}
	g->heap[g->nheap++] = *ptr;
	return TC_OK;
}

/* Ask running kernels to stop at their next work item. */
void
request_abort(TcGpuJoin *g)
{
	if (g->have_abort_stream && g->d_abort != NULL && g->h_abort != NULL)
		cudaMemcpyAsync(g->d_abort, g->h_abort, sizeof(int), cudaMemcpyHostToDevice,
						g->abort_stream);
}

void
gpu_join_quiesce(TcGpuJoin *g)
{
	/* its device current for what follows (a several-GPU join frees each GPU's here) */
	if (g->nstreams > 0 || g->ndev > 0)
		cudaSetDevice(g->device);
	request_abort(g);
	if (g->have_abort_stream)
		cudaStreamSynchronize(g->abort_stream);
	for (int i = 0; i < g->nstreams; i++)
		cudaStreamSynchronize(g->stream[i]);
}

extern "C" void
tc_gpu_join_free(TcGpuJoin *g)
{
	if (g == NULL)
		return;
	if (g->multi != NULL)
	{
		multi_gpu_free(g->multi);
		free(g);
		return;
	}
	gpu_join_quiesce(g);
	if (g->have_abort_stream)
		cudaStreamDestroy(g->abort_stream);
	for (int i = 0; i < g->nstreams; i++)
		cudaStreamDestroy(g->stream[i]);
	for (int i = 0; i < g->nevents; i++)
		cudaEventDestroy(g->ring_ev[i]);
	for (int i = 0; i < g->nkev; i++)
		cudaEventDestroy(g->kev[i / 3][i % 3]);
	if (g->have_kev_base)
		cudaEventDestroy(g->kev_base);
	if (g->ring_cached)
		ring_cache_busy[g->ring_slot].store(0);
	for (int i = 0; i < g->ndev; i++)
		cudaFree(g->dev[i]);
	for (int i = 0; i < g->nhost; i++)
		cudaFreeHost(g->host[i]);
	for (int i = 0; i < g->nheap; i++)
		free(g->heap[i]);
	cudaGetLastError();
	free(g);
}

/*
 * Wait until query() stops answering cudaErrorNotReady, polling the sink
 * about every millisecond (the poll may longjmp; tc_gpu_join_free then
 * stops the kernel through the abort flag).
 */
template <typename Q>
static TcStatus
wait_for(TcGpuJoin *g, Q query, const char *what, const TcSink *sink, TcError *err)
{
	double		next_poll = 0;

	for (;;)
	{
		cudaError_t rc = query();

		if (rc == cudaSuccess)
			return TC_OK;
		if (rc != cudaErrorNotReady)
			return gpu_error(err, what, rc);
		if (sink->poll && tc_now() >= next_poll)
		{
			if (sink->poll(sink->arg) != 0)
			{
				request_abort(g);
				return TC_STOPPED;
			}
			next_poll = tc_now() + 0.001;
		}
		usleep(10);
	}
}

TcStatus
wait_stream(TcGpuJoin *g, cudaStream_t s, const TcSink *sink, TcError *err)
{
	return wait_for(g, [s] { return cudaStreamQuery(s); }, "cudaStreamQuery", sink, err);
}

TcStatus
gpu_sync(TcGpuJoin *g, cudaStream_t s, TcError *err)
{
	return wait_stream(g, s, g->sink, err);
}

TcStatus
gpu_poll(TcGpuJoin *g, const TcSink *sink)
{
	if (sink->poll == NULL || tc_now() < g->next_poll)
		return TC_OK;
	if (sink->poll(sink->arg) != 0)
	{
		request_abort(g);
		return TC_STOPPED;
	}
	g->next_poll = tc_now() + 0.001;
	return TC_OK;
}

/* Hand the batch's pairs (already in TcPair layout) to the sink. */
TcStatus
emit_pairs(const TcPair *pairs, size_t count, const TcSink *sink, TcJoinStats *stats)
{
	const size_t per = std::max((size_t) OUT_BATCH, sink->batch_hint);

	for (size_t i = 0; i < count; i += per)
	{
		size_t		m = std::min(per, count - i);

		stats->pairs += m;
		if (sink->emit(sink->arg, pairs + i, m) != 0)
			return TC_STOPPED;
	}
	return TC_OK;
}

TcStatus
wait_event(TcGpuJoin *g, cudaEvent_t ev, const TcSink *sink, TcError *err)
{
	return wait_for(g, [ev] { return cudaEventQuery(ev); }, "cudaEventQuery", sink, err);
}

void
gpu_trace_step(const TcGpuJoin *g, const char *step)
{
	if (g->ov.trace)
		fprintf(stderr, "tcjoin trace: GPU %d %s (clock %.3f)\n", g->device, step, tc_now() * 1e3);
}

/* The pinned ring: the process's cached one when free, else this join's. */
TcStatus
get_ring(TcGpuJoin *g, TcError *err)
{
	const size_t slots_bytes = sizeof(TcPair) * (size_t) RING_CHUNK * RING_SLOTS;
	const size_t bytes = slots_bytes + RING_WORDS;

	if (g->ring != NULL)
		return TC_OK;			/* already held (the upload took it) */
	/* a join on one GPU keeps one ring, on several one a GPU: pinned memory stays bounded */
	const int	slots = std::min(TC_MAX_DEVICES, g->share != NULL ? g->share->ngpus : 1);

	for (int k = 0; k < slots && g->ring == NULL; k++)
	{
		if (ring_cache_busy[k].exchange(1) != 0)
			continue;
		if (ring_cache[k] == NULL)
		{
			double		t0 = tc_now();
			cudaError_t rc = cudaHostAlloc((void **) &ring_cache[k], bytes, cudaHostAllocDefault);

			g->stats->gpu_setup_seconds += tc_now() - t0;

			if (rc != cudaSuccess)
			{
				ring_cache[k] = NULL;
				ring_cache_busy[k].store(0);
				return gpu_error(err, "cudaHostAlloc", rc);
			}
		}
		g->ring = ring_cache[k];
		g->ring_cached = true;
		g->ring_slot = k;
	}
	if (g->ring == NULL)
	{
		TcStatus	st;

		if ((st = host_alloc(g, (void **) &g->ring, bytes, cudaHostAllocDefault, err)) != TC_OK)
			return st;
	}
	g->ring_words = (char *) g->ring + slots_bytes;
	for (int i = 0; i < RING_SLOTS; i++)
	{
		CHECK(cudaEventCreateWithFlags(&g->ring_ev[i], cudaEventDisableTiming));
		g->nevents++;
	}
	return TC_OK;
}

/*
 * bytes of device memory to the host through the pinned ring: chunk copies
 * on stream s, up to RING_SLOTS in flight, each landed chunk handed to
 * take(its pinned slot, its offset, its bytes) in order, before its slot
 * takes another.  The ring is held already (get_ring).
 */
template <typename Take>
static TcStatus
ring_from_device(TcGpuJoin *g, cudaStream_t s, const void *src, size_t bytes, const TcSink *sink,
				 TcError *err, Take take)
{
	const size_t chunk = sizeof(TcPair) * (size_t) RING_CHUNK;
	const size_t nchunks = (bytes + chunk - 1) / chunk;
	size_t		issued = 0;
	TcStatus	st;

	for (size_t done = 0; done < nchunks; done++)
	{
		while (issued < nchunks && issued - done < RING_SLOTS)
		{
			const int	slot = (int) (issued % RING_SLOTS);
			const size_t off = issued * chunk;

			CHECK(cudaMemcpyAsync((char *) g->ring + (size_t) slot * chunk, (const char *) src + off,
								  std::min(chunk, bytes - off), cudaMemcpyDeviceToHost, s));
			CHECK(cudaEventRecord(g->ring_ev[slot], s));
			issued++;
		}

		const int	slot = (int) (done % RING_SLOTS);
		const size_t off = done * chunk;

		if ((st = wait_event(g, g->ring_ev[slot], sink, err)) != TC_OK)
			return st;
		if ((st = take((char *) g->ring + (size_t) slot * chunk, off, std::min(chunk, bytes - off))) != TC_OK)
			return st;
	}
	return TC_OK;
}

/*
 * Bring a finished batch's count pairs to the host and the sink, each
 * chunk handed to the sink as soon as it lands.
 */
TcStatus
drain(TcGpuJoin *g, cudaStream_t s, const PairDev *d_pairs, unsigned int count,
	  const TcSink *sink, TcJoinStats *stats, TcError *err)
{
	if (g->fold)
		return fold_pairs(g, s, d_pairs, count, stats, err);
	return ring_from_device(g, s, d_pairs, sizeof(PairDev) * (size_t) count, sink, err,
							[&](char *pin, size_t, size_t m) {
								return emit_pairs((const TcPair *) pin, m / sizeof(TcPair), sink, stats);
							});
}

/*
 * Host copies to and from the pinned ring: eight threads a slot measured
 * faster than four or sixteen (docs/performance.md).
 */
#define COPY_THREADS 8

static void
parallel_copy(char *dst, const char *src, size_t m)
{
	std::thread th[COPY_THREADS];

	with_signals_blocked([&] {
		for (int t = 0; t < COPY_THREADS; t++)
		{
			size_t		lo = m * t / COPY_THREADS,
						hi = m * (t + 1) / COPY_THREADS;

			/* a thread that cannot start leaves its part to this one (no exception escapes) */
			try
			{
				th[t] = std::thread([=] { memcpy(dst + lo, src + lo, hi - lo); });
			}
			catch (...)
			{
				memcpy(dst + lo, src + lo, hi - lo);
			}
		}
		return 0;
	});
	for (int t = 0; t < COPY_THREADS; t++)
		if (th[t].joinable())
			th[t].join();
}

/*
 * Copy bytes from the caller's (pageable) memory to the device through the
 * pinned ring: host threads copy each chunk into a free slot while the
 * previous slots' copies cross the link.  A plain copy from pageable
 * memory reaches a fraction of the link's rate.
 */
TcStatus
upload(TcGpuJoin *g, void *dst, const void *src, size_t bytes, cudaStream_t s,
	   const TcSink *sink, TcError *err)
{
	const size_t chunk = sizeof(TcPair) * (size_t) RING_CHUNK;
	size_t		nchunks = (bytes + chunk - 1) / chunk;
	TcStatus	st;

	if ((st = get_ring(g, err)) != TC_OK)
		return st;
	for (size_t k = 0; k < nchunks; k++)
	{
		int			slot = (int) (k % RING_SLOTS);
		size_t		off = k * chunk;
		size_t		m = std::min(chunk, bytes - off);
		char	   *pin = (char *) g->ring + (size_t) slot * chunk;

		/* the slot's last copy has left it */
		if (k >= RING_SLOTS && (st = wait_event(g, g->ring_ev[slot], sink, err)) != TC_OK)
			return st;
		if ((st = gpu_poll(g, sink)) != TC_OK)
			return st;
		parallel_copy(pin, (const char *) src + off, m);
		CHECK(cudaMemcpyAsync((char *) dst + off, pin, m, cudaMemcpyHostToDevice, s));
		CHECK(cudaEventRecord(g->ring_ev[slot], s));
	}
	return wait_stream(g, s, sink, err);
}

/*
 * upload's reverse: bytes of device memory into the caller's pageable
 * memory through the pinned ring, host threads copying each landed chunk
 * out while the next ones cross the link.
 */
TcStatus
download(TcGpuJoin *g, void *dst, const void *src, size_t bytes, cudaStream_t s,
		 const TcSink *sink, TcError *err)
{
	TcStatus	st;

	if ((st = get_ring(g, err)) != TC_OK)
		return st;
	return ring_from_device(g, s, src, bytes, sink, err, [&](char *pin, size_t off, size_t m) {
		parallel_copy((char *) dst + off, pin, m);
		return TC_OK;
	});
}

/*
 * The join's device, streams, events and abort flag.  Run with every
 * signal blocked (gpu_join_begin), in case the driver starts a thread for
 * any of them; it calls no sink.
 */
static TcStatus
open_resources(TcGpuJoin *g, TcError *err)
{
	TcStatus	st;

	CHECK(gpu_open_device(g->device));
	for (int i = 0; i < 2; i++)
	{
		CHECK(cudaStreamCreateWithFlags(&g->stream[i], cudaStreamNonBlocking));
		g->nstreams++;
	}
	for (int i = 0; i < 6; i++)
	{
		CHECK(cudaEventCreate(&g->kev[i / 3][i % 3]));
		g->nkev++;
	}
	CHECK(cudaEventCreate(&g->kev_base));
	g->have_kev_base = true;
	CHECK(cudaStreamCreateWithFlags(&g->abort_stream, cudaStreamNonBlocking));
	g->have_abort_stream = true;
	if ((st = host_alloc(g, (void **) &g->h_abort, sizeof(int), cudaHostAllocDefault, err)) != TC_OK ||
		(st = dev_alloc(g, (void **) &g->d_abort, sizeof(int), err)) != TC_OK)
		return st;
	*g->h_abort = 1;
	CHECK(cudaMemset(g->d_abort, 0, sizeof(int)));
	return TC_OK;
}

TcStatus
gpu_join_begin(TcGpuJoin **handle, const TcPoints *a, const TcJoinParams *params,
			   GpuShare *share, int index, const TcSink *sink, TcJoinStats *stats, TcError *err)
{
	TcGpuJoin  *g = (TcGpuJoin *) calloc(1, sizeof(TcGpuJoin));
	TcStatus	st;
	int			ndev;
	char		reason[256];
	double		t0;

	*handle = g;
	if (g == NULL)
	{
		err->status = TC_ERR_NOMEM;
		snprintf(err->message, sizeof(err->message), "out of memory");
		return TC_ERR_NOMEM;
	}
	g->share = share;
	g->share_index = index;
	if (a->n >= (int64_t) INT32_MAX)
	{
		err->status = TC_ERR_INVALID;
		snprintf(err->message, sizeof(err->message),
				 "the GPU join takes at most %d points", INT32_MAX - 1);
		return TC_ERR_INVALID;
	}
	ndev = tc_gpu_count(reason, sizeof(reason));
	if (ndev < 1)
	{
		err->status = TC_ERR_NO_GPU;
		snprintf(err->message, sizeof(err->message), "%s", reason);
		return TC_ERR_NO_GPU;
	}
	g->device = params->ndevices > 0 ? params->devices[0] : 0;
	g->limit = params->gpu_memory_limit;
	g->ov = params->overrides;
	g->sink = sink;
	g->stats = stats;
	{
		/* a context a prewarm made for this join is this join's, and so is the wait for it */
		double		waited;

		stats->gpu_cold = tc_gpu_prewarm_claim(&waited) || !tc_gpu_ready(g->device);
		stats->gpu_setup_seconds += waited;
	}
	t0 = tc_now();
	st = with_signals_blocked([g, err] { return open_resources(g, err); });
	stats->gpu_setup_seconds += tc_now() - t0;
	if (st != TC_OK)
		return st;
	stats->device = "gpu";
	stats->threads = 1;
	/* one GPU, all the work (a join on several merges theirs: multi.cu) */
	stats->gpus = 1;
	stats->gpu_ids[0] = g->device;
	stats->gpu_share[0] = 1.0;

	return TC_OK;
}

TcStatus
device_digest(TcGpuJoin *g, const void *d_ptr, size_t bytes, unsigned long long *out, TcError *err)
{
	unsigned char *h = (unsigned char *) malloc(bytes > 0 ? bytes : 1);
	unsigned long long x = 1469598103934665603ull;	/* FNV-1a, a word at a time */
	TcStatus	st;

	if (h == NULL)
	{
		err->status = TC_ERR_NOMEM;
		snprintf(err->message, sizeof(err->message), "out of memory");
		return TC_ERR_NOMEM;
	}
	if ((st = gpu_sync(g, g->stream[0], err)) != TC_OK)
	{
		free(h);
		return st;
	}
	cudaError_t rc = cudaMemcpy(h, d_ptr, bytes, cudaMemcpyDeviceToHost);

	if (rc != cudaSuccess)
	{
		free(h);
		return gpu_error(err, "cudaMemcpy(digest)", rc);
	}
	for (size_t i = 0; i + 8 <= bytes; i += 8)
	{
		unsigned long long w;

		memcpy(&w, h + i, 8);
		x = (x ^ w) * 1099511628211ull;
	}
	for (size_t i = bytes / 8 * 8; i < bytes; i++)
		x = (x ^ h[i]) * 1099511628211ull;
	free(h);
	*out = x;
	return TC_OK;
}
