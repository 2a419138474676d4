/*
 * graphs.c
 *		The SQL entry points whose answers are not pair lists: tc_count,
 *		tc_degrees, tc_neighbors, tc_components and tc_dbscan; and the
 *		ranked rows of tc_join with k (tc_nearest_rows).
 *
 * Each takes tc_selfjoin's checks and arguments (id_column, exact, method,
 * metric), loads the column once, runs the self-join into a graph
 * (src/engine/graph.c: per point state, never per pair) and returns one
 * row a point, or one number.  tc_dbscan runs the join twice: degrees
 * first, which fix the core points, then the links (on the GPU, where the
 * pairs are folded on the device, a third settles a border point's ties);
 * on the CPU in two or three dimensions, a grid of cells finds the same
 * clusters without the joins.
 */
#include "postgres.h"

#include <stdio.h>
#include <unistd.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "engine.h"
#include "load.h"
#include "output.h"
#include "tcjoin.h"

static size_t lists_limit_bytes(void);

/*
 * The graph, for the memory context's reset callback: kept in that
 * context, as the call's own frame is gone when an error resets it.
 */
typedef struct GraphHolder
{
	TcGraph    *graph;
} GraphHolder;

/* One call: its arguments, points and graph. */
typedef struct GraphCall
{
	int			opt;			/* the argument number of id_column */
	TcJoinParams params;
	MemoryContext mcxt;
	TcLoaded	loaded;
	TcGraph    *graph;
	double		t0;
	double		t_load;
	TcRunStats	rs;
} GraphCall;

static void
release_graph(void *arg)
{
	GraphHolder *holder = arg;

	tc_graph_destroy(holder->graph);
	holder->graph = NULL;
}

/* The graph freed with mcxt, so that an error or a cancel leaks nothing. */
static void
guard_graph(MemoryContext mcxt, TcGraph *graph)
{
	GraphHolder *holder = MemoryContextAllocZero(mcxt, sizeof(GraphHolder));
	MemoryContextCallback *cb = MemoryContextAllocZero(mcxt, sizeof(MemoryContextCallback));

	holder->graph = graph;
	cb->func = release_graph;
	cb->arg = holder;
	MemoryContextRegisterResetCallback(mcxt, cb);
}

/*
 * The common part: the arguments checked, the column loaded, a graph of
 * the kind made (freed with the call's memory context, so an error or a
 * cancel leaks nothing).  False where relation, column or eps is NULL: no
 * rows (as a STRICT function would).
 */
static bool
graph_begin(FunctionCallInfo fcinfo, GraphCall *gc, int opt, TcGraphKind kind, int k)
{
	double		eps;
	TcMetric	metric;
	TcError		err;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		return false;
	tc_big_peak_reset();
	gc->opt = opt;
	eps = PG_GETARG_FLOAT8(2);
	metric = tc_metric_arg(fcinfo, opt + 3);
	tc_check_eps(eps, metric);
	tc_join_params(&gc->params, eps, metric, false,
				   PG_ARGISNULL(opt + 1) ? true : PG_GETARG_BOOL(opt + 1),
				   PG_ARGISNULL(opt + 2) ? TC_METHOD_AUTO :
				   tc_parse_method(text_to_cstring(PG_GETARG_TEXT_PP(opt + 2))));
	tc_check_method_metric(&gc->params);

	gc->mcxt = tc_join_context();
	gc->t0 = tc_now();
	tc_prewarm_for(PG_GETARG_OID(0), &gc->params);
	tc_load(PG_GETARG_OID(0), NameStr(*PG_GETARG_NAME(1)),
			PG_ARGISNULL(opt) ? NULL : NameStr(*PG_GETARG_NAME(opt)), gc->mcxt, &gc->loaded);
	gc->t_load = tc_now() - gc->t0;

	gc->graph = tc_graph_create(kind, gc->loaded.points.n, gc->loaded.ids, k, gc->params.threads,
								&err);
	if (gc->graph == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("tcjoin: %s", err.message)));
	guard_graph(gc->mcxt, gc->graph);
	tc_graph_limit_lists(gc->graph, lists_limit_bytes());
	return true;
}

