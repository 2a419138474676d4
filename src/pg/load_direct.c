/*
 * load_direct.c
 *		The vector column read from a heap table's pages by the backend and
 *		helper threads (load_int.h), where SPI's one executor thread was
 *		most of a large join's load.
 *
 * The backend alone touches PostgreSQL: it reads each page through the
 * heap's own page-at-a-time scan (heapgetpage: the active snapshot's
 * visibility, serializable conflicts and pruning, as a sequential scan
 * does), keeps a pin on the page and hands its visible tuples, with their
 * rows in the matrix, to a ring of slots.  Helpers (and the backend, when
 * the ring is full) take slots and copy each tuple's vector into its row
 * with plain C: the tuple's columns found by its own layout, the array or
 * pgvector value parsed and checked.  A tuple they cannot take as it is
 * (a NULL id, a compressed or out-of-line value, a column past the
 * tuple's end, any value an error would name) goes back to the backend,
 * which reads it as the SPI path does and raises the same error for the
 * first such row in block order.  The backend releases slots in order,
 * and with them the pins.  Rows whose vector is NULL leave holes, closed
 * at the end.
 *
 * Only where nothing but the columns' privileges stands between the user
 * and the rows: a heap table (no view, no inheritance children, no
 * partitions), row-level security not enabled for the user, and SELECT on
 * the table or on both columns.  Everything else reads through SPI.
 */
#include "postgres.h"

#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "load_int.h"
#include "tcjoin.h"

/*
 * Pages in flight: their pins, and the slots the helpers take.  Fewer than
 * a bulk read's ring of buffers (256 kB), so that the ring never meets a
 * buffer still pinned and the scan keeps to the ring, as a sequential
 * scan does, instead of spreading over shared buffers.
 */
#define DIRECT_SLOTS 16
/*
 * Helpers beside the backend: three kept up with its pages on 16 cores,
 * and more only slowed it (their polling of the ring).
 */
#define DIRECT_MAX_HELPERS 3
/* A helper's spins on an empty ring before it sleeps. */
#define DIRECT_SPINS 64

/* What became of a tuple. */
typedef enum DirectTuple
{
	TUP_COPIED = 1,				/* its row written */
	TUP_HOLE,					/* its vector NULL: no row */
	TUP_BACKEND					/* for the backend to read (or name in an error) */
} DirectTuple;

typedef struct Slot
{
	Buffer		buf;			/* pinned until the backend releases the slot */
	int			ntup;
	int64		row0;			/* the first tuple's row; the rest follow */
	HeapTupleHeader tup[MaxHeapTuplesPerPage];
	uint32		len[MaxHeapTuplesPerPage];
	uint8		what[MaxHeapTuplesPerPage];
	atomic_int	done;
} Slot;

typedef struct Direct
{
	LoadReceiver *r;
	Relation	rel;
	TupleDesc	desc;
	AttrNumber	id_att;
	AttrNumber	vec_att;
	Slot	   *slots;
	/* on lines of their own: the helpers poll them while the backend writes */
	alignas(64) _Atomic uint64 published;	/* slots handed out (the backend's count) */
	alignas(64) _Atomic uint64 claimed; /* slots taken by a thread */
	alignas(64) char pad;
	uint64		released;		/* slots the backend is done with */
	atomic_bool quit;
	atomic_int	sleepers;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t	th[DIRECT_MAX_HELPERS];
	int			started;
	int64	   *holes;			/* rows left empty, ascending */
	int64		nholes;
	int64		holes_cap;
} Direct;

/*
 * The id and the vector's varlena of tuple t, by its own layout; false
 * where the backend must read it (columns past the tuple's end, a NULL id,
 * a compressed or out-of-line value).  *vec NULL: the vector is NULL.
 */
