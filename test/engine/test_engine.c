/*
 * test_engine.c
 *		Standalone tests of the tcjoin join engine (src/engine.h), with no
 *		PostgreSQL involved.
 *
 * Every join result is checked exactly against an independent naive
 * reference (test_common.c): same index pairs, dist equal bit for bit.
 *
 * Output: one "FAIL <case>: <detail>" line per failed check, then exactly one
 * summary line "N passed, N failed" counting test cases.  Exit status is
 * nonzero if any case failed.
 *
 * Environment:
 *	 TC_TEST_SEED	seed of the randomized part (default: time and pid); the
 *					rest of the suite always uses a fixed seed.
 *	 TC_TEST_QUICK	if set and not "0": a shorter run (used under sanitizers).
 *	 TC_TEST_VERBOSE if set: print section timings.
 *	 TC_TEST_SECTIONS comma-separated sections to run (default all): basics,
 *					sq_threshold, invalid, tiny, dims, distributions,
 *					two-sets, large, sinks, random.
 */
#include "test_common.h"
#include "fp16_filter.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FIXED_SEED		UINT64_C(0x7463a01e5eed2024)
#define MAX_CASE_LINES	8		/* failure lines printed per case */
#define CASE_TIMEOUT_S	300		/* watchdog for one in-process case */

static bool g_quick;
static bool g_verbose;
static uint64_t g_fresh_seed;

static int	g_passed;
static int	g_failed;
static int	g_case_fails;		/* failed checks in the current case */
static char g_label[768];
static unsigned g_rotate;		/* spreads threads/include_self over cases */

static const int thread_choices[] = {1, 2, 3, 7};

/* ------------------------------------------------------ case bookkeeping */

static void
case_begin(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(g_label, sizeof(g_label), fmt, ap);
	va_end(ap);
	g_case_fails = 0;
	alarm(CASE_TIMEOUT_S);
}

static void
case_end(void)
{
	alarm(0);
	if (g_case_fails)
		g_failed++;
	else
		g_passed++;
}

static void
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

#define CHECK(cond, ...) \
	do { if (!(cond)) check_fail(__VA_ARGS__); } while (0)

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

static void
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

static void
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

static const char *
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

static const char *
type_name(TcElemType t)
{
	return t == TC_FLOAT4 ? "float4" : "float8";
}

static TcJoinParams
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

/* Collects every pair and checks the callbacks stay on the caller thread. */
typedef struct Collector
{
	PairVec		pairs;
	size_t		batches;
	size_t		polls;
	pthread_t	owner;
	bool		wrong_thread;
	bool		null_batch;
} Collector;

static int
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