/*
 * The machine's memory, or the control group's where it has less (cgroup
 * v2's memory.max): what tcjoin.lists_memory_limit 0 takes a quarter of.
 */
static size_t
machine_memory(void)
{
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		page = sysconf(_SC_PAGESIZE);
	size_t		bytes = pages > 0 && page > 0 ? (size_t) pages * (size_t) page : 0;
	FILE	   *f = fopen("/sys/fs/cgroup/memory.max", "r");

	if (f != NULL)
	{
		unsigned long long max;

		/* "max" (no limit) does not scan */
		if (fscanf(f, "%llu", &max) == 1 && max > 0 && (bytes == 0 || max < bytes))
			bytes = (size_t) max;
		fclose(f);
	}
	return bytes;
}

/* tcjoin.lists_memory_limit in bytes; 0: no limit. */
static size_t
lists_limit_bytes(void)
{
	static size_t quarter = 0;

	if (tc_lists_memory_limit_kb < 0)
		return 0;
	if (tc_lists_memory_limit_kb > 0)
		return (size_t) tc_lists_memory_limit_kb * 1024;
	if (quarter == 0)
		quarter = machine_memory() / 4;
	return quarter;
}

/*
 * The lists of every match reached tcjoin.lists_memory_limit (the join
 * stopped there): what, the lists as the message names them, and the hint.
 */
static void
lists_limit_check(const TcGraph *graph, const char *what, const char *hint)
{
	if (tc_graph_over_limit(graph))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("tcjoin: %s need more than %s of memory (tcjoin.lists_memory_limit)", what,
						text_to_cstring(DatumGetTextPP(DirectFunctionCall1(pg_size_pretty,
																		   Int64GetDatum((int64) lists_limit_bytes()))))),
				 errhint("%s", hint)));
}

/*
 * The join's poll for a graph: a cancel, or the graph failed (its lists at
 * their limit or out of memory), which stops a join whose workers keep the
 * pairs themselves (a reduce cannot stop it) within a poll.
 */
static int
graph_poll(void *graph)
{
	CHECK_FOR_INTERRUPTS();
	return tc_graph_failed(graph) ? 1 : 0;
}

/* The graph ran out of memory: what it was doing, and a hint where one helps. */
static void
graph_check(const GraphCall *gc, const char *what, const char *hint)
{
	lists_limit_check(gc->graph, "the neighbour lists",
					  "Pass k to keep each row's k nearest only, or a smaller eps; tc_selfjoin returns every pair without keeping them.");
	if (tc_graph_failed(gc->graph))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("tcjoin: out of memory %s", what),
				 hint ? errhint("%s", hint) : 0));
}

/* One self-join of the loaded points into the graph. */
static void
graph_join(GraphCall *gc)
{
	memset(&gc->rs, 0, sizeof(gc->rs));
	if (gc->loaded.points.n > 0)
	{
		/* the CPU's workers reduce pairs where the kind allows; the GPU's come in chunks */
		TcSink		to = {tc_graph_emit, graph_poll, gc->graph, TC_GRAPH_BATCH_HINT,
		tc_graph_reducer(gc->graph), tc_graph_fold(gc->graph), tc_graph_prefetcher(gc->graph)};

		graph_check(gc, "for DBSCAN's per-point state", NULL);
		tc_run_join_sink(&gc->loaded, NULL, &gc->params, &to, gc->mcxt, &gc->rs.join);
	}
	/* only the neighbour lists grow as pairs come */
	graph_check(gc, "for the neighbour lists", "Pass k to keep each row's k nearest neighbours only.");
}

/*
 * Before the first row: the call's tuplestore in memory up to the larger
 * of work_mem and the most bytes the engine's arrays held at once in this
 * call (the vectors read, the index, the per-row state).  A result of one
 * row a point fits in what the call took already, and spilling it to a
 * temporary file and reading it back cost about as much as the whole
 * DBSCAN; past that bound the rows spill as any tuplestore's.  Not where
 * graph's lists grow with the pairs: their bound is
 * tcjoin.lists_memory_limit's, which the rows must not double.
 */