static bool
tuple_columns(const Direct *dc, HeapTupleHeader t, int64 *id, const struct varlena **vec)
{
	const AttrNumber last = Max(dc->id_att, dc->vec_att);
	const bool	hasnulls = (t->t_infomask & HEAP_HASNULL) != 0;
	const char *tp = (const char *) t + t->t_hoff;
	uint32		off = 0;
	bool		id_null = false;

	*vec = NULL;
	if (HeapTupleHeaderGetNatts(t) < last)
		return false;			/* added columns' defaults: heap_getattr knows them */
	for (AttrNumber a = 1; a <= last; a++)
	{
		Form_pg_attribute att = TupleDescAttr(dc->desc, a - 1);

		if (hasnulls && att_isnull(a - 1, t->t_bits))
		{
			if (a == dc->id_att)
				id_null = true;
			continue;
		}
		off = att_align_pointer(off, att->attalign, att->attlen, tp + off);
		if (a == dc->id_att)
		{
			/* smallint, integer or bigint, by value (load.c checked the type) */
			if (att->attlen == 2)
				*id = *(const int16 *) (tp + off);
			else if (att->attlen == 4)
				*id = *(const int32 *) (tp + off);
			else
				*id = *(const int64 *) (tp + off);
		}
		else if (a == dc->vec_att)
			*vec = (const struct varlena *) (tp + off);
		off = att_addlength_pointer(off, att->attlen, tp + off);
	}
	if (*vec == NULL)
		return true;			/* a NULL vector: no row, whatever the id */
	return !id_null && !VARATT_IS_EXTERNAL(*vec) && !VARATT_IS_COMPRESSED(*vec);
}

/* Tuple t into row `row` where it parses cleanly, as tc_load_put would copy it. */
static DirectTuple
copy_tuple(const Direct *dc, HeapTupleHeader t, int64 row)
{
	const LoadReceiver *r = dc->r;
	const struct varlena *v;
	int64		id = 0;
	TcVectorLayout lay;
	char	   *dst;
	int32		bad;
	bool		is_nan;

	if (!tuple_columns(dc, t, &id, &v))
		return TUP_BACKEND;
	if (v == NULL)
		return TUP_HOLE;
	if (tc_load_parse(r, v, &lay) != TC_VEC_OK || lay.dim != r->d)
		return TUP_BACKEND;
	dst = r->data + (Size) row * (Size) r->d * (Size) r->type;
	if (r->kind == VEC_HALFVEC)
		tc_half_to_float((float *) dst, lay.values, lay.dim);
	else
		memcpy(dst, lay.values, (Size) lay.dim * (Size) r->type);
	if (!tc_vector_finite(dst, lay.dim, (size_t) r->type, &bad, &is_nan))
		return TUP_BACKEND;
	r->ids[row] = id;
	return TUP_COPIED;
}

static void
copy_slot(const Direct *dc, Slot *s)
{
	for (int t = 0; t < s->ntup; t++)
		s->what[t] = (uint8) copy_tuple(dc, s->tup[t], s->row0 + t);
	atomic_store_explicit(&s->done, 1, memory_order_release);
}

/* A slot handed out and not yet taken, copied on this thread; false where none is. */
static bool
take_slot(Direct *dc)
{
	uint64		c = atomic_load_explicit(&dc->claimed, memory_order_relaxed);

	while (c < atomic_load_explicit(&dc->published, memory_order_acquire))
	{
		if (atomic_compare_exchange_weak_explicit(&dc->claimed, &c, c + 1,
												  memory_order_acq_rel, memory_order_relaxed))
		{
			copy_slot(dc, &dc->slots[c % DIRECT_SLOTS]);
			return true;
		}
	}
	return false;
}

