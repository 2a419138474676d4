/*
 * choose.c
 *		Every cost model of the engine, and the choices made from them:
 *		where a join runs, which GPU path a self-join takes, and how many
 *		grid dimensions a CPU join indexes (none: brute force).
 *
 * The models fix only which side wins, never an answer: every path returns
 * the same pairs.  docs/performance.md has the measurements they were
 * fitted to.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "choose.h"
#include "cpu_filter.h"
#include "distance.h"
#include "gpu.h"

/*
 * The CPU models' cost units: roughly nanoseconds on one core.  A candidate
 * pair costs TC_COST_PAIR besides TC_COST_DIM per dimension; a probe of a
 * cell's neighbour row TC_COST_LOOKUP; binning, sorting and copying a point
 * TC_COST_POINT.
 */
#define TC_COST_PAIR	2.0
#define TC_COST_DIM		0.7
#define TC_COST_LOOKUP	6.0
#define TC_COST_POINT	40.0

/* From this many dimensions, auto on the GPU takes FP16 brute force. */
#define TC_GPU_BRUTE_DIMS 12

/*
 * auto's cost model on the GPU below TC_GPU_BRUTE_DIMS, in seconds, fitted
 * to an H200 with tensor cores on (docs/lab/2026-11-22-auto-cost-model.md):
 * the grid costs a start, a share per point and one per
 * candidate growing as d^2 (its FP64 tiles); FP16 brute force below 16
 * dimensions costs a start and a share per pair of the triangle, whatever
 * the data (tile pruning is a bonus left out).  The grid's candidates are
 * the planner's estimate from a sample.  The constants fix only which side
 * wins, so a GPU that is uniformly faster or slower makes the same choice.
 */
#define TC_GPU_GRID_START 0.01
#define TC_GPU_GRID_POINT 5e-8
#define TC_GPU_GRID_CAND_D8 7e-12
#define TC_GPU_BRUTE_START 0.005

/*
 * FP16 brute force: multiply-adds a second over the triangle's pairs and
 * the dimensions padded to 64 (a tile's step), prune and recheck included;
 * fitted to Hopper's 132 SMs and scaled by SM count, an Ampere SM taking a
 * third of the rate (mma.sync against wgmma).
 */
#define TC_GPU_BRUTE_MACS 1.4e14

/*
 * What a GPU join costs besides its kernels, in seconds: the first in a
 * process creates the CUDA context and loads the modules (TC_GPU_COLD),
 * each sets up its streams and buffers (TC_GPU_SETUP) and uploads the
 * coordinates through pinned memory (TC_GPU_UPLOAD_RATE bytes a second).
 * Pairs cost the same to hand over from either device, so they count for
 * neither.  Measured on an H100: docs/lab/2026-11-26-auto-device-and-first-join.md.
 */
#define TC_GPU_COLD 0.4
#define TC_GPU_SETUP 0.002
#define TC_GPU_UPLOAD_RATE 6e9

/* Why a float8 set outside the dot-product metrics' range stays on the CPU. */
#define TC_DOT_RANGE_REFUSAL \
	"cosine and inner product on the GPU take coordinates of magnitude 2^-240 to 2^240, or 0"

/* The CPU models' unit (above) in seconds of one thread. */
#define TC_CPU_UNIT_SECONDS 1e-9

static double brute_cost(const TcJoin *join);

/*
 * The CPU's seconds for a cost in the models' units: serial on one thread
 * (the grid's binning and sort), the rest on the join's threads.
 */
static double
tc_cpu_seconds(const TcJoin *join, double cost, double serial)
{
	return (serial + (cost - serial) / (double) join->params.threads) * TC_CPU_UNIT_SECONDS;
}

/* The grid's serial part: binning, sorting and copying every point. */
static double
grid_serial_cost(const TcJoin *join)
{
	return ((double) join->a.n + (double) join->b.n) * (TC_COST_POINT + join->a.d);
}

static double
gpu_upload_seconds(const TcJoin *join)
{
	double		bytes = (double) join->a.n * join->a.d *
		(join->a.type == TC_FLOAT4 ? sizeof(float) : sizeof(double));

	if (!join->self)
		bytes += (double) join->b.n * join->b.d *
			(join->b.type == TC_FLOAT4 ? sizeof(float) : sizeof(double));
	return bytes / TC_GPU_UPLOAD_RATE;
}