static void
result_store(ReturnSetInfo *rsinfo, const TcGraph *graph)
{
	size_t		held_kb = tc_big_peak() / 1024;
	MemoryContext old;

	if (held_kb <= (size_t) work_mem || tc_graph_lists_grow(graph))
		return;
	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	tuplestore_end(rsinfo->setResult);
	rsinfo->setResult =
		tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0, false,
							  (int) Min(held_kb, (size_t) MAX_KILOBYTES));
	MemoryContextSwitchTo(old);
}

/* The last join's record (tc_last_stats), then everything the call took, freed. */
static void
graph_end(GraphCall *gc)
{
	tc_record_stats(gc->loaded.points.n, gc->loaded.points.d, gc->params.eps, &gc->rs,
					gc->t_load, tc_now() - gc->t0);
	MemoryContextDelete(gc->mcxt);
}

PG_FUNCTION_INFO_V1(tc_count);

/* The number of rows tc_selfjoin would return (include_self off). */
Datum
tc_count(PG_FUNCTION_ARGS)
{
	GraphCall	gc;
	uint64_t	pairs;

	if (!graph_begin(fcinfo, &gc, 3, TC_GRAPH_COUNT, 0))
		PG_RETURN_NULL();
	graph_join(&gc);
	pairs = gc.rs.join.pairs;
	graph_end(&gc);
	PG_RETURN_INT64((int64) pairs);
}

/*
 * Every row (id, value) of two int8 columns into the call's tuplestore,
 * through a template row (output.h): value(arg, i) is row i's.
 */
