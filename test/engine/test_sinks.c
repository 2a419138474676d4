/*
 * test_sinks.c
 *		The sink's contract under stress: emit or poll asking to stop (the
 *		run returns TC_STOPPED promptly, emit is not called again), leaving
 *		tc_join_run by longjmp from either callback and then destroying the
 *		join, poll's cadence, and create then destroy without a run.  Each
 *		case runs in a child process (run_isolated), so that a crash or a
 *		hang fails one case, not the suite.
 */
#include "test_harness.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

/* The big job: far more pairs than one batch, taking seconds to finish. */
static void
big_points(TcPoints *p, int64_t n)
{
	Rng			r;

	rng_seed(&r, FIXED_SEED ^ 4);
	points_generate(p, DIST_UNIFORM, g_quick ? n / 4 : n, 2, TC_FLOAT8, &r);
}

#define BIG_N	200000
#define BIG_EPS 0.05

typedef struct StopSink
{
	size_t		stop_after_batch;	/* emit returns 1 on this batch (1-based) */
	bool		stop_at_poll;	/* poll returns 1 ... */
	bool		poll_after_batch;	/* ... once a batch has arrived, else at once */
	double		stop_after_s;	/* poll returns 1 after this long */
	double		start;
	double		stop_time;		/* when a callback asked to stop */
	size_t		batches;
	size_t		batches_after_stop;
	size_t		polls;
	size_t		pairs;
	bool		stopped;
	bool		poll_stopped;
	bool		wrong_thread;
	pthread_t	owner;
	/* cadence */
	double		last;			/* end of the last poll (or start) */
	double		emit_time;		/* spent in emit since then */
	double		max_gap;
} StopSink;

static int
stop_emit(void *arg, const TcPair *pairs, size_t count)
{
	StopSink   *s = arg;
	double		t0 = now_seconds();

	(void) pairs;
	if (!pthread_equal(pthread_self(), s->owner))
		s->wrong_thread = true;
	if (s->stopped)
		s->batches_after_stop++;
	s->batches++;
	s->pairs += count;
	if (s->stop_after_batch && s->batches == s->stop_after_batch)
	{
		s->stopped = true;
		s->stop_time = now_seconds();
	}
	s->emit_time += now_seconds() - t0;
	return s->stopped && !s->poll_stopped ? 1 : 0;
}

static int
stop_poll(void *arg)
{
	StopSink   *s = arg;
	double		now = now_seconds();
	double		gap = now - s->last - s->emit_time;

	if (!pthread_equal(pthread_self(), s->owner))
		s->wrong_thread = true;
	if (gap > s->max_gap)
		s->max_gap = gap;
	s->polls++;
	if (!s->stopped &&
		((s->stop_at_poll && (!s->poll_after_batch || s->batches > 0)) ||
		 (s->stop_after_s > 0 && now - s->start >= s->stop_after_s)))
	{
		s->stopped = true;
		s->poll_stopped = true;
		s->stop_time = now;
	}
	s->last = now_seconds();
	s->emit_time = 0;
	/* Only a stop asked for by poll: an ignored emit stop must show. */
	return s->poll_stopped ? 1 : 0;
}

static TcStatus
run_stop_sink(const TcPoints *p, TcJoinParams params, StopSink *s, TcJoinStats *stats)
{
	TcError		err;
	TcSink		sink = {stop_emit, stop_poll, s, 0, NULL, NULL, NULL};
	TcJoin	   *join = tc_join_create(p, NULL, &params, &err);
	TcStatus	st;

	if (!join)
	{
		check_fail("tc_join_create: %s: %s", tc_status_name(err.status), err.message);
		return err.status;
	}
	s->owner = pthread_self();
	s->start = s->last = now_seconds();
	st = tc_join_run(join, &sink, &err);
	double		end = now_seconds();
	double		tail = end - s->last - s->emit_time;

	if (tail > s->max_gap && st == TC_OK)
		s->max_gap = tail;
	tc_join_get_stats(join, stats);
	tc_join_destroy(join);
	if (s->stopped && end - s->stop_time > 1.0)
		check_fail("tc_join_run took %.3f s to return after the stop request",
				   end - s->stop_time);
	CHECK(!s->wrong_thread, "a sink callback ran on a thread other than the caller's");
	return st;
}