/* The points FP16 brute force holds: a's, and b's in a join of two sets. */
static int64_t
gpu_brute_points(const TcJoin *join)
{
	return join->self ? join->a.n : join->a.n + join->b.n;
}

static double
gpu_brute_cost(const TcJoin *join, const TcGpuInfo *info)
{
	double		n = (double) join->a.n;
	double		pairs = join->self ? n * (n - 1) / 2 : n * (double) join->b.n;
	double		dpad = 64.0 * ceil(join->a.d / 64.0);
	double		rate = TC_GPU_BRUTE_MACS * (info->sm_count > 0 ? info->sm_count / 132.0 : 1.0) *
		(info->major >= 9 ? 1.0 : 1.0 / 3);

	return TC_GPU_BRUTE_START + pairs * dpad / rate;
}

static double
gpu_grid_cost(const TcJoin *join, const TcGridPlan *plan)
{
	double		r = (double) join->a.d / 8.0;

	double		points = (double) join->a.n + (join->self ? 0 : (double) join->b.n);

	return TC_GPU_GRID_START + TC_GPU_GRID_POINT * points +
		TC_GPU_GRID_CAND_D8 * fmax(r * r, 1.0) * plan->est_candidates;
}

/* The grid's part of gpu_grid_cost that every GPU of a split pays: its start and the points. */
static double
grid_fixed_cost(const TcJoin *join)
{
	return TC_GPU_GRID_START + TC_GPU_GRID_POINT *
		((double) join->a.n + (join->self ? 0 : (double) join->b.n));
}

/* The GPU grid kernel's cost as run_gpu runs it: over one cell for method 'brute'. */
static double
gpu_grid_path_cost(const TcJoin *join, const TcGridPlan *plan)
{
	TcGridPlan	p = *plan;

	if (join->params.method == TC_METHOD_BRUTE)
		p.est_candidates = p.cand_k[0];	/* one cell */
	return gpu_grid_cost(join, &p);
}

/*
 * method => 'brute' takes the FP16 tensor-core brute force (unless
 * tcjoin.tensor_cores = off, which keeps FP64 CUDA cores: the grid kernel
 * over one cell).  auto takes it too from TC_GPU_BRUTE_DIMS dimensions,
 * where the grid finds no useful cells, and below that where the cost
 * model says so: brute force grows with n^2, the grid with its candidates,
 * so brute force wins on small sets and the grid on large ones.
 *
 * FP16 tensor cores need compute capability 8.0 (the join runs on GPU 0):
 * below that, brute force with tensor_cores = auto runs on FP64 CUDA cores
 * (= on asks for them, and the back end says it cannot).  auto never gives
 * FP16 brute force more points than it takes.
 */
TcStatus
tc_choose_gpu_method(TcJoin *join, bool *fp16_brute, TcGridPlan *plan,
					 bool *planned, TcError *err)
{
	TcGpuInfo	info;
	bool		fp16_ok = tc_gpu_info(0, &info) && info.major >= 8;
	TcStatus	st;

	*planned = false;
	*fp16_brute = join->params.method == TC_METHOD_BRUTE;
	if (*fp16_brute && join->params.tensor_cores == TC_TENSOR_AUTO && !fp16_ok)
		*fp16_brute = false;
	if (join->params.method == TC_METHOD_AUTO && join->params.tensor_cores != TC_TENSOR_OFF &&
		fp16_ok && gpu_brute_points(join) <= TC_GPU_BRUTE_MAX_N)
	{
		if (join->a.d >= TC_GPU_BRUTE_DIMS)
			*fp16_brute = true;
		else
		{
			if ((st = tc_grid_plan(join, false, plan, err)) != TC_OK)
				return st;
			*planned = true;
			join->stats.auto_grid_seconds = gpu_grid_cost(join, plan);
			join->stats.auto_brute_seconds = gpu_brute_cost(join, &info);
			*fp16_brute = join->stats.auto_brute_seconds < join->stats.auto_grid_seconds;
		}
	}
	return TC_OK;
}

/*
 * The CPU brute force's cost.  SIMD lanes make a brute-force candidate
 * cheaper than a grid one, and from TC_FILTER_MIN_DIMS on the float32
 * filter makes it cheaper again.
 */