static void *
helper_main(void *arg)
{
	Direct	   *dc = arg;

	while (!atomic_load(&dc->quit))
	{
		int			spins = 0;

		while (!take_slot(dc) && !atomic_load(&dc->quit))
		{
			if (++spins < DIRECT_SPINS)
			{
				sched_yield();
				continue;
			}
			/* an empty ring a while: sleep until the backend hands out a slot */
			pthread_mutex_lock(&dc->mu);
			atomic_fetch_add(&dc->sleepers, 1);
			if (!atomic_load(&dc->quit) &&
				atomic_load(&dc->claimed) >= atomic_load(&dc->published))
				pthread_cond_wait(&dc->cv, &dc->mu);
			atomic_fetch_sub(&dc->sleepers, 1);
			pthread_mutex_unlock(&dc->mu);
			spins = 0;
		}
	}
	return NULL;
}

static void
wake_helpers(Direct *dc)
{
	if (atomic_load(&dc->sleepers) > 0)
	{
		pthread_mutex_lock(&dc->mu);
		pthread_cond_broadcast(&dc->cv);
		pthread_mutex_unlock(&dc->mu);
	}
}

/* The helpers stopped and joined: before an error leaves, and at the end. */
static void
stop_helpers(Direct *dc)
{
	atomic_store(&dc->quit, true);
	pthread_mutex_lock(&dc->mu);
	pthread_cond_broadcast(&dc->cv);
	pthread_mutex_unlock(&dc->mu);
	for (int i = 0; i < dc->started; i++)
		pthread_join(dc->th[i], NULL);
	dc->started = 0;
}

static void
note_hole(Direct *dc, int64 row)
{
	if (dc->nholes == dc->holes_cap)
	{
		dc->holes_cap = dc->holes_cap > 0 ? dc->holes_cap * 2 : 1024;
		dc->holes = dc->holes ? repalloc_huge(dc->holes, sizeof(int64) * dc->holes_cap) :
			palloc(sizeof(int64) * dc->holes_cap);
	}
	dc->holes[dc->nholes++] = row;
}

/*
 * A tuple the threads left to the backend: read as the SPI path reads a
 * row (its errors the same), into its row.
 */
static void
backend_tuple(Direct *dc, HeapTupleHeader t, uint32 len, int64 row)
{
	HeapTupleData htup;
	Datum		vec,
				idd;
	bool		isnull;
	int64		id;

	htup.t_len = len;
	htup.t_data = t;
	htup.t_tableOid = RelationGetRelid(dc->rel);
	ItemPointerSetInvalid(&htup.t_self);
	vec = heap_getattr(&htup, dc->vec_att, dc->desc, &isnull);
	if (isnull)
	{
		note_hole(dc, row);
		return;
	}
	idd = heap_getattr(&htup, dc->id_att, dc->desc, &isnull);
	id = tc_load_id(dc->r, idd, isnull);
	tc_load_put(dc->r, vec, id, row);
}

/* Slots done, in order: their leftover tuples read, their pins released. */
static void
release_done(Direct *dc, bool wait)
{
	while (dc->released < atomic_load_explicit(&dc->published, memory_order_relaxed))
	{
		Slot	   *s = &dc->slots[dc->released % DIRECT_SLOTS];

		if (!atomic_load_explicit(&s->done, memory_order_acquire))
		{
			if (!wait)
				return;
			/* taken by a helper and not done: copy another meanwhile, or wait */
			if (!take_slot(dc))
				sched_yield();
			continue;
		}
		for (int t = 0; t < s->ntup; t++)
		{
			if (s->what[t] == TUP_HOLE)
				note_hole(dc, s->row0 + t);
			else if (s->what[t] == TUP_BACKEND)
				backend_tuple(dc, s->tup[t], s->len[t], s->row0 + t);
		}
		ReleaseBuffer(s->buf);
		s->buf = InvalidBuffer;
		dc->released++;
	}
}

