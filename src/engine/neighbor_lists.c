/*
 * neighbor_lists.c
 *		Each point's neighbours by (dist, id) (neighbor_lists.h): all of them
 *		in a list that grows, or with k a max-heap of the k best, the worst
 *		on top, so that a pair costs a comparison and at most a heap step.
 */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "neighbor_lists.h"

/*
 * With k up to this, every point's list lives in one block made up front
 * (its pages made present as rows fill them), a row of NB_HEAD_BYTES of
 * head and then k entries, 64-byte aligned: a pair then costs one miss,
 * where a list of its own cost a malloc a point and two misses a pair
 * (in a cross-match of a million rows at k = 1, more than the join).
 */
#define NB_BLOCK_K 16
#define NB_HEAD_BYTES 16

/*
 * A neighbour: its dist and its index into ids, which ties
 * look up (an id each pair would cost a miss each); once the list is read
 * (nb_read), the id itself.
 */
typedef struct NbEntry
{
	double		dist;
	int64_t		who;
} NbEntry;

/* A list's length, capacity (a growing list's) and state. */
typedef struct NbHead
{
	int			len;
	int			cap;
	bool		sorted;
	_Atomic unsigned char lock; /* nb_add_locked's */
} NbHead;

_Static_assert(sizeof(NbHead) <= NB_HEAD_BYTES, "a row's head must fit before its entries");

/* A list that grows (k 0, or past NB_BLOCK_K). */
struct NbList
{
	NbEntry    *e;
	NbHead		h;
};

/*
 * The lists' memory is made at the first pair (nb_ensure), so that lists a
 * device kept (nb_adopt) are read where they are, and none is made for
 * them.
 */
bool
nb_lists_init(NbLists *nl, int64_t n, const int64_t *ids, int k, atomic_bool *failed)
{
	memset(nl, 0, sizeof(*nl));
	nl->n = n;
	nl->ids = ids;
	nl->k = k > 0 ? k : 0;
	nl->failed = failed;
	atomic_init(&nl->made, false);
	atomic_init(&nl->held, 0);
	atomic_init(&nl->over, false);
	return pthread_mutex_init(&nl->mu, NULL) == 0;
}

/* One block of rows where k is small (zeroed), else a list each that grows. */
static bool
nb_make(NbLists *nl)
{
	size_t		rows = (size_t) (nl->n > 0 ? nl->n : 1);

	if (nl->k > 0 && nl->k <= NB_BLOCK_K)
	{
		nl->row_bytes = NB_HEAD_BYTES + sizeof(NbEntry) * (size_t) nl->k;
		/*
		 * On huge pages: the pairs reach the rows in the order of the
		 * other set's cells, and a fault or a TLB miss for each 4 KB page
		 * touched that way cost more than the rows' updates.  Zeroed by
		 * calloc, which leaves fresh memory as the kernel gave it, so
		 * that the thread bringing the first pair does not zero it all
		 * while the others wait.
		 */
		nl->rows_alloc = tc_calloc_huge(rows * nl->row_bytes + 64);
		if (nl->rows_alloc != NULL)
		{
			nl->rows = (char *) (((uintptr_t) nl->rows_alloc + 63) & ~(uintptr_t) 63);
			return true;
		}
		/* no room for the block at once: lists that grow as they fill */
	}
	nl->lists = calloc(rows, sizeof(NbList));
	return nl->lists != NULL;
}

/* The lists made, once, by whichever thread brings the first pair; false (failed set) without memory. */
static inline bool
nb_ensure(NbLists *nl)
{
	if (atomic_load_explicit(&nl->made, memory_order_acquire))
		return true;
	pthread_mutex_lock(&nl->mu);
	if (!atomic_load_explicit(&nl->made, memory_order_relaxed) && !*nl->failed)
	{
		if (nb_make(nl))
			atomic_store_explicit(&nl->made, true, memory_order_release);
		else
			*nl->failed = true;
	}
	pthread_mutex_unlock(&nl->mu);
	return atomic_load_explicit(&nl->made, memory_order_acquire);
}

void
nb_prefetch(NbLists *nl, int64_t i)
{
	if (atomic_load_explicit(&nl->made, memory_order_acquire))
	{
		if (nl->rows != NULL)
			__builtin_prefetch(nl->rows + (size_t) i * nl->row_bytes, 1, 3);
		else
			__builtin_prefetch(&nl->lists[i], 1, 3);
	}
}

