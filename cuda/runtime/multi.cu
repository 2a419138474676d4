/*
 * multi.cu
 *		One join on several GPUs (tcjoin.devices): a thread a GPU runs the
 *		join on its own device, taking its units of work from one queue
 *		(GpuShare), and the caller's thread hands their pairs to the sink.
 *
 * Every GPU prepares the whole input alike (the brute force's order, whose
 * later rounds the GPUs share out and gather, and the grid's index are
 * deterministic: no atomics decide them), so a unit
 * (a run of tile squares, a pair of streamed blocks, a batch of grid work
 * items) means the same point pairs on each; each GPU records a digest of
 * what numbers its units, and a join whose GPUs disagree fails rather than
 * return rows twice or not at all.  The sink's emit and poll stay on the
 * caller's thread (they may call into PostgreSQL): a GPU's thread hands
 * its batch (in its pinned ring) to the caller's and waits until the sink
 * has taken it, while its GPU computes the next batch; nothing is copied
 * and nothing more is held.  A fold (TcSink.fold) runs
 * on each GPU into arrays of its own, merged here once every GPU is done:
 * degrees summed, forests united, least keys and smallest ids kept.
 */
#include <cuda_runtime.h>

#include <pthread.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "join_state.h"

#define MULTI_POLL 0.005		/* seconds between the sink's polls */

struct MultiJoin;

/* One GPU's part of the join. */
struct MultiGpu
{
	MultiJoin  *m;
	int			index;
	TcJoinParams params;		/* the caller's, with this GPU alone */
	TcJoinStats stats;
	TcError		err;
	TcStatus	st;
	TcGpuJoin  *handle;
	TcSink		relay;
	TcDeviceFold fold;			/* the caller's, with output arrays of its own */
	pthread_t	thread;
	bool		started;
	/* a batch handed to the caller's thread, until the sink has taken it */
	const TcPair *hand;
	size_t		hand_count;
	bool		taking;			/* the caller's thread is giving the batch to the sink */
	/* pairs of batches the join stopped before the sink took them: counted by emit_pairs, never given */
	unsigned long long refused;
};

struct MultiJoin
{
	GpuShare	share;
	int			n;
	MultiGpu	gpu[TC_MAX_DEVICES];
	GpuJoinOne	one;
	void	   *ctx;
	const TcSink *sink;
	pthread_mutex_t mu;
	pthread_cond_t ready;		/* a batch handed over, or a GPU done */
	pthread_cond_t taken;		/* a batch taken by the sink */
	int			handed;			/* GPUs whose batch awaits the sink */
	int			next_gpu;		/* where the caller looks first: each GPU in turn */
	int			running;
	bool		folding;
	TcFoldKind	fold_kind;
};

/* A GPU's batch to the caller's thread, once the sink has it; nonzero once the join stops. */
static int
relay_emit(void *arg, const TcPair *pairs, size_t count)
{
	MultiGpu   *mg = (MultiGpu *) arg;
	MultiJoin  *m = mg->m;
	int			r;

	pthread_mutex_lock(&m->mu);
	if (m->share.stop.load())
	{
		mg->refused += count;
		pthread_mutex_unlock(&m->mu);
		return 1;
	}
	mg->hand = pairs;
	mg->hand_count = count;
	m->handed++;
	pthread_cond_signal(&m->ready);
	while (mg->hand != NULL && !m->share.stop.load())
		pthread_cond_wait(&m->taken, &m->mu);
	r = mg->hand != NULL;		/* stopped before the sink took it */
	if (r && !mg->taking)
	{
		/* withdrawn: the caller's thread, not yet giving it, never will */
		mg->refused += count;
		mg->hand = NULL;
		m->handed--;
	}
	pthread_mutex_unlock(&m->mu);
	return r;
}

static int
relay_poll(void *arg)
{
	return ((MultiGpu *) arg)->m->share.stop.load();
}

