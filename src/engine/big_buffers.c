/*
 * big_buffers.c
 *		The engine's large arrays: on transparent huge pages, and kept in
 *		the process between joins, up to a limit, for the next join to use
 *		again.
 *
 * A fresh buffer's pages are zeroed by the kernel on first touch, and on
 * the machines measured that zeroing, not the joins' own writes, was a
 * tenth of a DBSCAN or a cross-match of a million points a call.  A buffer
 * freed here is kept, already present, while the kept ones stay under
 * tc_keep_limit's bytes; a later request of about its size takes it back
 * instead of a fresh mapping.  A request under TC_BIG_MIN goes to malloc.
 *
 * Each buffer carries a header of TC_BIG_HEADER bytes before the pointer
 * returned; its mapping is 2 MB aligned and a multiple of 2 MB, so that
 * every page of it may be a huge page.  The pointer sits a varying way
 * into the mapping (TC_BIG_COLOURS steps of a page and a few lines):
 * arrays all at one offset from 2 MB boundaries put entry i of each in one
 * cache set, and the DBSCAN's passes over several of them at once ran
 * 1.6x slower so.  Sanitizer builds take the
 * mappings from malloc, with the bytes past a request poisoned, so that a
 * reused buffer is checked at its requested size.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define TC_BIG_ASAN 1
#else
#define TC_BIG_ASAN 0
#define ASAN_POISON_MEMORY_REGION(p, n) ((void) (p), (void) (n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void) (p), (void) (n))
#endif

#define TC_BIG_PAGE ((size_t) 2 << 20)	/* a huge page */
#define TC_BIG_MIN ((size_t) 1 << 20)	/* smaller requests: malloc */
#define TC_BIG_HEADER 64		/* a mapping's pointer 64-byte aligned (malloc's: 16) */
#define TC_BIG_MAGIC UINT64_C(0x7463626967627566)
#define TC_BIG_KEPT_MAX 64		/* buffers kept at most */
#define TC_BIG_COLOURS 32		/* the pointer's offsets into its mapping */
#define TC_BIG_COLOUR_STEP (4096 + 192)

/* Just before the caller's pointer. */
typedef struct BigHeader
{
	uint64_t	magic;
	char	   *base;			/* the mapping, or malloc's block */
	size_t		map_bytes;		/* the mapping's bytes; 0: from malloc */
	size_t		asked;			/* the caller's bytes (the live count, the sanitizer's poisoning) */
} BigHeader;

/* The kept buffers, oldest first, and their bytes; under big_mu. */
static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;
static char *kept[TC_BIG_KEPT_MAX];
static int	nkept;
static size_t kept_bytes;
static size_t keep_limit;
static unsigned colour;			/* the next buffer's offset step */

/* The bytes asked of the buffers not yet freed, and the most at once since tc_big_peak_reset. */
static _Atomic size_t live_bytes;
static _Atomic size_t peak_bytes;

static void
count_live(size_t bytes)
{
	size_t		now = atomic_fetch_add(&live_bytes, bytes) + bytes;
	size_t		peak = atomic_load(&peak_bytes);

	while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now))
		;
}

/* A kept mapping's bytes: the first word of the mapping. */
static size_t
map_size(const char *base)
{
	size_t		m;

	memcpy(&m, base, sizeof(m));
	return m;
}

