/*
 * engine.c
 *		The engine's driver: method choice, worker threads, work queue and
 *		the hand-over of pair batches to the caller's thread.
 *
 * Workers only compute.  Everything that may call into the host (emit and
 * poll) happens on the caller's thread, which holds no lock while it does,
 * so a longjmp out of a callback leaves nothing locked and
 * tc_join_destroy can always stop and join the workers.
 */
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "choose.h"
#include "engine_int.h"
#include "gpu.h"

/* How long the caller's thread sleeps between polls, at most. */
#define TC_POLL_NSEC (20 * 1000 * 1000)

void
tc_set_error(TcError *err, TcStatus status, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL)
		return;
	err->status = status;
	err->point = -1;
	err->point_set = 0;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

double
tc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

int
tc_cpu_count(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : (int) n;
}

const char *
tc_status_name(TcStatus status)
{
	switch (status)
	{
		case TC_OK:
			return "ok";
		case TC_STOPPED:
			return "stopped";
		case TC_ERR_NOMEM:
			return "out of memory";
		case TC_ERR_INVALID:
			return "invalid argument";
		case TC_ERR_NO_GPU:
			return "no usable GPU";
		case TC_ERR_GPU:
			return "GPU error";
		case TC_ERR_GPU_FULL:
			return "GPU memory exhausted";
		case TC_ERR_INTERNAL:
			return "internal error";
	}
	return "unknown status";
}

double
tc_sq_threshold(double eps)
{
	double		t;

	if (!(eps >= 0.0))
		return -1.0;			/* nothing is within a negative or NaN eps */
	t = eps * eps;
	if (isinf(t))
		t = DBL_MAX;
	/* eps * eps is within an ulp or two of the answer; walk to it. */
	while (t > 0.0 && sqrt(t) > eps)
		t = nextafter(t, 0.0);
	while (t < DBL_MAX && sqrt(nextafter(t, INFINITY)) <= eps)
		t = nextafter(t, INFINITY);
	return t;
}

static TcStatus
check_points(const TcPoints *p, const char *which, TcError *err)
{
	if (p->n < 0 || p->d < 1 || (p->n > 0 && p->data == NULL) ||
		(p->type != TC_FLOAT4 && p->type != TC_FLOAT8))
	{
		tc_set_error(err, TC_ERR_INVALID, "invalid point set %s (n=%lld, d=%d)",
					 which, (long long) p->n, (int) p->d);
		return TC_ERR_INVALID;
	}
	return TC_OK;
}