/* The page's visible tuples into the next slot (its pin kept), rows from r->n. */
static Slot *
fill_slot(Direct *dc, HeapScanDesc hs)
{
	Slot	   *s = &dc->slots[atomic_load(&dc->published) % DIRECT_SLOTS];
	Page		page = BufferGetPage(hs->rs_cbuf);

	s->buf = hs->rs_cbuf;
	IncrBufferRefCount(s->buf);
	s->ntup = hs->rs_ntuples;
	s->row0 = dc->r->n;
	for (int t = 0; t < s->ntup; t++)
	{
		ItemId		lp = PageGetItemId(page, hs->rs_vistuples[t]);

		s->tup[t] = (HeapTupleHeader) PageGetItem(page, lp);
		s->len[t] = ItemIdGetLength(lp);
		s->what[t] = TUP_BACKEND;
	}
	atomic_store_explicit(&s->done, 0, memory_order_relaxed);
	dc->r->n += s->ntup;
	return s;
}

/* The helpers the machine has room for beside the backend; started once d is known. */
static void
start_helpers(Direct *dc)
{
	int			cores = tc_cpu_threads > 0 ? tc_cpu_threads : tc_cpu_count();
	int			want = Min(cores - 1, DIRECT_MAX_HELPERS);

	for (int i = 0; i < want; i++)
	{
		if (tc_start_thread(&dc->th[i], helper_main, dc) != 0)
			break;
		dc->started++;
	}
}

/* Rows left empty by NULL vectors closed up, the rest in order. */
static void
close_holes(Direct *dc)
{
	LoadReceiver *r = dc->r;
	const Size	rowbytes = (Size) (r->d > 0 ? r->d : 1) * (Size) r->type;
	int64		to;

	if (dc->nholes == 0)
		return;
	to = dc->holes[0];
	for (int64 h = 0; h < dc->nholes; h++)
	{
		int64		from = dc->holes[h] + 1;
		int64		end = h + 1 < dc->nholes ? dc->holes[h + 1] : r->n;

		if (end > from)
		{
			memmove(r->data + (Size) to * rowbytes, r->data + (Size) from * rowbytes,
					(Size) (end - from) * rowbytes);
			memmove(r->ids + to, r->ids + from, sizeof(int64) * (end - from));
			to += end - from;
		}
	}
	r->n = to;
}

/*
 * The read in progress, for a FATAL exit (a terminate), which leaves
 * without PG_FINALLY: its helpers stopped before the buffers are released.
 */
static Direct *active;
static bool exit_hook_set;

static void
stop_at_exit(int code, Datum arg)
{
	if (active != NULL)
		stop_helpers(active);
	active = NULL;
}

/* Whether the pages may be read directly: see the file's comment. */
static bool
direct_applies(Relation rel, AttrNumber id_att, AttrNumber vec_att)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			user = GetUserId();

	if (tc_overrides.no_direct_load || rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relhassubclass || rel->rd_tableam != GetHeapamTableAmRoutine())
		return false;
	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		return false;
	/*
	 * What else the SELECT would be refused or asked for: USAGE on the
	 * schema it names, and a security module's or an audit's say.
	 */
	if (ExecutorCheckPerms_hook != NULL ||
		pg_namespace_aclcheck(RelationGetNamespace(rel), user, ACL_USAGE) != ACLCHECK_OK)
		return false;
	return pg_class_aclcheck(relid, user, ACL_SELECT) == ACLCHECK_OK ||
		(pg_attribute_aclcheck(relid, id_att, user, ACL_SELECT) == ACLCHECK_OK &&
		 pg_attribute_aclcheck(relid, vec_att, user, ACL_SELECT) == ACLCHECK_OK);
}

