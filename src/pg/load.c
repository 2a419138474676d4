/*
 * load.c
 *		Read the vector column into a contiguous n x d matrix.
 *
 * Rows are read through SPI with the caller's rights: the query names the
 * relation and columns (quoted, never pasted), so table and column
 * privileges and row-level security apply exactly as for the user's own
 * SELECT.  Tuples stream into a DestReceiver that copies each vector
 * straight into the matrix: no per-row allocation, no tuple copies.
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "tcop/dest.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "load.h"
#include "load_int.h"
#include "tcjoin.h"

/* A first matrix this large has its pages made present by helper threads. */
#define TC_PREFAULT_MIN_BYTES ((Size) 32 << 20)
#define TC_PREFAULT_THREADS 4

/* vector_parse.c's fixed offset, as PostgreSQL lays an array out */
StaticAssertDecl(TC_VEC_VALUES_NONULLS == ARR_OVERHEAD_NONULLS(1) - VARHDRSZ,
				 "the values' offset in a one-dimensional array without NULLs");

/*
 * The matrix and the ids, as the engine's large buffers (tc_malloc_huge:
 * 2 MB pages, and kept for the backend's next join, whose load then finds
 * their pages present); given back when the join's context goes, by its
 * end or an error's cleanup.
 */
typedef struct LoadBuffers
{
	void	   *data;
	void	   *ids;
} LoadBuffers;

static void
free_load_buffers(void *arg)
{
	LoadBuffers *b = arg;

	tc_free_huge(b->data);
	tc_free_huge(b->ids);
	b->data = b->ids = NULL;
}

void
tc_load_grow(LoadReceiver *r)
{
	const bool	first = r->cap == 0;
	int64		newcap = r->cap > 0 ? r->cap * 2 : 1024;
	Size		rowbytes = (Size) r->d * (Size) r->type;

	/*
	 * The first allocation sized for the rows the planner expects (and a
	 * little more), so that a large column is not copied again and again
	 * as the matrix doubles.
	 */
	if (r->cap == 0 && r->expect > newcap &&
		(r->expect * 1.0625 + 1024) * (double) rowbytes < (double) MaxAllocHugeSize / 2)
		newcap = (int64) (r->expect * 1.0625) + 1024;

	if ((double) newcap * (double) rowbytes > (double) MaxAllocHugeSize ||
		(double) newcap * sizeof(int64) > (double) MaxAllocHugeSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("point set too large: more than %lld vectors of %d dimensions",
						(long long) r->n, r->d)));
	/* no helper still at the old matrix's pages when it goes */
	tc_prefault_stop(r->prefault);
	r->prefault = NULL;
	if (r->bufs == NULL)
	{
		MemoryContextCallback *cb = MemoryContextAllocZero(r->mcxt, sizeof(MemoryContextCallback));

		r->bufs = MemoryContextAllocZero(r->mcxt, sizeof(LoadBuffers));
		cb->func = free_load_buffers;
		cb->arg = r->bufs;
		MemoryContextRegisterResetCallback(r->mcxt, cb);
	}
	/* the first made, a later one copied; where one fails, the old stays for the callback */
	{
		void	   *data = tc_realloc_huge(r->bufs->data, (Size) r->cap * rowbytes, newcap * rowbytes);
		void	   *ids;

		if (data != NULL)
			r->bufs->data = data;
		ids = data == NULL ? NULL :
			tc_realloc_huge(r->bufs->ids, (Size) r->cap * sizeof(int64), newcap * sizeof(int64));
		if (ids != NULL)
			r->bufs->ids = ids;
		if (data == NULL || ids == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory loading vectors"),
					 errdetail("Failed to allocate room for %lld vectors of %d dimensions.",
							   (long long) newcap, r->d)));
	}
	r->data = r->bufs->data;
	r->ids = r->bufs->ids;
	r->cap = newcap;

	/*
	 * The first, presized matrix: its pages zeroed on other cores while the
	 * scan fills it (prefault.c), at most as many as the join's threads.  A
	 * later, doubled one moves the data and is left to the copy.
	 */
	if (first && (Size) newcap * rowbytes >= TC_PREFAULT_MIN_BYTES && !tc_overrides.no_prefault)
	{
		/*
		 * The scan keeps a core of its own, and on fewer than 4 cores no
		 * helper runs: on 2, the helpers' zeroing slowed the scan more
		 * than it saved (docs/lab/2026-11-27-load-on-two-cores.md).
		 */
		int			cores = tc_cpu_threads > 0 ? tc_cpu_threads : tc_cpu_count();
		int			threads = cores >= 4 ? cores - 1 : 0;

		if (threads > 0)
			r->prefault = tc_prefault_start(r->data, newcap * rowbytes,
											Min(threads, TC_PREFAULT_THREADS));
	}
}