TcJoin *
tc_join_create(const TcPoints *a, const TcPoints *b, const TcJoinParams *params,
			   TcError *err)
{
	TcJoin	   *join;

	if (err)
	{
		err->status = TC_OK;
		err->message[0] = '\0';
		err->point = -1;
		err->point_set = 0;
	}
	if (a == NULL || params == NULL ||
		check_points(a, "a", err) != TC_OK ||
		(b != NULL && check_points(b, "b", err) != TC_OK))
	{
		if (err && err->status == TC_OK)
			tc_set_error(err, TC_ERR_INVALID, "missing point set or parameters");
		return NULL;
	}
	if (b != NULL && (b->d != a->d || b->type != a->type))
	{
		tc_set_error(err, TC_ERR_INVALID,
					 "point sets differ in dimensions or type (%d and %d)",
					 (int) a->d, (int) b->d);
		return NULL;
	}
	if (params->metric != TC_METRIC_EUCLIDEAN && params->metric != TC_METRIC_COSINE &&
		params->metric != TC_METRIC_INNER_PRODUCT)
	{
		tc_set_error(err, TC_ERR_INVALID, "unknown metric %d", (int) params->metric);
		return NULL;
	}
	if (!isfinite(params->eps))
	{
		tc_set_error(err, TC_ERR_INVALID, "eps must be finite");
		return NULL;
	}
	/* the inner product's dist, -dot, is negative for close vectors */
	if (params->metric != TC_METRIC_INNER_PRODUCT && !(params->eps >= 0.0))
	{
		tc_set_error(err, TC_ERR_INVALID, "eps must be finite and non-negative");
		return NULL;
	}
	/* the grid bins by coordinates: it bounds Euclidean distances only */
	if (params->metric == TC_METRIC_INNER_PRODUCT && params->method == TC_METHOD_GRID)
	{
		tc_set_error(err, TC_ERR_INVALID,
					 "method grid takes the Euclidean and cosine metrics only; use auto or brute");
		return NULL;
	}

	join = calloc(1, sizeof(TcJoin));
	if (join == NULL)
	{
		tc_set_error(err, TC_ERR_NOMEM, "out of memory");
		return NULL;
	}
	join->created = tc_now();
	join->a = *a;
	join->b = b ? *b : *a;
	join->self = (b == NULL);
	join->params = *params;
	if (join->params.threads < 1)
		join->params.threads = 1;

	/*
	 * No more threads than CPUs: more add no speed, only their batches and
	 * scratch, so a join's own memory is bounded by the CPU count whatever
	 * the setting (README.md, "Memory a join takes").
	 */
	if (join->params.threads > tc_cpu_count())
		join->params.threads = tc_cpu_count();
	join->thr = params->metric == TC_METRIC_EUCLIDEAN ? tc_sq_threshold(params->eps) : params->eps;
	atomic_init(&join->next_item, 0);
	atomic_init(&join->stop, false);
	atomic_init(&join->worker_error, TC_OK);
	join->stats.device = "cpu";
	join->stats.threads = join->params.threads;

	join->stats.method = params->method == TC_METHOD_BRUTE ? "brute" : "grid";
	join->stats.metric = params->metric == TC_METRIC_COSINE ? "cosine" :
		params->metric == TC_METRIC_INNER_PRODUCT ? "inner_product" : "euclidean";
	join->stats.filter = "none";
	return join;
}

/*
 * The trace override: a host step's time from the join's creation, on
 * stderr, so that the steps around the phases can be told apart.
 */
void
tc_trace_step(const TcJoin *join, const char *step)
{
	if (join->params.overrides.trace)
	{
		double		now = tc_now();

		fprintf(stderr, "tcjoin trace: host %s at %.3f ms (clock %.3f)\n", step,
				(now - join->created) * 1e3, now * 1e3);
	}
}

bool
tc_poll(TcJoin *join)
{
	if (join->sink && join->sink->poll && join->sink->poll(join->sink->arg) != 0)
	{
		atomic_store(&join->stop, true);
		return false;
	}
	return !tc_should_stop(join);
}

/* FP16 brute force on the GPU, of one set or two (of one element type: tc_join_create). */
static TcStatus
run_gpu_brute(TcJoin *join, const TcJoinParams *params, TcError *err)
{
	return tc_gpu_brute_join(&join->gpu, &join->a, join->self ? NULL : &join->b, params, join->thr,
							 join->sink, &join->stats, err);
}

/*
 * The whole join on the GPU: its own index, batches and output loop.
 * include_self's pairs are left to the caller (emit_self_pairs).
 */
static TcStatus
run_gpu_once(TcJoin *join, TcError *err)
{
	TcJoinParams params = join->params;
	const TcPoints *b = join->self ? NULL : &join->b;
	TcGridPlan	plan;
	TcStatus	st;
	bool		fp16_brute;
	bool		planned;

	params.include_self = false;
	if ((st = tc_devices_resolve(&params, err)) != TC_OK)
		return st;
	tc_trace_step(join, "GPUs resolved");
	/* the dot-product metrics: FP16 brute force (choose.c checked that it can run) */
	if (join->params.metric != TC_METRIC_EUCLIDEAN)
	{
		tc_choose_gpus(join, &params, true, NULL);
		return run_gpu_brute(join, &params, err);
	}
	if ((st = tc_choose_gpu_method(join, &fp16_brute, &plan, &planned, err)) != TC_OK)
		return st;
	tc_trace_step(join, "GPU method chosen");
	if (fp16_brute && join->params.tensor_cores != TC_TENSOR_OFF)
	{
		tc_choose_gpus(join, &params, true, NULL);
		return run_gpu_brute(join, &params, err);
	}
	if (!planned && (st = tc_grid_plan(join, false, &plan, err)) != TC_OK)
		return st;
	tc_choose_gpus(join, &params, false, &plan);
	tc_trace_step(join, "grid planned");
	if (join->params.method == TC_METHOD_BRUTE)
		plan.k = 0;				/* one cell: every pair is a candidate */
	return tc_gpu_grid_join(&join->gpu, &join->a, b, &params, &plan, join->thr,
							join->sink, &join->stats, err);
}

