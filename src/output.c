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

#include "miscadmin.h"
#include "utils/memutils.h"

#include "output.h"

typedef struct OutputState
{
	Tuplestorestate *store;
	TupleDesc	desc;
	const int64 *ids;
	double		seconds;
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

static int
emit_pairs(void *arg, const TcPair *pairs, size_t count)
{
	OutputState *st = arg;
	double		t0 = tc_now();
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	for (size_t i = 0; i < count; i++)
	{
		int64		a = st->ids[pairs[i].a];
		int64		b = st->ids[pairs[i].b];

		values[0] = Int64GetDatum(a < b ? a : b);
		values[1] = Int64GetDatum(a < b ? b : a);
		values[2] = Float8GetDatum(pairs[i].dist);
		tuplestore_putvalues(st->store, st->desc, values, nulls);
	}
	st->seconds += tc_now() - t0;
	CHECK_FOR_INTERRUPTS();
	return 0;
}

static int
poll_interrupts(void *arg)
{
	CHECK_FOR_INTERRUPTS();
	return 0;
}

void
tc_run_selfjoin(const TcLoaded *loaded, const TcJoinParams *params,
				Tuplestorestate *store, TupleDesc desc,
				MemoryContext mcxt, TcRunStats *stats)
{
	JoinGuard  *guard = MemoryContextAllocZero(mcxt, sizeof(JoinGuard));
	MemoryContextCallback *cb = MemoryContextAllocZero(mcxt, sizeof(MemoryContextCallback));
	OutputState st;
	TcSink		sink;
	TcError		err;
	TcStatus	status;

	cb->func = release_join;
	cb->arg = guard;
	MemoryContextRegisterResetCallback(mcxt, cb);

	guard->join = tc_join_create(&loaded->points, NULL, params, &err);
	if (guard->join == NULL)
	{
		if (err.status == TC_ERR_NO_GPU)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("tcjoin.device is \"gpu\" but no GPU is usable"),
					 errdetail("%s.", err.message),
					 errhint("Set tcjoin.device to \"auto\" to fall back to the CPU.")));
		ereport(ERROR,
				(errcode(err.status == TC_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INTERNAL_ERROR),
				 errmsg("tcjoin: %s", err.message)));
	}

	st.store = store;
	st.desc = desc;
	st.ids = loaded->ids;
	st.seconds = 0;
	sink.emit = emit_pairs;
	sink.poll = poll_interrupts;
	sink.arg = &st;

	status = tc_join_run(guard->join, &sink, &err);
	if (status != TC_OK)
		ereport(ERROR,
				(errcode(status == TC_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INTERNAL_ERROR),
				 errmsg("tcjoin: %s", err.message)));
	tc_join_get_stats(guard->join, &stats->join);
	stats->output_seconds = st.seconds;
	release_join(guard);
}