static void
put_pairs_of_int8(ReturnSetInfo *rsinfo, GraphCall *gc, int64 (*value) (void *arg, int64 i),
				  void *arg)
{
	TupleDesc	desc = rsinfo->setDesc;
	TupleTableSlot *slot;
	char	   *row;

	if (desc->natts != 2 || TupleDescAttr(desc, 0)->atttypid != INT8OID ||
		TupleDescAttr(desc, 1)->atttypid != INT8OID)
		elog(ERROR, "the function must return (bigint, bigint)");
	row = tc_row_template(desc, gc->mcxt, &slot);
	result_store(rsinfo, gc->graph);
	for (int64 i = 0; i < gc->loaded.points.n; i++)
	{
		int64		v = value(arg, i);

		memcpy(row, &gc->loaded.ids[i], sizeof(int64));
		memcpy(row + 8, &v, sizeof(int64));
		tuplestore_puttupleslot(rsinfo->setResult, slot);
		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(slot);
}

static int64
degree_of(void *arg, int64 i)
{
	return (int64) tc_graph_degree((TcGraph *) arg, i);
}

static int64
component_of(void *arg, int64 i)
{
	return ((int64 *) arg)[i];
}

PG_FUNCTION_INFO_V1(tc_degrees);

/* Every row with its number of neighbours within eps, 0 included. */
Datum
tc_degrees(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GraphCall	gc;

	InitMaterializedSRF(fcinfo, 0);
	if (!graph_begin(fcinfo, &gc, 3, TC_GRAPH_DEGREES, 0))
		PG_RETURN_NULL();
	graph_join(&gc);
	put_pairs_of_int8(rsinfo, &gc, degree_of, gc.graph);
	graph_end(&gc);
	PG_RETURN_NULL();
}

PG_FUNCTION_INFO_V1(tc_components);

/* Every row with its connected component of the eps-graph, named by its smallest id. */
Datum
tc_components(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GraphCall	gc;
	int64	   *comp;

	InitMaterializedSRF(fcinfo, 0);
	if (!graph_begin(fcinfo, &gc, 3, TC_GRAPH_COMPONENTS, 0))
		PG_RETURN_NULL();
	graph_join(&gc);
	comp = MemoryContextAllocExtended(gc.mcxt, sizeof(int64) * (gc.loaded.points.n + 1),
									  MCXT_ALLOC_HUGE);
	tc_graph_components(gc.graph, comp);
	graph_check(&gc, "naming the components", NULL);
	put_pairs_of_int8(rsinfo, &gc, component_of, comp);
	graph_end(&gc);
	PG_RETURN_NULL();
}

/* An array value built again in place for each row (the tuplestore copies it). */
typedef struct ArrayBuf
{
	ArrayType  *a;
	Size		cap;
} ArrayBuf;

/*
 * A one-dimensional array of len 8-byte elements (bigint or double
 * precision, by value, no NULLs) in b, copied from elems: the layout
 * construct_array makes, without a Datum a value or an allocation a row.
 */
static ArrayType *
array_in_place(ArrayBuf *b, Oid elemtype, const void *elems, int len, MemoryContext mcxt)
{
	Size		bytes = len > 0 ? ARR_OVERHEAD_NONULLS(1) + (Size) len * 8 : sizeof(ArrayType);

	if (bytes > b->cap)
	{
		b->cap = Max(bytes, 2 * b->cap);
		b->a = b->a ? repalloc(b->a, b->cap) : MemoryContextAlloc(mcxt, b->cap);
	}
	SET_VARSIZE(b->a, bytes);
	b->a->dataoffset = 0;
	b->a->elemtype = elemtype;
	/* no elements: no dimensions, as construct_empty_array makes it */
	b->a->ndim = len > 0 ? 1 : 0;
	if (len > 0)
	{
		ARR_DIMS(b->a)[0] = len;
		ARR_LBOUND(b->a)[0] = 1;
		memcpy(ARR_DATA_PTR(b->a), elems, (Size) len * 8);
	}
	return b->a;
}

PG_FUNCTION_INFO_V1(tc_neighbors);

/*
 * Every row with its neighbours within eps (the k nearest where k is
 * given), nearest first, ties by the smaller id; empty arrays for none.
 */
Datum
tc_neighbors(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GraphCall	gc;
	int			k = 0;
	ArrayBuf	id_buf = {NULL, 0},
				dist_buf = {NULL, 0};

	InitMaterializedSRF(fcinfo, 0);
	if (!PG_ARGISNULL(3))
	{
		k = PG_GETARG_INT32(3);
		if (k < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("k must be at least 1"),
					 errhint("Pass NULL (the default) for every neighbour within eps.")));
	}
	if (!graph_begin(fcinfo, &gc, 4, TC_GRAPH_NEIGHBORS, k))
		PG_RETURN_NULL();
	graph_join(&gc);
	/* the k nearest kept on the GPU, into the lists */
	tc_graph_after_join(gc.graph);
	graph_check(&gc, "for the neighbour lists", NULL);
	result_store(rsinfo, gc.graph);
	for (int64 i = 0; i < gc.loaded.points.n; i++)
	{
		const int64_t *ids;
		const double *dist;
		int			len;
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		tc_graph_neighbors(gc.graph, i, &ids, &dist, &len);
		graph_check(&gc, "for the neighbour lists", NULL);
		values[0] = Int64GetDatum(gc.loaded.ids[i]);
		values[1] = PointerGetDatum(array_in_place(&id_buf, INT8OID, ids, len, gc.mcxt));
		values[2] = PointerGetDatum(array_in_place(&dist_buf, FLOAT8OID, dist, len, gc.mcxt));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		if ((i & 0xfff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	graph_end(&gc);
	PG_RETURN_NULL();
}

/* Whether a cancel or a timeout waits: the grid stops, then is told why. */
static int
interrupt_pending(void *arg)
{
	return InterruptPending ? 1 : 0;
}

/*
 * DBSCAN by the CPU's grid, without the joins (src/engine/dbscan_grid.c):
 * two or three dimensions, Euclidean, the CPU by setting (or auto without
 * a GPU), method auto or grid.  False where it does not apply.
 */
static bool
dbscan_on_grid(GraphCall *gc, int32 min_points)
{
	TcError		err;
	TcStatus	st;
	bool		done;
	double		t0;

	if (gc->params.metric != TC_METRIC_EUCLIDEAN ||
		(gc->params.method != TC_METHOD_AUTO && gc->params.method != TC_METHOD_GRID) ||
		(gc->params.device != TC_DEVICE_CPU &&
		 !(gc->params.device == TC_DEVICE_AUTO && !tc_device_any())))
		return false;
	t0 = tc_now();
	for (;;)
	{
		st = tc_graph_dbscan_grid(gc->graph, &gc->loaded.points, gc->params.eps, min_points,
								  gc->params.threads, interrupt_pending, NULL, &done, &err);
		if (st != TC_STOPPED)
			break;
		/* an interrupt that is not an error (and returns here): start again */
		CHECK_FOR_INTERRUPTS();
	}
	if (st == TC_ERR_NOMEM)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("tcjoin: %s", err.message)));
	if (st != TC_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("tcjoin: %s", err.message)));
	if (!done)
		return false;
	memset(&gc->rs, 0, sizeof(gc->rs));
	gc->rs.join.device = "cpu";
	gc->rs.join.method = "grid";
	gc->rs.join.metric = "euclidean";
	gc->rs.join.threads = gc->params.threads;
	gc->rs.join.join_seconds = tc_now() - t0;
	snprintf(gc->rs.join.device_choice, sizeof(gc->rs.join.device_choice),
			 "DBSCAN on the CPU's grid of cells, without the joins");
	return true;
}