static double
brute_cost(const TcJoin *join)
{
	double		na = (double) join->a.n;
	double		pairs = join->self ? na * (na - 1) / 2 : na * (double) join->b.n;

	if (join->a.d >= TC_FILTER_MIN_DIMS)
		return pairs * (TC_COST_PAIR + TC_COST_DIM * join->a.d / 8);
	return pairs * (TC_COST_PAIR + TC_COST_DIM * join->a.d) / 2;
}

/*
 * The CPU grid's cost on its first k dimensions: the sample's share of
 * pairs that are neighbours on them estimates the candidates; probes grow
 * as 3^(k-1) per cell.  k = 0 is brute force.
 */
void
tc_grid_costs(const TcJoin *join, TcGridPlan *plan, int kmax,
			  const double *hits, double sample_pairs)
{
	const int	d = join->a.d;
	double		na = (double) join->a.n;
	double		nb = (double) join->b.n;
	double		all_pairs = join->self ? na * (na - 1) / 2 : na * nb;
	double		within = sample_pairs;	/* sample pairs neighbouring on k dims */
	double		cells = 1.0;
	double		probes = 1.0;

	plan->kmax = kmax;
	plan->cost_k[0] = brute_cost(join);
	plan->cand_k[0] = all_pairs;
	for (int k = 1; k <= kmax; k++)
	{
		double		frac;

		within -= hits[k - 1];
		cells *= (double) plan->ncell[k - 1];
		if (k > 1)
			probes *= 3.0;
		frac = sample_pairs > 0 ? fmax(within, 0.5) / sample_pairs : 1.0;
		plan->cand_k[k] = frac * all_pairs;
		plan->cost_k[k] = frac * all_pairs * (TC_COST_PAIR + TC_COST_DIM * d) +
			fmin(na, cells) * (join->self ? probes / 2 + 1 : probes) * TC_COST_LOOKUP +
			grid_serial_cost(join);
	}
}

int
tc_grid_pick(TcGridPlan *plan, bool allow_brute)
{
	int			best_k = 0;
	double		best_cost = allow_brute ? plan->cost_k[0] : INFINITY;

	for (int k = 1; k <= plan->kmax; k++)
		if (plan->cost_k[k] < best_cost)
		{
			best_cost = plan->cost_k[k];
			best_k = k;
		}
	/* a forced grid with no usable dimension: one cell, brute force's work */
	plan->est_candidates = plan->cand_k[best_k];
	plan->est_cost = plan->cost_k[best_k];
	return best_k;
}

/*
 * The dot-product metrics run on the GPU's FP16 tensor cores only (the
 * filter of fp16_filter.h): why this join cannot, into msg, or false.
 */
static bool
dot_refusal(const TcJoin *join, const TcGpuInfo *info, char *msg, size_t len)
{
	if (info->major < 8)
		snprintf(msg, len, "the cosine and inner-product metrics on the GPU need FP16 tensor cores "
				 "(compute capability 8.0 or higher)");
	else if (join->params.tensor_cores == TC_TENSOR_OFF)
		snprintf(msg, len, "the cosine and inner-product metrics on the GPU run on its tensor cores, "
				 "and tcjoin.tensor_cores is off");
	else if (gpu_brute_points(join) > TC_GPU_BRUTE_MAX_N)
		snprintf(msg, len, "FP16 brute force on the GPU takes at most %lld points",
				 (long long) TC_GPU_BRUTE_MAX_N);
	else
		return false;
	return true;
}

/*
 * The CPU's seconds for this join, as auto would run it there.  From
 * TC_GPU_BRUTE_DIMS dimensions on, brute force's cost stands for auto's
 * (an upper bound: the grid wins only on clustered data) so that a join
 * the GPU takes is never planned for nothing; below, the plan (kept for
 * the join) prices the grid.
 */
static TcStatus
cpu_estimate(TcJoin *join, double *seconds, TcError *err)
{
	TcGridPlan	plan;
	TcStatus	st;

	if (join->params.method == TC_METHOD_BRUTE || join->params.metric != TC_METRIC_EUCLIDEAN ||
		(join->params.method == TC_METHOD_AUTO && join->a.d >= TC_GPU_BRUTE_DIMS))
	{
		*seconds = tc_cpu_seconds(join, brute_cost(join), 0);
		return TC_OK;
	}
	if ((st = tc_grid_plan(join, join->params.method == TC_METHOD_AUTO, &plan, err)) != TC_OK)
		return st;
	*seconds = tc_cpu_seconds(join, plan.est_cost, plan.k > 0 ? grid_serial_cost(join) : 0);
	return TC_OK;
}