bool
nb_lists_made(const NbLists *nl)
{
	return atomic_load_explicit(&((NbLists *) nl)->made, memory_order_acquire);
}

void
nb_adopt(NbLists *nl, const int32_t *len, const int64_t *who, const double *dist)
{
	nl->a_len = len;
	nl->a_who = who;
	nl->a_dist = dist;
}

void
nb_lists_free(NbLists *nl)
{
	if (nl->ids == NULL && nl->n == 0 && nl->failed == NULL)
		return;					/* never made (all zero) */
	pthread_mutex_destroy(&nl->mu);
	if (nl->lists)
		for (int64_t i = 0; i < nl->n; i++)
			free(nl->lists[i].e);
	free(nl->lists);
	tc_free_huge(nl->rows_alloc);
	free(nl->out_ids);
	free(nl->out_dist);
	memset(nl, 0, sizeof(*nl));
}

void
nb_lists_limit(NbLists *nl, size_t bytes)
{
	nl->limit = bytes;
}

bool
nb_lists_over(const NbLists *nl)
{
	return atomic_load(&nl->over);
}

bool
nb_lists_grow(const NbLists *nl)
{
	return !(nl->k > 0 && nl->k <= NB_BLOCK_K);
}

/* (dist, id) order: nearer first, ties by the smaller id. */
static inline bool
nb_before(const NbLists *nl, const NbEntry *x, const NbEntry *y)
{
	return x->dist < y->dist || (x->dist == y->dist && nl->ids[x->who] < nl->ids[y->who]);
}

/* With k: a max-heap of the k best, the worst on top. */
static void
heap_down(const NbLists *nl, NbEntry *h, int len, int i)
{
	for (;;)
	{
		int			w = i,
					l = 2 * i + 1,
					r = l + 1;

		if (l < len && nb_before(nl, &h[w], &h[l]))
			w = l;
		if (r < len && nb_before(nl, &h[w], &h[r]))
			w = r;
		if (w == i)
			return;
		{
			NbEntry		t = h[i];

			h[i] = h[w];
			h[w] = t;
		}
		i = w;
	}
}

