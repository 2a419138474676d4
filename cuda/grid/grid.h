/*
 * grid.h
 *		What the grid join's files share: the index and a batch as the
 *		kernels see them, and the host wrappers of the device code.
 *
 * index.cu builds the grid index and the work items on the device;
 * kernels.cu holds the neighbour walk and every kernel that takes it (the
 * cells' candidate counts and the join kernels); grid_join.cu is the host
 * side.  Each file compiles on its own, without relocatable device code:
 * the neighbour rows live in kernels.cu's constant memory, so no kernel
 * elsewhere may walk them.
 *
 * A join of two sets indexes the larger one (the index fields) and takes
 * its work items from the other (the query fields), indexed the same way;
 * in a self-join the query fields repeat the index.
 */
#ifndef TCJOIN_GRID_H
#define TCJOIN_GRID_H

#include "join_state.h"

#define BLOCK_THREADS 256
#define WARPS_PER_BLOCK (BLOCK_THREADS / WARP)
#define MAX_OFFS TC_GRID_MAX_ROWS	/* every row, k = 6: a two-set join walks them all */

struct GridDev
{
	TcGridPlan	p;				/* the engine's plan, as the CPU bins */
	const double *pts;			/* n x d, cell order */
	const unsigned int *perm;	/* cell order -> caller's index */
	int			d;
	int			noffs;
	const unsigned long long *cell_key;
	const unsigned int *cell_start; /* ncells + 1 */
	unsigned int ncells;
	double		thr;
	/* Tensor-core filter: margin factor and absolute term (kernels.cu). */
	double		tc_rel;
	double		tc_abs;

	/*
	 * The queries: the points of the work items, in cell order, and their
	 * cells.  two: they are the other set, which meets every neighbour row
	 * of the index; a_indexed: the index is a, so a pair is written as
	 * (index point, query).
	 */
	bool		two;
	bool		a_indexed;
	const double *qpts;
	const unsigned int *qperm;
	const unsigned long long *qcell_key;
	const unsigned int *qcell_start;
	unsigned int qncells;
};

struct BatchDev
{
	const unsigned long long *items;	/* (cell << 32) | (first query) */
	const unsigned char *item_nq;		/* queries per item */
	unsigned int lo;
	unsigned int hi;
	unsigned int *queue;
	PairDev    *pairs;
	unsigned int capacity;
	unsigned int *count;
	unsigned int *overflow;
	unsigned long long *candidates;
	unsigned long long *rechecked;	/* pairs the tensor-core filter passed */
	const volatile int *abort;
};

/* ---------- index.cu ---------- */

/*
 * The index of a->n points at d_raw (the caller's rows, as uploaded): the
 * points in cell order into gd->pts, the non-empty cells' keys and starts
 * into gd->cell_key, gd->cell_start and gd->ncells, and the permutation
 * from cell order to the caller's indices into *d_perm.  On g->stream[0].
 */
extern TcStatus grid_build_index(TcGpuJoin *g, const TcPoints *a, GridDev *gd,
								 const void *d_raw, unsigned int **d_perm, TcError *err);

/*
 * The most candidates of one query (the maximum of per_query) and the
 * bound on all pairs (the sum of cell_bound), over ncells cells; both
 * arrays have room for one more entry, where the result lands.  Waits.
 */
extern TcStatus grid_bound_totals(TcGpuJoin *g, unsigned long long *per_query,
								  unsigned long long *cell_bound, unsigned int ncells,
								  cudaStream_t s, unsigned long long *max_pq,
								  unsigned long long *total_bound, TcError *err);

/*
 * Queries per item in each query cell (nq), so that no item's bound
 * exceeds max_bound, and each cell's first item (item_off); *nitems: how
 * many items in all (a two-set join gives none to a cell with no
 * candidates).  Waits.
 */
extern TcStatus grid_count_items(TcGpuJoin *g, const GridDev &gd, unsigned long long max_bound,
								 const unsigned long long *per_query, unsigned int *nq,
								 unsigned int *item_off, cudaStream_t s, unsigned int *nitems,
								 TcError *err);

/*
 * The nitems work items, sorted by bound, largest first: each item (cell
 * and first query), its number of queries, and its bound, into device
 * memory of the join.  Waits.
 */
extern TcStatus grid_sort_items(TcGpuJoin *g, const GridDev &gd, const unsigned long long *nbr,
								const unsigned int *nq, const unsigned int *item_off,
								unsigned int nitems, cudaStream_t s,
								unsigned long long **d_items, unsigned char **d_item_nq,
								unsigned long long **d_bounds, TcError *err);

/* ---------- kernels.cu ---------- */

/*
 * The plan's neighbour rows into constant memory: the positive ones for a
 * self-join (positive_only), all of them for two sets; *noffs: how many.
 */
extern TcStatus grid_set_rows(const TcGridPlan *plan, bool positive_only, int *noffs,
							  TcError *err);

/*
 * For each query cell: the candidates of the neighbour cells it walks
 * (nbr: a self-join's later ones, every one for two sets), the most
 * candidates of one of its queries (per_query), and the bound on its pairs
 * (cell_bound).
 */
extern TcStatus grid_cell_bounds(const GridDev &gd, unsigned long long *nbr,
								 unsigned long long *per_query,
								 unsigned long long *cell_bound, cudaStream_t s,
								 TcError *err);

/* The join kernel of a batch: FP64 tensor cores (tc) or CUDA cores. */
extern TcStatus grid_launch_join(const GridDev &gd, const BatchDev &bd, bool tc,
								 unsigned int blocks, cudaStream_t s, TcError *err);

#endif							/* TCJOIN_GRID_H */
