/*
 * multi.cu
 *		One join on several GPUs (tcjoin.devices): a thread a GPU runs the
 *		join on its own device, taking its units of work from one queue
 *		(GpuShare), and the caller's thread hands their pairs to the sink.
 *
 * Every GPU prepares the whole input alike (the brute force's order and
 * the grid's index are deterministic: no atomics decide them), so a unit
 * (a run of tile squares, a pair of streamed blocks, a batch of grid work
 * items) means the same point pairs on each; each GPU records a digest of
 * what numbers its units, and a join whose GPUs disagree fails rather than
 * return rows twice or not at all.  The sink's emit and poll stay on the
 * caller's thread (they may call into PostgreSQL): the GPUs' threads copy
 * their pairs into a bounded queue of chunks, and a GPU whose chunks are
 * not taken waits, so host memory stays bounded.  A fold (TcSink.fold) runs
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

#define RELAY_PAIRS (1u << 16)	/* pairs a chunk: 1.5 MB */
#define RELAY_CHUNKS 4			/* chunks queued a GPU at most */
#define MULTI_POLL 0.005		/* seconds between the sink's polls */

struct RelayChunk
{
	RelayChunk *next;
	size_t		count;
	TcPair		pairs[RELAY_PAIRS];
};

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
	pthread_cond_t ready;		/* a chunk queued, or a GPU done */
	pthread_cond_t room;		/* a chunk taken */
	RelayChunk *head,
			   *tail,
			   *spare;			/* queued; taken and free again */
	RelayChunk *emitting;		/* the chunk the caller is handing to the sink */
	int			queued;
	int			running;
	bool		folding;
	TcFoldKind	fold_kind;
};

