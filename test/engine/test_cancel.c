/*
 * test_cancel.c
 *		A stop is answered promptly in every phase, however long one work
 *		item or one set-up loop would run: the sink's poll asks to stop (by
 *		returning nonzero, or by longjmp as PostgreSQL's cancel does) at a
 *		fixed time, and the time from then to tc_join_run's return and to
 *		tc_join_destroy's return must stay under CANCEL_BOUND_S.
 *
 * The data make the stretches long: a grid cell of hundreds of thousands
 * of points that yield no pair (equal on the grid's one dimension, apart
 * by more than eps on others that no grid can split), so that one work
 * item meets the whole cell; and brute force over a large n x d, whose
 * float32 filter's set-up reads every coordinate on the caller's thread.
 * Each case runs in a child process (run_isolated).
 */
#include "test_harness.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

/* The longest a stop may take to be answered, with room for a loaded machine. */
#define CANCEL_BOUND_S 0.5

typedef struct CancelSink
{
	double		stop_at;		/* from this time poll asks to stop */
	bool		jump;			/* by longjmp rather than by returning 1 */
	size_t		polls;
	size_t		pairs;
} CancelSink;

static jmp_buf g_cancel_env;

static int
cancel_emit(void *arg, const TcPair *pairs, size_t count)
{
	CancelSink *s = arg;

	(void) pairs;
	s->pairs += count;
	return 0;
}

static int
cancel_poll(void *arg)
{
	CancelSink *s = arg;

	s->polls++;
	if (now_seconds() < s->stop_at)
		return 0;
	if (s->jump)
		longjmp(g_cancel_env, 1);
	return 1;
}

/*
 * Run the join, asking to stop after_s seconds in; check the delays.
 * volatile: the values live across the longjmp.
 */
static void
cancel_case(const char *what, const TcPoints *p, const TcPoints *b, TcJoinParams params,
			double after_s, bool jump, int want_grid_dims)
{
	TcError		err;
	TcSink		sink = {cancel_emit, cancel_poll, NULL, 0, NULL, NULL, NULL};
	CancelSink	s = {0};
	TcJoin	   *volatile join;
	volatile TcStatus st = TC_OK;
	volatile double t_run = 0;
	double		start,
				t_destroy;
	TcJoinStats stats;

	sink.arg = &s;
	s.jump = jump;
	join = tc_join_create(p, b, &params, &err);
	if (join == NULL)
	{
		check_fail("tc_join_create: %s: %s", tc_status_name(err.status), err.message);
		return;
	}
	start = now_seconds();
	s.stop_at = start + after_s;
	if (setjmp(g_cancel_env) == 0)
	{
		st = tc_join_run(join, &sink, &err);
		t_run = now_seconds();
	}
	else
		t_run = now_seconds();
	tc_join_get_stats(join, &stats);
	tc_join_destroy(join);
	t_destroy = now_seconds();

	if (g_verbose)
		printf("# cancel %s%s: stop at %.3f s answered by run %.3f s, destroy %.3f s later "
			   "(index %.3f s, %zu polls)\n", what, jump ? " (longjmp)" : "", after_s,
			   t_run - s.stop_at, t_destroy - s.stop_at, stats.index_seconds, s.polls);
	CHECK(jump || st == TC_STOPPED, "tc_join_run returned %s, expected TC_STOPPED",
		  tc_status_name(st));
	CHECK(s.pairs == 0, "%zu pairs from data that has none", s.pairs);
	CHECK(t_run - s.stop_at <= CANCEL_BOUND_S,
		  "tc_join_run returned %.3f s after the stop request (bound %.1f s)",
		  t_run - s.stop_at, CANCEL_BOUND_S);
	CHECK(t_destroy - s.stop_at <= CANCEL_BOUND_S,
		  "tc_join_destroy returned %.3f s after the stop request (bound %.1f s)",
		  t_destroy - s.stop_at, CANCEL_BOUND_S);
	if (want_grid_dims >= 0)
	{
		/* The stop must have come while the workers ran, the index built. */
		CHECK(stats.grid_dims == want_grid_dims, "the grid has %d dimensions, expected %d",
			  stats.grid_dims, want_grid_dims);
		CHECK(stats.index_seconds > 0 && stats.index_seconds < after_s,
			  "the index took %.3f s: the stop did not reach the workers", stats.index_seconds);
	}
}

/*
 * n points in one cell of a grid on dimension 0 (two outliers give that
 * dimension its cells), dimensions 1 .. d - 19 zero, and the last 18 the
 * bits of the point's number times 1.9 eps: every two points differ by at
 * least 1.9 eps, so no pair is within eps, and no dimension but 0 spans
 * the three cells a grid dimension needs.  The zeros come first, so each
 * candidate pair sums most of its dimensions before the early exit.
 */