static void *
gpu_thread(void *arg)
{
	MultiGpu   *mg = (MultiGpu *) arg;
	MultiJoin  *m = mg->m;

	mg->st = m->one(m->ctx, &mg->handle, &mg->params, &mg->relay, &mg->stats, &mg->err, &m->share,
					mg->index);
	pthread_mutex_lock(&m->mu);
	if (mg->st != TC_OK)
	{
		m->share.stop.store(1);	/* the others stop too: the join has failed */
		pthread_cond_broadcast(&m->taken);	/* those waiting on a handed batch as well */
	}
	m->running--;
	pthread_cond_broadcast(&m->ready);
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

/*
 * One wait for the other GPUs: TC_STOPPED once the join stops, the sink's
 * poll's answer, else after a tenth of a millisecond.
 */
static TcStatus
share_wait(TcGpuJoin *g)
{
	struct timespec ts = {0, 100000};
	TcStatus	st;

	if (g->share->stop.load())
		return TC_STOPPED;
	if ((st = gpu_poll(g, g->sink)) != TC_OK)
		return st;
	nanosleep(&ts, NULL);
	return TC_OK;
}

TcStatus
share_agree_min(TcGpuJoin *g, unsigned long long *v)
{
	GpuShare   *sh = g->share;
	unsigned long long cur = sh->agreed.load();
	TcStatus	st;

	while (*v < cur && !sh->agreed.compare_exchange_weak(cur, *v))
		;
	sh->agreeing.fetch_add(1);
	while (sh->agreeing.load() < sh->ngpus)
		if ((st = share_wait(g)) != TC_OK)
			return st;
	*v = sh->agreed.load();
	return TC_OK;
}

/* Per device, the peers enable_peer has tried from it: once a process. */
static std::atomic<unsigned int> peers_tried[TC_MAX_DEVICES];

/*
 * Copies between two GPUs direct (NVLink or PCIe peer to peer) where they
 * can; without peer access the driver stages them through host memory,
 * slower but the same bytes, so a refusal (too many peers, say) is no
 * error.  Once enabled it stays for the process, so each pair is tried
 * once; the current device is g's.
 */
static void
enable_peer(TcGpuJoin *g, int peer)
{
	int			can = 0;

	if (peer == g->device || g->device < 0 || g->device >= TC_MAX_DEVICES ||
		(peers_tried[g->device].fetch_or(1u << peer) & (1u << peer)) != 0)
		return;
	if (cudaDeviceCanAccessPeer(&can, g->device, peer) != cudaSuccess || !can)
	{
		(void) cudaGetLastError();	/* not sticky: clear it */
		return;
	}
	if (with_signals_blocked([peer] { return cudaDeviceEnablePeerAccess(peer, 0); }) != cudaSuccess)
		(void) cudaGetLastError();	/* already enabled, or refused: copies go either way */
}

/*
 * dst's range bounds[me] ... of this GPU is final: published in slot, and
 * the others' ranges copied from their GPUs as they publish theirs.
 */
static TcStatus
gather_ranges(TcGpuJoin *g, std::atomic<void *> *slot, void *dst, const size_t *bounds,
			  TcError *err)
{
	GpuShare   *sh = g->share;
	const int	ng = sh->ngpus;
	bool		have[TC_MAX_DEVICES] = {false};
	int			left = ng - 1;
	TcStatus	st;

	slot[g->share_index].store(dst);
	have[g->share_index] = true;
	while (left > 0)
	{
		bool		got = false;

		for (int i = 0; i < ng; i++)
		{
			void	   *there = have[i] ? NULL : slot[i].load();
			int			dev = sh->devices[i];

			if (there == NULL)
				continue;
			enable_peer(g, dev);
			if (bounds[i + 1] > bounds[i])
				CHECK(cudaMemcpyPeerAsync((char *) dst + bounds[i], g->device, (char *) there + bounds[i],
										  dev, bounds[i + 1] - bounds[i], g->stream[0]));
			have[i] = true;
			left--;
			got = true;
		}
		if (!got && left > 0 && (st = share_wait(g)) != TC_OK)
			return st;
	}
	return gpu_sync(g, g->stream[0], err);
}

TcStatus
share_upload(TcGpuJoin *g, int k, void *dst, const void *src, size_t bytes, size_t unit,
			 TcError *err)
{
	GpuShare   *sh = g->share;
	const int	ng = sh->ngpus,
				me = g->share_index;
	const size_t units = unit > 0 ? bytes / unit : 0;
	size_t		bounds[TC_MAX_DEVICES + 1];
	TcStatus	st;

	for (int i = 0; i <= ng; i++)
		bounds[i] = units * (size_t) i / (size_t) ng * unit;
	if ((st = upload(g, (char *) dst + bounds[me], (const char *) src + bounds[me],
					 bounds[me + 1] - bounds[me], g->stream[0], g->sink, err)) != TC_OK)
		return st;
	return gather_ranges(g, sh->held[k], dst, bounds, err);
}

TcStatus
share_gather(TcGpuJoin *g, int k, void *dst, const size_t *bounds, TcError *err)
{
	return gather_ranges(g, g->share->parts[k], dst, bounds, err);
}

/* The fold's output arrays, a GPU's own; its inputs stay the caller's. */
static bool
fold_copy(const TcDeviceFold *f, TcDeviceFold *mine)
{
	const size_t m = (size_t) (f->n > 0 ? f->n : 1);

	*mine = *f;
	mine->folded = false;
	mine->deg = NULL;
	mine->parent = NULL;
	mine->best = NULL;
	if (f->kind == TC_FOLD_DBSCAN_LINKS)
		mine->best_key = NULL;
	switch (f->kind)
	{
		case TC_FOLD_COUNT:
			return true;
		case TC_FOLD_DEGREES:
			return (mine->deg = (int64_t *) malloc(m * sizeof(int64_t))) != NULL;
		case TC_FOLD_UNION:
		case TC_FOLD_DBSCAN_LINKS:
			if ((mine->parent = (int64_t *) malloc(m * sizeof(int64_t))) == NULL)
				return false;
			if (f->n > 0)
				memcpy(mine->parent, f->parent, (size_t) f->n * sizeof(int64_t));
			return f->kind == TC_FOLD_UNION ||
				(mine->best_key = (uint64_t *) malloc(m * sizeof(uint64_t))) != NULL;
		case TC_FOLD_DBSCAN_TIES:
			return (mine->best = (int64_t *) malloc(m * sizeof(int64_t))) != NULL;
		case TC_FOLD_NEAREST:
			/* each GPU makes its lists where it folds (fold_begin) */
			mine->nb_len = NULL;
			mine->nb_who = NULL;
			mine->nb_dist = NULL;
			return true;
	}
	return false;
}

static void
fold_release(TcFoldKind kind, TcDeviceFold *mine)
{
	free(mine->deg);
	free(mine->parent);
	free(mine->best);
	if (kind == TC_FOLD_DBSCAN_LINKS)
		free(mine->best_key);
	if (kind == TC_FOLD_NEAREST)
		tc_fold_lists_free(mine);
	mine->deg = mine->parent = mine->best = NULL;
}

static int64_t
uf_root(int64_t *parent, int64_t x)
{
	while (parent[x] != x)
	{
		parent[x] = parent[parent[x]];
		x = parent[x];
	}
	return x;
}

/*
 * The k nearest of the GPUs that folded theirs (a GPU may have declined:
 * its pairs reached the sink), each list sorted: merged a point at a
 * time, the first k in (dist, id) order.
 */
static bool
nearest_merge(MultiJoin *m, TcDeviceFold *f)
{
	const int	k = f->k;
	const size_t rows = (size_t) (f->n > 0 ? f->n : 1);
	int			pos[TC_MAX_DEVICES];

	if (!tc_fold_lists_make(f, rows))
		return false;
	for (int64_t i = 0; i < f->n; i++)
	{
		const size_t row = (size_t) i * (size_t) k;
		int			len = 0;

		memset(pos, 0, sizeof(pos));
		while (len < k)
		{
			int			best = -1;
			double		bd = 0;
			int64_t		bw = 0;

			for (int g = 0; g < m->n; g++)
			{
				const TcDeviceFold *x = &m->gpu[g].fold;

				if (!x->folded || pos[g] >= x->nb_len[i])
					continue;

				double		d = x->nb_dist[row + pos[g]];
				int64_t		w = x->nb_who[row + pos[g]];

				if (best < 0 || d < bd || (d == bd && f->ids[w] < f->ids[bw]))
				{
					best = g;
					bd = d;
					bw = w;
				}
			}
			if (best < 0)
				break;
			pos[best]++;
			f->nb_dist[row + len] = bd;
			f->nb_who[row + len] = bw;
			len++;
		}
		f->nb_len[i] = len;
	}
	return true;
}

/*
 * The GPUs' folds into the caller's arrays, as one GPU's fold of every
 * pair would be; false where the k nearest's lists found no memory.
 */
static bool
fold_merge(MultiJoin *m, TcDeviceFold *f)
{
	const int64_t n = f->n;

	switch (f->kind)
	{
		case TC_FOLD_NEAREST:
			if (!nearest_merge(m, f))
				return false;
			break;
		case TC_FOLD_COUNT:
			break;
		case TC_FOLD_DEGREES:
			for (int64_t i = 0; i < n; i++)
			{
				int64_t		s = 0;

				for (int g = 0; g < m->n; g++)
					s += m->gpu[g].fold.deg[i];
				f->deg[i] = s;
			}
			break;
		case TC_FOLD_UNION:
		case TC_FOLD_DBSCAN_LINKS:
			/* each GPU's forest's links, united; a root under the smaller root, as on the device */
			memcpy(f->parent, m->gpu[0].fold.parent, (size_t) n * sizeof(int64_t));
			for (int g = 1; g < m->n; g++)
				for (int64_t i = 0; i < n; i++)
				{
					int64_t		a = uf_root(f->parent, i),
								b = uf_root(f->parent, m->gpu[g].fold.parent[i]);

					if (a != b)
						f->parent[std::max(a, b)] = std::min(a, b);
				}
			if (f->kind == TC_FOLD_DBSCAN_LINKS)
				for (int64_t i = 0; i < n; i++)
				{
					uint64_t	k = m->gpu[0].fold.best_key[i];

					for (int g = 1; g < m->n; g++)
						k = std::min(k, m->gpu[g].fold.best_key[i]);
					f->best_key[i] = k;
				}
			break;
		case TC_FOLD_DBSCAN_TIES:
			for (int64_t i = 0; i < n; i++)
			{
				int64_t		c = -1;

				for (int g = 0; g < m->n; g++)
				{
					int64_t		x = m->gpu[g].fold.best[i];

					if (x >= 0 && (c < 0 || f->ids[x] < f->ids[c]))
						c = x;
				}
				f->best[i] = c;
			}
			break;
	}
	f->folded = true;
	return true;
}

/*
 * The GPUs' statistics into the join's: counts and device times summed,
 * phases as long as the longest GPU's, the rest as GPU 0 saw it.
 */
static void
stats_merge(MultiJoin *m, const TcJoinStats *base, TcJoinStats *out)
{
	const TcJoinStats *s0 = &m->gpu[0].stats;
	double		work[TC_MAX_DEVICES],
				total = 0;

	*out = *s0;
#define SUM(f) do { out->f = base->f; for (int g = 0; g < m->n; g++) out->f += m->gpu[g].stats.f - base->f; } while (0)
#define MAX(f) do { out->f = base->f; for (int g = 0; g < m->n; g++) out->f = std::max(out->f, m->gpu[g].stats.f); } while (0)
	SUM(candidates);
	SUM(rechecked);
	SUM(pairs);
	for (int g = 0; g < m->n; g++)
		out->pairs -= m->gpu[g].refused;
	SUM(gpu_batches);
	SUM(gpu_reruns);
	SUM(gpu_kernel_seconds);
	SUM(gpu_recheck_seconds);
	SUM(gpu_wait_seconds);
	SUM(gpu_drain_seconds);
	SUM(gpu_tile_pairs);
	SUM(gpu_tile_pairs_kept);
	SUM(gpu_work);
	SUM(gpu_upload_seconds);
	SUM(gpu_order_seconds);
	MAX(index_seconds);
	MAX(join_seconds);
	MAX(gpu_setup_seconds);
#undef SUM
#undef MAX
	for (int g = 0; g < m->n; g++)
		out->gpu_cold = out->gpu_cold || m->gpu[g].stats.gpu_cold;
	out->gpus = m->n;
	for (int g = 0; g < m->n; g++)
	{
		const TcJoinStats *s = &m->gpu[g].stats;

		/* the brute force's work is its list entries; the grid's, its candidates */
		work[g] = out->gpu_work > base->gpu_work ? (double) (s->gpu_work - base->gpu_work) :
			(double) (s->candidates - base->candidates);
		total += work[g];
		out->gpu_ids[g] = m->gpu[g].params.devices[0];
	}
	for (int g = 0; g < m->n; g++)
		out->gpu_share[g] = total > 0 ? work[g] / total : 0.0;
}

/* The GPUs' batches to the sink as they are handed over, polling it; TC_OK once every GPU is done. */
static TcStatus
relay_to_sink(MultiJoin *m)
{
	const TcSink *sink = m->sink;
	const size_t per = std::max((size_t) OUT_BATCH, sink->batch_hint);
	double		next_poll = tc_now() + MULTI_POLL;

	for (;;)
	{
		MultiGpu   *mg = NULL;
		bool		done;

		pthread_mutex_lock(&m->mu);
		if (m->handed == 0 && m->running > 0)
		{
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 1000000;
			if (ts.tv_nsec >= 1000000000)
			{
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&m->ready, &m->mu, &ts);
		}
		for (int i = 0; i < m->n && mg == NULL; i++)
		{
			MultiGpu   *c = &m->gpu[(m->next_gpu + i) % m->n];

			if (c->hand != NULL)
			{
				mg = c;
				mg->taking = true;
				m->next_gpu = (c->index + 1) % m->n;
			}
		}
		done = mg == NULL && m->running == 0;
		pthread_mutex_unlock(&m->mu);

		if (mg != NULL)
		{
			/* the GPU's thread waits, so its ring slot stays as it is */
			for (size_t i = 0; i < mg->hand_count; i += per)
				if (sink->emit(sink->arg, mg->hand + i, std::min(per, mg->hand_count - i)) != 0)
					return TC_STOPPED;
			pthread_mutex_lock(&m->mu);
			mg->hand = NULL;
			mg->taking = false;
			m->handed--;
			pthread_cond_broadcast(&m->taken);
			pthread_mutex_unlock(&m->mu);
		}
		if (sink->poll && tc_now() >= next_poll)
		{
			if (sink->poll(sink->arg) != 0)
				return TC_STOPPED;
			next_poll = tc_now() + MULTI_POLL;
		}
		if (done)
			return TC_OK;
	}
}

/* Every GPU's thread joined, once it has ended. */
static void
join_all(MultiJoin *m)
{
	for (int i = 0; i < m->n; i++)
		if (m->gpu[i].started)
		{
			pthread_join(m->gpu[i].thread, NULL);
			m->gpu[i].started = false;
		}
}

/* Every GPU stopped and its thread joined. */
static void
stop_all(MultiJoin *m)
{
	pthread_mutex_lock(&m->mu);
	m->share.stop.store(1);
	pthread_cond_broadcast(&m->taken);
	pthread_cond_broadcast(&m->ready);
	pthread_mutex_unlock(&m->mu);
	join_all(m);
}

/* The GPUs' outcome: the first failure that is not a stop, else a stop, else TC_OK. */
static TcStatus
outcome(MultiJoin *m, TcError *err)
{
	int			stopped = -1;

	for (int g = 0; g < m->n; g++)
	{
		const MultiGpu *mg = &m->gpu[g];

		if (mg->st == TC_OK)
			continue;
		if (mg->st == TC_STOPPED)
		{
			if (stopped < 0)
				stopped = g;
			continue;
		}
		*err = mg->err;
		/* the input's errors read as on one GPU; the GPUs' own name the GPU */
		if ((mg->st == TC_ERR_GPU || mg->st == TC_ERR_GPU_FULL) &&
			strlen(err->message) + 16 < sizeof(err->message))
		{
			char		msg[sizeof(err->message)];

			snprintf(msg, sizeof(msg), "GPU %d: %s", mg->params.devices[0], mg->err.message);
			memcpy(err->message, msg, sizeof(msg));
		}
		return mg->st;
	}
	return stopped >= 0 ? TC_STOPPED : TC_OK;
}

/* The GPUs must have numbered their units alike (see the header). */
static TcStatus
check_digests(MultiJoin *m, TcError *err)
{
	int			first = -1;

	for (int g = 0; g < m->n; g++)
	{
		if (!m->share.has_digest[g])
			continue;
		if (first < 0)
			first = g;
		else if (m->share.digest[g] != m->share.digest[first])
		{
			err->status = TC_ERR_GPU;
			snprintf(err->message, sizeof(err->message),
					 "GPUs %d and %d prepared the points differently, so the join cannot be split "
					 "between them; list GPUs of one model in tcjoin.devices",
					 m->gpu[first].params.devices[0], m->gpu[g].params.devices[0]);
			return TC_ERR_GPU;
		}
	}
	return TC_OK;
}

TcStatus
gpu_join_devices(TcGpuJoin **handle, GpuJoinOne one, void *ctx, const TcPoints *a,
				 const TcJoinParams *params, const TcSink *sink, TcJoinStats *stats, TcError *err)
{
	if (params->ndevices <= 1)
		return one(ctx, handle, params, sink, stats, err, NULL, 0);

	TcGpuJoin  *g = (TcGpuJoin *) calloc(1, sizeof(TcGpuJoin));
	MultiJoin  *m = g ? new (std::nothrow) MultiJoin() : NULL;
	TcDeviceFold *f = sink->fold;
	const TcJoinStats base = *stats;
	TcStatus	st;

	*handle = g;
	if (m == NULL)
	{
		err->status = TC_ERR_NOMEM;
		snprintf(err->message, sizeof(err->message), "out of memory");
		return TC_ERR_NOMEM;
	}
	g->multi = m;
	m->n = params->ndevices;
	m->share.ngpus = m->n;
	m->share.next.store(0);
	m->share.list_mode.store(-1);
	m->share.t0 = tc_now();
	m->share.stop.store(0);
	m->share.agreed.store(ULLONG_MAX);
	m->share.agreeing.store(0);
	for (int k = 0; k < SHARE_SETS; k++)
		for (int i = 0; i < TC_MAX_DEVICES; i++)
		{
			m->share.held[k][i].store(NULL);
			m->share.parts[k][i].store(NULL);
		}
	for (int i = 0; i < m->n; i++)
		m->share.devices[i] = params->devices[i];
	m->one = one;
	m->ctx = ctx;
	m->sink = sink;
	m->folding = f != NULL && f->n == a->n;
	m->fold_kind = f != NULL ? f->kind : TC_FOLD_COUNT;
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->ready, NULL);
	pthread_cond_init(&m->taken, NULL);
	for (int i = 0; i < m->n; i++)
	{
		MultiGpu   *mg = &m->gpu[i];

		mg->m = m;
		mg->index = i;
		mg->params = *params;
		mg->params.ndevices = 1;
		mg->params.devices[0] = params->devices[i];
		mg->stats = base;
		mg->relay.emit = relay_emit;
		mg->relay.poll = relay_poll;
		mg->relay.arg = mg;
		mg->relay.batch_hint = RING_CHUNK;	/* a handover a ring slot */
		if (m->folding)
		{
			if (!fold_copy(f, &mg->fold))
			{
				err->status = TC_ERR_NOMEM;
				snprintf(err->message, sizeof(err->message), "out of memory");
				return TC_ERR_NOMEM;
			}
			mg->relay.fold = &mg->fold;
		}
	}
	m->running = m->n;
	for (int i = 0; i < m->n; i++)
	{
		MultiGpu   *mg = &m->gpu[i];
		int			rc = with_signals_blocked([mg] { return pthread_create(&mg->thread, NULL, gpu_thread, mg); });

		if (rc != 0)
		{
			pthread_mutex_lock(&m->mu);
			m->running -= m->n - i;
			pthread_mutex_unlock(&m->mu);
			stop_all(m);
			err->status = TC_ERR_NOMEM;
			snprintf(err->message, sizeof(err->message), "could not start a thread for GPU %d",
					 params->devices[i]);
			return TC_ERR_NOMEM;
		}
		mg->started = true;
	}
	st = relay_to_sink(m);
	/* the sink stopped the join: the GPUs stop too (a cancel leaves by longjmp instead) */
	if (st != TC_OK)
		stop_all(m);
	else
		join_all(m);
	stats_merge(m, &base, stats);
	if (st != TC_OK)
		return st;
	if ((st = outcome(m, err)) != TC_OK || (st = check_digests(m, err)) != TC_OK)
		return st;
	if (m->folding)
	{
		int			folded = 0;

		for (int i = 0; i < m->n; i++)
			folded += m->gpu[i].fold.folded;
		/*
		 * None folded: the pairs reached the sink.  Only the k nearest may
		 * be folded by some GPUs and not others (each GPU's memory
		 * decides), and they merge with the pairs the sink took.
		 */
		if ((folded == m->n || (folded > 0 && f->kind == TC_FOLD_NEAREST)) && !fold_merge(m, f))
		{
			err->status = TC_ERR_NOMEM;
			snprintf(err->message, sizeof(err->message), "out of memory for the k nearest");
			return TC_ERR_NOMEM;
		}
	}
	return TC_OK;
}

void
multi_gpu_free(MultiJoin *m)
{
	stop_all(m);
	/* no GPU's memory goes while a peer copy of another GPU may still read it (share_upload) */
	for (int i = 0; i < m->n; i++)
		if (m->gpu[i].handle != NULL)
			gpu_join_quiesce(m->gpu[i].handle);
	for (int i = 0; i < m->n; i++)
	{
		tc_gpu_join_free(m->gpu[i].handle);
		if (m->folding)
			fold_release(m->fold_kind, &m->gpu[i].fold);
	}
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->ready);
	pthread_cond_destroy(&m->taken);
	delete m;
}
