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
} TcGridPlan;

/* Cell coordinate of value x along grid dimension j (see grid_plan.c). */
static inline int64_t
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

#endif							/* TCJOIN_GRID_PLAN_H */
