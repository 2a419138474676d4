/*
 * gpu_vs_cpu_devices.c
 *		--devices: the GPUs every join of the GPU-against-CPU program may
 *		use (tcjoin.devices' syntax), so that the whole comparison runs on
 *		several GPUs ("0,1"), or on the several-GPU path of one ("0,0");
 *		each GPU join's GPUs and shares held to that list; and a list that
 *		names a GPU the process does not see, which must fail with
 *		tcjoin.devices' message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_vs_cpu.h"

/* --devices: the GPUs every join may use (0 entries: every one the process sees) */
static bool g_given;
static int	g_ndevices;
static int	g_devices[TC_MAX_DEVICES];
/* the GPUs a GPU join may run on: the list, or 0 .. g_seen - 1 */
static int	g_seen;

/* GPU joins that ended TC_OK, by the GPUs that ran them; those unlike the list */
static int64_t gpu_joins[TC_MAX_DEVICES + 1];
static int64_t gpu_joins_odd;

void
take_devices(TcJoinParams *params)
{
	params->ndevices = g_ndevices;
	memcpy(params->devices, g_devices, sizeof(g_devices));
	/* a list given: every join on all of it, so that the several-GPU path runs however small */
	if (g_given)
		params->overrides.split_all = true;
}

/* The list as --devices gave it, or every GPU seen: entry i. */
static int
listed(int i)
{
	return g_ndevices > 0 ? g_devices[i] : i;
}

static int
listed_count(void)
{
	return g_ndevices > 0 ? g_ndevices : g_seen;
}

int
distinct_gpus(void)
{
	bool		seen[TC_MAX_DEVICES] = {false};
	int			k = 0;

	for (int i = 0; i < listed_count(); i++)
		if (listed(i) >= 0 && listed(i) < TC_MAX_DEVICES && !seen[listed(i)])
		{
			seen[listed(i)] = true;
			k++;
		}
	return k > 0 ? k : 1;
}

/*
 * A GPU join's GPUs against the list: 1 to all of them, each listed (as
 * often as it ran: "0,0" lets GPU 0 run twice), each share within 0..1
 * and the shares summing to 1 within 1e-9 (all 0 where the join had no
 * work to split: an empty side).  Joins that stopped or failed, and those
 * that ran on the CPU, say nothing.
 */
void
note_gpus(TcStatus st, const TcJoinStats *s)
{
	int			left[TC_MAX_DEVICES] = {0};
	double		sum = 0;
	bool		ok;

	if (st != TC_OK || s->device == NULL || strcmp(s->device, "gpu") != 0)
		return;
	for (int i = 0; i < listed_count(); i++)
		left[listed(i)]++;
	ok = s->gpus >= 1 && s->gpus <= listed_count();
	for (int i = 0; ok && i < s->gpus; i++)
	{
		int			id = s->gpu_ids[i];

		ok = id >= 0 && id < TC_MAX_DEVICES && left[id]-- > 0 &&
			s->gpu_share[i] >= 0 && s->gpu_share[i] <= 1;
		sum += s->gpu_share[i];
	}
	ok = ok && (fabs(sum - 1) <= 1e-9 ||
				(sum == 0 && s->candidates == 0 && s->gpu_tile_pairs == 0));
	if (ok)
	{
		gpu_joins[s->gpus]++;
		return;
	}
	if (gpu_joins_odd++ < 5)
	{
		printf("  a GPU join's GPUs unlike --devices: %d GPU%s (", s->gpus, s->gpus == 1 ? "" : "s");
		for (int i = 0; i < s->gpus && i < TC_MAX_DEVICES; i++)
			printf("%s%d: %.17g", i ? ", " : "", s->gpu_ids[i], s->gpu_share[i]);
		printf("), shares summing to %.17g; %s, %llu candidates\n", sum,
			   s->method ? s->method : "-", (unsigned long long) s->candidates);
	}
}

/*
 * Without split=all a join takes as many GPUs as its estimate says pay:
 * one too small to gain keeps the list's first GPU (and gives the CPU's
 * pairs), one priced at many times a GPU's extra cost takes several.
 * Run last, when every listed GPU has its context (a cold one counts
 * against splitting).
 */