static int
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
static bool
run_and_check(const TcPoints *a, const TcPoints *b, const TcJoinParams *params,
			  Collector *c)
{
	TcError		err;
	TcJoinStats stats;
	TcSink		sink = {collect_emit, collect_poll, c};
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
static void
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
static void
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

/* ---------------------------------------------------------- eps choices */

typedef enum EpsKind
{
	EPS_ZERO,
	EPS_BOUND,					/* an exact pair distance: pair included */
	EPS_BELOW,					/* the double below it: pair excluded */
	EPS_TINY,
	EPS_SUBNORMAL,
	EPS_MEDIUM,
	EPS_LARGE,
	EPS_NEAREST,				/* a nearest-neighbour distance, exactly */
	EPS_HUGE,					/* eps * eps overflows */
	EPS_MAX,
	EPS_KINDS
} EpsKind;

static const char *const eps_kind_names[EPS_KINDS] = {
	"zero", "boundary", "below-boundary", "tiny", "subnormal", "medium",
	"large", "nearest", "huge", "dbl-max"
};

typedef struct EpsChoice
{
	EpsKind		kind;
	double		eps;
	int64_t		bi,
				bj;				/* the boundary pair, for EPS_BOUND/BELOW */
} EpsChoice;

static int
cmp_double(const void *x, const void *y)
{
	double		a = *(const double *) x,
				b = *(const double *) y;

	return (a > b) - (a < b);
}

/*
 * Pick eps values from the data: a boundary pair near the distance that
 * gives each point about ten neighbours, a medium eps between two sampled
 * distances, and fixed extremes.  Returns how many were written.
 */
static int
choose_eps(const RefTable *t, Rng *r, EpsChoice *out)
{
	int			count = 0;
	int64_t		n = t->na;
	int64_t		nb = t->nb;
	bool		self = (t->b == NULL);
	size_t		npairs = ref_table_size(t);

	out[count++] = (EpsChoice) {EPS_ZERO, 0.0, -1, -1};
	out[count++] = (EpsChoice) {EPS_TINY, 1e-300, -1, -1};
	out[count++] = (EpsChoice) {EPS_SUBNORMAL, DBL_TRUE_MIN, -1, -1};
	out[count++] = (EpsChoice) {EPS_HUGE, 1e200, -1, -1};
	out[count++] = (EpsChoice) {EPS_MAX, DBL_MAX, -1, -1};
	if (npairs == 0)
		return count;

	enum
	{
	NSAMPLE = 2048};
	double		dist[NSAMPLE];
	int64_t		si[NSAMPLE],
				sj[NSAMPLE];
	int			m = 0;

	for (; m < NSAMPLE && (size_t) m < 4 * npairs; m++)
	{
		int64_t		i = (int64_t) rng_below(r, (uint64_t) n);
		int64_t		j = (int64_t) rng_below(r, (uint64_t) nb);

		if (self && i == j)
			j = (i + 1) % n;
		si[m] = i;
		sj[m] = j;
		dist[m] = ref_table_get(t, i, j);
	}

	double		sorted[NSAMPLE];

	memcpy(sorted, dist, sizeof(double) * (size_t) m);
	qsort(sorted, (size_t) m, sizeof(double), cmp_double);

	double		q = 20.0 / (double) (n > nb ? n : nb);

	if (q > 0.5)
		q = 0.5;
	int			k = (int) (q * m);

	if (k >= m)
		k = m - 1;

	/* Boundary: the sampled pair closest to the target quantile, finite and > 0. */
	double		target = sorted[k];
	int			best = -1;

	for (int s = 0; s < m; s++)
	{
		if (!(dist[s] > 0.0) || isinf(dist[s]))
			continue;
		if (best < 0 || fabs(dist[s] - target) < fabs(dist[best] - target))
			best = s;
	}
	if (best >= 0)
	{
		out[count++] = (EpsChoice) {EPS_BOUND, dist[best], si[best], sj[best]};
		out[count++] = (EpsChoice) {EPS_BELOW, nextafter(dist[best], 0.0),
		si[best], sj[best]};
	}

	/* Medium: halfway between two neighbouring samples, if both finite. */
	int			k2 = k + 1 < m ? k + 1 : k;

	if (isfinite(sorted[k2]))
		out[count++] = (EpsChoice) {EPS_MEDIUM, sorted[k] / 2 + sorted[k2] / 2, -1, -1};

	/*
	 * Nearest: the smallest positive distance from one point.  On lattice
	 * data many pairs lie at exactly this distance, at cell boundaries.
	 */
	{
		int64_t		i = (int64_t) rng_below(r, (uint64_t) n);
		int64_t		bj = -1;
		double		best_d = INFINITY;

		for (int64_t j = 0; j < nb; j++)
		{
			double		dj;

			if (self && j == i)
				continue;
			dj = ref_table_get(t, i, j);
			if (dj > 0.0 && dj < best_d)
			{
				best_d = dj;
				bj = j;
			}
		}
		if (bj >= 0 && isfinite(best_d))
			out[count++] = (EpsChoice) {EPS_NEAREST, best_d, i, bj};
	}

	/* Large: about 30 % of all pairs. */
	int			k3 = (int) (0.3 * m);

	if (isfinite(sorted[k3]) && sorted[k3] > 0.0)
		out[count++] = (EpsChoice) {EPS_LARGE, sorted[k3], -1, -1};
	return count;
}

/* ------------------------------------------------------ data set runner */

typedef struct DataSpec
{
	const char *section;
	Dist		dist;
	int64_t		n;
	int32_t		d;
	TcElemType	type;
	uint64_t	seed;
} DataSpec;

/* Result sizes above which fewer runs are made; see test_dataset. */
#define MANY_PAIRS	50000
#define BIG_RESULT	300000

/*
 * Generate a data set, compute all pairwise distances once, then check the
 * engine for each chosen eps and method.  Threads and include_self rotate
 * across cases so that every combination is met somewhere in the suite.
 * kinds_mask selects eps kinds (bit per EpsKind); methods: all three unless
 * the expected result is big.
 */
static void
test_dataset(const DataSpec *ds, unsigned kinds_mask)
{
	Rng			r;
	TcPoints	pts;
	RefTable	table;
	EpsChoice	eps[EPS_KINDS + 2];
	int			neps;
	PairVec		want = {0},
				want_self = {0};
	static const TcMethod methods[] = {TC_METHOD_GRID, TC_METHOD_BRUTE, TC_METHOD_AUTO};
	bool		big_done = false;
	double		t_start = now_seconds();

	rng_seed(&r, ds->seed);
	points_generate(&pts, ds->dist, ds->n, ds->d, ds->type, &r);
	ref_table_build(&table, &pts, NULL);
	neps = choose_eps(&table, &r, eps);

	for (int e = 0; e < neps; e++)
	{
		if (!(kinds_mask & (1u << eps[e].kind)))
			continue;

		ref_table_pairs(&table, eps[e].eps, false, &want);
		with_self_pairs(&want, pts.n, &want_self);

		/* Sanity of the reference itself at the boundary. */
		if (eps[e].kind == EPS_BOUND || eps[e].kind == EPS_BELOW)
		{
			double		bd = ref_table_get(&table, eps[e].bi, eps[e].bj);
			bool		in = bd <= eps[e].eps;

			if (in != (eps[e].kind == EPS_BOUND))
			{
				printf("FAIL internal: boundary pair misclassified by the reference\n");
				g_failed++;
			}
		}

		int			nmethods = 3;
		int			first = 0;

		/*
		 * Near-complete results say little about the index and cost much:
		 * one method each (rotating), and at most one huge one per data set.
		 */
		if (want.n > BIG_RESULT)
		{
			if (big_done)
				continue;
			big_done = true;
		}
		if (want.n > MANY_PAIRS)
		{
			nmethods = 1;
			first = (int) (g_rotate % 3);
		}
		for (int mi = 0; mi < nmethods; mi++)
		{
			TcMethod	method = methods[(first + mi) % 3];
			unsigned	rot = g_rotate++;
			int			threads = thread_choices[rot % 4];
			bool		include_self = ((rot / 4) % 2) == 1;
			TcJoinParams params = make_params(eps[e].eps, method, threads, include_self);

			if (eps[e].bi >= 0)
				case_begin("%s dist=%s n=%" PRId64 " d=%d %s eps=%s %.17g (%a) of pair (%" PRId64 ",%" PRId64 ") method=%s threads=%d self=%d data_seed=0x%016" PRIx64,
						   ds->section, dist_name(ds->dist), ds->n, ds->d,
						   type_name(ds->type), eps_kind_names[eps[e].kind],
						   eps[e].eps, eps[e].eps, eps[e].bi, eps[e].bj,
						   method_name(method), threads, include_self, ds->seed);
			else
				case_begin("%s dist=%s n=%" PRId64 " d=%d %s eps=%s %.17g (%a) method=%s threads=%d self=%d data_seed=0x%016" PRIx64,
						   ds->section, dist_name(ds->dist), ds->n, ds->d,
						   type_name(ds->type), eps_kind_names[eps[e].kind],
						   eps[e].eps, eps[e].eps,
						   method_name(method), threads, include_self, ds->seed);
			join_case(&pts, NULL, &params, include_self ? &want_self : &want);
			case_end();
		}
	}
	pairvec_free(&want);
	pairvec_free(&want_self);
	ref_table_free(&table);
	points_free(&pts);
	if (g_verbose && now_seconds() - t_start > 0.5)
		printf("#   slow data set %s dist=%s n=%" PRId64 " d=%d %s: %.2f s\n",
			   ds->section, dist_name(ds->dist), ds->n, ds->d,
			   type_name(ds->type), now_seconds() - t_start);
}

#define ALL_KINDS ((1u << EPS_KINDS) - 1)
#define KIND(k) (1u << (k))

/* ----------------------------------------------------------- the sections */

static void
test_basics(void)
{
	case_begin("tc_cpu_count");
	CHECK(tc_cpu_count() >= 1, "tc_cpu_count() = %d", tc_cpu_count());
	case_end();

	case_begin("tc_status_name");
	for (int s = TC_OK; s <= TC_ERR_INTERNAL; s++)
	{
		const char *name = tc_status_name((TcStatus) s);

		CHECK(name != NULL && name[0] != '\0', "no name for status %d", s);
	}
	case_end();

	case_begin("tc_join_destroy(NULL)");
	tc_join_destroy(NULL);
	case_end();
}

static void
sq_threshold_check(double eps)
{
	double		t = tc_sq_threshold(eps);

	if (!(t >= 0.0) || !(sqrt(t) <= eps) || !(sqrt(nextafter(t, INFINITY)) > eps))
		check_fail("tc_sq_threshold(%.17g = %a) = %.17g (%a): sqrt(t) = %a, sqrt(next up) = %a",
				   eps, eps, t, t, sqrt(t), sqrt(nextafter(t, INFINITY)));
}

static void
test_sq_threshold(void)
{
	Rng			r;

	rng_seed(&r, FIXED_SEED ^ 1);
	case_begin("tc_sq_threshold(0)");
	CHECK(tc_sq_threshold(0.0) == 0.0, "tc_sq_threshold(0) = %a", tc_sq_threshold(0.0));
	case_end();

	case_begin("tc_sq_threshold special values");
	{
		const double special[] = {
			0.0, DBL_TRUE_MIN, 2 * DBL_TRUE_MIN, DBL_MIN, nextafter(DBL_MIN, 0),
			1e-300, 1e-170, 1e-162, 1e-154, 0.1, 0.5, 1.0, 2.0, 3.0, 10.0,
			sqrt(2.0), sqrt(3.0), nextafter(1.0, 0), nextafter(1.0, 2),
			1e150, 1e154, sqrt(DBL_MAX), nextafter(sqrt(DBL_MAX), 0),
			nextafter(sqrt(DBL_MAX), INFINITY), 1e155, 1e200, 1e300, DBL_MAX
		};

		for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
			sq_threshold_check(special[i]);
	}
	case_end();

	case_begin("tc_sq_threshold random eps");
	for (int i = 0; i < 200000; i++)
	{
		double		eps;
		uint64_t	bits;

		switch (i % 5)
		{
			case 0:				/* any finite non-negative double */
				do
				{
					bits = rng_next(&r) & ~(UINT64_C(1) << 63);
					memcpy(&eps, &bits, sizeof(eps));
				} while (!isfinite(eps));
				break;
			case 1:
				eps = rng_uniform(&r) * 10.0;
				break;
			case 2:				/* sqrt of a double: s is near-exact */
				eps = sqrt(rng_uniform(&r) * 100.0);
				break;
			case 3:				/* a real distance of float4-ish data */
				eps = sqrt((double) (float) rng_uniform(&r) + (double) (float) rng_uniform(&r));
				break;
			default:			/* neighbours of small integers' roots */
				eps = sqrt((double) rng_below(&r, 1000));
				eps = (rng_next(&r) & 1) ? nextafter(eps, 0) : nextafter(eps, INFINITY);
				break;
		}
		sq_threshold_check(eps);
	}
	case_end();
}

/*
 * Parameters outside the documented ranges.  Those that cannot mean anything
 * (eps < 0, NaN or infinite; bad sizes or type) must be rejected with
 * TC_ERR_INVALID; for those the engine may reasonably normalize (threads < 1,
 * an unknown method) a correct result is accepted as well.
 */
static void
test_invalid(void)
{
	double		coords[6] = {0, 0, 1, 1, 2, 2};
	TcPoints	pts = {coords, 3, 2, TC_FLOAT8};
	struct
	{
		const char *what;
		TcPoints	p;
		TcJoinParams params;
		bool		may_accept;
	}			cases[] = {
		{"eps < 0", pts, make_params(-1.0, TC_METHOD_GRID, 1, false), false},
		{"eps NaN", pts, make_params(NAN, TC_METHOD_GRID, 1, false), false},
		{"eps NaN brute", pts, make_params(NAN, TC_METHOD_BRUTE, 1, false), false},
		{"eps +inf", pts, make_params(INFINITY, TC_METHOD_AUTO, 1, false), false},
		{"n < 0", {coords, -1, 2, TC_FLOAT8}, make_params(1.0, TC_METHOD_GRID, 1, false), false},
		{"bad type", {coords, 3, 2, (TcElemType) 3}, make_params(1.0, TC_METHOD_GRID, 1, false), false},
		{"d < 0", {coords, 3, -2, TC_FLOAT8}, make_params(1.0, TC_METHOD_GRID, 1, false), false},
		{"data NULL with n > 0", {NULL, 3, 2, TC_FLOAT8}, make_params(1.0, TC_METHOD_GRID, 1, false), false},
		{"threads 0", pts, make_params(1.5, TC_METHOD_GRID, 0, false), true},
		{"threads -1", pts, make_params(1.5, TC_METHOD_BRUTE, -1, false), true},
		{"unknown method", pts, make_params(1.5, (TcMethod) 77, 1, false), true},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		TcError		err;
		TcJoin	   *join;

		case_begin("invalid parameters: %s", cases[i].what);
		memset(&err, 0, sizeof(err));
		join = tc_join_create(&cases[i].p, NULL, &cases[i].params, &err);
		if (join == NULL)
		{
			CHECK(err.status == TC_ERR_INVALID, "err.status = %s, expected TC_ERR_INVALID",
				  tc_status_name(err.status));
			CHECK(err.message[0] != '\0', "err.message is empty");
		}
		else if (!cases[i].may_accept)
			check_fail("tc_join_create accepted it");
		else
		{
			/* Accepted: it must then behave like a valid join. */
			PairVec		want = {0};
			Collector	c;
			TcSink		sink = {collect_emit, collect_poll, &c};
			TcStatus	st;

			memset(&c, 0, sizeof(c));
			c.owner = pthread_self();
			st = tc_join_run(join, &sink, &err);
			CHECK(st == TC_OK, "accepted, then tc_join_run returned %s", tc_status_name(st));
			ref_join(&cases[i].p, NULL, cases[i].params.eps, false, &want);
			pairvec_sort(&c.pairs, true, cases[i].p.n);
			if (compare_pairs(g_label, &c.pairs, &want, MAX_CASE_LINES) > 0)
				g_case_fails++;
			pairvec_free(&c.pairs);
			pairvec_free(&want);
		}
		tc_join_destroy(join);
		case_end();
	}

	/* eps = -0.0 satisfies eps >= 0: it must act exactly like 0. */
	{
		double		dup[8] = {1, 2, 1, 2, 3, 4, 1, 2};
		TcPoints	p = {dup, 4, 2, TC_FLOAT8};
		PairVec		want = {0};

		ref_join(&p, NULL, -0.0, false, &want);
		for (int m = TC_METHOD_AUTO; m <= TC_METHOD_BRUTE; m++)
		{
			TcJoinParams params = make_params(-0.0, (TcMethod) m, 2, false);

			case_begin("eps = -0.0 method=%s", method_name((TcMethod) m));
			join_case(&p, NULL, &params, &want);
			case_end();
		}
		pairvec_free(&want);
	}

	/* d = 0: either rejected, or every pair at distance 0. */
	{
		double		dummy = 0;
		TcPoints	p = {&dummy, 3, 0, TC_FLOAT8};
		TcJoinParams params = make_params(0.0, TC_METHOD_AUTO, 1, false);
		TcError		err;
		TcJoin	   *join;

		case_begin("d = 0 rejected or all pairs at distance 0");
		memset(&err, 0, sizeof(err));
		join = tc_join_create(&p, NULL, &params, &err);
		if (join == NULL)
			CHECK(err.status == TC_ERR_INVALID, "err.status = %s",
				  tc_status_name(err.status));
		else
		{
			PairVec		want = {0};

			tc_join_destroy(join);
			for (int i = 0; i < 3; i++)
				for (int j = i + 1; j < 3; j++)
					pairvec_push(&want, i, j, 0.0);
			join_case(&p, NULL, &params, &want);
			pairvec_free(&want);
		}
		case_end();
	}
}

/* n = 0, 1, 2 spelled out, independent of the generic machinery. */
static void
test_tiny_inputs(void)
{
	double		coords[4] = {0.25, -1.0, 3.25, 3.0};	/* dist 5 exactly */

	for (int m = TC_METHOD_AUTO; m <= TC_METHOD_BRUTE; m++)
		for (int self = 0; self <= 1; self++)
			for (int n = 0; n <= 2; n++)
				for (int ti = 0; ti < 4; ti++)
				{
					TcPoints	p = {coords, n, 2, TC_FLOAT8};
					TcJoinParams params = make_params(5.0, (TcMethod) m,
													  thread_choices[ti], self);
					PairVec		want = {0};

					if (self)
						for (int i = 0; i < n; i++)
							pairvec_push(&want, i, i, 0.0);
					if (n == 2)
						pairvec_push(&want, 0, 1, 5.0);
					pairvec_sort(&want, true, n);
					case_begin("tiny input n=%d method=%s threads=%d self=%d",
							   n, method_name((TcMethod) m), thread_choices[ti], self);
					join_case(&p, NULL, &params, &want);
					case_end();
					pairvec_free(&want);
				}
}

/* Every dimension count, every size, both types, plain uniform data. */
static void
test_dims_matrix(void)
{
	static const int32_t dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 64, 100, 300};
	static const int64_t sizes[] = {0, 1, 2, 50, 500, 3000};
	uint64_t	idx = 0;

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (size_t ni = 0; ni < sizeof(sizes) / sizeof(sizes[0]); ni++)
			for (int t = 0; t < 2; t++)
			{
				DataSpec	ds = {"[dims]", DIST_UNIFORM, sizes[ni], dims[di],
				t ? TC_FLOAT8 : TC_FLOAT4, mix_seed(FIXED_SEED, idx++)};
				unsigned	kinds = ALL_KINDS;

				if (g_quick && (ds.n > 500 || (dims[di] > 16 && dims[di] != 300)))
					continue;
				if (ds.n == 3000)
				{
					/*
					 * Keep the naive reference and brute force affordable: no
					 * high d, one element type per d, a huge eps only at d = 2.
					 */
					if (ds.d > 16 || (int) (di & 1) != t)
						continue;
					kinds = KIND(EPS_ZERO) | KIND(EPS_BOUND) | KIND(EPS_BELOW) |
						KIND(EPS_MEDIUM) | KIND(EPS_NEAREST) | (ds.d == 2 ? KIND(EPS_HUGE) : 0);
				}
				else if (ds.n == 500 && ds.d > 16)
					kinds = KIND(EPS_ZERO) | KIND(EPS_BOUND) | KIND(EPS_BELOW) |
						KIND(EPS_MEDIUM) | KIND(EPS_NEAREST) | KIND(EPS_HUGE);
				/* Mix in negative coordinates half of the time. */
				if ((idx & 1) == 0)
					ds.dist = DIST_NEGATIVE;
				test_dataset(&ds, kinds);
			}
}

