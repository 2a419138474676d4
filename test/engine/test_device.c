/*
 * test_device.c
 *		Where a join runs (choose.c's tc_choose_device): the settings, auto's
 *		estimates and its reason in the stats, and the grid plan made once a
 *		join for every choice that needs it.  Built without CUDA, auto ends
 *		on the CPU either because its estimate is under any GPU join's fixed
 *		costs (CUDA not even asked) or because there is no GPU; the GPU
 *		suite checks the rest on a GPU.
 */
#include "test_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "choose.h"

/* n uniform points of d dimensions in [0, 1). */
static double *
uniform_points(int64_t n, int d, uint64_t seed)
{
	Rng			r;
	double	   *x = malloc(sizeof(double) * (size_t) (n > 0 ? n : 1) * d);

	rng_seed(&r, seed);
	for (int64_t i = 0; i < n * d; i++)
		x[i] = rng_uniform(&r);
	return x;
}

/* tc_choose_device on a fresh join; the join is left for the caller's checks. */
static TcJoin *
chosen(const TcPoints *a, const TcPoints *b, TcDevice device, TcMethod method,
	   double eps, TcStatus *st, bool *use_gpu, TcError *err)
{
	TcJoinParams p = make_params(eps, method, 2, false);
	TcJoin	   *join;

	p.device = device;
	memset(err, 0, sizeof(*err));
	join = tc_join_create(a, b, &p, err);
	if (join == NULL)
	{
		*st = err->status;
		return NULL;
	}
	*st = tc_choose_device(join, use_gpu, err);
	return join;
}