/*
 * (i, i, dist) for every point whose dist with itself (tc_self_dist) is
 * within eps (a zero vector under cosine stopped the join before).
 */
static TcStatus
emit_self_pairs(TcJoin *join)
{
	TcPair		buf[1024];

	for (int64_t i = 0; i < join->a.n; i += 1024)
	{
		int64_t		m = join->a.n - i < 1024 ? join->a.n - i : 1024;
		size_t		k = 0;

		for (int64_t t = 0; t < m; t++)
		{
			double		dist = tc_self_dist(join, i + t);

			if (!(dist <= join->params.eps))
				continue;
			buf[k].a = buf[k].b = i + t;
			buf[k].dist = dist;
			k++;
		}
		join->stats.pairs += (uint64_t) k;
		if ((k > 0 && join->sink->emit(join->sink->arg, buf, k) != 0) || !tc_poll(join))
			return TC_STOPPED;
	}
	return TC_OK;
}

/*
 * The time between tries for GPU memory (tcjoin.gpu_full = wait), polling
 * the sink each millisecond, so that a cancel is not kept waiting.
 */
#define TC_GPU_FULL_RETRY_MS 20

static bool
wait_for_gpu_memory(TcJoin *join)
{
	for (int i = 0; i < TC_GPU_FULL_RETRY_MS; i++)
	{
		struct timespec ms = {0, 1000000};

		nanosleep(&ms, NULL);
		if (!tc_poll(join))
			return false;
	}
	return true;
}

/*
 * run_gpu_once, and where the GPU's memory is full before any pair went
 * to the sink (every allocation comes before the first pair), what
 * tcjoin.gpu_full says: wait and try again, leave the join to the CPU
 * (*to_cpu; device auto only: device = gpu never runs on the CPU), or
 * fail.
 */
static TcStatus
run_gpu(TcJoin *join, bool *to_cpu, TcError *err)
{
	TcJoinStats before = join->stats;
	double		t0 = tc_now();
	TcStatus	st;

	*to_cpu = false;
	for (;;)
	{
		st = run_gpu_once(join, err);
		if (st != TC_ERR_GPU_FULL || join->stats.pairs > 0)
			break;
		tc_gpu_join_free(join->gpu);
		join->gpu = NULL;
		if (join->params.gpu_full == TC_GPU_FULL_WAIT)
		{
			if (!wait_for_gpu_memory(join))
				return TC_STOPPED;
			join->stats = before;
			join->stats.gpu_full_wait_seconds = tc_now() - t0;
			continue;
		}
		if (join->params.gpu_full == TC_GPU_FULL_CPU && join->params.device == TC_DEVICE_AUTO)
		{
			join->stats = before;
			snprintf(join->stats.device_choice, sizeof(join->stats.device_choice),
					 "auto: the GPU's estimate was lower, but its memory was full "
					 "(tcjoin.gpu_full = cpu)");
			*to_cpu = true;
			return TC_OK;
		}
		return st;
	}
	tc_trace_step(join, "GPU join returned");
	if (st == TC_OK && join->params.include_self)
		st = emit_self_pairs(join);
	return st;
}

/* Plan and build the index; polls, so a cancel need not wait for it. */
static TcStatus
prepare(TcJoin *join, TcError *err)
{
	TcStatus	st;
	double		t0 = tc_now();

	switch (join->params.method)
	{
		case TC_METHOD_BRUTE:
			st = tc_brute_prepare(join, err);
			break;
		case TC_METHOD_GRID:
			/* cosine where the unit vectors' grid cannot take it: brute force */
			st = join->params.metric == TC_METRIC_EUCLIDEAN ?
				tc_grid_prepare(join, false, err) : tc_brute_prepare(join, err);
			break;
		case TC_METHOD_AUTO:
		default:
			/* the dot-product metrics have no grid: every pair is summed */
			st = join->params.metric == TC_METRIC_EUCLIDEAN ?
				tc_grid_prepare(join, true, err) : tc_brute_prepare(join, err);
			break;
	}
	join->stats.index_seconds = tc_now() - t0;
	if (st == TC_OK)
		join->stats.method = join->backend->name;
	return st;
}