/* Every distribution over a spread of dimensions and sizes. */
static void
test_distributions(void)
{
	static const int32_t dims[] = {1, 2, 3, 5, 8, 31, 100};
	static const int64_t sizes[] = {50, 500, 3000};
	uint64_t	idx = 1000000;

	for (int dist = 0; dist < DIST_COUNT; dist++)
		for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
			for (size_t ni = 0; ni < sizeof(sizes) / sizeof(sizes[0]); ni++)
				for (int t = 0; t < 2; t++)
				{
					DataSpec	ds = {"[dist]", (Dist) dist, sizes[ni], dims[di],
					t ? TC_FLOAT8 : TC_FLOAT4, mix_seed(FIXED_SEED, idx++)};
					unsigned	kinds = ALL_KINDS;

					if (g_quick && (ds.n > 500 || ds.d > 8 || ds.d == 1))
						continue;
					if (ds.n == 3000)
					{
						/* Low d only, one element type each. */
						if (ds.d > 3 || (dist + (int) di) % 2 != t)
							continue;
						kinds = KIND(EPS_ZERO) | KIND(EPS_BOUND) | KIND(EPS_BELOW) |
							KIND(EPS_MEDIUM) | KIND(EPS_NEAREST);
					}
					else if (ds.d > 8)
						kinds = KIND(EPS_ZERO) | KIND(EPS_BOUND) | KIND(EPS_BELOW) |
							KIND(EPS_MEDIUM) | KIND(EPS_NEAREST) | KIND(EPS_HUGE);
					test_dataset(&ds, kinds);
				}
}