/* A fresh mapping of bytes (a multiple of TC_BIG_PAGE), 2 MB aligned, or NULL. */
static char *
map_fresh(size_t bytes)
{
#if TC_BIG_ASAN
	return aligned_alloc(TC_BIG_PAGE, bytes);
#else
	char	   *p = mmap(NULL, bytes + TC_BIG_PAGE, PROT_READ | PROT_WRITE,
						 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t	lo,
				head;

	if (p == MAP_FAILED)
		return NULL;
	/* the aligned part kept, the rest given back */
	lo = ((uintptr_t) p + TC_BIG_PAGE - 1) & ~(uintptr_t) (TC_BIG_PAGE - 1);
	head = lo - (uintptr_t) p;
	if (head > 0)
		munmap(p, head);
	if (TC_BIG_PAGE - head > 0)
		munmap((char *) lo + bytes, TC_BIG_PAGE - head);
#ifdef MADV_HUGEPAGE
	(void) madvise((void *) lo, bytes, MADV_HUGEPAGE);
#endif
	return (char *) lo;
#endif
}

static void
unmap(char *base)
{
#if TC_BIG_ASAN
	ASAN_UNPOISON_MEMORY_REGION(base, map_size(base));
	free(base);
#else
	munmap(base, map_size(base));
#endif
}

/* Under big_mu: kept buffer i out of the list, its bytes no longer counted. */
static char *
take_kept(int i)
{
	char	   *base = kept[i];

	kept_bytes -= map_size(base);
	memmove(&kept[i], &kept[i + 1], sizeof(char *) * (size_t) (nkept - i - 1));
	nkept--;
	return base;
}

/* Under big_mu: the oldest kept buffers released until at most limit bytes stay. */
static void
release_to(size_t limit)
{
	while (nkept > 0 && kept_bytes > limit)
		unmap(take_kept(0));
}

/*
 * A buffer of map_bytes or somewhat more: the smallest kept one that fits
 * and is at most twice the size (a larger one is left for a larger
 * request), else a fresh mapping.  *reused: whether it was kept.
 */
static char *
get_mapping(size_t map_bytes, bool *reused)
{
	char	   *base = NULL;
	int			best = -1;

	pthread_mutex_lock(&big_mu);
	for (int i = 0; i < nkept; i++)
	{
		size_t		m = map_size(kept[i]);

		if (m >= map_bytes && m / 2 <= map_bytes && (best < 0 || m < map_size(kept[best])))
			best = i;
	}
	if (best >= 0)
		base = take_kept(best);
	pthread_mutex_unlock(&big_mu);
	*reused = base != NULL;
	if (base != NULL)
		return base;
	base = map_fresh(map_bytes);
	if (base == NULL)
	{
		/* short of memory: what is kept goes back first */
		pthread_mutex_lock(&big_mu);
		release_to(0);
		pthread_mutex_unlock(&big_mu);
		base = map_fresh(map_bytes);
	}
	if (base != NULL)
		memcpy(base, &map_bytes, sizeof(map_bytes));
	return base;
}

static void *
big_alloc(size_t bytes, bool zero)
{
	BigHeader  *h;
	char	   *base;
	char	   *p;
	bool		reused = false;
	size_t		map_bytes;

	if (bytes == 0)
		bytes = 1;
	if (bytes < TC_BIG_MIN)
	{
		base = zero ? calloc(1, bytes + TC_BIG_HEADER) : malloc(bytes + TC_BIG_HEADER);
		if (base == NULL)
			return NULL;
		p = base + TC_BIG_HEADER;
		map_bytes = 0;
	}
	else
	{
		size_t		off;

		if (bytes > SIZE_MAX / 2)
			return NULL;
		pthread_mutex_lock(&big_mu);
		off = TC_BIG_HEADER + (size_t) (colour++ % TC_BIG_COLOURS) * TC_BIG_COLOUR_STEP;
		pthread_mutex_unlock(&big_mu);
		map_bytes = (bytes + off + TC_BIG_PAGE - 1) & ~(TC_BIG_PAGE - 1);
		base = get_mapping(map_bytes, &reused);
		if (base == NULL)
			return NULL;
		/* a kept mapping may be larger: the pointer's offset from its start is the same */
		map_bytes = map_size(base);
		p = base + off;
		ASAN_POISON_MEMORY_REGION(base, map_bytes);
		ASAN_UNPOISON_MEMORY_REGION(p - TC_BIG_HEADER, bytes + TC_BIG_HEADER);
		/* a fresh mapping is zero already (under the sanitizer, malloc's is not) */
		if (zero && (reused || TC_BIG_ASAN))
			memset(p, 0, bytes);
	}
	h = (BigHeader *) (p - TC_BIG_HEADER);
	h->magic = TC_BIG_MAGIC;
	h->base = base;
	h->map_bytes = map_bytes;
	h->asked = bytes;
	count_live(bytes);
	return p;
}

void *
tc_malloc_huge(size_t bytes)
{
	return big_alloc(bytes, false);
}

void *
tc_calloc_huge(size_t bytes)
{
	return big_alloc(bytes, true);
}

void
tc_free_huge(void *p)
{
	char	   *base;
	BigHeader  *h;

	size_t		map_bytes;

	if (p == NULL)
		return;
	h = (BigHeader *) ((char *) p - TC_BIG_HEADER);
	if (h->magic != TC_BIG_MAGIC)
		abort();				/* not from here: memory is corrupt */
	h->magic = 0;				/* a second free of it aborts */
	atomic_fetch_sub(&live_bytes, h->asked);
	base = h->base;
	map_bytes = h->map_bytes;
	if (map_bytes == 0)
	{
		free(base);
		return;
	}
	/* the mapping's first word says its size while it is kept */
	ASAN_UNPOISON_MEMORY_REGION(base, sizeof(map_bytes));
	memcpy(base, &map_bytes, sizeof(map_bytes));
	ASAN_POISON_MEMORY_REGION(base + sizeof(map_bytes), map_bytes - sizeof(map_bytes));
	pthread_mutex_lock(&big_mu);
	if (map_bytes > keep_limit)
	{
		pthread_mutex_unlock(&big_mu);
		unmap(base);			/* too large to keep */
		return;
	}
	release_to(keep_limit - map_bytes);
	if (nkept == TC_BIG_KEPT_MAX)
		unmap(take_kept(0));
	kept[nkept++] = base;
	kept_bytes += map_bytes;
	pthread_mutex_unlock(&big_mu);
}

void *
tc_realloc_huge(void *p, size_t old_bytes, size_t bytes)
{
	void	   *q = tc_malloc_huge(bytes);

	if (q == NULL)
		return NULL;
	if (p != NULL)
		memcpy(q, p, old_bytes < bytes ? old_bytes : bytes);
	tc_free_huge(p);
	return q;
}

void
tc_keep_limit(size_t bytes)
{
	pthread_mutex_lock(&big_mu);
	keep_limit = bytes;
	release_to(bytes);
	pthread_mutex_unlock(&big_mu);
}

/*
 * From a signal handler (an idle backend's timeout): every kept buffer
 * released, unless a thread holds the list now (then nothing: the next
 * free or timeout will do).  munmap alone, no malloc, no lock waited for.
 */
void
tc_keep_release_idle(void)
{
	/* the sanitizer's buffers are malloc's: no free() in a signal handler */
	if (TC_BIG_ASAN || pthread_mutex_trylock(&big_mu) != 0)
		return;
	release_to(0);
	pthread_mutex_unlock(&big_mu);
}

size_t
tc_kept_bytes(void)
{
	size_t		b;

	pthread_mutex_lock(&big_mu);
	b = kept_bytes;
	pthread_mutex_unlock(&big_mu);
	return b;
}

size_t
tc_big_peak(void)
{
	return atomic_load(&peak_bytes);
}

void
tc_big_peak_reset(void)
{
	atomic_store(&peak_bytes, atomic_load(&live_bytes));
}