static TcMethod g_iso_method;
static int	g_iso_threads;
static size_t g_iso_nth;		/* emit acts on this batch (1-based) */
static bool g_iso_from_poll;	/* longjmp: from poll rather than emit */
static bool g_iso_after_batch;	/* poll acts once a batch has arrived */

static void
iso_emit_stop(void)
{
	TcPoints	p;
	StopSink	s = {0};
	TcJoinStats stats;
	TcStatus	st;

	big_points(&p, BIG_N);
	s.stop_after_batch = g_iso_nth;
	s.stop_after_s = 5.0;		/* backstop, should the engine ignore emit */
	st = run_stop_sink(&p, make_params(BIG_EPS, g_iso_method, g_iso_threads, false),
					   &s, &stats);
	CHECK(st == TC_STOPPED, "tc_join_run returned %s, expected TC_STOPPED "
		  "(%zu batches, %zu pairs)", tc_status_name(st), s.batches, s.pairs);
	CHECK(s.batches_after_stop == 0,
		  "emit was called %zu more times after it returned nonzero",
		  s.batches_after_stop);
	CHECK(stats.pairs == s.pairs, "stats.pairs = %" PRIu64 ", but %zu pairs were emitted",
		  stats.pairs, s.pairs);
	points_free(&p);
}

static void
iso_poll_stop(void)
{
	TcPoints	p;
	StopSink	s = {0};
	TcJoinStats stats;
	TcStatus	st;

	big_points(&p, BIG_N);
	s.stop_at_poll = true;
	s.poll_after_batch = g_iso_after_batch;
	st = run_stop_sink(&p, make_params(BIG_EPS, g_iso_method, g_iso_threads, false),
					   &s, &stats);
	CHECK(s.polls > 0, "poll was never called (run returned %s, %zu pairs)",
		  tc_status_name(st), s.pairs);
	CHECK(st == TC_STOPPED, "tc_join_run returned %s, expected TC_STOPPED",
		  tc_status_name(st));
	CHECK(stats.pairs == s.pairs, "stats.pairs = %" PRIu64 ", but %zu pairs were emitted",
		  stats.pairs, s.pairs);
	points_free(&p);
}

/* poll must come at least every 20 ms; allow generous scheduling slack. */
static void
iso_poll_cadence(void)
{
	TcPoints	p;
	StopSink	s = {0};
	TcJoinStats stats;
	TcStatus	st;
	double		eps = (g_iso_method == TC_METHOD_BRUTE) ? 0.002 : 0.01;

	big_points(&p, 100000);
	s.stop_after_s = 1.5;		/* bound the run time */
	st = run_stop_sink(&p, make_params(eps, g_iso_method, g_iso_threads, false),
					   &s, &stats);
	CHECK(st == TC_OK || st == TC_STOPPED, "tc_join_run returned %s", tc_status_name(st));
	CHECK(s.max_gap <= 0.25,
		  "longest stretch without a poll: %.3f s (contract: 20 ms; %zu polls, %zu batches)",
		  s.max_gap, s.polls, s.batches);
	points_free(&p);
}

/* Leaving tc_join_run by longjmp, from emit or from poll. */
static struct
{
	jmp_buf		env;
	size_t		batches;
	size_t		polls;
	size_t		jump_at;		/* emit: batch number */
	bool		after_batch;	/* poll: once a batch has arrived */
	bool		from_poll;
} g_jump;

static int
jump_emit(void *arg, const TcPair *pairs, size_t count)
{
	(void) arg;
	(void) pairs;
	(void) count;
	g_jump.batches++;
	if (!g_jump.from_poll && g_jump.batches >= g_jump.jump_at)
		longjmp(g_jump.env, 1);
	return 0;
}

static int
jump_poll(void *arg)
{
	(void) arg;
	g_jump.polls++;
	if (g_jump.from_poll && (!g_jump.after_batch || g_jump.batches > 0))
		longjmp(g_jump.env, 1);
	return 0;
}

/* After an abandoned join, the engine must still work normally. */
static void
sanity_join_after(void)
{
	Rng			r;
	TcPoints	p;
	PairVec		want = {0};
	Collector	c;

	rng_seed(&r, FIXED_SEED ^ 5);
	points_generate(&p, DIST_UNIFORM, 400, 2, TC_FLOAT8, &r);
	ref_join(&p, NULL, 0.05, false, &want);

	TcJoinParams params = make_params(0.05, g_iso_method, g_iso_threads, false);

	if (run_and_check(&p, NULL, &params, &c) &&
		compare_pairs(g_label, &c.pairs, &want, MAX_CASE_LINES) > 0)
		g_case_fails++;
	pairvec_free(&c.pairs);
	pairvec_free(&want);
	points_free(&p);
}