/*
 * Check one vector and copy it into row `row` of the matrix, with its id
 * (the first sets d; the matrix grows to hold the row).
 */
void
tc_load_put(LoadReceiver *r, Datum datum, int64 id, int64 row)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(datum);
	struct varlena *detoasted = NULL;
	TcVectorLayout lay;
	char	   *dst;
	Size		rowbytes;
	int32		bad_elem;
	bool		is_nan;

	/* Compressed, external or expanded: flatten (rare for short vectors). */
	if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v))
		v = detoasted = pg_detoast_datum(v);
	switch (tc_load_parse(r, v, &lay))
	{
		case TC_VEC_OK:
			break;
		case TC_VEC_EMPTY:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("vector must have at least 1 dimension"),
					 errdetail("Row with id %lld has an empty array.", (long long) id)));
			break;
		case TC_VEC_NOT_1D:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("vector must be a one-dimensional array"),
					 errdetail("Row with id %lld has a %d-dimensional array.",
							   (long long) id, lay.ndim)));
			break;
		case TC_VEC_NULL:
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("NULL not allowed in vector"),
					 errdetail("Row with id %lld has a NULL at element %d.",
							   (long long) id, lay.elem)));
			break;
		case TC_VEC_MALFORMED:
			elog(ERROR, "invalid array in column \"%s\"", r->out->vec_column);
			break;
	}

	if (r->d == 0)
	{
		if (lay.dim > 1000000)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("vector cannot have more than %d dimensions", 1000000)));
		r->d = lay.dim;
	}
	else if (lay.dim != r->d)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("different vector dimensions %d and %d", r->d, lay.dim),
				 errdetail("Row with id %lld has %d dimensions; the rows before it have %d.",
						   (long long) id, lay.dim, r->d)));
	rowbytes = (Size) lay.dim * (Size) r->type;

	while (row >= r->cap)
		tc_load_grow(r);
	dst = r->data + (Size) row * rowbytes;
	if (r->kind == VEC_HALFVEC)
		tc_half_to_float((float *) dst, lay.values, lay.dim);
	else
		memcpy(dst, lay.values, rowbytes);
	r->ids[row] = id;

	/* Checked in the aligned copy. */
	if (!tc_vector_finite(dst, lay.dim, (size_t) r->type, &bad_elem, &is_nan))
	{
		if (is_nan)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("NaN not allowed in vector"),
					 errdetail("Row with id %lld has NaN at element %d.",
							   (long long) id, bad_elem)));
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("infinite value not allowed in vector"),
				 errdetail("Row with id %lld has an infinite value at element %d.",
						   (long long) id, bad_elem)));
	}
	if (detoasted)
		pfree(detoasted);
}

int64
tc_load_id(const LoadReceiver *r, Datum idd, bool isnull)
{
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("id column \"%s\" contains NULL", r->out->id_column)));
	switch (r->id_type)
	{
		case INT2OID:
			return DatumGetInt16(idd);
		case INT4OID:
			return DatumGetInt32(idd);
		default:
			return DatumGetInt64(idd);
	}
}

/* Copy one vector into the next row. */
static void
append_vector(LoadReceiver *r, Datum datum, int64 id)
{
	tc_load_put(r, datum, id, r->n);
	r->n++;
}

static bool
load_receive(TupleTableSlot *slot, DestReceiver *self)
{
	LoadReceiver *r = (LoadReceiver *) self;
	bool		isnull;
	Datum		vec;
	Datum		idd;
	int64		id;

	vec = slot_getattr(slot, 2, &isnull);
	if (isnull)
		return true;			/* as a join on NULL would: no partner */
	idd = slot_getattr(slot, 1, &isnull);
	id = tc_load_id(r, idd, isnull);
	append_vector(r, vec, id);
	return true;
}

static void
load_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
load_shutdown(DestReceiver *self)
{
}

static void
load_destroy(DestReceiver *self)
{
}