void
tc_device_prewarm(void)
{
	tc_gpu_prewarm(tc_gpu_warm_kernels);
}

void
tc_device_prewarm_wait(void)
{
	tc_gpu_prewarm_wait();
}

/* The GPU back ends' list, in the engine's own terms. */
bool
tc_device_any(void)
{
	return tc_gpu_count(NULL, 0) > 0;
}

int
tc_device_list(TcDeviceInfo *out, int max)
{
	TcGpuInfo	gpus[TC_MAX_DEVICES];
	int			n = tc_gpu_list(gpus, TC_MAX_DEVICES, NULL, 0);

	if (n > TC_MAX_DEVICES)
		n = TC_MAX_DEVICES;
	if (n > max)
		n = max;
	for (int i = 0; i < n; i++)
	{
		size_t		len = strnlen(gpus[i].name, sizeof(gpus[i].name));

		if (len >= sizeof(out[i].name))
			len = sizeof(out[i].name) - 1;
		memcpy(out[i].name, gpus[i].name, len);
		out[i].name[len] = '\0';
		out[i].device = gpus[i].device;
		out[i].major = gpus[i].major;
		out[i].minor = gpus[i].minor;
		out[i].total_memory = gpus[i].total_memory;
		out[i].free_memory = gpus[i].free_memory;
		out[i].sm_count = gpus[i].sm_count;
	}
	return n;
}

void
tc_join_get_stats(const TcJoin *join, TcJoinStats *stats)
{
	*stats = join->stats;
}

/* Caller holds join->mu. */
static TcBatch *
take_free_batch_locked(TcJoin *join)
{
	TcBatch    *b;

	while (join->free_list == NULL && !tc_should_stop(join))
		pthread_cond_wait(&join->free_cv, &join->mu);
	if (join->free_list == NULL)
		return NULL;
	b = join->free_list;
	join->free_list = b->next;
	b->next = NULL;
	b->count = 0;
	return b;
}

static void
push_full_locked(TcJoin *join, TcBatch *b)
{
	b->next = NULL;
	if (join->full_tail)
		join->full_tail->next = b;
	else
		join->full_head = b;
	join->full_tail = b;
	pthread_cond_signal(&join->full_cv);
}

bool
tc_worker_flush(TcWorker *w)
{
	TcJoin	   *join = w->join;

	pthread_mutex_lock(&join->mu);
	if (w->batch && w->batch->count > 0)
	{
		push_full_locked(join, w->batch);
		w->batch = take_free_batch_locked(join);
	}
	pthread_mutex_unlock(&join->mu);
	if (w->batch == NULL)
	{
		/* Stopped while waiting: give the caller a sink that drops pairs. */
		return false;
	}
	return !tc_should_stop(join);
}

static void *
worker_main(void *arg)
{
	TcWorker   *w = arg;
	TcJoin	   *join = w->join;
	const int64_t nitems = join->nitems;
	void		(*run_item) (TcJoin *, TcWorker *, int64_t) = join->backend->run_item;

	for (;;)
	{
		int64_t		item;

		if (tc_should_stop(join) || w->batch == NULL)
			break;
		item = atomic_fetch_add_explicit(&join->next_item, 1, memory_order_relaxed);
		if (item >= nitems)
			break;
		run_item(join, w, item);
	}

	pthread_mutex_lock(&join->mu);
	if (w->batch)
	{
		if (w->batch->count > 0 && !tc_should_stop(join))
			push_full_locked(join, w->batch);
		else
		{
			w->batch->next = join->free_list;
			join->free_list = w->batch;
		}
		w->batch = NULL;
	}
	join->workers_done++;
	pthread_cond_signal(&join->full_cv);
	pthread_mutex_unlock(&join->mu);
	return NULL;
}