/*
 * DBSCAN's rows (id, cluster, is_core) through two template rows, one for
 * a clustered row (int8 at 0, int4 at 8, bool at 12) and one for noise
 * (cluster NULL: int8 at 0, bool at 8).
 */
static void
put_dbscan_rows(ReturnSetInfo *rsinfo, GraphCall *gc, const int32_t *cluster, const bool *is_core)
{
	TupleDesc	desc = rsinfo->setDesc;
	const bool	noise_nulls[3] = {false, true, false};
	TupleTableSlot *slot,
			   *noise_slot;
	char	   *row,
			   *noise_row;

	if (desc->natts != 3 || TupleDescAttr(desc, 0)->atttypid != INT8OID ||
		TupleDescAttr(desc, 1)->atttypid != INT4OID || TupleDescAttr(desc, 2)->atttypid != BOOLOID)
		elog(ERROR, "tc_dbscan must return (bigint, integer, boolean)");
	row = tc_row_template(desc, gc->mcxt, &slot);
	noise_row = tc_row_template_nulls(desc, noise_nulls, gc->mcxt, &noise_slot);
	result_store(rsinfo, gc->graph);
	for (int64 i = 0; i < gc->loaded.points.n; i++)
	{
		if (cluster[i] < 0)
		{
			memcpy(noise_row, &gc->loaded.ids[i], sizeof(int64));
			noise_row[8] = (char) is_core[i];
			tuplestore_puttupleslot(rsinfo->setResult, noise_slot);
		}
		else
		{
			memcpy(row, &gc->loaded.ids[i], sizeof(int64));
			memcpy(row + 8, &cluster[i], sizeof(int32));
			row[12] = (char) is_core[i];
			tuplestore_puttupleslot(rsinfo->setResult, slot);
		}
		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(slot);
	ExecDropSingleTupleTableSlot(noise_slot);
}

PG_FUNCTION_INFO_V1(tc_dbscan);

/*
 * DBSCAN on the exact eps-graph: each row's cluster (NULL: noise) and
 * whether it is a core point (min_points counts the row itself).
 */
Datum
tc_dbscan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GraphCall	gc;
	int32		min_points;
	int32_t    *cluster;
	bool	   *is_core;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(3))
		PG_RETURN_NULL();
	min_points = PG_GETARG_INT32(3);
	if (min_points < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_points must be at least 1"),
				 errdetail("min_points counts the row itself: 1 makes every row a core point.")));
	if (!graph_begin(fcinfo, &gc, 4, TC_GRAPH_DBSCAN, 0))
		PG_RETURN_NULL();
	if (gc.loaded.points.n == 0 || !dbscan_on_grid(&gc, min_points))
	{
		/* first the degrees, which fix the core points; then the links */
		graph_join(&gc);
		tc_graph_dbscan_cores(gc.graph, min_points);
		graph_check(&gc, "for DBSCAN's per-point state", NULL);
		graph_join(&gc);
		/* links folded on the GPU: one more join settles a border point's ties */
		if (tc_graph_after_join(gc.graph))
			graph_join(&gc);
	}
	cluster = MemoryContextAllocExtended(gc.mcxt, sizeof(int32_t) * (gc.loaded.points.n + 1),
										 MCXT_ALLOC_HUGE);
	is_core = MemoryContextAllocExtended(gc.mcxt, sizeof(bool) * (gc.loaded.points.n + 1),
										 MCXT_ALLOC_HUGE);
	tc_graph_dbscan(gc.graph, cluster, is_core);
	graph_check(&gc, "for DBSCAN's per-point state", NULL);
	put_dbscan_rows(rsinfo, &gc, cluster, is_core);
	graph_end(&gc);
	PG_RETURN_NULL();
}