/* A GPU's batch into the queue, a chunk at a time; nonzero once the join stops. */
static int
relay_emit(void *arg, const TcPair *pairs, size_t count)
{
	MultiGpu   *mg = (MultiGpu *) arg;
	MultiJoin  *m = mg->m;

	while (count > 0)
	{
		RelayChunk *c;
		size_t		k = std::min(count, (size_t) RELAY_PAIRS);

		pthread_mutex_lock(&m->mu);
		while (m->queued >= RELAY_CHUNKS * m->n && !m->share.stop.load())
			pthread_cond_wait(&m->room, &m->mu);
		if (m->share.stop.load())
		{
			pthread_mutex_unlock(&m->mu);
			return 1;
		}
		c = m->spare;
		if (c != NULL)
			m->spare = c->next;
		m->queued++;			/* counted now: the chunk is this GPU's while it fills */
		pthread_mutex_unlock(&m->mu);
		if (c == NULL && (c = (RelayChunk *) malloc(sizeof(RelayChunk))) == NULL)
		{
			pthread_mutex_lock(&m->mu);
			m->queued--;
			pthread_mutex_unlock(&m->mu);
			return 1;			/* the GPU's join stops; multi_gpu_join reports the memory */
		}
		memcpy(c->pairs, pairs, sizeof(TcPair) * k);
		c->count = k;
		c->next = NULL;
		pthread_mutex_lock(&m->mu);
		if (m->tail)
			m->tail->next = c;
		else
			m->head = c;
		m->tail = c;
		pthread_cond_signal(&m->ready);
		pthread_mutex_unlock(&m->mu);
		pairs += k;
		count -= k;
	}
	return 0;
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
		m->share.stop.store(1);	/* the others stop too: the join has failed */
	m->running--;
	pthread_cond_broadcast(&m->ready);
	pthread_cond_broadcast(&m->room);
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

TcStatus
share_agree_min(TcGpuJoin *g, unsigned long long *v, TcError *err)
{
	GpuShare   *sh = g->share;
	unsigned long long cur = sh->agreed.load();
	TcStatus	st;

	while (*v < cur && !sh->agreed.compare_exchange_weak(cur, *v))
		;
	sh->agreeing.fetch_add(1);
	while (sh->agreeing.load() < sh->ngpus)
	{
		struct timespec ts = {0, 200000};

		if (sh->stop.load())
			return TC_STOPPED;
		if ((st = gpu_poll(g, g->sink)) != TC_OK)
			return st;
		nanosleep(&ts, NULL);
	}
	(void) err;
	*v = sh->agreed.load();
	return TC_OK;
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

/* The GPUs' folds into the caller's arrays, as one GPU's fold of every pair would be. */
static void
fold_merge(MultiJoin *m, TcDeviceFold *f)
{
	const int64_t n = f->n;

	switch (f->kind)
	{
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
	SUM(gpu_batches);
	SUM(gpu_reruns);
	SUM(gpu_kernel_seconds);
	SUM(gpu_recheck_seconds);
	SUM(gpu_wait_seconds);
	SUM(gpu_drain_seconds);
	SUM(gpu_tile_pairs);
	SUM(gpu_tile_pairs_kept);
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

		/* the brute force's work is its tile pairs; the grid's, its candidates */
		work[g] = out->gpu_tile_pairs_kept > base->gpu_tile_pairs_kept ?
			(double) (s->gpu_tile_pairs_kept - base->gpu_tile_pairs_kept) :
			(double) (s->candidates - base->candidates);
		total += work[g];
		out->gpu_ids[g] = m->gpu[g].params.devices[0];
	}
	for (int g = 0; g < m->n; g++)
		out->gpu_share[g] = total > 0 ? work[g] / total : 0.0;
}

/* Pairs the GPUs queued, to the sink, polling it; TC_OK once every GPU is done. */
static TcStatus
relay_to_sink(MultiJoin *m)
{
	const TcSink *sink = m->sink;
	const size_t per = std::max((size_t) OUT_BATCH, sink->batch_hint);
	double		next_poll = tc_now() + MULTI_POLL;

	for (;;)
	{
		RelayChunk *c;
		bool		done;

		pthread_mutex_lock(&m->mu);
		if (m->head == NULL && m->running > 0)
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
		c = m->head;
		if (c != NULL)
		{
			m->head = c->next;
			if (m->head == NULL)
				m->tail = NULL;
			m->emitting = c;
		}
		done = c == NULL && m->running == 0;
		pthread_mutex_unlock(&m->mu);

		if (c != NULL)
		{
			for (size_t i = 0; i < c->count; i += per)
				if (sink->emit(sink->arg, c->pairs + i, std::min(per, c->count - i)) != 0)
					return TC_STOPPED;
			pthread_mutex_lock(&m->mu);
			m->emitting = NULL;
			c->next = m->spare;
			m->spare = c;
			m->queued--;
			pthread_cond_broadcast(&m->room);
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
multi_gpu_join(TcGpuJoin **handle, GpuJoinOne one, void *ctx, const TcPoints *a,
			   const TcJoinParams *params, const TcSink *sink, TcJoinStats *stats, TcError *err)
{
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
	m->share.stop.store(0);
	m->share.agreed.store(ULLONG_MAX);
	m->share.agreeing.store(0);
	m->one = one;
	m->ctx = ctx;
	m->sink = sink;
	m->folding = f != NULL && f->n == a->n;
	m->fold_kind = f != NULL ? f->kind : TC_FOLD_COUNT;
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->ready, NULL);
	pthread_cond_init(&m->room, NULL);
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
		mg->relay.batch_hint = RELAY_PAIRS;
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
			m->share.stop.store(1);
			pthread_cond_broadcast(&m->room);
			pthread_mutex_unlock(&m->mu);
			err->status = TC_ERR_NOMEM;
			snprintf(err->message, sizeof(err->message), "could not start a thread for GPU %d",
					 params->devices[i]);
			return TC_ERR_NOMEM;
		}
		mg->started = true;
	}
	if ((st = relay_to_sink(m)) != TC_OK)
	{
		m->share.stop.store(1);
		return st;
	}
	for (int i = 0; i < m->n; i++)
	{
		pthread_join(m->gpu[i].thread, NULL);
		m->gpu[i].started = false;
	}
	stats_merge(m, &base, stats);
	if ((st = outcome(m, err)) != TC_OK || (st = check_digests(m, err)) != TC_OK)
		return st;
	if (m->folding)
	{
		for (int i = 0; i < m->n; i++)
			if (!m->gpu[i].fold.folded)
				return TC_OK;	/* none folded on the device: the pairs reached the sink */
		fold_merge(m, f);
	}
	return TC_OK;
}

void
multi_gpu_free(MultiJoin *m)
{
	pthread_mutex_lock(&m->mu);
	m->share.stop.store(1);
	pthread_cond_broadcast(&m->room);
	pthread_cond_broadcast(&m->ready);
	pthread_mutex_unlock(&m->mu);
	for (int i = 0; i < m->n; i++)
		if (m->gpu[i].started)
			pthread_join(m->gpu[i].thread, NULL);
	for (int i = 0; i < m->n; i++)
	{
		tc_gpu_join_free(m->gpu[i].handle);
		if (m->folding)
			fold_release(m->fold_kind, &m->gpu[i].fold);
	}
	free(m->emitting);			/* taken off the queue: its next is stale */
	for (RelayChunk *c = m->head, *next; c != NULL; c = next)
	{
		next = c->next;
		free(c);
	}
	for (RelayChunk *c = m->spare, *next; c != NULL; c = next)
	{
		next = c->next;
		free(c);
	}
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->ready);
	pthread_cond_destroy(&m->room);
	delete m;
}
