/*
 * dbscan_grid.h
 *		What the grid's DBSCAN files share: the grid of cells, its polling
 *		and its helper threads.  dbscan_cells.c bins and sorts the points
 *		into cells; dbscan_grid.c finds the neighbours, the cores, the links
 *		and the border points.
 */
#ifndef TCJOIN_DBSCAN_GRID_H
#define TCJOIN_DBSCAN_GRID_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

/*
 * Cells either way along an axis that may hold a neighbour: points within
 * eps differ by at most eps (1 + 4u) along any axis, sqrt(d) (1 + 4u) < 2
 * cells of eps / sqrt(d), and the cells' coordinates (below 2^40) are off
 * by far less than the rest of a cell: their floors differ by 2 at most.
 */
#define DG_REACH 2
#define DG_POLL_WORK 65536		/* distances (or cells) between polls: about a millisecond */
#define DG_CHUNK 256			/* cells a thread takes at a time */
#define DG_MAX_THREADS 64

typedef struct DbGrid
{
	int			d;
	int64_t		n;
	double		thr;			/* tc_sq_threshold(eps) */
	double	   *x;				/* n x d, float8, in cell order */
	int64_t    *idx;			/* the original index of each sorted point */
	uint64_t   *key;			/* each sorted point's cell key */
	int64_t		ncells;
	int64_t    *cstart;			/* ncells + 1: a cell's points */
	uint64_t   *ckey;
	double	   *lo;				/* ncells x d: the cells' boxes */
	double	   *hi;
	bool	   *tight;
	int64_t    *astart;			/* ncells + 1: a cell's neighbour cells */
	int64_t    *adj;
	bool	   *core;			/* per sorted point */
	int64_t    *ncore;			/* per cell */
	uint64_t	span[3];		/* cells along each axis, the margins included */
	int			threads;		/* the join's threads, the caller's among them */
	/* the caller's poll (its thread alone calls it), and whether it said stop */
	int			(*poll) (void *arg);
	void	   *poll_arg;
	atomic_bool stop;
} DbGrid;

/*
 * The caller's poll, now (every 65536 steps of the O(n) passes, and while
 * waiting for threads); true: stop.  The caller's thread alone calls it.
 */
extern bool dg_poll_now(DbGrid *gr);

/*
 * Helpers 1 .. n - 1 running fn, helper t on args + t * stride, started
 * with every signal blocked (the caller's handlers must never run on
 * them): returns the last that started, in order (0: none).
 */
extern int	dg_start_helpers(pthread_t *th, int n, void *(*fn) (void *), char *args, size_t stride);

/*
 * Bin and sort the points, then the cells and their boxes (dbscan_cells.c).
 * False where the grid does not apply (*fit false) or memory ran out, or
 * the caller's poll said stop (gr->stop).
 */
extern bool dg_build_cells(DbGrid *gr, const TcPoints *p, double eps, bool *fit);

/* The contract's squared sum over the d terms t_k, in index order. */
static inline double
dg_sq_sum(const double *t, int d)
{
	double		s = 0.0;

	for (int k = 0; k < d; k++)
		s += t[k] * t[k];
	return s;
}

#endif							/* TCJOIN_DBSCAN_GRID_H */