/* Randomized configurations from the fresh seed: new data on every run. */
static void
test_random_sweep(void)
{
	static const int32_t dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 64, 100, 300};
	Rng			r;
	int			ncases = g_quick ? 20 : 120;

	rng_seed(&r, g_fresh_seed);
	for (int c = 0; c < ncases; c++)
	{
		DataSpec	ds;
		int64_t		n;

		switch (rng_below(&r, 4))
		{
			case 0:
				n = (int64_t) rng_below(&r, 4);
				break;
			case 1:
				n = 4 + (int64_t) rng_below(&r, 60);
				break;
			default:
				n = 64 + (int64_t) rng_below(&r, 700);
				break;
		}
		ds.section = "[random]";
		ds.dist = (Dist) rng_below(&r, DIST_COUNT);
		ds.d = dims[rng_below(&r, sizeof(dims) / sizeof(dims[0]))];
		ds.n = n;
		ds.type = (rng_next(&r) & 1) ? TC_FLOAT8 : TC_FLOAT4;
		ds.seed = rng_next(&r);
		/* One or two eps kinds per data set; the methods all run. */
		unsigned	kinds = KIND(rng_below(&r, EPS_KINDS)) | KIND(rng_below(&r, EPS_KINDS));

		g_rotate += (unsigned) rng_below(&r, 8);
		test_dataset(&ds, kinds);
	}
}

/* ------------------------------------------------------------ two sets */

