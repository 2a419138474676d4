/*
 * test_harness.h
 *		The engine suite's own machinery, shared by its sections' files:
 *		case bookkeeping, the sink that collects a join's pairs and checks its
 *		stats, the isolated (forked) case runner (test_harness.c), eps choices
 *		and the data set runner (test_datasets.c).  test_common.h has what the
 *		fuzz harness shares as well.
 *
 * Output: one "FAIL <case>: <detail>" line per failed check (at most
 * MAX_CASE_LINES a case), then exactly one summary line "N passed, N failed"
 * counting test cases (test_main.c).
 */
#ifndef TC_TEST_HARNESS_H
#define TC_TEST_HARNESS_H

#include "test_common.h"
#include "fp16_filter.h"

#include <pthread.h>

#define FIXED_SEED		UINT64_C(0x7463a01e5eed2024)
#define MAX_CASE_LINES	8		/* failure lines printed per case */
#define CASE_TIMEOUT_S	300		/* watchdog for one in-process case */

/* ---- options and counts (test_main.c sets the options) ---- */

extern bool g_quick;			/* TC_TEST_QUICK or --quick: a shorter run */
extern bool g_verbose;			/* TC_TEST_VERBOSE: section timings */
extern uint64_t g_fresh_seed;	/* seed of the randomized part (TC_TEST_SEED) */

extern int	g_passed;
extern int	g_failed;
extern int	g_case_fails;		/* failed checks in the current case */
extern char g_label[768];		/* the current case's name */
extern unsigned g_rotate;		/* spreads threads/include_self over cases */

extern const int thread_choices[4];

/* ---- case bookkeeping ---- */

void		case_begin(const char *fmt,...) __attribute__((format(printf, 1, 2)));
void		case_end(void);
void		check_fail(const char *fmt,...) __attribute__((format(printf, 1, 2)));

#define CHECK(cond, ...) \
	do { if (!(cond)) check_fail(__VA_ARGS__); } while (0)

/*
 * A crash or hang in an in-process case still names the case and prints the
 * summary line; the handlers are reset in forked children.
 */
void		install_signal_handlers(void);
void		reset_signal_handlers(void);

/*
 * One case run in a child process with a time limit, so that a crash or a
 * hang fails that case instead of the suite.  Under ASan the child's exit
 * runs the leak check.
 */
void		run_isolated(const char *name, void (*fn) (void), double timeout_s);

/* ---- parameters ---- */

const char *method_name(TcMethod m);
const char *type_name(TcElemType t);
/* CPU, exact, no overrides. */
TcJoinParams make_params(double eps, TcMethod method, int threads, bool include_self);

/* ---- the sink ---- */

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

int			collect_emit(void *arg, const TcPair *pairs, size_t count);
int			collect_poll(void *arg);

/*
 * Run one join and check everything about it except the pair set itself:
 * status, callback threads, stats.  Leaves the pairs, normalized and sorted,
 * in c->pairs.  Returns false if the join could not produce a result.
 */
bool		run_and_check(const TcPoints *a, const TcPoints *b,
						  const TcJoinParams *params, Collector *c);

/* Add (i, i, 0) for every i to a sorted, normalized self-join result. */
void		with_self_pairs(const PairVec *in, int64_t n, PairVec *out);

/* One complete test case: run the join and compare with the expectation. */
void		join_case(const TcPoints *a, const TcPoints *b,
					  const TcJoinParams *params, const PairVec *want);

/* ---- eps choices ---- */

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

extern const char *const eps_kind_names[EPS_KINDS];

typedef struct EpsChoice
{
	EpsKind		kind;
	double		eps;
	int64_t		bi,
				bj;				/* the boundary pair, for EPS_BOUND/BELOW */
} EpsChoice;

#define ALL_KINDS ((1u << EPS_KINDS) - 1)
#define KIND(k) (1u << (k))

/* qsort comparison of doubles, ascending. */
int			cmp_double(const void *x, const void *y);

/*
 * eps values picked from the data (at most EPS_KINDS + 2); returns how many
 * were written.
 */
int			choose_eps(const RefTable *t, Rng *r, EpsChoice *out);

/* ---- the data set runner ---- */

typedef struct DataSpec
{
	const char *section;
	Dist		dist;
	int64_t		n;
	int32_t		d;
	TcElemType	type;
	uint64_t	seed;
} DataSpec;

/*
 * Generate a self-join data set and check the engine against the reference
 * for each chosen eps kind (kinds_mask: a bit per EpsKind) and method.
 */
void		test_dataset(const DataSpec *ds, unsigned kinds_mask);

/* ---- the sections (test_main.c lists them) ---- */

void		test_basics(void);			/* test_api.c */
void		test_sq_threshold(void);
void		test_invalid(void);
void		test_tiny_inputs(void);		/* test_datasets.c */
void		test_dims_matrix(void);
void		test_distributions(void);
void		test_random_sweep(void);
void		test_two_sets(void);		/* test_two_sets.c */
void		test_large(void);			/* test_large.c */
void		test_sinks(void);			/* test_sinks.c */
void		test_f16_round(void);		/* test_fp16_filter.c */
void		test_f16_dot(void);			/* test_fp16_dot.c */
/* The tensor cores' accumulation, emulated by one of F16_ADDERS adders (test_fp16_filter.c). */
#define F16_ADDERS 5
float		f16_emulated_dot(const double *ha, const double *hb, int d, int how);
/* The adders (a bit each) that drop a pair of FP16 rows (test_fp16_filter.c). */
unsigned	f16_dropping_adders(const double *ha, const double *hb, int d, const TcF16Point *pa,
								const TcF16Point *pb, bool prefix);
void		test_f16_filter(void);
void		test_overrides(void);		/* test_overrides.c */
void		test_cancel(void);			/* test_cancel.c */
void		test_signals(void);			/* test_threads.c */
void		test_thread_cap(void);
void		test_device_choice(void);	/* test_device.c */
void		test_gpu_split(void);	/* test_device.c */
void		test_order_split(void);	/* test_order_split.c */
void		test_metrics(void);		/* test_metrics.c */
/* The dot-product metrics' contract dist of a's i and b's j, from the README (test_metrics.c). */
double		metric_ref(TcMetric m, const TcPoints *a, int64_t i, const TcPoints *b, int64_t j);
void		test_int8_dot(void);		/* test_int8_dot.c */
void		test_graph(void);		/* test_graph.c */
void		test_nearest(void);		/* test_nearest.c */
void		test_plan(void);		/* test_plan.c */
void		test_buffers(void);		/* test_buffers.c */

#endif							/* TC_TEST_HARNESS_H */
