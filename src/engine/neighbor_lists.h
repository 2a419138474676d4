/*
 * neighbor_lists.h
 *		Each point's neighbours by (dist, id), all of them or the k nearest:
 *		the lists behind tc_neighbors and a cross-match's k nearest
 *		(graph.c).  Engine-internal.
 */
#ifndef TCJOIN_NEIGHBOR_LISTS_H
#define TCJOIN_NEIGHBOR_LISTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct NbList NbList;

/*
 * n points' lists.  With k up to NB_BLOCK_K they are rows of one block
 * (rows, row_bytes a point), else lists that grow (lists).  All zero: no
 * lists, which nb_lists_free takes.
 */
typedef struct NbLists
{
	int64_t		n;
	const int64_t *ids;			/* the neighbours' ids: ties, and what nb_read gives */
	int			k;				/* neighbours kept a point; 0: all */
	atomic_bool *failed;		/* set where memory runs out, or the limit */
	atomic_bool made;			/* rows or lists made (at the first pair) */
	/*
	 * Bytes the entries of lists that grow may take (0: no limit), what
	 * they take, and whether the limit stopped them (nb_lists_limit).
	 */
	size_t		limit;
	_Atomic int64_t held;
	atomic_bool over;
	pthread_mutex_t mu;			/* over making them */
	/* lists a device kept, sorted, read in place where no pair came (nb_adopt) */
	const int32_t *a_len;
	const int64_t *a_who;
	const double *a_dist;
	NbList	   *lists;
	char	   *rows;
	void	   *rows_alloc;		/* the block as allocated (rows is 64-byte aligned) */
	size_t		row_bytes;
	int64_t    *out_ids;		/* nb_read's answer */
	double	   *out_dist;
	int			out_cap;
} NbLists;

/*
 * False where the lists cannot be set up; failed is the owner's flag.
 * Their memory comes with the first pair (failed set where there is none).
 */
extern bool nb_lists_init(NbLists *nl, int64_t n, const int64_t *ids, int k, atomic_bool *failed);
extern void nb_lists_free(NbLists *nl);

/*
 * At most bytes for the entries of the lists that grow (k 0, or past
 * NB_BLOCK_K; a block of small k is n rows, made whole): past it, failed
 * and over are set and no list grows.  0: no limit.
 */
extern void nb_lists_limit(NbLists *nl, size_t bytes);
extern bool nb_lists_over(const NbLists *nl);
/* Whether they are lists that grow (k 0, or past NB_BLOCK_K). */
extern bool nb_lists_grow(const NbLists *nl);

/*
 * Point i's neighbour other (an index into ids) at dist.  nb_add where one
 * thread feeds point i; nb_add_locked where several may (a one-byte lock a
 * list).
 */
extern void nb_add(NbLists *nl, int64_t i, int64_t other, double dist);
extern void nb_add_locked(NbLists *nl, int64_t i, int64_t other, double dist);
/*
 * Point i's len nearest (with k), nearest first: what a device kept for
 * it (TC_FOLD_NEAREST), after any pairs nb_add gave it.
 */
extern void nb_add_sorted(NbLists *nl, int64_t i, const int64_t *other, const double *dist,
						  int len);

/* A hint: point i's list toward the cache (nothing before the lists are made). */
extern void nb_prefetch(NbLists *nl, int64_t i);

/* Whether any pair came (the lists' memory made). */
extern bool nb_lists_made(const NbLists *nl);
/*
 * Where no pair came: each point's k nearest as a device kept them, sorted
 * (len n, who and dist n k), read in place by nb_read; the caller keeps
 * them until the lists are freed.
 */
extern void nb_adopt(NbLists *nl, const int32_t *len, const int64_t *who, const double *dist);

/*
 * Point i's neighbours, nearest first, ties by the smaller id: *len ids
 * and dists, valid until the next call.  The first read of a list turns
 * its indices into ids and sorts it; no pair may come after.
 */
extern void nb_read(NbLists *nl, int64_t i, const int64_t **ids, const double **dist, int *len);

#endif							/* TCJOIN_NEIGHBOR_LISTS_H */