static void
test_two_sets(void)
{
	Rng			r;
	TcPoints	a,
				b;
	TcError		err;
	TcJoinParams probe = make_params(0.1, TC_METHOD_AUTO, 1, false);
	TcJoin	   *join;
	static const TcMethod methods[] = {TC_METHOD_GRID, TC_METHOD_BRUTE, TC_METHOD_AUTO};

	rng_seed(&r, FIXED_SEED ^ 2);
	points_generate(&a, DIST_UNIFORM, 40, 3, TC_FLOAT8, &r);
	points_generate(&b, DIST_UNIFORM, 30, 3, TC_FLOAT8, &r);
	memset(&err, 0, sizeof(err));
	join = tc_join_create(&a, &b, &probe, &err);
	points_free(&a);
	points_free(&b);
	if (join == NULL && err.status == TC_ERR_INVALID)
	{
		printf("note: two-set joins rejected with TC_ERR_INVALID (%s): two-set tests skipped\n",
			   err.message);
		return;
	}
	tc_join_destroy(join);

	struct
	{
		Dist		dist;
		int64_t		na,
					nb;
		int32_t		d;
		TcElemType	ta,
					tb;
	}			specs[] = {
		{DIST_UNIFORM, 300, 200, 3, TC_FLOAT8, TC_FLOAT8},
		{DIST_CLUSTERED, 500, 50, 2, TC_FLOAT4, TC_FLOAT4},
		{DIST_DUPLICATES, 200, 300, 5, TC_FLOAT8, TC_FLOAT8},
		{DIST_NEGATIVE, 100, 400, 1, TC_FLOAT8, TC_FLOAT8},
		{DIST_MIXED_MAG, 150, 150, 4, TC_FLOAT8, TC_FLOAT8},
		{DIST_OFFSET_1E6, 200, 200, 16, TC_FLOAT4, TC_FLOAT4},
		{DIST_UNIFORM, 0, 100, 3, TC_FLOAT8, TC_FLOAT8},
		{DIST_UNIFORM, 100, 0, 3, TC_FLOAT8, TC_FLOAT8},
		{DIST_UNIFORM, 1, 1, 2, TC_FLOAT8, TC_FLOAT8},
		{DIST_LATTICE, 300, 300, 2, TC_FLOAT8, TC_FLOAT8},
		{DIST_UNIFORM, 200, 200, 64, TC_FLOAT8, TC_FLOAT8},
	};

	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++)
	{
		RefTable	t;
		EpsChoice	eps[EPS_KINDS + 2];
		int			neps;
		PairVec		want = {0};

		points_generate(&a, specs[s].dist, specs[s].na, specs[s].d, specs[s].ta, &r);
		points_generate(&b, specs[s].dist, specs[s].nb, specs[s].d, specs[s].tb, &r);
		ref_table_build(&t, &a, &b);
		neps = choose_eps(&t, &r, eps);
		for (int e = 0; e < neps; e++)
		{
			ref_table_pairs(&t, eps[e].eps, false, &want);
			for (int mi = 0; mi < 3; mi++)
			{
				int			threads = thread_choices[g_rotate++ % 4];
				TcJoinParams params = make_params(eps[e].eps, methods[mi], threads, false);

				case_begin("[two-set] dist=%s na=%" PRId64 " nb=%" PRId64 " d=%d %s eps=%s %.17g method=%s threads=%d",
						   dist_name(specs[s].dist), specs[s].na, specs[s].nb,
						   specs[s].d, type_name(specs[s].ta),
						   eps_kind_names[eps[e].kind], eps[e].eps,
						   method_name(methods[mi]), threads);
				join_case(&a, &b, &params, &want);
				case_end();
			}
		}
		pairvec_free(&want);
		ref_table_free(&t);
		points_free(&a);
		points_free(&b);
	}

	/* b is the same set as a: a full cross join, (i, i) and both orders. */
	{
		PairVec		want = {0};

		points_generate(&a, DIST_DUPLICATES, 120, 2, TC_FLOAT8, &r);
		ref_join(&a, &a, 0.05, false, &want);
		for (int mi = 0; mi < 3; mi++)
		{
			TcJoinParams params = make_params(0.05, methods[mi], 3, false);

			case_begin("[two-set] b == a method=%s", method_name(methods[mi]));
			join_case(&a, &a, &params, &want);
			case_end();
		}
		pairvec_free(&want);
		points_free(&a);
	}

	/* Mismatched dimensions must be rejected. */
	{
		double		x[6] = {0};
		TcPoints	pa = {x, 2, 3, TC_FLOAT8};
		TcPoints	pb = {x, 3, 2, TC_FLOAT8};
		TcJoinParams params = make_params(1.0, TC_METHOD_AUTO, 1, false);

		case_begin("[two-set] mismatched d rejected");
		memset(&err, 0, sizeof(err));
		join = tc_join_create(&pa, &pb, &params, &err);
		CHECK(join == NULL && err.status == TC_ERR_INVALID,
			  "create returned %p, status %s", (void *) join, tc_status_name(err.status));
		tc_join_destroy(join);
		case_end();
	}

	/* Mixed element types: either rejected or exact. */
	{
		TcJoinParams params = make_params(0.1, TC_METHOD_AUTO, 2, false);

		points_generate(&a, DIST_UNIFORM, 100, 3, TC_FLOAT4, &r);
		points_generate(&b, DIST_UNIFORM, 80, 3, TC_FLOAT8, &r);
		case_begin("[two-set] float4 x float8 rejected or exact");
		memset(&err, 0, sizeof(err));
		join = tc_join_create(&a, &b, &params, &err);
		if (join == NULL)
			CHECK(err.status == TC_ERR_INVALID, "status %s", tc_status_name(err.status));
		else
		{
			PairVec		want = {0};

			tc_join_destroy(join);
			ref_join(&a, &b, 0.1, false, &want);
			join_case(&a, &b, &params, &want);
			pairvec_free(&want);
		}
		case_end();
		points_free(&a);
		points_free(&b);
	}
}

/* ------------------------------------------------------- large joins */

typedef struct SortKey
{
	double		x;
	int64_t		i;
} SortKey;

