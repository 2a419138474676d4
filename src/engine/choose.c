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

#include "choose.h"
#include "cpu_filter.h"
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
#define TC_GPU_BRUTE_PAIR 4.5e-13

/*
 * Where the join runs: tcjoin.device = gpu needs a usable GPU; auto takes
 * one when there is one.  The GPU back ends take self-joins only so far.
 */
TcStatus
tc_choose_device(TcJoin *join, bool *use_gpu, TcError *err)
{
	char		reason[200];

	*use_gpu = false;
	if (join->params.device == TC_DEVICE_CPU)
		return TC_OK;
	if (!join->self)
	{
		if (join->params.device == TC_DEVICE_GPU)
		{
			tc_set_error(err, TC_ERR_NO_GPU, "joins of two point sets run on the CPU only");
			return TC_ERR_NO_GPU;
		}
		return TC_OK;
	}
	if (tc_gpu_count(reason, sizeof(reason)) > 0)
		*use_gpu = true;
	else if (join->params.device == TC_DEVICE_GPU)
	{
		tc_set_error(err, TC_ERR_NO_GPU, "%s", reason);
		return TC_ERR_NO_GPU;
	}
	return TC_OK;
}

static double
gpu_grid_cost(const TcJoin *join, const TcGridPlan *plan)
{
	double		r = (double) join->a.d / 8.0;

	return TC_GPU_GRID_START + TC_GPU_GRID_POINT * (double) join->a.n +
		TC_GPU_GRID_CAND_D8 * fmax(r * r, 1.0) * plan->est_candidates;
}

static double
gpu_brute_cost(const TcJoin *join)
{
	double		n = (double) join->a.n;

	return TC_GPU_BRUTE_START + TC_GPU_BRUTE_PAIR * n * (n - 1) / 2;
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
	bool		fp16_ok = tc_gpu_list(&info, 1, NULL, 0) > 0 && info.major >= 8;
	TcStatus	st;

	*planned = false;
	*fp16_brute = join->params.method == TC_METHOD_BRUTE;
	if (*fp16_brute && join->params.tensor_cores == TC_TENSOR_AUTO && !fp16_ok)
		*fp16_brute = false;
	if (join->params.method == TC_METHOD_AUTO && join->params.tensor_cores != TC_TENSOR_OFF &&
		fp16_ok && join->a.n <= TC_GPU_BRUTE_MAX_N)
	{
		if (join->a.d >= TC_GPU_BRUTE_DIMS)
			*fp16_brute = true;
		else
		{
			if ((st = tc_grid_plan(join, false, plan, err)) != TC_OK)
				return st;
			*planned = true;
			join->stats.auto_grid_seconds = gpu_grid_cost(join, plan);
			join->stats.auto_brute_seconds = gpu_brute_cost(join);
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
int
tc_choose_grid_dims(const TcJoin *join, TcGridPlan *plan, int kmax,
					const double *hits, double sample_pairs, bool allow_brute)
{
	const int	d = join->a.d;
	double		na = (double) join->a.n;
	double		nb = (double) join->b.n;
	double		all_pairs = join->self ? na * (na - 1) / 2 : na * nb;
	double		best_cost = allow_brute ? brute_cost(join) : INFINITY;
	int			best_k = 0;
	double		within = sample_pairs;	/* sample pairs neighbouring on k dims */
	double		cells = 1.0;
	double		probes = 1.0;

	plan->est_candidates = all_pairs;
	for (int k = 1; k <= kmax; k++)
	{
		double		frac,
					cost;

		within -= hits[k - 1];
		cells *= (double) plan->ncell[k - 1];
		if (k > 1)
			probes *= 3.0;
		frac = sample_pairs > 0 ? fmax(within, 0.5) / sample_pairs : 1.0;
		cost = frac * all_pairs * (TC_COST_PAIR + TC_COST_DIM * d) +
			fmin(na, cells) * (join->self ? probes / 2 + 1 : probes) * TC_COST_LOOKUP +
			(na + nb) * (TC_COST_POINT + d);
		if (cost < best_cost)
		{
			best_cost = cost;
			best_k = k;
			plan->est_candidates = frac * all_pairs;
		}
	}
	return best_k;
}
