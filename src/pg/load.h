/*
 * load.h
 *		Reading a vector column into a contiguous point matrix, with the
 *		caller's rights, and validating it.
 */
#ifndef TCJOIN_LOAD_H
#define TCJOIN_LOAD_H

#include "postgres.h"

#include "engine.h"

typedef struct TcLoaded
{
	TcPoints	points;			/* n x d, float4 or float8 as stored */
	int64	   *ids;			/* n ids, in the same order */
	char	   *relname;		/* for messages */
	char	   *vec_column;
	char	   *id_column;
} TcLoaded;

/*
 * Load relation relid's vector_column (real[] or double precision[]) and
 * its ids (id_column, or the single-column integer primary key when NULL)
 * into memory allocated in mcxt.  Rows whose vector is NULL are skipped.
 * Raises an error for anything the join cannot take.
 */
extern void tc_load(Oid relid, const char *vector_column, const char *id_column,
					MemoryContext mcxt, TcLoaded *out);

#endif							/* TCJOIN_LOAD_H */
