/*
 * choose.h
 *		The engine's cost models and the choices made from them: the device,
 *		the GPU's method, the grid's dimensions against brute force.
 *
 * Every estimate the engine plans with lives in choose.c, so that the
 * models can be read, fitted and changed in one place.
 */
#ifndef TCJOIN_CHOOSE_H
#define TCJOIN_CHOOSE_H

#include "engine_int.h"
#include "gpu.h"

/*
 * Where the join runs: *use_gpu is set when it goes to the GPU.  Fails
 * (with err filled) when tcjoin.device = gpu and the GPU cannot take it.
 */
extern TcStatus tc_choose_device(TcJoin *join, bool *use_gpu, TcError *err);

/*
 * Which GPU path a self-join takes: *fp16_brute for FP16 tensor-core brute
 * force, else the grid kernel (over one cell for method 'brute').  Where
 * the choice needed the grid's plan, it is left in *plan and *planned set,
 * so that the grid path need not plan again.  May return TC_STOPPED.
 */
extern TcStatus tc_choose_gpu_method(TcJoin *join, bool *fp16_brute,
									 TcGridPlan *plan, bool *planned,
									 TcError *err);

/*
 * params' list (resolved: tc_devices_resolve) cut to the GPUs the join
 * takes, from the first: those of the first one's model, each once, as
 * many as the estimates say pay for the path (fp16_brute, else the grid
 * with plan); with the override split=all, every listed GPU of that model.
 */
extern void tc_choose_gpus(const TcJoin *join, TcJoinParams *params, bool fp16_brute,
						   const TcGridPlan *plan);

/* What tc_choose_gpus decides from (apart, so that tests can give it any GPUs). */
typedef struct TcGpuSplit
{
	int			ndevices;		/* the list, as resolved */
	int			devices[TC_MAX_DEVICES];
	TcGpuInfo	info[TC_MAX_DEVICES];	/* each entry's GPU, where valid */
	bool		valid[TC_MAX_DEVICES];
	bool		ready[TC_MAX_DEVICES];	/* whether this process has the entry's context */
	bool		all;			/* the override split=all */
	double		fixed;			/* seconds each GPU pays alike */
	double		shared;			/* seconds the GPUs share */
} TcGpuSplit;

/*
 * The GPUs a join takes into out (room for s->ndevices), from the first;
 * their count, and (cost_out not NULL) the estimate of the kernels on them.
 */
extern int	tc_split_gpus(const TcGpuSplit *s, int *out, double *cost_out);

/*
 * The CPU's cost of every grid plan from the planner's sample: hits[k]
 * sample pairs are neighbours on exactly the first k of plan's kmax
 * candidate dimensions, out of sample_pairs.  Fills plan->kmax, cost_k and
 * cand_k (k = 0: brute force).
 */
extern void tc_grid_costs(const TcJoin *join, TcGridPlan *plan, int kmax,
						  const double *hits, double sample_pairs);

/*
 * The number of grid dimensions to index, from plan's costs (0: brute
 * force, or one cell).  With allow_brute, brute force competes (k = 0).
 * Sets plan->est_candidates and est_cost for the choice.
 */
extern int	tc_grid_pick(TcGridPlan *plan, bool allow_brute);

#endif							/* TCJOIN_CHOOSE_H */
