/*
 * output.c
 *		Run an engine join and stream its pair batches into the tuplestore.
 *
 * The engine's workers only compute; the batches they fill reach this
 * file's callbacks on the backend's own thread, which writes rows and
 * checks for interrupts.  A cancel or an error leaves by longjmp; the
 * engine is then stopped by the reset callback of the join's memory
 * context, which PostgreSQL runs when it cleans up after the error.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "output.h"

typedef struct OutputState
{
	Tuplestorestate *store;
	const int64 *ids_a;
	const int64 *ids_b;
	int64		seq_a;			/* ids_a[i] == seq_a + i for every i, where seq_ids */
	int64		seq_b;
	bool		seq_ids;		/* both id lists consecutive: no look-up a row */
	bool		self;			/* a self-join: each row as id_a < id_b */
	double		seconds;

	/*
	 * Rows are three fixed-width, never-null columns, so one minimal tuple
	 * serves as a template: each row overwrites its 24 data bytes and the
	 * tuplestore copies it, which is cheaper than forming every tuple.
	 */
	TupleTableSlot *slot;
	char	   *row_data;
} OutputState;

typedef struct JoinGuard
{
	TcJoin	   *join;
} JoinGuard;

static void
release_join(void *arg)
{
	JoinGuard  *guard = arg;

	tc_join_destroy(guard->join);
	guard->join = NULL;
}

/* One row into the tuplestore, through the template's data bytes. */
static inline void
put_row(OutputState *st, int64 a, int64 b, double dist)
{
	int64		lo = st->self && b < a ? b : a;
	int64		hi = st->self && b < a ? a : b;

	memcpy(st->row_data, &lo, sizeof(int64));
	memcpy(st->row_data + sizeof(int64), &hi, sizeof(int64));
	memcpy(st->row_data + 2 * sizeof(int64), &dist, sizeof(double));
	tuplestore_puttupleslot(st->store, st->slot);
}

static int
emit_pairs(void *arg, const TcPair *pairs, size_t count)
{
	OutputState *st = arg;
	double		t0 = tc_now();

	/* consecutive ids (a serial key, say) are computed, not looked up at random */
	if (st->seq_ids)
		for (size_t i = 0; i < count; i++)
			put_row(st, st->seq_a + pairs[i].a, st->seq_b + pairs[i].b, pairs[i].dist);
	else
		for (size_t i = 0; i < count; i++)
			put_row(st, st->ids_a[pairs[i].a], st->ids_b[pairs[i].b], pairs[i].dist);
	st->seconds += tc_now() - t0;
	CHECK_FOR_INTERRUPTS();
	return 0;
}

/* Whether ids are first, first + 1, ... (in load order), polling for a cancel. */
static bool
consecutive(const int64 *ids, int64 n)
{
	for (int64 i = 1; i < n; i++)
	{
		if (ids[i] != ids[0] + i)
			return false;
		if ((i & 0xfffff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return true;
}

static void
report_error(const TcError *err)
{
	switch (err->status)
	{
		case TC_ERR_NO_GPU:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("tcjoin.device is \"gpu\" but no GPU is usable"),
					 errdetail("%s.", err->message),
					 errhint("Set tcjoin.device to \"auto\" to fall back to the CPU.")));
			break;
		case TC_ERR_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("tcjoin: %s", err->message)));
			break;
		case TC_ERR_GPU_FULL:
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("tcjoin: the GPU is out of memory: %s", err->message),
					 errhint("Set tcjoin.gpu_full to 'wait' to wait for GPU memory, or "
							 "to 'cpu' with tcjoin.device = auto to run such joins on the CPU.")));
			break;
		case TC_ERR_GPU:
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("tcjoin: GPU error: %s", err->message)));
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("tcjoin: %s", err->message)));
	}
}

static int
poll_interrupts(void *arg)
{
	CHECK_FOR_INTERRUPTS();
	return 0;
}

char *
tc_row_template(TupleDesc desc, MemoryContext mcxt, TupleTableSlot **slot)
{
	return tc_row_template_nulls(desc, NULL, mcxt, slot);
}