/* Ask workers to stop and wake any that wait. */
static void
request_stop(TcJoin *join)
{
	atomic_store(&join->stop, true);
	if (join->sync_init)
	{
		pthread_mutex_lock(&join->mu);
		pthread_cond_broadcast(&join->free_cv);
		pthread_cond_broadcast(&join->full_cv);
		pthread_mutex_unlock(&join->mu);
	}
}

static void
join_workers(TcJoin *join)
{
	for (int i = 0; i < join->nworkers; i++)
	{
		if (join->workers[i].started)
		{
			pthread_join(join->workers[i].thread, NULL);
			join->workers[i].started = false;
			join->stats.candidates += join->workers[i].candidates;
			join->stats.rechecked += join->workers[i].rechecked;
			join->stats.pairs += join->workers[i].reduced;
			join->workers[i].candidates = 0;
			join->workers[i].rechecked = 0;
			join->workers[i].reduced = 0;
		}
	}
}

static TcStatus
setup_workers(TcJoin *join, TcError *err)
{
	int			nworkers = join->params.threads;

	/* No more threads than work items. */
	if (nworkers > join->nitems)
		nworkers = join->nitems > 0 ? (int) join->nitems : 1;
	join->stats.threads = nworkers;

	if (pthread_mutex_init(&join->mu, NULL) != 0 ||
		pthread_cond_init(&join->full_cv, NULL) != 0 ||
		pthread_cond_init(&join->free_cv, NULL) != 0)
	{
		tc_set_error(err, TC_ERR_INTERNAL, "could not initialise thread synchronisation");
		return TC_ERR_INTERNAL;
	}
	join->sync_init = true;

	/*
	 * Two batches per worker in flight plus two being drained: with at most
	 * tc_cpu_count() workers, at most (2 CPUs + 2) x sizeof(TcBatch).
	 */
	join->nbatches = 2 * nworkers + 2;
	join->all_batches = calloc(join->nbatches, sizeof(TcBatch *));
	join->workers = calloc(nworkers, sizeof(TcWorker));
	if (join->all_batches == NULL || join->workers == NULL)
		goto nomem;
	for (int i = 0; i < join->nbatches; i++)
	{
		TcBatch    *b = malloc(sizeof(TcBatch));

		if (b == NULL)
			goto nomem;
		join->all_batches[i] = b;
		b->count = 0;
		b->next = join->free_list;
		join->free_list = b;
	}
	join->nworkers = nworkers;
	for (int i = 0; i < nworkers; i++)
	{
		TcWorker   *w = &join->workers[i];

		w->join = join;
		w->reduce = join->sink ? join->sink->reduce : NULL;
		w->prefetch = w->reduce ? join->sink->prefetch : NULL;
		w->reduce_arg = join->sink ? join->sink->arg : NULL;
		w->batch = join->free_list;
		join->free_list = w->batch->next;
		w->batch->next = NULL;
	}
	return TC_OK;

nomem:
	tc_set_error(err, TC_ERR_NOMEM, "out of memory allocating result batches");
	return TC_ERR_NOMEM;
}

/*
 * Start the workers (tc_start_thread).  Returns how many started; *rc is
 * the error of the first that could not.
 */
static int
start_workers(TcJoin *join, int *rc)
{
	int			started = 0;

	*rc = 0;
	for (int i = 0; i < join->nworkers; i++)
	{
		if ((*rc = tc_start_thread(&join->workers[i].thread, worker_main, &join->workers[i])) != 0)
			break;
		join->workers[i].started = true;
		started++;
	}
	return started;
}

