/*
 * join_state.h
 *		A GPU join's resources on the host: its device and pinned memory
 *		(counted against tcjoin.gpu_memory_limit), streams and events, the
 *		abort flag kernels poll, CUDA error reporting, waits that poll the
 *		sink, and the pinned ring that brings pairs home.  C++, for cuda/
 *		only; the engine sees gpu.h.
 */
#ifndef TCJOIN_JOIN_STATE_H
#define TCJOIN_JOIN_STATE_H

#include <cuda_runtime.h>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "gpu.h"
#include "pairs.cuh"

/*
 * Pairs reach the host through a ring of pinned chunks, so that copies
 * overlap the sink and pinned memory stays small.  The ring is kept for the
 * process's next join: pinning is slow, in proportion to the size pinned.
 * A join on several GPUs keeps one a GPU.
 */
#define RING_CHUNK (1u << 19)	/* pairs: 12 MB */
#define RING_SLOTS 4
#define RING_WORDS 4096			/* pinned bytes past the ring's slots (get_ring) */

#define OUT_BATCH 8192			/* pairs per sink->emit */

#define SHARE_SETS 2			/* whole sets a join uploads: a self-join's one, or a and b */

/*
 * What the GPUs of one join share (multi.cu): the queue their units of
 * work come from, and what each says of its preparation.  A join on one
 * GPU has none.
 */
struct GpuShare
{
	int			ngpus;
	int			devices[TC_MAX_DEVICES];	/* each GPU's device number */
	double		t0;				/* the join's start (tc_now), for traces on one clock */
	/* the next unit no GPU has taken: squares of tiles, pairs of blocks or work items */
	std::atomic<unsigned long long> next;
	/* set once any GPU fails or the caller stops: every other GPU stops */
	std::atomic<int> stop;
	/*
	 * Each GPU's digest of what numbers the units (the brute force's point
	 * order, the grid's sorted points), which must agree for the units to
	 * mean the same pairs everywhere (multi.cu checks).
	 */
	unsigned long long digest[TC_MAX_DEVICES];
	bool		has_digest[TC_MAX_DEVICES];
	/* the brute force's tile-pair list mode, which the GPUs must share (-1: none yet) */
	std::atomic<int> list_mode;
	/* share_agree_min's value and the GPUs that have given theirs */
	std::atomic<unsigned long long> agreed;
	std::atomic<int> agreeing;
	/*
	 * share_upload: where each GPU holds set k (of SHARE_SETS) once its own
	 * slice of it is there (NULL: not yet).  The memory stays until every
	 * GPU's thread has ended (multi_gpu_free), so a GPU may read another's
	 * even after that one has failed.
	 */
	std::atomic<void *> held[SHARE_SETS][TC_MAX_DEVICES];
	/*
	 * share_gather: where each GPU holds set k's order (the brute force's)
	 * once its own range of it is final (NULL: not yet); the same lifetime.
	 */
	std::atomic<void *> parts[SHARE_SETS][TC_MAX_DEVICES];
};

/*
 * Units [*lo, *hi) from the shared queue of n units, *hi from
 * next(lo) (a batch's end: it may depend on lo but not on the queue);
 * false once every unit is taken.
 */
template <typename Next>
static inline bool
claim_units(GpuShare *sh, unsigned long long n, Next next, unsigned long long *lo,
			unsigned long long *hi)
{
	unsigned long long c = sh->next.load();

	for (;;)
	{
		if (c >= n)
			return false;

		unsigned long long h = std::min(n, std::max(c + 1, next(c)));

		if (sh->next.compare_exchange_weak(c, h))
		{
			*lo = c;
			*hi = h;
			return true;
		}
	}
}

/*
 * Bands of units, each numbered from 0, through the one queue: sh->next
 * holds (band + 1) << QUEUE_BAND_SHIFT plus the band's next unit.  Every
 * GPU walks the bands in order, each laid out alike on every GPU (the
 * brute force's tile-pair list of a band of squares), and reaches band k
 * only once it has seen band k - 1's units all taken or the queue already
 * at band k or past it; so the queue behind band k means band k - 1 is
 * done with, and whoever finds it so opens band k.
 */