/* The GPU's kernels' seconds for this join on GPU info, as run_gpu runs it. */
static TcStatus
gpu_estimate(TcJoin *join, const TcGpuInfo *info, double *seconds, double *fixed, TcError *err)
{
	bool		fp16_ok = info->major >= 8 && join->params.tensor_cores != TC_TENSOR_OFF &&
		gpu_brute_points(join) <= TC_GPU_BRUTE_MAX_N;
	double		brute = fp16_ok ? gpu_brute_cost(join, info) : INFINITY;
	TcGridPlan	plan;
	TcStatus	st;

	if (fp16_ok && (join->params.method == TC_METHOD_BRUTE || join->params.metric != TC_METRIC_EUCLIDEAN ||
					(join->params.method == TC_METHOD_AUTO && join->a.d >= TC_GPU_BRUTE_DIMS)))
	{
		*seconds = brute;
		*fixed = TC_GPU_BRUTE_START;
		return TC_OK;
	}
	if ((st = tc_grid_plan(join, false, &plan, err)) != TC_OK)
		return st;
	*seconds = gpu_grid_path_cost(join, &plan);
	*fixed = grid_fixed_cost(join);
	if (join->params.method == TC_METHOD_AUTO && brute < *seconds)
	{
		*seconds = brute;
		*fixed = TC_GPU_BRUTE_START;
	}
	return TC_OK;
}

/*
 * What one more GPU costs a join besides its share of the kernels, in
 * seconds: its thread, streams and buffers, its own preparation of the
 * whole input beside the others' and its part of the hand-over.  Measured
 * on 4 H100s with joins too small to split (docs/lab/2026-11-27-several-gpus.md).
 */
#define TC_GPU_EXTRA 0.005

/* Whether two GPUs are of one model: only such GPUs number a join's units alike. */
static bool
same_model(const TcGpuInfo *a, const TcGpuInfo *b)
{
	return strcmp(a->name, b->name) == 0 && a->major == b->major && a->minor == b->minor &&
		a->sm_count == b->sm_count;
}

/*
 * The estimate of a join on the first g GPUs of out (g >= 2; a distinct
 * GPU each, but under split=all), ready[i] whether out[i] has a context:
 * the shared part over the distinct GPUs, TC_GPU_EXTRA a GPU past the
 * first, TC_GPU_COLD once where one has no context while the first has one.
 */
static double
split_cost(const TcGpuSplit *s, const int *out, const bool *ready, int g)
{
	bool		seen[TC_MAX_DEVICES] = {false};
	bool		cold = false;
	int			distinct = 0;

	for (int i = 0; i < g; i++)
	{
		if (!seen[out[i]])
		{
			seen[out[i]] = true;
			distinct++;
		}
		if (i > 0 && !ready[i] && ready[0])
			cold = true;
	}
	return s->fixed + s->shared / distinct + TC_GPU_EXTRA * (g - 1) + (cold ? TC_GPU_COLD : 0);
}

/*
 * First the GPUs of the first one's model (another model may lack its
 * path, and would prepare the points differently: multi.cu checks), each
 * once (a repeated GPU brings nothing) but with s->all, which keeps the
 * list as it is for the tests of the split.  Then, but with s->all, the
 * first g of them, g the one whose estimate is least: the part the GPUs
 * share over g, TC_GPU_EXTRA a GPU past the first, and TC_GPU_COLD once
 * where one of them has no context in this process while the first has
 * one (cold contexts are made at once, in parallel).
 */
