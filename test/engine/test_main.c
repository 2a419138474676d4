/*
 * test_main.c
 *		Standalone tests of the tcjoin join engine (src/engine/engine.h), with
 *		no PostgreSQL involved: the options, the seeds and the section table.
 *		The sections live in test_*.c by concern, their machinery in
 *		test_harness.c and test_common.c.
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
 *					two-sets, large, sinks, random, fp16-round,
 *					fp16-filter, fp16-dot, overrides, cancel, signals, threads,
 *					device, metrics, int8-dot, graph, nearest, plan,
 *					buffers.
 */
#include "test_harness.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool		g_quick;
bool		g_verbose;
uint64_t	g_fresh_seed;

int			g_passed;
int			g_failed;
int			g_case_fails;
char		g_label[768];
unsigned	g_rotate;

/* In this order: the random sections' draws depend on what ran before. */
static const struct
{
	const char *name;
	void		(*fn) (void);
}			sections[] = {
	{"basics", test_basics},
	{"sq_threshold", test_sq_threshold},
	{"invalid", test_invalid},
	{"tiny", test_tiny_inputs},
	{"dims", test_dims_matrix},
	{"distributions", test_distributions},
	{"two-sets", test_two_sets},
	{"large", test_large},
	{"sinks", test_sinks},
	{"random", test_random_sweep},
	{"fp16-round", test_f16_round},
	{"fp16-filter", test_f16_filter},
	{"fp16-dot", test_f16_dot},
	{"overrides", test_overrides},
	{"cancel", test_cancel},
	{"signals", test_signals},
	{"threads", test_thread_cap},
	{"device", test_device_choice},
	{"gpu-split", test_gpu_split},
	{"order-split", test_order_split},
	{"metrics", test_metrics},
	{"int8-dot", test_int8_dot},
	{"graph", test_graph},
	{"nearest", test_nearest},
	{"plan", test_plan},
	{"buffers", test_buffers},
};

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

/* Whether TC_TEST_SECTIONS (a comma-separated list) names this section. */
static bool
section_selected(const char *name)
{
	const char *only = getenv("TC_TEST_SECTIONS");
	size_t		len = strlen(name);
	const char *hit;

	if (!only || !*only)
		return true;
	hit = strstr(only, name);
	while (hit && !((hit == only || hit[-1] == ',') &&
					(hit[len] == '\0' || hit[len] == ',')))
		hit = strstr(hit + 1, name);
	return hit != NULL;
}

static void
section(const char *name, void (*fn) (void))
{
	double		t0 = now_seconds();
	int			f0 = g_failed,
				p0 = g_passed;

	if (!section_selected(name))
		return;
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

	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		section(sections[i].name, sections[i].fn);

	printf("%d passed, %d failed\n", g_passed, g_failed);
	return g_failed ? 1 : 0;
}