/*
 * tc_join with k (functions.c checked the arguments and loaded both sides):
 * the two-set join into each row of a's nearest rows of b (k 0: all), then
 * the rows (id_a, id_b, dist, rank), a's rows in load order, each nearest
 * first, ties by the smaller id_b.
 */
void
tc_nearest_rows(const TcLoaded *a, const TcLoaded *b, const TcJoinParams *params, int k,
				ReturnSetInfo *rsinfo, MemoryContext mcxt, TcRunStats *rs)
{
	TupleDesc	desc = rsinfo->setDesc;
	TcError		err;
	TcGraph    *graph = tc_graph_create_nearest(a->points.n, b->ids, b->points.n, k,
												  params->threads, &err);
	double		t0;
	TupleTableSlot *slot;
	char	   *row;

	if (graph == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("tcjoin: %s", err.message)));
	guard_graph(mcxt, graph);
	tc_graph_limit_lists(graph, lists_limit_bytes());
	memset(rs, 0, sizeof(*rs));
	{
		/*
		 * With k the CPU's workers keep each row's k nearest themselves, and
		 * a GPU on the device (the fold); the other pairs come in chunks.
		 */
		TcSink		to = {tc_graph_emit, graph_poll, graph, TC_GRAPH_BATCH_HINT, tc_graph_reducer(graph),
		tc_graph_fold(graph), tc_graph_prefetcher(graph)};

		tc_run_join_sink(a, b, params, &to, mcxt, &rs->join);
		tc_graph_after_join(graph);
	}
	lists_limit_check(graph, "the matches' lists",
					  "Pass k to keep each row's k nearest matches only, or a smaller eps; tc_join without k returns every match without keeping them.");
	if (tc_graph_failed(graph))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("tcjoin: out of memory for the matches"),
				 errhint("Pass k to keep each row's k nearest matches only.")));
	t0 = tc_now();
	/* int8, int8, float8, int4 at offsets 0, 8, 16, 24, all by value: one template row */
	if (desc->natts != 4 || TupleDescAttr(desc, 0)->atttypid != INT8OID ||
		TupleDescAttr(desc, 1)->atttypid != INT8OID || TupleDescAttr(desc, 2)->atttypid != FLOAT8OID ||
		TupleDescAttr(desc, 3)->atttypid != INT4OID)
		elog(ERROR, "tc_join with k must return (bigint, bigint, double precision, integer)");
	row = tc_row_template(desc, mcxt, &slot);
	result_store(rsinfo, graph);
	for (int64 i = 0; i < a->points.n; i++)
	{
		const int64_t *ids;
		const double *dist;
		int			len;

		tc_graph_neighbors(graph, i, &ids, &dist, &len);
		if (tc_graph_failed(graph))
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("tcjoin: out of memory for the matches")));
		for (int t = 0; t < len; t++)
		{
			int32		rank = t + 1;

			memcpy(row, &a->ids[i], sizeof(int64));
			memcpy(row + 8, &ids[t], sizeof(int64));
			memcpy(row + 16, &dist[t], sizeof(double));
			memcpy(row + 24, &rank, sizeof(int32));
			tuplestore_puttupleslot(rsinfo->setResult, slot);
		}
		if ((i & 0xfff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(slot);
	rs->output_seconds = tc_now() - t0;
}