static int
cmp_sortkey(const void *p, const void *q)
{
	const SortKey *a = p,
			   *b = q;

	if (a->x != b->x)
		return a->x < b->x ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

/*
 * Independent plane sweep along dimension 0 for inputs too large for the
 * naive table.  The window is widened by a relative 1e-9 so that rounding
 * of the x difference can never drop a pair; the contract formula decides.
 */
static void
sweep_join(const TcPoints *p, double eps, PairVec *out)
{
	SortKey    *keys = malloc(sizeof(SortKey) * (size_t) (p->n ? p->n : 1));
	double		window = eps * (1.0 + 1e-9);

	for (int64_t i = 0; i < p->n; i++)
	{
		keys[i].x = points_get(p, i, 0);
		keys[i].i = i;
	}
	qsort(keys, (size_t) p->n, sizeof(SortKey), cmp_sortkey);
	out->n = 0;
	for (int64_t s = 0; s < p->n; s++)
		for (int64_t u = s + 1; u < p->n && keys[u].x - keys[s].x <= window; u++)
		{
			double		dist = ref_dist(p, keys[s].i, p, keys[u].i);

			if (dist <= eps)
			{
				int64_t		i = keys[s].i,
							j = keys[u].i;

				pairvec_push(out, i < j ? i : j, i < j ? j : i, dist);
			}
		}
	free(keys);
	pairvec_sort(out, true, p->n);
}

/*
 * All points of a side^d integer lattice, scaled and offset (exactly, for
 * moderate values), in shuffled order so that index order says nothing
 * about position.
 */
static void
int_lattice(TcPoints *p, int64_t side, int32_t d, double scale, double offset,
			TcElemType type, Rng *r)
{
	int64_t		n = 1;
	int64_t    *order;

	for (int32_t k = 0; k < d; k++)
		n *= side;
	points_alloc(p, n, d, type);
	order = malloc(sizeof(int64_t) * (size_t) n);
	for (int64_t i = 0; i < n; i++)
		order[i] = i;
	for (int64_t i = n - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) rng_below(r, (uint64_t) i + 1);
		int64_t		t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		code = order[i];

		for (int32_t k = 0; k < d; k++)
		{
			points_set(p, i, k, offset + scale * (double) (code % side));
			code /= side;
		}
	}
	free(order);
}

/*
 * Inputs too big for the naive table, checked against the sweep.  The exact
 * lattices put a huge number of pairs at exactly eps, in every relative
 * position to the grid's cell boundaries: a cell even slightly narrower than
 * eps loses some of them.
 */
static void
test_large(void)
{
	struct
	{
		Dist		dist;		/* DIST_COUNT: exact lattice */
		int64_t		n;			/* lattice: side */
		int32_t		d;
		TcElemType	type;
		double		eps;		/* lattice: in steps; < 0: sqrt of -eps steps */
		double		scale;
		double		offset;
		TcMethod	method;
		int			threads;
	}			specs[] = {
		{DIST_UNIFORM, 200000, 2, TC_FLOAT8, 0.004, 0, 0, TC_METHOD_GRID, 2},
		{DIST_UNIFORM, 100000, 3, TC_FLOAT4, 0.02, 0, 0, TC_METHOD_AUTO, 3},
		{DIST_LATTICE, 100000, 2, TC_FLOAT8, 0, 0, 0, TC_METHOD_GRID, 7},
		{DIST_CLUSTERED, 60000, 4, TC_FLOAT8, 0.002, 0, 0, TC_METHOD_GRID, 2},
		{DIST_COUNT, 100000, 1, TC_FLOAT8, 1, 1.0, 0.0, TC_METHOD_GRID, 3},
		{DIST_COUNT, 100000, 1, TC_FLOAT4, 3, 0.25, -4096.0, TC_METHOD_GRID, 2},
		{DIST_COUNT, 300, 2, TC_FLOAT8, 1, 1.0, 1048576.0, TC_METHOD_GRID, 2},
		{DIST_COUNT, 300, 2, TC_FLOAT8, -2, 0.5, -7.0, TC_METHOD_AUTO, 3},
		{DIST_COUNT, 40, 3, TC_FLOAT4, 1, 0.5, 1000.0, TC_METHOD_GRID, 7},
	};
	Rng			r;

	rng_seed(&r, FIXED_SEED ^ 3);
	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++)
	{
		TcPoints	p;
		PairVec		want = {0};
		int64_t		n = specs[s].n;
		double		eps = specs[s].eps;
		bool		lattice = specs[s].dist == DIST_COUNT;

		if (g_quick)
			n = lattice ? (int64_t) ((double) n / pow(8.0, 1.0 / specs[s].d)) : n / 8;
		if (lattice)
		{
			/* eps: the exact distance of two lattice points that far apart. */
			double		c[4] = {0, 0, 0, 0};
			TcPoints	q = {c, 2, 2, TC_FLOAT8};
			double		steps = eps < 0 ? 1.0 : eps;

			int_lattice(&p, n, specs[s].d, specs[s].scale, specs[s].offset,
						specs[s].type, &r);
			c[0] = specs[s].offset + 3 * specs[s].scale;
			c[2] = c[0] + steps * specs[s].scale;
			if (eps < 0)
			{
				/* A diagonal, e.g. sqrt(2) steps. */
				c[1] = c[0];
				c[3] = c[0] + steps * specs[s].scale;
			}
			eps = ref_dist(&q, 0, &q, 1);
		}
		else
		{
			points_generate(&p, specs[s].dist, n, specs[s].d, specs[s].type, &r);
			if (eps == 0)
			{
				/* Lattice: the exact distance of two lattice neighbours. */
				double		c[4] = {0.1 * 17 - 0.3, 0.1 * 5 - 0.3, 0.1 * 18 - 0.3, 0.1 * 5 - 0.3};
				TcPoints	q = {c, 2, 2, TC_FLOAT8};

				eps = ref_dist(&q, 0, &q, 1);
			}
		}
		sweep_join(&p, eps, &want);

		TcJoinParams params = make_params(eps, specs[s].method, specs[s].threads, false);

		case_begin("[large] dist=%s n=%" PRId64 " d=%d %s eps=%.17g method=%s threads=%d (expect %zu pairs)",
				   lattice ? "exact-lattice" : dist_name(specs[s].dist), p.n,
				   specs[s].d, type_name(specs[s].type), eps,
				   method_name(specs[s].method), specs[s].threads, want.n);
		join_case(&p, NULL, &params, &want);
		case_end();
		pairvec_free(&want);
		points_free(&p);
	}
}

/* ---------------------------------------------------- sink behaviour */

/*
 * These run in a child process with a time limit, so that a crash or a hang
 * in the engine's stop/abandon paths fails one case instead of the suite.
 * Under ASan the child's exit runs the leak check.
 */
#define CHILD_FAILED 3		/* exit status: checks failed, lines printed */

static void
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
	TcSink		sink = {stop_emit, stop_poll, s};
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
	TcSink		sink = {jump_emit, jump_poll, NULL};
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

static void
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


/* --------------------------------------------------- the FP16 filter */

/*
 * tc_f16_round against the compiler's own conversion to _Float16 (round to
 * nearest even), on random magnitudes, exact ties and the range's edges.
 */
