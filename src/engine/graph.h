/*
 * graph.h
 *		Answers that are not pair lists, from a self-join's pairs: the pair
 *		count, each point's degree, its neighbours (all, or the k nearest),
 *		the connected components of the eps-graph and DBSCAN's clusters.
 *
 * A TcGraph is fed a join's pairs through tc_graph_emit (a TcSink's emit:
 * it runs on the caller's thread, as every sink does) and keeps per point
 * state only: memory grows with n (and with k, or with the neighbours
 * themselves where k is not given), never with the pair count.  DBSCAN
 * takes two joins of the same points: the first counts degrees, which fix
 * the core points (tc_graph_dbscan_cores); the second links them.
 */
#ifndef TCJOIN_GRAPH_H
#define TCJOIN_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

typedef enum TcGraphKind
{
	TC_GRAPH_COUNT = 0,			/* the pairs */
	TC_GRAPH_DEGREES,			/* each point's neighbours, counted */
	TC_GRAPH_NEIGHBORS,			/* each point's neighbours (the k nearest, k > 0) */
	TC_GRAPH_COMPONENTS,		/* union-find over the pairs */
	TC_GRAPH_DBSCAN				/* degrees, then (after tc_graph_dbscan_cores) links */
} TcGraphKind;

typedef struct TcGraph TcGraph;

/*
 * A graph of n points with ids (the caller's, kept: ties and names are by
 * id); k for TC_GRAPH_NEIGHBORS (0: every neighbour); threads for large
 * batches of degrees, components and DBSCAN (1: the caller's alone).  NULL
 * with err set where memory runs out.
 */
extern TcGraph *tc_graph_create(TcGraphKind kind, int64_t n, const int64_t *ids, int k, int threads,
								TcError *err);
/* Stops and joins the threads, frees everything; NULL is a no-op. */
extern void tc_graph_destroy(TcGraph *g);
/* Batches from this many pairs go to the threads (tests: a small one splits every batch). */
extern void tc_graph_set_split(TcGraph *g, size_t pairs);

/* The batch a graph's sink takes at once (TcSink.batch_hint): its threads share each. */
#define TC_GRAPH_BATCH_HINT ((size_t) 1 << 19)

/* A TcSink's emit: the pairs of a self-join (each unordered pair once, no self pairs). */
extern int	tc_graph_emit(void *graph, const TcPair *pairs, size_t count);

/* Nonzero where memory ran out while pairs came (neighbour lists without k). */
extern bool tc_graph_failed(const TcGraph *g);

extern uint64_t tc_graph_pairs(const TcGraph *g);
/* Point i's degree (TC_GRAPH_DEGREES, TC_GRAPH_DBSCAN). */
extern int64_t tc_graph_degree(const TcGraph *g, int64_t i);

/*
 * Point i's neighbours, nearest first, ties by smaller id (the k nearest
 * where k was given): *len indices into *idx and dists into *dist, valid
 * until the next call.  Sorts i's list on its first call.
 */
extern void tc_graph_neighbors(TcGraph *g, int64_t i, const int64_t **idx, const double **dist,
							   int *len);

/* Each point's component, named by its smallest id, into out[n]. */
extern void tc_graph_components(TcGraph *g, int64_t *out);

/*
 * DBSCAN: after the first join, the core points (degree + 1 >= min_points:
 * min_points counts the point itself); the graph then takes the second
 * join's pairs as links.
 */
extern void tc_graph_dbscan_cores(TcGraph *g, int64_t min_points);

/*
 * After the second join: each point's cluster (-1: noise) and core flag.
 * Core points linked by pairs share a cluster; a border point (not core,
 * within eps of a core point) joins the cluster of its nearest core
 * neighbour, ties by the smaller id; clusters are numbered 0, 1, ... in
 * the order of their smallest member id.
 */
extern void tc_graph_dbscan(TcGraph *g, int32_t *cluster, bool *is_core);

#endif							/* TCJOIN_GRAPH_H */
