/*
 * load_int.h
 *		What load.c and load_direct.c share: the loader's state and the
 *		checked copy of one vector.  Internal to the loader.
 */
#ifndef TCJOIN_LOAD_INT_H
#define TCJOIN_LOAD_INT_H

#include "postgres.h"

#include "tcop/dest.h"
#include "utils/relcache.h"

#include "engine.h"
#include "load.h"
#include "vector_parse.h"

/* What the vector column holds, and so how a value's bytes are read. */
typedef enum VecKind
{
	VEC_ARRAY,					/* real[] or double precision[] */
	VEC_PGVECTOR,				/* pgvector's vector: float elements */
	VEC_HALFVEC					/* pgvector's halfvec: binary16, widened to float */
} VecKind;

typedef struct LoadReceiver
{
	DestReceiver pub;
	MemoryContext mcxt;
	TcLoaded   *out;
	Oid			id_type;
	TcElemType	type;
	int32		d;				/* 0 until the first row */
	double		expect;			/* the planner's row count (<= 0: unknown) */
	int64		n;
	int64		cap;
	char	   *data;
	int64	   *ids;
	struct LoadBuffers *bufs;	/* data and ids as the engine's kept buffers */
	TcPrefault *prefault;		/* helpers zeroing the matrix's pages ahead */
	VecKind		kind;
} LoadReceiver;

/*
 * An inline (not compressed, not out-of-line) value of the vector column
 * parsed as r's kind: its layout, or why not.
 */
static inline TcVectorStatus
tc_load_parse(const LoadReceiver *r, const struct varlena *v, TcVectorLayout *lay)
{
	const char *body = VARATT_IS_SHORT(v) ? VARDATA_SHORT(v) : VARDATA(v);
	Size		len = VARATT_IS_SHORT(v) ? VARSIZE_SHORT(v) - VARHDRSZ_SHORT : VARSIZE(v) - VARHDRSZ;

	return r->kind == VEC_ARRAY ? tc_vector_parse(body, len, (size_t) r->type, lay) :
		tc_pgvector_parse(body, len, r->kind == VEC_HALFVEC ? 2 : 4, lay);
}

/* A row's id from the id column's value (NULL: the error a row's NULL id gets). */
extern int64 tc_load_id(const LoadReceiver *r, Datum idd, bool isnull);

/* The matrix (and ids) at least doubled; the first sized by r->expect. */
extern void tc_load_grow(LoadReceiver *r);

/*
 * One vector checked (an error names the row's id) and copied into row
 * `row`, its id beside it; the first sets d, and the matrix grows to hold
 * the row.
 */
extern void tc_load_put(LoadReceiver *r, Datum datum, int64 id, int64 row);

/*
 * The whole column read from the heap's pages, in block order, by the
 * caller and helper threads, where relation rel allows it (a heap table
 * without inheritance children or row-level security, the columns
 * readable by the current user); false (nothing read) where it does not,
 * and the loader reads through SPI.  r->n is then the rows read.
 */
extern bool tc_load_direct(LoadReceiver *r, Relation rel, AttrNumber id_att, AttrNumber vec_att);

#endif							/* TCJOIN_LOAD_INT_H */
