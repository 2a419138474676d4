/*
 * test_threads.c
 *		The threads a join starts: every signal blocked in each of them (the
 *		host's handlers, PostgreSQL's, must run only on its own thread), the
 *		caller's mask left as it was, and no more threads than CPUs however
 *		many are asked for, with the same pairs.
 *
 * The signal check reads /proc/self/task/<tid>/status from the sink's poll,
 * which runs on the caller's thread while the workers run.
 */
#include "test_harness.h"

#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_TIDS 64
#define SIG_SCANS 10			/* polls that saw a worker, then stop */

typedef struct SigSink
{
	long		caller;
	long		before[MAX_TIDS];	/* threads there before the join */
	int			nbefore;
	sigset_t	caller_mask;
	int			scans;			/* polls that found a thread of the join */
	int			threads_seen;
	int			failures;
	bool		caller_changed;
} SigSink;

static long
my_tid(void)
{
	return (long) syscall(SYS_gettid);
}

/* The thread ids of this process, at most max. */
static int
list_tids(long *out, int max)
{
	DIR		   *dir = opendir("/proc/self/task");
	struct dirent *e;
	int			n = 0;

	if (dir == NULL)
		return 0;
	while ((e = readdir(dir)) != NULL && n < max)
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			out[n++] = strtol(e->d_name, NULL, 10);
	closedir(dir);
	return n;
}

/* Every signal a thread can block: all but SIGKILL, SIGSTOP and libc's own two. */
static uint64_t
blockable_mask(void)
{
	uint64_t	m = 0;

	for (int sig = 1; sig <= SIGRTMAX && sig <= 64; sig++)
	{
		if (sig == SIGKILL || sig == SIGSTOP || (sig > 31 && sig < SIGRTMIN))
			continue;
		m |= UINT64_C(1) << (sig - 1);
	}
	return m;
}

/* A thread's SigBlk; false if it is gone. */
static bool
read_sigblk(long tid, uint64_t *mask)
{
	char		path[64],
				line[256];
	FILE	   *f;
	bool		found = false;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "SigBlk:", 7) == 0)
		{
			*mask = strtoull(line + 7, NULL, 16);
			found = true;
			break;
		}
	fclose(f);
	return found;
}

static bool
same_mask(const sigset_t *x, const sigset_t *y)
{
	for (int sig = 1; sig <= SIGRTMAX; sig++)
		if (sigismember(x, sig) != sigismember(y, sig))
			return false;
	return true;
}

static int
sig_emit(void *arg, const TcPair *pairs, size_t count)
{
	(void) arg;
	(void) pairs;
	(void) count;
	return 0;
}

static int
sig_poll(void *arg)
{
	SigSink    *s = arg;
	long		tids[MAX_TIDS];
	int			n = list_tids(tids, MAX_TIDS);
	uint64_t	want = blockable_mask();
	sigset_t	cur;
	bool		saw = false;

	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	if (!same_mask(&cur, &s->caller_mask))
		s->caller_changed = true;
	for (int i = 0; i < n; i++)
	{
		bool		old = tids[i] == s->caller;
		uint64_t	mask;

		for (int j = 0; j < s->nbefore && !old; j++)
			old = tids[i] == s->before[j];
		if (old || !read_sigblk(tids[i], &mask))
			continue;
		saw = true;
		s->threads_seen++;
		if ((mask & want) != want && s->failures++ < 3)
			check_fail("thread %ld of the join has SigBlk %016" PRIx64 ", missing %016" PRIx64,
					   tids[i], mask, want & ~mask);
	}
	if (saw)
		s->scans++;
	return s->scans >= SIG_SCANS;
}

static TcMethod g_sig_method;

static void
iso_signals(void)
{
	TcPoints	p;
	Rng			r;
	SigSink		s = {0};
	TcSink		sink = {sig_emit, sig_poll, &s, 0, NULL, NULL, NULL};
	TcError		err;
	TcJoinParams params = make_params(0.05, g_sig_method, 4, false);
	TcJoin	   *join;
	TcStatus	st;
	sigset_t	after;

	rng_seed(&r, FIXED_SEED ^ 7);
	points_generate(&p, DIST_UNIFORM, 200000, 2, TC_FLOAT8, &r);
	s.caller = my_tid();
	s.nbefore = list_tids(s.before, MAX_TIDS);
	pthread_sigmask(SIG_BLOCK, NULL, &s.caller_mask);
	join = tc_join_create(&p, NULL, &params, &err);
	if (join == NULL)
	{
		check_fail("tc_join_create: %s", err.message);
		points_free(&p);
		return;
	}
	st = tc_join_run(join, &sink, &err);
	tc_join_destroy(join);
	pthread_sigmask(SIG_BLOCK, NULL, &after);
	CHECK(st == TC_OK || st == TC_STOPPED, "tc_join_run returned %s: %s", tc_status_name(st),
		  err.message);
	CHECK(s.scans > 0, "poll never ran while a thread of the join was alive");
	CHECK(!s.caller_changed, "the caller's signal mask changed during the join");
	CHECK(same_mask(&after, &s.caller_mask), "the caller's signal mask changed after the join");
	if (g_verbose)
		printf("# signals %s: %d polls saw %d thread states\n", method_name(g_sig_method),
			   s.scans, s.threads_seen);
	points_free(&p);
}

void
test_signals(void)
{
	TcMethod	methods[] = {TC_METHOD_GRID, TC_METHOD_BRUTE};

	for (int m = 0; m < 2; m++)
	{
		char		name[128];

		g_sig_method = methods[m];
		snprintf(name, sizeof(name), "[threads] every signal blocked in the join's threads, method=%s",
				 method_name(methods[m]));
		run_isolated(name, iso_signals, 120);
	}
}

/* tcjoin.cpu_threads goes up to 1,024: the join takes no more than the CPUs. */
void
test_thread_cap(void)
{
	TcMethod	methods[] = {TC_METHOD_GRID, TC_METHOD_BRUTE};
	TcPoints	p;
	Rng			r;
	PairVec		want = {0};
	double		eps = 0.02;

	rng_seed(&r, FIXED_SEED ^ 8);
	points_generate(&p, DIST_UNIFORM, 3000, 3, TC_FLOAT8, &r);
	ref_join(&p, NULL, eps, false, &want);
	for (int m = 0; m < 2; m++)
	{
		TcJoinParams params = make_params(eps, methods[m], 1024, false);
		Collector	c = {0};
		TcSink		sink = {collect_emit, collect_poll, &c, 0, NULL, NULL, NULL};
		TcError		err;
		TcJoinStats stats;
		TcJoin	   *join;
		TcStatus	st;

		case_begin("[threads] threads = 1024 takes at most the CPUs, method=%s",
				   method_name(methods[m]));
		c.owner = pthread_self();
		join = tc_join_create(&p, NULL, &params, &err);
		if (join == NULL)
		{
			check_fail("tc_join_create: %s", err.message);
			case_end();
			continue;
		}
		st = tc_join_run(join, &sink, &err);
		tc_join_get_stats(join, &stats);
		tc_join_destroy(join);
		CHECK(st == TC_OK, "tc_join_run returned %s: %s", tc_status_name(st), err.message);
		CHECK(stats.threads >= 1 && stats.threads <= tc_cpu_count(),
			  "stats.threads = %d with %d CPUs", stats.threads, tc_cpu_count());
		pairvec_sort(&c.pairs, true, p.n);
		if (compare_pairs(g_label, &c.pairs, &want, MAX_CASE_LINES))
			g_case_fails++;
		pairvec_free(&c.pairs);
		case_end();
	}
	pairvec_free(&want);
	points_free(&p);
}