static void
test_f16_round(void)
{
	Rng			r;
	int			bad = 0;
	double		first_bad = 0;

	case_begin("fp16 rounding");
	rng_seed(&r, mix_seed(FIXED_SEED, 0xf16));
	for (int i = 0; i < 200000; i++)
	{
		double		x;
		double		want;

		if (i % 3 == 0)
		{
			/* an exact tie between two FP16 neighbours, or next to one */
			int			e = (int) rng_below(&r, 40) - 25;
			double		ulp = ldexp(1.0, e - 10 < -24 ? -24 : e - 10);
			double		m = (double) rng_below(&r, 2048);

			x = (m + 0.5) * ulp;
			if (i % 2)
				x = nextafter(x, i % 4 ? INFINITY : 0.0);
		}
		else
			x = ldexp(rng_uniform(&r) + 0.5, (int) rng_below(&r, 60) - 40);
		if (rng_below(&r, 2))
			x = -x;
#ifdef __FLT16_MANT_DIG__
		want = (double) (_Float16) x;
#else
		want = tc_f16_round(x);
#endif
		/* no subnormal results: below 2^-14, the nearer of 0 and 2^-14 */
		if (fabs(x) < 0x1p-14)
			want = fabs(x) > 0x1p-15 ? copysign(0x1p-14, x) : copysign(0.0, x);
		if (tc_f16_round(x) != want && !(isinf(want) && isinf(tc_f16_round(x))))
		{
			if (bad++ == 0)
				first_bad = x;
		}
	}
	CHECK(bad == 0, "%d values round differently, first %.17g", bad, first_bad);
	CHECK(tc_f16_round(65504.0) == 65504.0 && isinf(tc_f16_round(65520.0)) &&
		  tc_f16_round(65519.99) == 65504.0 && tc_f16_round(0x1p-25) == 0.0 &&
		  tc_f16_round(0x1.8p-25) == 0.0 && tc_f16_round(-0.0) == 0.0 &&
		  tc_f16_round(0x1p-15) == 0.0 && tc_f16_round(0x1.0001p-15) == 0x1p-14 &&
		  tc_f16_round(-0x1.ffp-15) == -0x1p-14 && tc_f16_round(0x1p-14) == 0x1p-14,
		  "edges of the FP16 range");
	{
		/* data below 2^-1008: the scale stops at 2^1023 rather than overflow */
		TcF16Plan	pl;

		tc_f16_plan(&pl, 4, 0.0, 0x1p-1070);
		CHECK(pl.sigma == 0x1p1023 && isfinite(pl.e_half), "scale %g for the largest |y| 2^-1070",
			  pl.sigma);
		tc_f16_plan(&pl, 4, 0.0, 3.0);
		CHECK(pl.sigma == 0x1p13, "scale %g for the largest |y| 3", pl.sigma);
	}
	case_end();
}

/* float4 sum rounded toward zero: the tensor cores' truncating adder. */
static float
add_rz(double x)
{
	float		f = (float) x;

	if (fabs((double) f) > fabs(x))
		f = nextafterf(f, 0.0f);
	return f;
}

/*
 * acc = h_a . h_b as the tensor cores might compute it: FP16 products
 * (exact), summed in float4 by one of several adders.
 */
static float
emulated_dot(const double *ha, const double *hb, int d, int how)
{
	float		acc = 0.0f;

	switch (how)
	{
		case 0:				/* in order, round to nearest */
			for (int k = 0; k < d; k++)
				acc = acc + (float) (ha[k] * hb[k]);
			break;
		case 1:				/* per 16 terms: exact block, truncated add */
			for (int k0 = 0; k0 < d; k0 += 16)
			{
				double		blk = 0.0;

				for (int k = k0; k < k0 + 16 && k < d; k++)
					blk += ha[k] * hb[k];
				acc = add_rz((double) acc + blk);
			}
			break;
		case 2:				/* every add truncated */
			for (int k = 0; k < d; k++)
				acc = add_rz((double) acc + ha[k] * hb[k]);
			break;
		case 3:				/* backwards, round to nearest */
			for (int k = d - 1; k >= 0; k--)
				acc = acc + (float) (ha[k] * hb[k]);
			break;
		default:
			{
				/*
				 * The model's worst (fp16_filter.h (3)): in index order, each
				 * 16-term step loses all of its 18 units of 2^-23 of |acc| +
				 * the step's sum of |products|, downward; float4 at the end.
				 */
				double		a = 0.0;

				for (int k0 = 0; k0 < d; k0 += 16)
				{
					double		blk = 0.0,
								mag = 0.0;

					for (int k = k0; k < k0 + 16 && k < d; k++)
					{
						blk += ha[k] * hb[k];
						mag += fabs(ha[k] * hb[k]);
					}
					a = a + blk - 18.0 * 0x1p-23 * (fabs(a) + mag);
				}
				acc = (float) a;
				if ((double) acc > a)
					acc = nextafterf(acc, -INFINITY);
			}
			break;
	}
	return acc;
}

/*
 * No pair within eps is dropped by the filter, whatever the adder (under
 * the prefix bound, whatever the adder that takes the steps in index order,
 * as the tensor cores do: it does not cover the backward one), on every
 * distribution (offsets of 1e9, mixed magnitudes, underflow, duplicates
 * included), at eps 0, at a pair's exact distance and beyond; and on
 * well-spread data the filter does drop what lies clearly beyond eps.
 */