void
test_device_choice(void)
{
	double	   *small = uniform_points(500, 2, 11);
	double	   *big = uniform_points(20000, 64, 12);
	TcPoints	ps = {small, 500, 2, TC_FLOAT8};
	TcPoints	pb = {big, 20000, 64, TC_FLOAT8};
	TcJoinStats s;
	TcError		err;
	TcStatus	st;
	bool		gpu;
	TcJoin	   *j;

	case_begin("device: tcjoin.device = cpu says so");
	j = chosen(&ps, NULL, TC_DEVICE_CPU, TC_METHOD_AUTO, 0.01, &st, &gpu, &err);
	CHECK(j != NULL && st == TC_OK && !gpu, "status %s", tc_status_name(st));
	if (j)
	{
		tc_join_get_stats(j, &s);
		CHECK(strcmp(s.device_choice, "tcjoin.device = cpu") == 0, "choice \"%s\"", s.device_choice);
		CHECK(s.auto_cpu_seconds == 0 && s.auto_gpu_seconds == 0, "estimates without auto");
	}
	tc_join_destroy(j);
	case_end();

	case_begin("device: gpu without a GPU fails with the reason");
	j = chosen(&ps, NULL, TC_DEVICE_GPU, TC_METHOD_AUTO, 0.01, &st, &gpu, &err);
	CHECK(st == TC_ERR_NO_GPU && strstr(err.message, "without CUDA") != NULL,
		  "status %s, \"%s\"", tc_status_name(st), err.message);
	tc_join_destroy(j);
	case_end();

	case_begin("device: auto, two small point sets on the CPU by the estimates");
	j = chosen(&ps, &ps, TC_DEVICE_AUTO, TC_METHOD_AUTO, 0.01, &st, &gpu, &err);
	CHECK(j != NULL && st == TC_OK && !gpu, "status %s", tc_status_name(st));
	if (j)
	{
		tc_join_get_stats(j, &s);
		CHECK(strstr(s.device_choice, "fixed costs") != NULL && s.auto_cpu_seconds > 0,
			  "choice \"%s\"", s.device_choice);
	}
	tc_join_destroy(j);
	case_end();

	/* 500 points: far under a GPU join's set-up, whatever the GPU */
	case_begin("device: auto, a small join stays on the CPU without asking CUDA");
	j = chosen(&ps, NULL, TC_DEVICE_AUTO, TC_METHOD_AUTO, 0.01, &st, &gpu, &err);
	CHECK(j != NULL && st == TC_OK && !gpu, "status %s", tc_status_name(st));
	if (j)
	{
		tc_join_get_stats(j, &s);
		CHECK(strstr(s.device_choice, "under a GPU join's fixed costs") != NULL,
			  "choice \"%s\"", s.device_choice);
		CHECK(s.auto_cpu_seconds > 0 && s.auto_cpu_seconds <= s.auto_gpu_seconds,
			  "estimates cpu %g s, gpu %g s", s.auto_cpu_seconds, s.auto_gpu_seconds);
	}
	tc_join_destroy(j);
	case_end();

	/* 20,000 x 64 by brute force: seconds of CPU, so only the missing GPU keeps it there */
	case_begin("device: auto, a large join asks for a GPU and says there is none");
	j = chosen(&pb, NULL, TC_DEVICE_AUTO, TC_METHOD_BRUTE, 0.5, &st, &gpu, &err);
	CHECK(j != NULL && st == TC_OK && !gpu, "status %s", tc_status_name(st));
	if (j)
	{
		tc_join_get_stats(j, &s);
		CHECK(strstr(s.device_choice, "auto: no GPU (tcjoin was built without CUDA") != NULL,
			  "choice \"%s\"", s.device_choice);
		CHECK(s.auto_cpu_seconds > 0.05, "cpu estimate %g s", s.auto_cpu_seconds);
	}
	tc_join_destroy(j);
	case_end();

	/*
	 * The CPU grid bins and sorts on one thread: more threads shorten the
	 * rest of its estimate, not that part.  200,000 2-D points: the grid.
	 */
	case_begin("device: auto's CPU estimate keeps the grid's serial set-up");
	{
		double	   *mid = uniform_points(200000, 2, 13);
		TcPoints	pm = {mid, 200000, 2, TC_FLOAT8};
		double		est[2] = {0, 0};

		for (int t = 1; t <= 2; t++)
		{
			TcJoinParams p = make_params(0.002, TC_METHOD_AUTO, t, false);

			p.device = TC_DEVICE_AUTO;
			j = tc_join_create(&pm, NULL, &p, &err);
			CHECK(j != NULL && tc_choose_device(j, &gpu, &err) == TC_OK, "choose: %s", err.message);
			if (j)
			{
				tc_join_get_stats(j, &s);
				est[t - 1] = s.auto_cpu_seconds;
			}
			tc_join_destroy(j);
		}
		/* 2 x 200,000 points at 42 units (1 ns) each, on one thread whatever the count */
		CHECK(est[1] >= 2 * 200000 * 42e-9, "estimate %g s on 2 threads under the serial part", est[1]);
		CHECK(est[1] > 0.5 * est[0] * 1.05, "2 threads %g s, 1 thread %g s: all of it divided",
			  est[1], est[0]);
		free(mid);
	}
	case_end();

	/* The plan is made once: a second call re-picks from the same costs. */
	case_begin("device: the grid plan, once a join, for every choice");
	j = chosen(&ps, NULL, TC_DEVICE_AUTO, TC_METHOD_AUTO, 0.01, &st, &gpu, &err);
	if (j)
	{
		TcGridPlan	p1,
					p2;

		CHECK(tc_grid_plan(j, true, &p1, &err) == TC_OK, "plan");
		CHECK(tc_grid_plan(j, false, &p2, &err) == TC_OK, "plan again");
		CHECK(p1.kmax == p2.kmax && p1.kmax >= 1, "kmax %d, %d", p1.kmax, p2.kmax);
		CHECK(p2.k >= 1 || p2.kmax == 0, "a forced grid chose k = 0 with %d dimensions", p2.kmax);
		CHECK(p1.est_cost == p1.cost_k[p1.k] && p2.est_cost == p2.cost_k[p2.k],
			  "est_cost is not the chosen plan's");
		for (int k = 1; k <= p1.kmax; k++)
			CHECK(p1.cost_k[k] == p2.cost_k[k] && p1.cand_k[k] == p2.cand_k[k],
				  "costs differ at k = %d", k);
		/* brute force competes only when allowed */
		CHECK(p1.cost_k[p1.k] <= p1.cost_k[0] && p2.cost_k[p2.k] <= p2.cost_k[p2.kmax],
			  "not the cheapest");
	}
	tc_join_destroy(j);
	case_end();

	/* And the join then runs with the reason in its stats. */
	case_begin("device: the stats keep auto's reason through the run");
	{
		TcJoinParams p = make_params(0.01, TC_METHOD_AUTO, 2, false);
		PairVec		want = {0};
		Collector	c;
		TcSink		sink = {collect_emit, collect_poll, &c, 0, NULL, NULL, NULL};

		p.device = TC_DEVICE_AUTO;
		memset(&c, 0, sizeof(c));
		c.owner = pthread_self();
		j = tc_join_create(&ps, NULL, &p, &err);
		CHECK(j != NULL && tc_join_run(j, &sink, &err) == TC_OK, "run: %s", err.message);
		if (j)
		{
			tc_join_get_stats(j, &s);
			CHECK(strcmp(s.device, "cpu") == 0 && strstr(s.device_choice, "auto: ") == s.device_choice,
				  "device %s, choice \"%s\"", s.device, s.device_choice);
		}
		ref_join(&ps, NULL, 0.01, false, &want);
		pairvec_sort(&c.pairs, true, ps.n);
		if (compare_pairs(g_label, &c.pairs, &want, MAX_CASE_LINES) > 0)
			g_case_fails++;
		pairvec_free(&c.pairs);
		pairvec_free(&want);
		tc_join_destroy(j);
	}
	case_end();
	free(small);
	free(big);
}

/* A split of a list of H100-like GPUs, any of them replaced by another model. */
static void
split_setup(TcGpuSplit *s, const int *devices, int n, double fixed, double shared)
{
	memset(s, 0, sizeof(*s));
	s->ndevices = n;
	s->fixed = fixed;
	s->shared = shared;
	for (int i = 0; i < n; i++)
	{
		s->devices[i] = devices[i];
		s->valid[i] = true;
		s->ready[i] = true;
		snprintf(s->info[i].name, sizeof(s->info[i].name), "H100");
		s->info[i].device = devices[i];
		s->info[i].major = 9;
		s->info[i].sm_count = 132;
	}
}

