/*
 * output.h
 *		Running an engine join and streaming its pairs into a tuplestore.
 */
#ifndef TCJOIN_OUTPUT_H
#define TCJOIN_OUTPUT_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "utils/tuplestore.h"

#include "engine.h"
#include "load.h"

typedef struct TcRunStats
{
	TcJoinStats join;
	double		output_seconds; /* spent writing rows into the tuplestore */
} TcRunStats;

/*
 * Join the loaded points a with b (NULL: a self-join); each pair becomes a
 * row (id_a, id_b, dist), in a self-join with id_a <= id_b.  Engine
 * resources live under mcxt and are released by its reset callback, so an
 * error or a cancel anywhere stops the workers.
 */
extern void tc_run_join(const TcLoaded *a, const TcLoaded *b,
						const TcJoinParams *params, Tuplestorestate *store,
						TupleDesc desc, MemoryContext mcxt, TcRunStats *stats);

/*
 * The same join with its pairs to the sink to's emit (which may stop it by
 * returning nonzero), batch_hint and reduce (TcSink; its poll is this
 * file's); the cancel, the errors and the engine's release as for
 * tc_run_join.
 */
extern void tc_run_join_sink(const TcLoaded *a, const TcLoaded *b, const TcJoinParams *params,
							 const TcSink *to, MemoryContext mcxt, TcJoinStats *stats);

/*
 * A template row of desc, whose columns (at most 8) are fixed-width, by
 * value and never null, all zero: its data bytes, which the caller
 * overwrites before each tuplestore_puttupleslot(store, *slot), cheaper
 * than forming every row.  Made in mcxt; drop *slot with
 * ExecDropSingleTupleTableSlot.
 */
extern char *tc_row_template(TupleDesc desc, MemoryContext mcxt, TupleTableSlot **slot);

/* The same with the columns null_cols marks null (their bytes absent from the data). */
extern char *tc_row_template_nulls(TupleDesc desc, const bool *null_cols, MemoryContext mcxt,
								   TupleTableSlot **slot);

#endif							/* TCJOIN_OUTPUT_H */