static void
test_f16_filter(void)
{
	static const int dims[] = {1, 2, 3, 16, 17, 64, 100, 784, 4096};
	int			ncase = 0;

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (int dist = 0; dist < DIST_COUNT; dist++)
		{
			int			d = dims[di];
			int64_t		n = d >= 784 ? 40 : 120;
			Rng			r;
			TcPoints	p;
			double	   *c = calloc(d, sizeof(double));
			double	   *y = malloc(sizeof(double) * n * d);
			double	   *h = malloc(sizeof(double) * n * d);
			TcF16Point *pt = malloc(sizeof(TcF16Point) * n);
			double	   *dd = malloc(sizeof(double) * n * (n - 1) / 2);
			double		maxabs = 0;

			if (g_quick && d > 100)
				continue;
			rng_seed(&r, mix_seed(g_fresh_seed, 0xf160000 + di * 100 + dist));
			points_generate(&p, (Dist) dist, n, d, (di + dist) % 2 ? TC_FLOAT4 : TC_FLOAT8, &r);
			for (int64_t i = 0; i < n; i++)
				for (int k = 0; k < d; k++)
					c[k] += points_get(&p, i, k) / (double) n;
			for (int64_t i = 0; i < n; i++)
				for (int k = 0; k < d; k++)
				{
					y[i * d + k] = points_get(&p, i, k) - c[k];
					maxabs = fmax(maxabs, fabs(y[i * d + k]));
				}
			for (int64_t i = 0, t = 0; i < n; i++)
				for (int64_t j = i + 1; j < n; j++)
					dd[t++] = ref_dist(&p, i, &p, j);

			/* eps: 0, a pair's distance (2% and 30% quantiles), the largest */
			for (int e = 0; e < 8; e++)
			{
				/* e >= 4: the same eps under the prefix bound (fp16_filter.h) */
				const bool	prefix = e >= 4;
				int64_t		npairs = n * (n - 1) / 2;
				double	   *sorted = malloc(sizeof(double) * npairs);
				double		eps;
				TcF16Plan	plan;
				int64_t		in = 0,
							dropped_in = 0,
							far = 0,
							far_dropped = 0,
							beyond_kept = 0;

				memcpy(sorted, dd, sizeof(double) * npairs);
				qsort(sorted, npairs, sizeof(double), cmp_double);
				eps = e % 4 == 0 ? 0.0 : e % 4 == 1 ? sorted[npairs / 50] :
					e % 4 == 2 ? sorted[npairs * 3 / 10] : sorted[npairs - 1];
				free(sorted);

				case_begin("fp16 filter%s %s d=%d n=%lld eps=%.17g", prefix ? " (prefix bound)" : "",
						   dist_name((Dist) dist), d, (long long) n, eps);
				tc_f16_plan(&plan, d, tc_sq_threshold(eps), maxabs);
				tc_f16_use_prefix(&plan, prefix);
				for (int64_t i = 0; i < n; i++)
					tc_f16_point(&plan, y + i * d, d, h + i * d, &pt[i]);
				for (int64_t i = 0, t = 0; i < n; i++)
					for (int64_t j = i + 1; j < n; j++, t++)
					{
						bool		within = dd[t] <= eps;
						bool		dropped = false;
						bool		dropped_rn = false;	/* by adder 0 */

						for (int how = 0; how < 5; how++)
						{
							float		acc;

							if (prefix && how == 3)
								continue;	/* out of index order: outside the prefix bound's model */
							acc = emulated_dot(h + i * d, h + j * d, d, how);

							if (tc_f16_drop(acc, pt[i].q, pt[j].q, pt[i].rc, pt[j].rc))
							{
								dropped = true;
								dropped_rn |= how == 0;
								if (within && dropped_in == 0)
									check_fail("pair (%lld, %lld) at %.17g <= eps dropped (adder %d)",
											   (long long) i, (long long) j, dd[t], how);
							}
						}
						in += within;
						dropped_in += within && dropped;
						/*
						 * Beyond the band, by the exact FP16 distance: the
						 * test must drop the pair, whatever the data.
						 */
						{
							double		h2 = 0.0,
										T = pt[i].R + pt[j].R;

							for (int k = 0; k < d; k++)
							{
								double		u = h[i * d + k] - h[j * d + k];

								h2 += u * u;
							}
							if (h2 > 2.0 * (T * T + (double) plan.kappa * (pt[i].hn + pt[j].hn)) + 1e-30 &&
								!dropped_rn)
								beyond_kept++;
						}
						/* Spread data: how tight the band is against eps. */
						if (dd[t] > 1.1 * eps && eps > 0)
						{
							far++;
							far_dropped += dropped_rn;
						}
					}
				CHECK(dropped_in == 0, "%lld of %lld pairs within eps dropped",
					  (long long) dropped_in, (long long) in);
				CHECK(beyond_kept == 0, "%lld pairs far beyond the band kept", (long long) beyond_kept);
				/*
				 * Uniform data, eps at a quantile: the band is a few percent
				 * of eps^2, so nearly every pair beyond 1.1 eps goes.  (On
				 * clustered or skewed data the band, which grows with the
				 * distance from the centre, may be wider than eps.)
				 */
				if ((dist == DIST_UNIFORM || dist == DIST_NEGATIVE) && (e % 4 == 1 || e % 4 == 2) && far > 0)
					CHECK(far_dropped >= far * 95 / 100,
						  "only %lld of %lld pairs beyond 1.1 eps dropped",
						  (long long) far_dropped, (long long) far);
				case_end();
				ncase++;
			}
			points_free(&p);
			free(c);
			free(y);
			free(h);
			free(pt);
			free(dd);
		}
	if (g_verbose)
		printf("fp16 filter: %d cases\n", ncase);
}

/* ------------------------------------------------------------------ main */

static uint64_t
fresh_seed(void)
{
	const char *env = getenv("TC_TEST_SEED");

	if (env && *env)
		return strtoull(env, NULL, 0);

	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return mix_seed((uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec,
					(uint64_t) getpid());
}

static void
section(const char *name, void (*fn) (void))
{
	const char *only = getenv("TC_TEST_SECTIONS");
	double		t0 = now_seconds();
	int			f0 = g_failed,
				p0 = g_passed;

	if (only && *only)
	{
		/* A comma-separated list of section names to run. */
		size_t		len = strlen(name);
		const char *hit = strstr(only, name);

		while (hit && !((hit == only || hit[-1] == ',') &&
						(hit[len] == '\0' || hit[len] == ',')))
			hit = strstr(hit + 1, name);
		if (!hit)
			return;
	}
	fn();
	if (g_verbose)
		printf("# %-16s %6.2f s  %d passed, %d failed\n", name, now_seconds() - t0,
			   g_passed - p0, g_failed - f0);
}

int
main(int argc, char **argv)
{
	const char *q = getenv("TC_TEST_QUICK");

	setvbuf(stdout, NULL, _IOLBF, 0);
	g_quick = (q && *q && strcmp(q, "0") != 0);
	g_verbose = getenv("TC_TEST_VERBOSE") != NULL;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--quick") == 0)
			g_quick = true;
	g_fresh_seed = fresh_seed();
	install_signal_handlers();

	printf("engine tests%s: fixed seed 0x%016" PRIx64 ", random seed 0x%016" PRIx64
		   " (repeat with TC_TEST_SEED=0x%016" PRIx64 ")\n",
		   g_quick ? " (quick)" : "", FIXED_SEED, g_fresh_seed, g_fresh_seed);

	section("basics", test_basics);
	section("sq_threshold", test_sq_threshold);
	section("invalid", test_invalid);
	section("tiny", test_tiny_inputs);
	section("dims", test_dims_matrix);
	section("distributions", test_distributions);
	section("two-sets", test_two_sets);
	section("large", test_large);
	section("sinks", test_sinks);
	section("random", test_random_sweep);
	section("fp16-round", test_f16_round);
	section("fp16-filter", test_f16_filter);

	printf("%d passed, %d failed\n", g_passed, g_failed);
	return g_failed ? 1 : 0;
}