static void
heap_up(const NbLists *nl, NbEntry *h, int i)
{
	while (i > 0 && nb_before(nl, &h[(i - 1) / 2], &h[i]))
	{
		NbEntry		t = h[i];

		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

/* Point i's list: its head and its entries (in the block, right after the head). */
static inline NbHead *
nb_head(const NbLists *nl, int64_t i)
{
	return nl->rows ? (NbHead *) (nl->rows + (size_t) i * nl->row_bytes) : &nl->lists[i].h;
}

static inline NbEntry *
nb_entries(const NbLists *nl, int64_t i)
{
	return nl->rows ? (NbEntry *) (nl->rows + (size_t) i * nl->row_bytes + NB_HEAD_BYTES) :
		nl->lists[i].e;
}

/* A growing list's room for one more; false (failed set) without memory. */
static bool
nb_grow(NbLists *nl, NbList *l)
{
	int			cap = l->h.cap > 0 ? 2 * l->h.cap : 4;
	NbEntry    *grown;

	if (nl->k > 0 && cap > nl->k)
		cap = nl->k;
	/* the lists' limit, counted by capacity, before the memory is asked for */
	if (nl->limit > 0)
	{
		int64_t		more = (int64_t) (sizeof(NbEntry) * (size_t) (cap - l->h.cap));

		if ((size_t) (atomic_fetch_add(&nl->held, more) + more) > nl->limit)
		{
			atomic_store(&nl->over, true);
			*nl->failed = true;
			return false;
		}
	}
	/* a list's length is an int: past it, as out of memory */
	grown = l->h.cap > INT_MAX / 2 ? NULL : realloc(l->e, sizeof(NbEntry) * (size_t) cap);
	if (grown == NULL)
	{
		*nl->failed = true;
		return false;
	}
	l->e = grown;
	l->h.cap = cap;
	return true;
}

void
nb_add(NbLists *nl, int64_t i, int64_t other, double dist)
{
	NbHead	   *h;
	NbEntry    *x;
	NbEntry		e = {dist, other};

	if (!nb_ensure(nl))
		return;
	h = nb_head(nl, i);
	x = nb_entries(nl, i);

	if (nl->k > 0 && h->len == nl->k)
	{
		/* full: the new one replaces the worst if it comes before it */
		if (nb_before(nl, &e, &x[0]))
		{
			x[0] = e;
			heap_down(nl, x, h->len, 0);
		}
		return;
	}
	/* a row of the block holds k (its cap stays 0); a list that grows may be full short of k */
	if (nl->rows == NULL && h->len == h->cap)
	{
		if (!nb_grow(nl, &nl->lists[i]))
			return;
		x = nl->lists[i].e;
	}
	x[h->len++] = e;
	if (nl->k > 0)
		heap_up(nl, x, h->len - 1);
}

void
nb_add_locked(NbLists *nl, int64_t i, int64_t other, double dist)
{
	NbHead	   *h;

	if (!nb_ensure(nl))
		return;
	h = nb_head(nl, i);

	while (atomic_exchange_explicit(&h->lock, 1, memory_order_acquire))
		;
	nb_add(nl, i, other, dist);
	atomic_store_explicit(&h->lock, 0, memory_order_release);
}

void
nb_add_sorted(NbLists *nl, int64_t i, const int64_t *other, const double *dist, int len)
{
	NbHead	   *h;

	if (!nb_ensure(nl))
		return;
	h = nb_head(nl, i);

	/*
	 * An empty list with room for all: the worst first is already a
	 * max-heap of them, so a row costs a copy (a million rows' k nearest
	 * one by one were a heap step each).
	 */
	if (nl->k > 0 && h->len == 0 && len <= nl->k && (nl->rows != NULL || len == 0))
	{
		NbEntry    *x = nb_entries(nl, i);

		for (int t = 0; t < len; t++)
			x[t] = (NbEntry) {dist[len - 1 - t], other[len - 1 - t]};
		h->len = len;
		return;
	}
	for (int t = 0; t < len && !*nl->failed; t++)
		nb_add(nl, i, other[t], dist[t]);
}

/* (dist, id) order of entries that hold their ids. */
static int
cmp_nb(const void *x, const void *y)
{
	const NbEntry *a = x,
			   *b = y;

	if (a->dist != b->dist)
		return a->dist < b->dist ? -1 : 1;
	return (a->who > b->who) - (a->who < b->who);
}

/* Room in the answer's arrays for len; false (failed set) without memory. */
static bool
nb_out_room(NbLists *nl, int len)
{
	if (len > nl->out_cap)
	{
		int64_t    *oi = realloc(nl->out_ids, sizeof(int64_t) * (size_t) len);
		double	   *od;

		if (oi != NULL)
			nl->out_ids = oi;
		od = realloc(nl->out_dist, sizeof(double) * (size_t) len);
		if (od != NULL)
			nl->out_dist = od;
		if (oi == NULL || od == NULL)
		{
			*nl->failed = true;
			return false;
		}
		nl->out_cap = len;
	}
	return true;
}

void
nb_read(NbLists *nl, int64_t i, const int64_t **ids, const double **dist, int *len)
{
	NbHead	   *h;
	NbEntry    *x;

	*len = 0;
	*ids = nl->out_ids;
	*dist = nl->out_dist;
	if (!nb_lists_made(nl))
	{
		/* a device's lists, sorted already; else no pair came */
		int			m = nl->a_len ? nl->a_len[i] : 0;
		size_t		at = (size_t) i * (size_t) nl->k;

		if (m == 0 || !nb_out_room(nl, m))
			return;
		for (int t = 0; t < m; t++)
		{
			nl->out_ids[t] = nl->ids[nl->a_who[at + t]];
			nl->out_dist[t] = nl->a_dist[at + t];
		}
		*ids = nl->out_ids;
		*dist = nl->out_dist;
		*len = m;
		return;
	}
	h = nb_head(nl, i);
	x = nb_entries(nl, i);

	/* the first read: indices become ids, then nearest first */
	if (!h->sorted)
	{
		for (int t = 0; t < h->len; t++)
			x[t].who = nl->ids[x[t].who];
		if (h->len > 1)
			qsort(x, (size_t) h->len, sizeof(NbEntry), cmp_nb);
	}
	h->sorted = true;
	if (!nb_out_room(nl, h->len))
		return;
	for (int t = 0; t < h->len; t++)
	{
		nl->out_ids[t] = x[t].who;
		nl->out_dist[t] = x[t].dist;
	}
	*ids = nl->out_ids;
	*dist = nl->out_dist;
	*len = h->len;
}