/* Look up a user column of relid; error if missing or a system column. */
static AttrNumber
user_column(Oid relid, const char *relname, const char *colname, Oid *basetype)
{
	AttrNumber	attnum = get_attnum(relid, colname);
	Oid			typid;
	int32		typmod;
	Oid			collid;

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						colname, relname)));
	if (attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("cannot use system column \"%s\"", colname)));
	get_atttypetypmodcoll(relid, attnum, &typid, &typmod, &collid);
	*basetype = getBaseType(typid);
	return attnum;
}

/* Is attnum alone covered by a valid, immediate, non-partial unique index? */
static bool
has_unique_index(Relation rel, AttrNumber attnum)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index idx;

		if (!HeapTupleIsValid(tup))
			continue;
		idx = (Form_pg_index) GETSTRUCT(tup);
		if (idx->indisunique && idx->indimmediate && idx->indisvalid &&
			idx->indnkeyatts == 1 && idx->indkey.values[0] == attnum &&
			heap_attisnull(tup, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(tup, Anum_pg_index_indexprs, NULL))
			found = true;
		ReleaseSysCache(tup);
		if (found)
			break;
	}
	list_free(indexes);
	return found;
}

/*
 * Find a duplicate id with an open-addressing hash set: O(n), and it can
 * check for interrupts, which a library sort of millions of ids cannot.
 */
static void
check_duplicate_ids(const TcLoaded *out)
{
	int64		n = out->points.n;
	uint64		size = 16;
	uint64		mask;
	int64	   *slots;
	bits8	   *used;

	if (n < 2)
		return;
	while (size < (uint64) n * 2)
		size <<= 1;
	mask = size - 1;
	slots = palloc_extended(sizeof(int64) * size, MCXT_ALLOC_HUGE);
	used = palloc_extended(size / 8 + 1, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (int64 i = 0; i < n; i++)
	{
		int64		id = out->ids[i];
		uint64		h = (uint64) id * UINT64CONST(0x9e3779b97f4a7c15);

		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
		for (h = (h ^ (h >> 29)) & mask;; h = (h + 1) & mask)
		{
			if ((used[h / 8] & (1 << (h % 8))) == 0)
			{
				used[h / 8] |= (bits8) (1 << (h % 8));
				slots[h] = id;
				break;
			}
			if (slots[h] == id)
				ereport(ERROR,
						(errcode(ERRCODE_UNIQUE_VIOLATION),
						 errmsg("duplicate id %lld in column \"%s\" of relation \"%s\"",
								(long long) id, out->id_column, out->relname),
						 errhint("Each row needs a distinct id; name a unique column with id_column.")));
		}
	}
	pfree(slots);
	pfree(used);
}

/* The loaded matrix into out, its ids checked distinct unless an index proves them so. */
static void
finish_load(TcLoaded *out, const LoadReceiver *r, bool ids_unique)
{
	out->points.data = r->data;
	out->points.n = r->n;
	out->points.d = r->d > 0 ? r->d : 1;
	out->points.type = r->type;
	out->ids = r->ids;
	if (!ids_unique)
		check_duplicate_ids(out);
}

/*
 * pgvector's type name in the schema its extension was created in, or
 * InvalidOid where pgvector is not installed: it is found at run time, never
 * linked against.
 */
static Oid
pgvector_type(const char *name)
{
	Oid			ext = get_extension_oid("vector", true);
	Oid			nsp = InvalidOid;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(ext))
		return InvalidOid;
	/* the extension's schema (PostgreSQL 15 exports no lookup of it) */
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(nsp))
		return InvalidOid;
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum(name),
						   ObjectIdGetDatum(nsp));
}

/* The vector column's kind and element type from its base type, or an error. */
static void
vector_kind(Oid type, const char *column, VecKind *kind, TcElemType *elem)
{
	*kind = VEC_ARRAY;
	*elem = TC_FLOAT4;
	if (type == FLOAT4ARRAYOID)
		return;
	*elem = TC_FLOAT8;
	if (type == FLOAT8ARRAYOID)
		return;
	*elem = TC_FLOAT4;
	*kind = VEC_PGVECTOR;
	if (OidIsValid(type) && type == pgvector_type("vector"))
		return;
	*kind = VEC_HALFVEC;
	if (OidIsValid(type) && type == pgvector_type("halfvec"))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("column \"%s\" must be of type real[], double precision[], vector or halfvec, not %s",
					column, format_type_be(type)),
			 errhint("vector and halfvec are pgvector's types.")));
}

