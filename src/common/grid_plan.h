/*
 * grid_plan.h
 *		The epsilon grid's plan: which dimensions to bin, and how finely.
 *
 * Shared by every grid back end (CPU and GPU), so that all of them bin the
 * same way and the proof in grid_plan.c covers them all.  Plain C types
 * only: the CUDA host code includes it too.
 */
#ifndef TCJOIN_GRID_PLAN_H
#define TCJOIN_GRID_PLAN_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define TC_GRID_MAX_DIMS 6
/* Neighbour rows of a cell: offsets in {-1,0,1} on the first k-1 dims. */
#define TC_GRID_MAX_ROWS 243	/* 3^(TC_GRID_MAX_DIMS - 1) */

/* The GPU evaluates the very same cell coordinate as the CPU. */
#ifdef __CUDACC__
#define TC_HOSTDEV __host__ __device__
#else
#define TC_HOSTDEV
#endif

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct TcGridPlan
{
	int			k;				/* grid dimensions; 0: one cell */
	int			dims[TC_GRID_MAX_DIMS]; /* which coordinates, 0-based */
	double		lo[TC_GRID_MAX_DIMS];	/* lowest value of each */
	double		w[TC_GRID_MAX_DIMS];	/* cell width of each, >= eps */
	int64_t		ncell[TC_GRID_MAX_DIMS];	/* cells along each, >= 3 */
	uint64_t	stride[TC_GRID_MAX_DIMS];	/* linear key = sum coord * stride */
	bool		brute;			/* the cost model prefers brute force */
	double		est_candidates; /* for the chosen plan */
	double		est_cost;		/* the CPU model's cost of it (choose.c's units) */
	/* The sample's verdict on every choice, so that a plan is made once. */
	int			kmax;			/* usable grid dimensions */
	double		cost_k[TC_GRID_MAX_DIMS + 1];	/* cost of the first k (0: brute force) */
	double		cand_k[TC_GRID_MAX_DIMS + 1];	/* estimated candidates of each */
} TcGridPlan;

/*
 * Cell coordinate of value x along grid dimension j (see grid_plan.c).
 * Plain IEEE subtract and divide (nothing to contract), then floor, on the
 * host and on the GPU alike.
 */
static inline TC_HOSTDEV int64_t
tc_cell_coord(const TcGridPlan *p, int j, double x)
{
	int64_t		c = (int64_t) floor((x - p->lo[j]) / p->w[j]);

	/* Rounding may put the largest value one past the end. */
	if (c >= p->ncell[j])
		c = p->ncell[j] - 1;
	if (c < 0)
		c = 0;
	return c;
}

/*
 * The neighbour rows a cell's join visits: offsets v in {-1,0,1} on the
 * first k-1 grid dimensions (the last dimension is a key range), with the
 * key difference of each.  positive_only keeps the lexicographically
 * positive rows, so that a self-join meets each pair of cells once (the
 * zero row is the cell's own row).  Returns how many; the arrays need
 * TC_GRID_MAX_ROWS entries.
 */
extern int	tc_grid_rows(const TcGridPlan *p, bool positive_only,
						 int8_t (*offs)[TC_GRID_MAX_DIMS], int64_t *delta);

#ifdef __cplusplus
}
#endif

#endif							/* TCJOIN_GRID_PLAN_H */