/* The scan: pages into slots, slots copied and released, until every page is. */
static void
direct_scan(Direct *dc, TableScanDesc scan)
{
	HeapScanDesc hs = (HeapScanDesc) scan;
	LoadReceiver *r = dc->r;

	for (BlockNumber blk = 0; blk < hs->rs_nblocks; blk++)
	{
		Slot	   *s;

		CHECK_FOR_INTERRUPTS();
		heapgetpage(scan, blk);
		if (hs->rs_ntuples == 0)
			continue;
		/* a full ring: what is done released, else a slot copied here */
		while (atomic_load(&dc->published) - dc->released == DIRECT_SLOTS)
		{
			release_done(dc, false);
			if (atomic_load(&dc->published) - dc->released == DIRECT_SLOTS && !take_slot(dc))
				sched_yield();
		}
		/* before d is known, and before the matrix grows, nothing in flight */
		if (r->d == 0 || r->n + hs->rs_ntuples > r->cap)
			release_done(dc, true);
		while (r->d > 0 && r->n + hs->rs_ntuples > r->cap)
			tc_load_grow(r);
		s = fill_slot(dc, hs);
		if (r->d == 0)
		{
			/* the backend's own reading until a vector fixes d */
			atomic_store(&s->done, 1);
			atomic_fetch_add(&dc->published, 1);
			atomic_fetch_add(&dc->claimed, 1);
			release_done(dc, true);
			if (r->d > 0 && dc->started == 0)
				start_helpers(dc);
			continue;
		}
		/* seq_cst: ordered before wake_helpers reads the sleepers */
		atomic_fetch_add(&dc->published, 1);
		wake_helpers(dc);
		if (dc->started == 0)
			take_slot(dc);
		release_done(dc, false);
	}
	/* the last slots: copied here too, then released */
	while (take_slot(dc))
		;
	release_done(dc, true);
}

bool
tc_load_direct(LoadReceiver *r, Relation rel, AttrNumber id_att, AttrNumber vec_att)
{
	Direct	   *dc;
	void	   *dc_alloc;
	TableScanDesc scan;

	if (!direct_applies(rel, id_att, vec_att))
		return false;
	/* 64-byte aligned, as its polled counters ask */
	dc_alloc = palloc0(sizeof(Direct) + 64);
	dc = (Direct *) TYPEALIGN(64, dc_alloc);
	dc->slots = palloc_extended(sizeof(Slot) * DIRECT_SLOTS, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	dc->r = r;
	dc->rel = rel;
	dc->desc = RelationGetDescr(rel);
	dc->id_att = id_att;
	dc->vec_att = vec_att;
	atomic_init(&dc->published, 0);
	atomic_init(&dc->claimed, 0);
	atomic_init(&dc->quit, false);
	atomic_init(&dc->sleepers, 0);
	pthread_mutex_init(&dc->mu, NULL);
	pthread_cond_init(&dc->cv, NULL);
	for (int i = 0; i < DIRECT_SLOTS; i++)
		dc->slots[i].buf = InvalidBuffer;

	/* the active snapshot, as SPI's read-only query would take */
	scan = table_beginscan_strat(rel, GetActiveSnapshot(), 0, NULL, true, false);
	/* visible tuples a page come only in page mode (an MVCC snapshot) */
	if (!(scan->rs_flags & SO_ALLOW_PAGEMODE))
	{
		table_endscan(scan);
		pthread_mutex_destroy(&dc->mu);
		pthread_cond_destroy(&dc->cv);
		pfree(dc->slots);
		pfree(dc_alloc);
		return false;
	}
	if (!exit_hook_set)
	{
		before_shmem_exit(stop_at_exit, (Datum) 0);
		exit_hook_set = true;
	}
	active = dc;
	PG_TRY();
	{
		direct_scan(dc, scan);
	}
	PG_FINALLY();
	{
		/*
		 * No helper may still read a page or write the matrix when an error
		 * leaves, nor the prefault helpers touch it.
		 */
		stop_helpers(dc);
		active = NULL;
		tc_prefault_stop(r->prefault);
		r->prefault = NULL;
	}
	PG_END_TRY();
	table_endscan(scan);
	close_holes(dc);
	pthread_mutex_destroy(&dc->mu);
	pthread_cond_destroy(&dc->cv);
	if (dc->holes)
		pfree(dc->holes);
	pfree(dc->slots);
	pfree(dc_alloc);
	return true;
}