#define CLUSTER_BITS 18

static void
cluster_points(TcPoints *p, int64_t n, int32_t d, double eps)
{
	points_alloc(p, n, d, TC_FLOAT4);
	for (int64_t i = 0; i < n; i++)
	{
		for (int32_t k = 0; k < d; k++)
			points_set(p, i, k, 0.0);
		for (int b = 0; b < CLUSTER_BITS; b++)
			points_set(p, i, d - 1 - b, ((i >> b) & 1) ? 1.9 * eps : 0.0);
	}
	points_set(p, n - 2, 0, 1000.0 * eps);
	points_set(p, n - 1, 0, 2000.0 * eps);
}

static int64_t
cluster_n(void)
{
	return g_quick ? 100000 : 400000;
}

static void
iso_grid_cell(bool jump)
{
	TcPoints	p;

	cluster_points(&p, cluster_n(), 128, 1.0);
	/* the stop at 1 s: after the index even on a loaded machine, long before the workers end */
	cancel_case("grid, one huge cell", &p, NULL, make_params(1.0, TC_METHOD_GRID, 2, false), 1.0,
				jump, 1);
	points_free(&p);
}

static void
iso_grid_cell_return(void)
{
	iso_grid_cell(false);
}

static void
iso_grid_cell_jump(void)
{
	iso_grid_cell(true);
}

/* Brute force with no grid dimension at all: the same cell, unsplit. */
static void
iso_brute_cluster(void)
{
	TcPoints	p;

	cluster_points(&p, cluster_n(), 64, 1.0);
	cancel_case("brute force over a cluster", &p, NULL, make_params(1.0, TC_METHOD_BRUTE, 2, false),
				0.4, false, -1);
	points_free(&p);
}

/*
 * The float32 filter's set-up (mean, largest coordinate, rounding) on a
 * large n x d: a stop early in it.  The coordinates need only be many and
 * spread; no pair is within the tiny eps.
 */
static void
iso_filter_setup(void)
{
	TcPoints	p;
	int64_t		n = g_quick ? 500000 : 2000000;
	int32_t		d = 128;
	uint64_t	x = FIXED_SEED;
	float	   *data;

	points_alloc(&p, n, d, TC_FLOAT4);
	data = (float *) p.data;
	for (size_t t = 0; t < (size_t) n * d; t++)
	{
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		data[t] = (float) (x >> 40) * 0x1p-24f;
	}
	cancel_case("float32 filter set-up", &p, NULL, make_params(1e-3, TC_METHOD_BRUTE, 2, false), 0.05,
				false, -1);
	points_free(&p);
}

/*
 * Two sets' grid index, built on two threads (b's on a thread of its own):
 * a stop early in it, by return or by a longjmp out of the poll while b's
 * thread still builds, which tc_join_destroy must then wait out.
 */
static void
iso_two_sets_index(bool jump)
{
	TcPoints	a,
				b;
	int64_t		n = g_quick ? 2000000 : 4000000;
	uint64_t	x = FIXED_SEED;

	points_alloc(&a, n, 2, TC_FLOAT8);
	points_alloc(&b, n, 2, TC_FLOAT8);
	for (int64_t i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
		{
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			points_set(&a, i, k, (double) (x >> 11) * 0x1p-53);
			points_set(&b, i, k, (double) (x >> 13) * 0x1p-51);
		}
	/* eps far below the points' spacing: no pair */
	cancel_case("grid of two sets, the index", &a, &b, make_params(1e-12, TC_METHOD_GRID, 2, false),
				0.02, jump, -1);
	points_free(&a);
	points_free(&b);
}

static void
iso_two_sets_return(void)
{
	iso_two_sets_index(false);
}

static void
iso_two_sets_jump(void)
{
	iso_two_sets_index(true);
}

void
test_cancel(void)
{
	run_isolated("[cancel] grid, a huge cell without pairs: poll asks to stop",
				 iso_grid_cell_return, 120);
	run_isolated("[cancel] grid, a huge cell without pairs: longjmp out of poll, then destroy",
				 iso_grid_cell_jump, 120);
	run_isolated("[cancel] brute force over a cluster: poll asks to stop", iso_brute_cluster, 120);
	run_isolated("[cancel] float32 filter set-up on a large n x d: poll asks to stop",
				 iso_filter_setup, 120);
	run_isolated("[cancel] grid index of two sets: poll asks to stop", iso_two_sets_return, 120);
	run_isolated("[cancel] grid index of two sets: longjmp out of poll while b's thread builds, "
				 "then destroy", iso_two_sets_jump, 120);
}