/* out[0 .. got) against want[0 .. nwant), as text for the message. */
static bool
split_is(const int *out, int got, const int *want, int nwant)
{
	if (got != nwant)
		return false;
	for (int i = 0; i < got; i++)
		if (out[i] != want[i])
			return false;
	return true;
}

#define SPLIT_CASE(what, s, ...) \
	do { \
		const int	want_[] = {__VA_ARGS__}; \
		int			out_[TC_MAX_DEVICES]; \
		int			got_ = tc_split_gpus(&(s), out_, NULL); \
		case_begin("gpu split: %s", what); \
		CHECK(split_is(out_, got_, want_, (int) (sizeof(want_) / sizeof(want_[0]))), \
			  "%d GPUs taken (first %d), want %d (first %d)", got_, got_ > 0 ? out_[0] : -1, \
			  (int) (sizeof(want_) / sizeof(want_[0])), want_[0]); \
		case_end(); \
	} while (0)

/*
 * How many of tcjoin.devices a join takes (choose.c's tc_split_gpus, fed
 * made-up GPUs, since the machine may have none): seconds of kernels far
 * below a GPU's extra cost keep the first GPU, far above it take them all;
 * a repeated GPU counts once (kept with split=all); a GPU of another model
 * is left out; a GPU without a context costs a cold start where the first
 * has one, and not where the first is cold too.  The margins are wide, so
 * that the cases hold for any extra cost between 1 and 50 ms and a cold
 * start between 0.1 and 1 s.
 */
void
test_gpu_split(void)
{
	TcGpuSplit	s;
	const int	four[] = {0, 1, 2, 3};
	const int	dup[] = {0, 0, 1};
	const int	mixed[] = {0, 1, 2};
	const int	first_one[] = {1, 0};

	split_setup(&s, four, 4, 0.001, 1e-5);
	SPLIT_CASE("kernels of 10 us on 4 GPUs: the first alone", s, 0);
	split_setup(&s, four, 4, 0.001, 10.0);
	SPLIT_CASE("kernels of 10 s on 4 GPUs: all of them", s, 0, 1, 2, 3);
	split_setup(&s, first_one, 2, 0.001, 1e-5);
	SPLIT_CASE("a small join on '1,0': GPU 1 alone", s, 1);
	split_setup(&s, dup, 3, 0.001, 10.0);
	SPLIT_CASE("'0,0,1', a large join: each GPU once", s, 0, 1);
	s.all = true;
	s.shared = 1e-5;
	SPLIT_CASE("'0,0,1' with split=all, a small join: the list as it is", s, 0, 0, 1);
	split_setup(&s, mixed, 3, 0.001, 10.0);
	snprintf(s.info[1].name, sizeof(s.info[1].name), "A100");
	s.info[1].major = 8;
	s.info[1].sm_count = 108;
	SPLIT_CASE("GPU 1 of another model, a large join: GPUs 0 and 2", s, 0, 2);
	s.all = true;
	SPLIT_CASE("GPU 1 of another model, split=all: GPUs 0 and 2", s, 0, 2);
	split_setup(&s, four, 2, 0.001, 0.2);
	s.ready[1] = false;
	SPLIT_CASE("0.2 s of kernels, GPU 1 cold, GPU 0 warm: GPU 0 alone", s, 0);
	s.ready[0] = false;
	SPLIT_CASE("0.2 s of kernels, both cold: both", s, 0, 1);
	split_setup(&s, four, 2, 0.001, 10.0);
	s.ready[1] = false;
	SPLIT_CASE("10 s of kernels, GPU 1 cold: both", s, 0, 1);
	split_setup(&s, four, 4, 0.001, 10.0);
	{
		int			out[TC_MAX_DEVICES];
		double		cost = 0;
		int			got = tc_split_gpus(&s, out, &cost);

		case_begin("gpu split: the estimate on 4 GPUs, kernels of 10 s");
		CHECK(got == 4 && cost > 0.001 + 10.0 / 4 && cost < 0.001 + 10.0 / 3,
			  "%d GPUs, %.6f s (want 4 GPUs, between %.3f and %.3f s)", got, cost, 0.001 + 10.0 / 4,
			  0.001 + 10.0 / 3);
		case_end();
		s.shared = 1e-5;
		got = tc_split_gpus(&s, out, &cost);
		case_begin("gpu split: the estimate on 1 GPU, kernels of 10 us");
		CHECK(got == 1 && cost == 0.001 + 1e-5, "%d GPUs, %.9f s (want 1 GPU, %.9f s)", got, cost,
			  0.001 + 1e-5);
		case_end();
	}
	split_setup(&s, four, 4, 0.001, 10.0);
	s.valid[0] = false;
	SPLIT_CASE("the first GPU's properties unknown: it alone", s, 0);
}