TcStatus
tc_join_run(TcJoin *join, const TcSink *sink, TcError *err)
{
	TcStatus	st;
	double		t0;
	int			started;
	int			rc;
	bool		stopped = false;

	if (err)
	{
		err->status = TC_OK;
		err->message[0] = '\0';
	}
	if (join->ran)
	{
		tc_set_error(err, TC_ERR_INVALID, "a join can run only once");
		return TC_ERR_INVALID;
	}
	join->ran = true;
	join->sink = sink;

	/* cosine in few dimensions: the unit vectors' join chooses its own device */
	if (tc_cosine_grid_applies(join))
	{
		bool		ran;

		st = tc_cosine_grid_run(join, &ran, err);
		if (ran || st != TC_OK)
			return st;
	}
	{
		bool		use_gpu;
		bool		to_cpu;

		tc_trace_step(join, "run");
		if ((st = tc_choose_device(join, &use_gpu, err)) != TC_OK)
			return st;
		tc_trace_step(join, "device chosen");
		if (use_gpu && ((st = run_gpu(join, &to_cpu, err)) != TC_OK || !to_cpu))
			return st;
	}
	st = prepare(join, err);
	if (st != TC_OK)
		return st;
	tc_trace_step(join, "CPU index built");
	if (tc_should_stop(join))
		return TC_STOPPED;

	t0 = tc_now();
	st = setup_workers(join, err);
	if (st != TC_OK)
		return st;

	started = start_workers(join, &rc);
	if (started == 0)
	{
		tc_set_error(err, TC_ERR_INTERNAL, "could not start a worker thread: %s",
					 strerror(rc));
		return TC_ERR_INTERNAL;
	}
	if (started < join->nworkers)
	{
		/* Workers that never started count as done; the rest do their work. */
		pthread_mutex_lock(&join->mu);
		join->workers_done += join->nworkers - started;
		for (int i = started; i < join->nworkers; i++)
		{
			join->workers[i].batch->next = join->free_list;
			join->free_list = join->workers[i].batch;
			join->workers[i].batch = NULL;
		}
		pthread_mutex_unlock(&join->mu);
		join->stats.threads = started;
	}

	for (;;)
	{
		TcBatch    *b;
		bool		finished;

		pthread_mutex_lock(&join->mu);
		if (join->full_head == NULL && join->workers_done < join->nworkers)
		{
			struct timespec deadline;

			clock_gettime(CLOCK_REALTIME, &deadline);
			deadline.tv_nsec += TC_POLL_NSEC;
			if (deadline.tv_nsec >= 1000000000L)
			{
				deadline.tv_sec++;
				deadline.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&join->full_cv, &join->mu, &deadline);
		}
		b = join->full_head;
		if (b)
		{
			join->full_head = b->next;
			if (join->full_head == NULL)
				join->full_tail = NULL;
		}
		finished = (b == NULL && join->workers_done == join->nworkers);
		pthread_mutex_unlock(&join->mu);

		if (b)
		{
			/* No lock is held here: emit may longjmp. */
			int			rc = sink->emit(sink->arg, b->pairs, b->count);

			join->stats.pairs += b->count;
			pthread_mutex_lock(&join->mu);
			b->next = join->free_list;
			join->free_list = b;
			pthread_cond_signal(&join->free_cv);
			pthread_mutex_unlock(&join->mu);
			if (rc != 0)
			{
				stopped = true;
				break;
			}
		}
		if (finished)
			break;
		if (sink->poll && sink->poll(sink->arg) != 0)
		{
			stopped = true;
			break;
		}
	}

	if (stopped)
		request_stop(join);
	join_workers(join);
	join->stats.join_seconds = tc_now() - t0;
	tc_trace_step(join, "CPU join ended");

	st = (TcStatus) atomic_load(&join->worker_error);
	if (st != TC_OK)
	{
		tc_set_error(err, st, "a worker failed: %s", tc_status_name(st));
		return st;
	}
	return stopped ? TC_STOPPED : TC_OK;
}

void
tc_join_destroy(TcJoin *join)
{
	if (join == NULL)
		return;
	tc_trace_step(join, "destroy");
	request_stop(join);
	join_workers(join);
	tc_gpu_join_free(join->gpu);
	tc_trace_step(join, "GPU state freed");
	tc_cosine_grid_free(join);
	if (join->backend && join->backend->free_state)
		join->backend->free_state(join);
	tc_free_scratch(join);
	for (int i = 0; i < join->nbatches; i++)
		free(join->all_batches[i]);
	free(join->all_batches);
	for (int i = 0; i < join->nworkers; i++)
		free(join->workers[i].scratch);
	free(join->workers);
	if (join->sync_init)
	{
		pthread_mutex_destroy(&join->mu);
		pthread_cond_destroy(&join->full_cv);
		pthread_cond_destroy(&join->free_cv);
	}
	tc_trace_step(join, "destroyed");
	free(join);
}