constexpr int QUEUE_BAND_SHIFT = 40;

/* The band the queue is in: -1 before the first is opened. */
static inline long long
queue_band(GpuShare *sh)
{
	return (long long) (sh->next.load() >> QUEUE_BAND_SHIFT) - 1;
}

/* Band k opened unless it is open or passed: true where this call opened it. */
static inline bool
open_band(GpuShare *sh, unsigned long long k)
{
	const unsigned long long tag = (k + 1) << QUEUE_BAND_SHIFT;
	unsigned long long c = sh->next.load();

	while (c < tag)
		if (sh->next.compare_exchange_weak(c, tag))
			return true;
	return false;
}

/*
 * claim_units within band k (open_band first), of its n units: false once
 * they are all taken or the queue has passed the band.
 */
template <typename Next>
static inline bool
claim_band_units(GpuShare *sh, unsigned long long k, unsigned long long n, Next next,
				 unsigned long long *lo, unsigned long long *hi)
{
	const unsigned long long tag = (k + 1) << QUEUE_BAND_SHIFT;
	unsigned long long c = sh->next.load();

	for (;;)
	{
		/* before the band only if it was never opened: nothing to take */
		if (c < tag || c - tag >= n)
			return false;

		unsigned long long u = c - tag,
					h = std::min(n, std::max(u + 1, next(u)));

		if (sh->next.compare_exchange_weak(c, tag + h))
		{
			*lo = u;
			*hi = h;
			return true;
		}
	}
}

/*
 * The next units of n this GPU works on: from the GPUs' queue where there
 * is one (claim_units), else in order from *hi (0 before the first); false
 * once none is left.
 */
template <typename Next>
static inline bool
take_units(GpuShare *sh, unsigned long long n, Next next, unsigned long long *lo,
		   unsigned long long *hi)
{
	if (sh != NULL)
		return claim_units(sh, n, next, lo, hi);
	if (*hi >= n)
		return false;
	*lo = *hi;
	*hi = std::min(n, std::max(*lo + 1, next(*lo)));
	return true;
}

struct TcGpuJoin
{
	int			device;
	GpuShare   *share;			/* several GPUs: what they share (NULL: this one alone) */
	int			share_index;	/* this GPU's place among them */
	struct MultiJoin *multi;	/* a several-GPU join's handle: the GPUs' own (multi.cu) */
	cudaStream_t stream[2];
	int			nstreams;
	cudaEvent_t ring_ev[RING_SLOTS];
	int			nevents;
	cudaEvent_t kev[2][3];		/* per stream: kernel start, end, and the recheck's start */
	cudaEvent_t kev_base;		/* before a run's first batch: its batches' times from it */
	bool		have_kev_base;
	bool		kev_recheck;	/* kev[.][2] is recorded: the stats split the kernels' time */
	int			nkev;
	void	   *dev[48];
	size_t		dev_bytes[48];	/* each allocation's size, for used */
	int			ndev;
	size_t		used;
	size_t		limit;
	TcOverrides ov;				/* developers' overrides (engine.h) */
	void	   *host[8];
	int			nhost;
	/*
	 * Stopping a kernel: the host copies *h_abort (pinned, 1) over *d_abort
	 * (device memory, which kernels poll per work item) on a stream of its
	 * own.  Kernels never read host memory: a read across the bus per item
	 * would cost more than the item at low d.
	 */
	int		   *h_abort;
	int		   *d_abort;
	cudaStream_t abort_stream;
	bool		have_abort_stream;
	void	   *heap[4];		/* plain host memory, freed with the join */
	int			nheap;
	const TcSink *sink;			/* polled by waits on the preparation's work */
	double		next_poll;		/* gpu_poll's next call of sink->poll */
	TcJoinStats *stats;			/* the join's, for the set-up's time */
	TcPair	   *ring;			/* RING_SLOTS x RING_CHUNK pinned pairs */
	void	   *ring_words;		/* RING_WORDS pinned bytes past them, for a batch's counters */
	bool		ring_cached;	/* one of the process's rings, held by this join */
	int			ring_slot;		/* which */
	/* the sink's fold on the device (fold.cu), and its arrays there */
	TcDeviceFold *fold;
	unsigned long long *f_deg;
	long long  *f_parent;
	unsigned char *f_core;
	unsigned long long *f_key;
	long long  *f_best;
	long long  *f_ids;
	/* the k nearest (TC_FOLD_NEAREST): k a point, a lock and the worst kept once full */
	int		   *f_len;
	int		   *f_lock;
	double	   *f_worst;
	double	   *f_ndist;
	long long  *f_nwho;
};