int
tc_split_gpus(const TcGpuSplit *s, int *out, double *cost_out)
{
	bool		seen[TC_MAX_DEVICES] = {false};
	bool		ready[TC_MAX_DEVICES];
	double		best_cost;
	int			m = 0,
				best = 1;

	if (cost_out)
		*cost_out = s->fixed + s->shared;
	if (s->ndevices < 1)
		return 0;
	ready[m] = s->ready[0];
	out[m++] = s->devices[0];
	if (s->devices[0] < 0 || s->devices[0] >= TC_MAX_DEVICES || !s->valid[0])
		return 1;
	seen[s->devices[0]] = true;
	for (int i = 1; i < s->ndevices; i++)
	{
		int			dev = s->devices[i];

		if (dev < 0 || dev >= TC_MAX_DEVICES || (seen[dev] && !s->all))
			continue;
		if (dev != s->devices[0] && (!s->valid[i] || !same_model(&s->info[i], &s->info[0])))
			continue;
		seen[dev] = true;
		ready[m] = s->ready[i];
		out[m++] = dev;
	}
	best_cost = s->fixed + s->shared;
	if (s->all || m == 1)
	{
		if (cost_out && m > 1)
			*cost_out = split_cost(s, out, ready, m);
		return m;
	}
	for (int g = 2; g <= m; g++)
	{
		double		cost = split_cost(s, out, ready, g);

		if (cost < best_cost)
		{
			best = g;
			best_cost = cost;
		}
	}
	if (cost_out)
		*cost_out = best_cost;
	return best;
}

/* s from params' list: each entry's properties and context, and the override split=all. */
static void
split_fill(const TcJoin *join, const TcJoinParams *params, TcGpuSplit *s)
{
	s->ndevices = params->ndevices;
	s->all = join->params.overrides.split_all;
	for (int i = 0; i < params->ndevices; i++)
	{
		s->devices[i] = params->devices[i];
		s->valid[i] = tc_gpu_info(params->devices[i], &s->info[i]);
		s->ready[i] = tc_gpu_ready(params->devices[i]);
	}
}

void
tc_choose_gpus(const TcJoin *join, TcJoinParams *params, bool fp16_brute, const TcGridPlan *plan)
{
	TcGpuSplit	s = {0};

	if (params->ndevices <= 1)
		return;
	split_fill(join, params, &s);
	/* without the first GPU's properties tc_split_gpus keeps it alone: no estimate needed */
	if (s.valid[0] && fp16_brute)
	{
		s.fixed = TC_GPU_BRUTE_START;
		s.shared = gpu_brute_cost(join, &s.info[0]) - s.fixed;
	}
	else if (s.valid[0])
	{
		s.fixed = grid_fixed_cost(join);
		s.shared = gpu_grid_path_cost(join, plan) - s.fixed;
	}
	params->ndevices = tc_split_gpus(&s, params->devices, NULL);
}

/*
 * auto's estimate of the GPU's kernels (one GPU's: kernels, of which fixed
 * every GPU pays) on as many of tcjoin.devices as the join would take;
 * *ngpus, how many.  One GPU's where the list does not resolve (the join
 * will say why, if it goes to the GPU).
 */
static double
several_gpus_estimate(const TcJoin *join, double kernels, double fixed, int *ngpus)
{
	TcJoinParams p = join->params;
	TcGpuSplit	s = {0};
	TcError		err;
	int			out[TC_MAX_DEVICES];
	double		cost = kernels;

	*ngpus = 1;
	if (tc_devices_resolve(&p, &err) != TC_OK || p.ndevices <= 1)
		return kernels;
	split_fill(join, &p, &s);
	s.fixed = fixed;
	s.shared = kernels - fixed;
	*ngpus = tc_split_gpus(&s, out, &cost);
	return cost;
}

/* tc_dot_range_ok of every set of the join. */
static bool
dot_range_ok(TcJoin *join, bool *stopped)
{
	return tc_dot_range_ok(join, &join->a, stopped) &&
		(join->self || tc_dot_range_ok(join, &join->b, stopped));
}

/*
 * auto: the device whose estimate is lower, the GPU's
 * including its fixed costs.  Where the CPU's estimate is below what any
 * GPU join costs besides its kernels, CUDA is not even asked: a backend
 * that never needs the GPU never pays for the driver.
 */