static void
iso_longjmp(void)
{
	TcPoints	p;
	TcError		err;
	TcSink		sink = {jump_emit, jump_poll, NULL, 0, NULL, NULL, NULL};
	TcJoin	   *join;

	big_points(&p, BIG_N);
	TcJoinParams params = make_params(BIG_EPS, g_iso_method, g_iso_threads, false);

	join = tc_join_create(&p, NULL, &params, &err);
	if (!join)
	{
		check_fail("tc_join_create: %s: %s", tc_status_name(err.status), err.message);
		points_free(&p);
		return;
	}
	memset(&g_jump, 0, sizeof(g_jump));
	g_jump.jump_at = g_iso_nth;
	g_jump.from_poll = g_iso_from_poll;
	g_jump.after_batch = g_iso_after_batch;
	if (setjmp(g_jump.env) == 0)
	{
		TcStatus	st = tc_join_run(join, &sink, &err);

		check_fail("tc_join_run returned %s without the callback jumping out "
				   "(%zu batches, %zu polls)", tc_status_name(st),
				   g_jump.batches, g_jump.polls);
	}

	double		t0 = now_seconds();

	tc_join_destroy(join);
	CHECK(now_seconds() - t0 < 10.0, "tc_join_destroy took %.1f s", now_seconds() - t0);
	points_free(&p);
	sanity_join_after();
}

/* create then destroy, never running: must not leak or hang. */
static void
iso_destroy_unrun(void)
{
	TcPoints	p;
	TcError		err;

	big_points(&p, BIG_N);
	for (int m = TC_METHOD_AUTO; m <= TC_METHOD_BRUTE; m++)
	{
		TcJoinParams params = make_params(BIG_EPS, (TcMethod) m, 7, true);
		TcJoin	   *join = tc_join_create(&p, NULL, &params, &err);

		CHECK(join != NULL, "tc_join_create: %s: %s", tc_status_name(err.status), err.message);
		tc_join_destroy(join);
	}
	tc_join_destroy(NULL);
	points_free(&p);
}

void
test_sinks(void)
{
	static const TcMethod methods[] = {TC_METHOD_GRID, TC_METHOD_BRUTE, TC_METHOD_AUTO};
	char		name[256];
	double		limit = 60.0;

	for (int mi = 0; mi < 3; mi++)
	{
		g_iso_method = methods[mi];
		for (int ti = 0; ti < 4; ti++)
		{
			g_iso_threads = thread_choices[ti];
			if (g_quick && ti != 1 && ti != 2)
				continue;
			const char *mn = method_name(g_iso_method);

			/*
			 * Alternately act on the first batch or poll (a poll may come
			 * before any worker runs, while the index is built), or on the
			 * third batch or the first poll after a batch (workers are
			 * running).
			 */
			g_iso_nth = (ti & 1) ? 3 : 1;
			g_iso_after_batch = (ti & 1);
			g_iso_from_poll = false;
			snprintf(name, sizeof(name), "[sink] emit returns nonzero on batch %zu method=%s threads=%d",
					 g_iso_nth, mn, g_iso_threads);
			run_isolated(name, iso_emit_stop, limit);

			snprintf(name, sizeof(name), "[sink] poll returns nonzero on its %s call method=%s threads=%d",
					 g_iso_after_batch ? "first after a batch" : "first", mn, g_iso_threads);
			run_isolated(name, iso_poll_stop, limit);

			snprintf(name, sizeof(name), "[sink] longjmp out of emit on batch %zu, then destroy method=%s threads=%d",
					 g_iso_nth, mn, g_iso_threads);
			run_isolated(name, iso_longjmp, limit);

			g_iso_from_poll = true;
			snprintf(name, sizeof(name), "[sink] longjmp out of poll on its %s call, then destroy method=%s threads=%d",
					 g_iso_after_batch ? "first after a batch" : "first", mn, g_iso_threads);
			run_isolated(name, iso_longjmp, limit);
		}
		g_iso_threads = 2;
		snprintf(name, sizeof(name), "[sink] poll cadence method=%s threads=2",
				 method_name(g_iso_method));
		run_isolated(name, iso_poll_cadence, limit);
	}
	run_isolated("[sink] create then destroy without run", iso_destroy_unrun, limit);
}