#define CHECK(call) \
	do { \
		cudaError_t rc_ = (call); \
		if (rc_ != cudaSuccess) \
			return gpu_error(err, #call, rc_); \
	} while (0)

/*
 * f() with every signal blocked in this thread, then the mask restored.
 * Threads started inside it (CUDA's own, when the runtime starts and a
 * device's context is created; the upload's) inherit the full mask, so the
 * host's handlers (PostgreSQL's) never run on them.  f must not call the
 * sink: a longjmp would leave the mask blocked.
 */
template <typename F>
static inline auto
with_signals_blocked(F f) -> decltype(f())
{
	sigset_t	all,
				old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	auto		r = f();

	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* Make device the current one, creating its context with signals blocked. */
extern cudaError_t gpu_open_device(int device);

/* The CUDA call's name and message into err; returns TC_ERR_GPU. */
extern TcStatus gpu_error(TcError *err, const char *what, cudaError_t rc);
/* Device memory, counted against tcjoin.gpu_memory_limit; freed with the join. */
extern TcStatus dev_alloc(TcGpuJoin *g, void **ptr, size_t bytes, TcError *err);
extern TcStatus dev_alloc_parts(TcGpuJoin *g, int n, void **const ptrs[], const size_t sizes[],
								TcError *err);
extern void dev_free(TcGpuJoin *g, void *ptr);
/* Pinned host memory, freed with the join. */
extern TcStatus host_alloc(TcGpuJoin *g, void **ptr, size_t bytes, unsigned int flags,
						   TcError *err);
/* Plain (pageable) host memory, freed with the join. */
extern TcStatus heap_alloc(TcGpuJoin *g, void **ptr, size_t bytes, TcError *err);
/* Ask running kernels to stop at their next work item. */
extern void request_abort(TcGpuJoin *g);
/* Wait for a stream or an event, polling the sink about every millisecond. */
extern TcStatus wait_stream(TcGpuJoin *g, cudaStream_t s, const TcSink *sink, TcError *err);
extern TcStatus wait_event(TcGpuJoin *g, cudaEvent_t ev, const TcSink *sink, TcError *err);
/* wait_stream with the join's sink: for the preparation, which has no sink of its own. */
extern TcStatus gpu_sync(TcGpuJoin *g, cudaStream_t s, TcError *err);
/* The sink's poll, about every millisecond, from a host loop; TC_STOPPED aborts the kernels. */
extern TcStatus gpu_poll(TcGpuJoin *g, const TcSink *sink);
/* Hand pairs (in TcPair layout) to the sink. */
extern TcStatus emit_pairs(const TcPair *pairs, size_t count, const TcSink *sink,
						   TcJoinStats *stats);
/* The trace override: a step of this GPU's join and the host clock, on stderr. */
extern void gpu_trace_step(const TcGpuJoin *g, const char *step);
/* The pinned ring: the process's cached one when free, else the join's. */
extern TcStatus get_ring(TcGpuJoin *g, TcError *err);
/* bytes of the caller's memory to the device through the ring; waits for them. */
extern TcStatus upload(TcGpuJoin *g, void *dst, const void *src, size_t bytes, cudaStream_t s,
					   const TcSink *sink, TcError *err);
/* upload's reverse: device memory into the caller's through the ring; waits for it. */
extern TcStatus download(TcGpuJoin *g, void *dst, const void *src, size_t bytes, cudaStream_t s,
						 const TcSink *sink, TcError *err);
/* A finished batch's count pairs through the ring to the sink. */
extern TcStatus drain(TcGpuJoin *g, cudaStream_t s, const PairDev *d_pairs, unsigned int count,
					  const TcSink *sink, TcJoinStats *stats, TcError *err);
/*
 * A GPU join's start: its resources (*handle set first, so the caller can
 * always free them), the GPU, streams and the abort flag, and the share
 * of the GPUs it is one of (NULL: alone) with its place among them.  It
 * emits nothing (include_self's pairs are the engine's, after the join),
 * so that a join that finds the GPU full has given the sink nothing yet.
 */
extern TcStatus gpu_join_begin(TcGpuJoin **handle, const TcPoints *a,
							   const TcJoinParams *params, GpuShare *share, int index,
							   const TcSink *sink, TcJoinStats *stats, TcError *err);

/*
 * A join on one GPU (params->devices[0]) with the share (NULL: alone) and
 * its place among the GPUs that share it.
 */
typedef TcStatus (*GpuJoinOne) (void *ctx, TcGpuJoin **handle, const TcJoinParams *params,
								const TcSink *sink, TcJoinStats *stats, TcError *err,
								GpuShare *share, int index);

/*
 * The join on params->devices (multi.cu): one() on the caller's thread
 * where there is one GPU; else on every GPU at once, one thread a GPU
 * running one(), units of work from one queue, their pairs handed to sink
 * on the caller's thread, their folds and statistics merged.  *handle is
 * the join's (tc_gpu_join_free stops and frees every GPU's).
 */
extern TcStatus gpu_join_devices(TcGpuJoin **handle, GpuJoinOne one, void *ctx,
								 const TcPoints *a, const TcJoinParams *params,
								 const TcSink *sink, TcJoinStats *stats, TcError *err);

/*
 * Several GPUs: *v becomes the least of every GPU's *v, once each has
 * given its own (waiting for the others, polling the sink); one call per
 * GPU and join.  TC_STOPPED where another GPU failed first.
 */
extern TcStatus share_agree_min(TcGpuJoin *g, unsigned long long *v);

/*
 * Several GPUs, each holding a whole set (the k-th of the join, k <
 * SHARE_SETS): bytes of the caller's memory (whole units of unit bytes)
 * to dst, each GPU bringing its slice from the host and copying the other
 * slices from the GPUs that brought them.
 */
extern TcStatus share_upload(TcGpuJoin *g, int k, void *dst, const void *src, size_t bytes,
							 size_t unit, TcError *err);

/*
 * Several GPUs, each making its own range [bounds[i], bounds[i + 1]) (in
 * bytes, i the GPU's place in the list) of an array of the same layout on
 * every GPU (the k-th set's, k < SHARE_SETS), its own range final on the
 * device: the other ranges into dst, copied from the GPUs that made them
 * as each publishes its own.
 */
extern TcStatus share_gather(TcGpuJoin *g, int k, void *dst, const size_t *bounds, TcError *err);

/*
 * A GPU's work ended: its kernels told to stop, its streams waited for
 * (tc_gpu_join_free's start).  A several-GPU join quiesces every GPU
 * before freeing any, since one GPU's copy may still read another's memory.
 */
extern void gpu_join_quiesce(TcGpuJoin *g);

/* Frees a several-GPU join's own (tc_gpu_join_free, for g->multi). */
extern void multi_gpu_free(struct MultiJoin *m);

/* A digest of bytes of device memory (through the host), for GpuShare.digest. */
extern TcStatus device_digest(TcGpuJoin *g, const void *d_ptr, size_t bytes,
							  unsigned long long *out, TcError *err);

/*
 * The sink's fold (TcSink.fold), where it has one for these n points (of
 * a self-join, or a two-set join's a where two: the k nearest only): its
 * arrays onto the device at the join's start; each drained batch folded
 * there instead of copied out; the arrays back, and the fold marked done,
 * once every batch is (fold.cu).  The k nearest are declined where their
 * arrays would take more than a quarter of the GPU memory left: the pairs
 * then come to the sink.
 */
extern TcStatus fold_begin(TcGpuJoin *g, int64_t n, bool two, TcError *err);
extern TcStatus fold_pairs(TcGpuJoin *g, cudaStream_t s, const PairDev *d_pairs,
						   unsigned int count, TcJoinStats *stats, TcError *err);
extern TcStatus fold_end(TcGpuJoin *g, TcError *err);

#endif							/* TCJOIN_JOIN_STATE_H */