static TcStatus
choose_auto(TcJoin *join, bool *use_gpu, TcError *err)
{
	TcJoinStats *s = &join->stats;
	bool		cold = !tc_gpu_ready(0);
	double		fixed = TC_GPU_SETUP + gpu_upload_seconds(join) + (cold ? TC_GPU_COLD : 0);
	double		kernels,
				kernels_fixed;
	int			ngpus = 1;
	/* " (the GPU's: N GPUs)", with room for the rest of device_choice */
	char		gpus[32] = "";
	char		reason[200];
	TcGpuInfo	info;
	TcStatus	st;

	if ((st = cpu_estimate(join, &s->auto_cpu_seconds, err)) != TC_OK)
		return st;
	s->auto_gpu_seconds = fixed;
	if (s->auto_cpu_seconds <= fixed)
	{
		snprintf(s->device_choice, sizeof(s->device_choice),
				 "auto: the CPU's estimate is under a GPU join's fixed costs");
		return TC_OK;
	}
	if (tc_gpu_count(reason, sizeof(reason)) < 1 || !tc_gpu_info(0, &info))
	{
		s->auto_gpu_seconds = 0;
		snprintf(s->device_choice, sizeof(s->device_choice), "auto: no GPU (%.100s)", reason);
		return TC_OK;
	}
	if (join->params.metric != TC_METRIC_EUCLIDEAN &&
		dot_refusal(join, &info, reason, sizeof(reason)))
	{
		s->auto_gpu_seconds = 0;
		snprintf(s->device_choice, sizeof(s->device_choice), "auto: %.110s", reason);
		return TC_OK;
	}
	if ((st = gpu_estimate(join, &info, &kernels, &kernels_fixed, err)) != TC_OK)
		return st;
	kernels = several_gpus_estimate(join, kernels, kernels_fixed, &ngpus);
	s->auto_gpu_seconds = fixed + kernels;
	*use_gpu = s->auto_gpu_seconds < s->auto_cpu_seconds;
	if (*use_gpu && join->params.metric != TC_METRIC_EUCLIDEAN)
	{
		bool		stopped = false;

		/* checked only where the GPU would take it: a pass over float8 rows */
		if (!dot_range_ok(join, &stopped))
		{
			if (stopped)
				return TC_STOPPED;
			*use_gpu = false;
			snprintf(s->device_choice, sizeof(s->device_choice), "auto: %s", TC_DOT_RANGE_REFUSAL);
			return TC_OK;
		}
	}
	if (ngpus > 1)
		snprintf(gpus, sizeof(gpus), " (the GPU's: %d GPUs)", ngpus);
	snprintf(s->device_choice, sizeof(s->device_choice), "auto: the %s's estimate is lower%s%s",
			 *use_gpu ? "GPU" : "CPU", gpus,
			 cold ? " (the GPU's includes creating this backend's CUDA context)" : "");
	return TC_OK;
}

/*
 * Where the join runs: tcjoin.device = cpu or gpu as set (gpu needs a
 * usable GPU), auto by the estimates.
 */
TcStatus
tc_choose_device(TcJoin *join, bool *use_gpu, TcError *err)
{
	TcJoinStats *s = &join->stats;
	char		reason[200];

	*use_gpu = false;
	s->auto_cpu_seconds = s->auto_gpu_seconds = 0;
	if (join->params.device == TC_DEVICE_CPU)
	{
		snprintf(s->device_choice, sizeof(s->device_choice), "tcjoin.device = cpu");
		return TC_OK;
	}
	if (join->params.device == TC_DEVICE_AUTO)
		return choose_auto(join, use_gpu, err);
	if (tc_gpu_count(reason, sizeof(reason)) < 1)
	{
		tc_set_error(err, TC_ERR_NO_GPU, "%s", reason);
		return TC_ERR_NO_GPU;
	}
	if (join->params.metric != TC_METRIC_EUCLIDEAN)
	{
		TcGpuInfo	info;
		bool		stopped = false;

		if (!tc_gpu_info(0, &info))
			info.major = 0;
		if (dot_refusal(join, &info, reason, sizeof(reason)))
		{
			tc_set_error(err, TC_ERR_INVALID, "%s", reason);
			return TC_ERR_INVALID;
		}
		if (!dot_range_ok(join, &stopped))
		{
			if (stopped)
				return TC_STOPPED;
			tc_set_error(err, TC_ERR_INVALID, "%s", TC_DOT_RANGE_REFUSAL);
			return TC_ERR_INVALID;
		}
	}
	snprintf(s->device_choice, sizeof(s->device_choice), "tcjoin.device = gpu");
	*use_gpu = true;
	return TC_OK;
}
