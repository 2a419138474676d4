/*
 * test_harness.c
 *		The engine suite's machinery (test_harness.h): case bookkeeping and
 *		signals, the collecting sink and its checks of a join's stats, and the
 *		isolated case runner.  Eps choices and the data set runner are in
 *		test_datasets.c.
 */
#include "test_harness.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const int	thread_choices[4] = {1, 2, 3, 7};

/* ------------------------------------------------------ case bookkeeping */

void
case_begin(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(g_label, sizeof(g_label), fmt, ap);
	va_end(ap);
	g_case_fails = 0;
	alarm(CASE_TIMEOUT_S);
}

void
case_end(void)
{
	alarm(0);
	if (g_case_fails)
		g_failed++;
	else
		g_passed++;
}

void
check_fail(const char *fmt,...)
{
	va_list		ap;

	if (g_case_fails++ >= MAX_CASE_LINES)
		return;
	printf("FAIL %s: ", g_label);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/*
 * If the engine crashes or hangs in an in-process case, still name the case
 * and print the summary line.  Under ASan its own handler reports better.
 */
static void
fatal_signal(int sig)
{
	char		buf[1024];
	int			len;

	len = snprintf(buf, sizeof(buf),
				   "FAIL %s: %s\n%d passed, %d failed\n", g_label,
				   sig == SIGALRM ? "timed out (hang?)" : strsignal(sig),
				   g_passed, g_failed + 1);
	if (len > 0)
		(void) !write(STDOUT_FILENO, buf, (size_t) len < sizeof(buf) ? (size_t) len : sizeof(buf) - 1);
	_exit(2);
}

void
install_signal_handlers(void)
{
	signal(SIGALRM, fatal_signal);
#if !defined(__SANITIZE_ADDRESS__)
	signal(SIGSEGV, fatal_signal);
	signal(SIGBUS, fatal_signal);
	signal(SIGFPE, fatal_signal);
	signal(SIGABRT, fatal_signal);
#endif
}

void
reset_signal_handlers(void)
{
	signal(SIGALRM, SIG_DFL);
#if !defined(__SANITIZE_ADDRESS__)
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	signal(SIGFPE, SIG_DFL);
	signal(SIGABRT, SIG_DFL);
#endif
}

const char *
method_name(TcMethod m)
{
	switch (m)
	{
		case TC_METHOD_AUTO:
			return "auto";
		case TC_METHOD_GRID:
			return "grid";
		case TC_METHOD_BRUTE:
			return "brute";
	}
	return "?";
}

const char *
type_name(TcElemType t)
{
	return t == TC_FLOAT4 ? "float4" : "float8";
}

TcJoinParams
make_params(double eps, TcMethod method, int threads, bool include_self)
{
	TcJoinParams p;

	memset(&p, 0, sizeof(p));
	p.eps = eps;
	p.method = method;
	p.device = TC_DEVICE_CPU;
	p.exact = true;
	p.include_self = include_self;
	p.threads = threads;
	return p;
}

/* ------------------------------------------------------------- the sink */

int
collect_emit(void *arg, const TcPair *pairs, size_t count)
{
	Collector  *c = arg;

	if (!pthread_equal(pthread_self(), c->owner))
		c->wrong_thread = true;
	if (count > 0 && pairs == NULL)
	{
		c->null_batch = true;
		return 0;
	}
	c->batches++;
	pairvec_append(&c->pairs, pairs, count);
	return 0;
}

int
collect_poll(void *arg)
{
	Collector  *c = arg;

	if (!pthread_equal(pthread_self(), c->owner))
		c->wrong_thread = true;
	c->polls++;
	return 0;
}

static bool
valid_method_name(const char *m)
{
	return m != NULL && (strcmp(m, "grid") == 0 || strcmp(m, "brute") == 0);
}

/*
 * Run one join and check everything about it except the pair set itself:
 * status, callback threads, stats.  Leaves the pairs, normalized and sorted,
 * in c->pairs.  Returns false if the join could not produce a result.
 */
bool
run_and_check(const TcPoints *a, const TcPoints *b, const TcJoinParams *params,
			  Collector *c)
{
	TcError		err;
	TcJoinStats stats;
	TcSink		sink = {collect_emit, collect_poll, c, 0, NULL, NULL, NULL};
	TcJoin	   *join;
	TcStatus	st;
	int64_t		na = a->n;
	int64_t		nb = b ? b->n : a->n;

	memset(c, 0, sizeof(*c));
	c->owner = pthread_self();
	memset(&err, 0, sizeof(err));
	join = tc_join_create(a, b, params, &err);
	if (join == NULL)
	{
		check_fail("tc_join_create failed: %s: %s",
				   tc_status_name(err.status), err.message);
		return false;
	}

	memset(&stats, 0, sizeof(stats));
	tc_join_get_stats(join, &stats);
	CHECK(valid_method_name(stats.method),
		  "stats.method after create is %s", stats.method ? stats.method : "NULL");

	st = tc_join_run(join, &sink, &err);
	memset(&stats, 0, sizeof(stats));
	tc_join_get_stats(join, &stats);
	tc_join_destroy(join);

	if (st != TC_OK)
	{
		check_fail("tc_join_run returned %s: %s", tc_status_name(st), err.message);
		return false;
	}
	CHECK(!c->wrong_thread, "a sink callback ran on a thread other than the caller's");
	CHECK(!c->null_batch, "emit got pairs == NULL with count > 0");

	/* Stats. */
	uint64_t	self_pairs = (b == NULL && params->include_self) ? (uint64_t) na : 0;

	CHECK(stats.pairs == c->pairs.n,
		  "stats.pairs = %" PRIu64 ", but %zu pairs were emitted",
		  stats.pairs, c->pairs.n);
	CHECK(stats.candidates + self_pairs >= (uint64_t) c->pairs.n,
		  "stats.candidates = %" PRIu64 " < pairs (%zu) - self pairs (%" PRIu64 ")",
		  stats.candidates, c->pairs.n, self_pairs);
	CHECK(valid_method_name(stats.method),
		  "stats.method is %s", stats.method ? stats.method : "NULL");
	if (params->method != TC_METHOD_AUTO && valid_method_name(stats.method))
		CHECK(strcmp(stats.method, method_name(params->method)) == 0,
			  "stats.method is %s, but %s was forced",
			  stats.method, method_name(params->method));
	CHECK(stats.device != NULL && strcmp(stats.device, "cpu") == 0,
		  "stats.device is %s, expected cpu", stats.device ? stats.device : "NULL");
	CHECK(stats.threads >= 1 && stats.threads <= params->threads,
		  "stats.threads = %d with %d requested", stats.threads, params->threads);
	CHECK(stats.cells >= 0 && stats.cells <= (b ? na + nb : na),
		  "stats.cells = %" PRId64 " for %" PRId64 " points", stats.cells,
		  b ? na + nb : na);
	if (stats.method && strcmp(stats.method, "grid") == 0)
	{
		int			maxdims = a->d < 8 ? a->d : 8;

		CHECK(stats.grid_dims >= 0 && stats.grid_dims <= maxdims,
			  "stats.grid_dims = %d with d = %d", stats.grid_dims, a->d);
		for (int i = 0; i < stats.grid_dims && i < 8; i++)
		{
			CHECK(stats.grid_dim_ids[i] >= 0 && stats.grid_dim_ids[i] < a->d,
				  "stats.grid_dim_ids[%d] = %d with d = %d", i,
				  stats.grid_dim_ids[i], a->d);
			for (int j = 0; j < i; j++)
				CHECK(stats.grid_dim_ids[i] != stats.grid_dim_ids[j],
					  "stats.grid_dim_ids[%d] repeats dimension %d", i,
					  stats.grid_dim_ids[i]);
		}
	}

	/* Index ranges, before sorting (sorting tolerates garbage, but say so). */
	size_t		bad = 0;

	for (size_t i = 0; i < c->pairs.n; i++)
	{
		const TcPair *p = &c->pairs.v[i];
		bool		ok = p->a >= 0 && p->a < na && p->b >= 0 && p->b < nb;

		if (ok && b == NULL && p->a == p->b && !params->include_self)
			ok = false;
		if (!ok && bad++ < 3)
			check_fail("invalid pair (%" PRId64 ", %" PRId64 ") dist=%.17g",
					   p->a, p->b, p->dist);
	}
	pairvec_sort(&c->pairs, b == NULL, na);
	return true;
}

/* Add (i, i, 0) for every i to a sorted, normalized self-join result. */
void
with_self_pairs(const PairVec *in, int64_t n, PairVec *out)
{
	size_t		k = 0;

	out->n = 0;
	for (int64_t i = 0; i < n; i++)
	{
		pairvec_push(out, i, i, 0.0);
		while (k < in->n && in->v[k].a == i)
		{
			pairvec_push(out, in->v[k].a, in->v[k].b, in->v[k].dist);
			k++;
		}
	}
}

/* One complete test case: run the join and compare with the expectation. */
void
join_case(const TcPoints *a, const TcPoints *b, const TcJoinParams *params,
		  const PairVec *want)
{
	Collector	c;

	if (run_and_check(a, b, params, &c))
	{
		size_t		diffs = compare_pairs(g_label, &c.pairs, want, MAX_CASE_LINES);

		if (diffs)
			g_case_fails++;
	}
	pairvec_free(&c.pairs);
}

/* -------------------------------------------------------- isolated cases */

/*
 * A case run in a child process with a time limit, so that a crash or a hang
 * in the engine (its stop/abandon paths, say) fails one case instead of the
 * suite.  Under ASan the child's exit runs the leak check.
 */
#define CHILD_FAILED 3		/* exit status: checks failed, lines printed */

void
run_isolated(const char *name, void (*fn) (void), double timeout_s)
{
	pid_t		pid;
	int			status = 0;

	case_begin("%s", name);
	alarm(0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
	{
		check_fail("fork: %s", strerror(errno));
		case_end();
		return;
	}
	if (pid == 0)
	{
		g_case_fails = 0;
		/* Let the parent see a crash as a signal, not a second summary. */
		reset_signal_handlers();
		fn();
		fflush(stdout);
		exit(g_case_fails ? CHILD_FAILED : 0);
	}

	double		start = now_seconds();

	for (;;)
	{
		pid_t		w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
		{
			check_fail("waitpid: %s", strerror(errno));
			break;
		}
		if (now_seconds() - start > timeout_s)
		{
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			check_fail("no result after %.0f s: killed (hang?)", timeout_s);
			status = 0;
			break;
		}
		usleep(5000);
	}
	if (WIFSIGNALED(status))
		check_fail("crashed: %s", strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_FAILED)
		g_case_fails++;			/* the child printed its failures */
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		check_fail("exited with status %d (sanitizer report on stderr?)",
				   WEXITSTATUS(status));
	case_end();
}