static void
split_rule_case(void)
{
	float	   *x;
	TcJoinParams params = {.eps = 0.05, .method = TC_METHOD_GRID, .device = TC_DEVICE_GPU,
	.exact = true, .threads = 1};
	Collect		c = {0},
				cc = {0};
	TcJoinStats s = {0},
				sc = {0};
	TcError		err = {0};
	TcStatus	st,
				stc;

	if (distinct_gpus() < 2)
		return;
	x = make_points("uniform", 2000, 2);
	{
		TcPoints	p = {x, 2000, 2, TC_FLOAT4};

		take_devices(&params);
		/* 'all' is an empty list, which run_join would take again, with split=all */
		for (int i = 0; params.ndevices == 0 && i < listed_count(); i++)
			params.devices[i] = listed(i);
		if (params.ndevices == 0)
			params.ndevices = listed_count();
		params.overrides.split_all = false;
		st = run_join(&p, NULL, params, &c, &s, &err);
		params.device = TC_DEVICE_CPU;
		stc = run_join(&p, NULL, params, &cc, &sc, &err);
		report(st == TC_OK && stc == TC_OK && s.gpus == 1 && s.gpu_ids[0] == listed(0) && c.n == cc.n,
			   "split auto, 2,000 2-D points: %d GPU(s), the first GPU %d (listed first %d), "
			   "%lld pairs against the CPU's %lld", s.gpus, s.gpu_ids[0], listed(0),
			   (long long) c.n, (long long) cc.n);
	}
	free(x);
	free(c.pairs);
	free(cc.pairs);
	memset(&c, 0, sizeof(c));
	x = make_points("uniform", 400000, 128);
	{
		TcPoints	p = {x, 400000, 128, TC_FLOAT4};

		params.device = TC_DEVICE_GPU;
		params.method = TC_METHOD_BRUTE;
		params.tensor_cores = TC_TENSOR_ON;
		params.eps = 0.5;
		st = run_join(&p, NULL, params, &c, &s, &err);
		report(st == TC_OK && s.gpus > 1,
			   "split auto, 400,000 x 128 FP16 brute force: %s, %d GPUs of %d listed",
			   tc_status_name(st), s.gpus, listed_count());
	}
	free(x);
	free(c.pairs);
}

/*
 * The GPU joins' GPUs, one case: none unlike the list, and where the list
 * has several GPUs, some join ran on more than one (else the several-GPU
 * path never ran and the comparison proved nothing of it).
 */
void
gpus_summary(void)
{
	char		counts[400] = "";
	size_t		len = 0;
	int64_t		total = gpu_joins_odd,
				several = 0;

	split_rule_case();
	for (int g = 1; g <= TC_MAX_DEVICES; g++)
	{
		total += gpu_joins[g];
		if (g > 1)
			several += gpu_joins[g];
		if (gpu_joins[g] > 0 && len < sizeof(counts))
			len += (size_t) snprintf(counts + len, sizeof(counts) - len, "%s%d GPU%s %lld",
									 len ? ", " : "", g, g == 1 ? "" : "s",
									 (long long) gpu_joins[g]);
	}
	report(gpu_joins_odd == 0 && (listed_count() < 2 || several > 0),
		   "devices: %lld GPU joins (%s), %lld unlike the %d listed",
		   (long long) total, len ? counts : "none", (long long) gpu_joins_odd, listed_count());
}

/*
 * A list naming a GPU past the last one the process sees: the join fails
 * with tcjoin.devices' message, whatever else the list holds.
 */
static void
devices_error_case(void)
{
	float		x[] = {0, 0, 0.5f, 0};
	TcPoints	p = {x, 2, 2, TC_FLOAT4};
	TcJoinParams params = {.eps = 1, .device = TC_DEVICE_GPU, .exact = true, .threads = 1};
	Collect		c = {0};
	TcJoinStats stats = {0};
	TcError		err = {0};
	TcStatus	st;
	char		want[200];

	if (g_seen >= TC_MAX_DEVICES)
		return;
	params.ndevices = 2;
	params.devices[0] = 0;
	params.devices[1] = g_seen;
	st = run_join(&p, NULL, params, &c, &stats, &err);
	snprintf(want, sizeof(want), "tcjoin.devices names GPU %d, but this process sees %d GPU%s (0 to %d)",
			 g_seen, g_seen, g_seen == 1 ? "" : "s", g_seen - 1);
	report(st == TC_ERR_INVALID && strstr(err.message, want) != NULL && c.n == 0,
		   "devices 0,%d with %d GPU%s seen: %s (%s)", g_seen, g_seen, g_seen == 1 ? "" : "s",
		   tc_status_name(st), st == TC_OK ? "no error" : err.message);
	free(c.pairs);
}

/* --devices LIST; false (the summary line printed) where it is not tcjoin.devices' syntax. */
bool
devices_option(const char *arg)
{
	char		msg[256];

	if (tc_devices_parse(arg, g_devices, &g_ndevices, msg, sizeof(msg)))
	{
		g_given = true;
		return true;
	}
	printf("--devices: %s\n0 passed, 1 failed\n", msg);
	return false;
}

/*
 * Once the GPUs are counted (seen of them): the list printed and checked
 * against them (false, the summary line printed, where it names one past
 * them: every join would fail), then devices_error_case.
 */
bool
devices_start(int seen)
{
	g_seen = seen < TC_MAX_DEVICES ? seen : TC_MAX_DEVICES;
	printf("devices ");
	for (int i = 0; i < g_ndevices; i++)
		printf("%s%d", i ? "," : "", g_devices[i]);
	printf("%s (this process sees %d GPU%s)\n", g_ndevices ? "" : "all", g_seen,
		   g_seen == 1 ? "" : "s");
	for (int i = 0; i < g_ndevices; i++)
		if (g_devices[i] >= g_seen)
		{
			printf("--devices names GPU %d, but this process sees %d\n0 passed, 1 failed\n",
				   g_devices[i], g_seen);
			return false;
		}
	devices_error_case();
	return true;
}