char *
tc_row_template_nulls(TupleDesc desc, const bool *null_cols, MemoryContext mcxt,
					  TupleTableSlot **slot)
{
	Datum		values[8] = {0};
	bool		nulls[8] = {false};
	MemoryContext old;
	MinimalTuple tmpl;

	if (desc->natts > 8)
		elog(ERROR, "a template row takes at most 8 columns, not %d", desc->natts);
	for (int i = 0; null_cols != NULL && i < desc->natts; i++)
		nulls[i] = null_cols[i];
	old = MemoryContextSwitchTo(mcxt);
	tmpl = heap_form_minimal_tuple(desc, values, nulls);
	*slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	ExecStoreMinimalTuple(tmpl, *slot, false);
	MemoryContextSwitchTo(old);
	return (char *) tmpl + tmpl->t_hoff - MINIMAL_TUPLE_OFFSET;
}

void
tc_run_join_sink(const TcLoaded *a, const TcLoaded *b, const TcJoinParams *params,
				 const TcSink *to, MemoryContext mcxt, TcJoinStats *stats)
{
	JoinGuard  *guard = MemoryContextAllocZero(mcxt, sizeof(JoinGuard));
	MemoryContextCallback *cb = MemoryContextAllocZero(mcxt, sizeof(MemoryContextCallback));
	TcSink		sink;
	TcError		err;
	TcStatus	status;

	cb->func = release_join;
	cb->arg = guard;
	MemoryContextRegisterResetCallback(mcxt, cb);

	guard->join = tc_join_create(&a->points, b ? &b->points : NULL, params, &err);
	if (guard->join == NULL)
		report_error(&err);
	sink = *to;
	/* a caller's own poll checks the interrupts itself */
	if (sink.poll == NULL)
		sink.poll = poll_interrupts;

	status = tc_join_run(guard->join, &sink, &err);
	/* a zero vector under cosine: its row named by id */
	if (status == TC_ERR_INVALID && err.point >= 0)
	{
		const TcLoaded *l = err.point_set == 0 || b == NULL ? a : b;

		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("zero vector has no cosine distance"),
				 errdetail("Row with id %lld of relation \"%s\" is a zero vector, or so small that its squared norm is 0 in float8.",
						   (long long) l->ids[err.point], l->relname)));
	}
	/* TC_STOPPED: the sink asked to stop (its caller says why) */
	if (status != TC_OK && status != TC_STOPPED)
		report_error(&err);
	tc_join_get_stats(guard->join, stats);
	release_join(guard);
}

void
tc_run_join(const TcLoaded *a, const TcLoaded *b, const TcJoinParams *params,
			Tuplestorestate *store, TupleDesc desc,
			MemoryContext mcxt, TcRunStats *stats)
{
	OutputState st;

	st.store = store;
	st.ids_a = a->ids;
	st.ids_b = b ? b->ids : a->ids;
	st.self = (b == NULL);
	st.seq_ids = consecutive(a->ids, a->points.n) &&
		(b == NULL || consecutive(b->ids, b->points.n));
	st.seq_a = a->points.n > 0 ? a->ids[0] : 0;
	st.seq_b = b == NULL ? st.seq_a : b->points.n > 0 ? b->ids[0] : 0;
	st.seconds = 0;
	/* The layout assumed above: int8, int8, float8, all by value. */
	Assert(desc->natts == 3 && TupleDescAttr(desc, 0)->atttypid == INT8OID &&
		   TupleDescAttr(desc, 2)->atttypid == FLOAT8OID);
	st.row_data = tc_row_template(desc, mcxt, &st.slot);
	/* the rows' callback never asks to stop */
	{
		TcSink		to = {emit_pairs, NULL, &st, 0, NULL, NULL, NULL};

		tc_run_join_sink(a, b, params, &to, mcxt, &stats->join);
	}
	stats->output_seconds = st.seconds;
	ExecDropSingleTupleTableSlot(st.slot);
}