void
tc_load(Oid relid, const char *vector_column, const char *id_column,
		MemoryContext mcxt, TcLoaded *out)
{
	Relation	rel;
	char		relkind;
	Oid			vec_type;
	Oid			id_type;
	AttrNumber	id_attnum;
	AttrNumber	vec_attnum;
	bool		ids_unique;
	LoadReceiver r;
	StringInfoData sql;
	SPIExecuteOptions opts;
	int			rc;
	VecKind		kind;
	TcElemType	elem;

	memset(out, 0, sizeof(*out));
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	relkind = rel->rd_rel->relkind;
	out->relname = MemoryContextStrdup(mcxt, RelationGetRelationName(rel));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_VIEW &&
		relkind != RELKIND_MATVIEW && relkind != RELKIND_PARTITIONED_TABLE &&
		relkind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table, view or materialized view",
						out->relname)));

	out->vec_column = MemoryContextStrdup(mcxt, vector_column);
	vec_attnum = user_column(relid, out->relname, vector_column, &vec_type);
	vector_kind(vec_type, vector_column, &kind, &elem);

	if (id_column == NULL)
	{
		Oid			pk = RelationGetPrimaryKeyIndex(rel);
		HeapTuple	tup = OidIsValid(pk) ?
			SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pk)) : NULL;
		AttrNumber	pkatt = InvalidAttrNumber;
		Oid			pktype = InvalidOid;

		if (HeapTupleIsValid(tup))
		{
			Form_pg_index idx = (Form_pg_index) GETSTRUCT(tup);

			if (idx->indnkeyatts == 1 && idx->indkey.values[0] > 0)
				pkatt = idx->indkey.values[0];
			ReleaseSysCache(tup);
		}
		if (pkatt != InvalidAttrNumber)
			pktype = getBaseType(get_atttype(relid, pkatt));
		if (pktype != INT2OID && pktype != INT4OID && pktype != INT8OID)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("relation \"%s\" has no single-column integer primary key",
							out->relname),
					 errhint("Name the id column with id_column => 'column'.")));
		id_column = get_attname(relid, pkatt, false);
	}
	out->id_column = MemoryContextStrdup(mcxt, id_column);
	id_attnum = user_column(relid, out->relname, id_column, &id_type);
	if (id_type != INT2OID && id_type != INT4OID && id_type != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("id column \"%s\" must be of type smallint, integer or bigint, not %s",
						id_column, format_type_be(id_type))));
	/*
	 * A unique index proves the ids distinct and saves a sort, unless
	 * inheritance children (not covered by it) are read too.
	 */
	ids_unique = (relkind == RELKIND_PARTITIONED_TABLE || !rel->rd_rel->relhassubclass) &&
		has_unique_index(rel, id_attnum);

	memset(&r, 0, sizeof(r));
	r.expect = relkind == RELKIND_RELATION || relkind == RELKIND_MATVIEW ?
		rel->rd_rel->reltuples : -1;
	r.mcxt = mcxt;
	r.out = out;
	r.id_type = id_type;
	r.type = elem;
	r.kind = kind;
	/* a plain table's pages read by threads (load_direct.c), else SPI */
	if (tc_load_direct(&r, rel, id_attnum, vec_attnum))
	{
		relation_close(rel, NoLock);
		finish_load(out, &r, ids_unique);
		return;
	}

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s, %s FROM %s",
					 quote_identifier(id_column),
					 quote_identifier(vector_column),
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												RelationGetRelationName(rel)));
	/* Keep the lock to the end of the transaction, as a SELECT would. */
	relation_close(rel, NoLock);

	r.pub.receiveSlot = load_receive;
	r.pub.rStartup = load_startup;
	r.pub.rShutdown = load_shutdown;
	r.pub.rDestroy = load_destroy;
	r.pub.mydest = DestNone;

	memset(&opts, 0, sizeof(opts));
	opts.read_only = true;
	opts.dest = &r.pub;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* the prefault's threads end before the matrix can be freed, error or not */
	PG_TRY();
	{
		rc = SPI_execute_extended(sql.data, &opts);
	}
	PG_FINALLY();
	{
		tc_prefault_stop(r.prefault);
		r.prefault = NULL;
	}
	PG_END_TRY();
	/* With DestNone as the receiver's tag, SPI reports a SELECT as utility. */
	if (rc != SPI_OK_SELECT && rc != SPI_OK_UTILITY)
		elog(ERROR, "reading relation \"%s\" failed: %s",
			 out->relname, SPI_result_code_string(rc));
	SPI_finish();
	pfree(sql.data);
	finish_load(out, &r, ids_unique);
}
