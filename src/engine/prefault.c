/*
 * prefault.c
 *		A large fresh buffer's pages made present by helper threads while
 *		the caller fills it from the start.
 *
 * A process's fresh memory is zeroed by the kernel page by page on first
 * touch, and for a large vector column that zeroing was most of the load
 * (docs/lab/2026-11-26-auto-device-and-first-join.md).  MADV_POPULATE_WRITE
 * makes pages present, zeroed and writable without writing to them, so
 * threads may run it on chunks just ahead of (or under) the caller's
 * writes: the contents are never touched, only when the zeroing happens
 * and on which core.  Where the kernel lacks it (before Linux 5.14), the
 * threads stop at once and the caller faults its pages as before.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine_int.h"

#define TC_PREFAULT_MAX_THREADS 8
#define TC_PREFAULT_CHUNK ((size_t) 2 << 20)	/* a huge page */

struct TcPrefault
{
	char	   *base;			/* page-aligned */
	size_t		bytes;
	atomic_size_t next;			/* offset of the next chunk to take */
	atomic_bool stop;
	int			nthreads;
	pthread_t	th[TC_PREFAULT_MAX_THREADS];
};

static void *
prefault_main(void *arg)
{
	TcPrefault *pf = arg;

	while (!atomic_load_explicit(&pf->stop, memory_order_relaxed))
	{
		size_t		off = atomic_fetch_add(&pf->next, TC_PREFAULT_CHUNK);
		size_t		len;

		if (off >= pf->bytes)
			break;
		len = pf->bytes - off < TC_PREFAULT_CHUNK ? pf->bytes - off : TC_PREFAULT_CHUNK;
#ifdef MADV_POPULATE_WRITE
		if (madvise(pf->base + off, len, MADV_POPULATE_WRITE) != 0)
#endif
		{
			atomic_store(&pf->stop, true);	/* not supported, or out of memory */
			break;
		}
	}
	return NULL;
}

TcPrefault *
tc_prefault_start(void *buf, size_t bytes, int threads)
{
	long		page = sysconf(_SC_PAGESIZE);
	uintptr_t	lo,
				hi;
	TcPrefault *pf;

	if (page <= 0 || threads < 1 || buf == NULL)
		return NULL;
	lo = ((uintptr_t) buf + (uintptr_t) page - 1) & ~((uintptr_t) page - 1);
	hi = ((uintptr_t) buf + bytes) & ~((uintptr_t) page - 1);
	if (hi <= lo)
		return NULL;
	pf = calloc(1, sizeof(*pf));
	if (pf == NULL)
		return NULL;
	pf->base = (char *) lo;
	pf->bytes = hi - lo;
	atomic_init(&pf->next, 0);
	atomic_init(&pf->stop, false);
	if (threads > TC_PREFAULT_MAX_THREADS)
		threads = TC_PREFAULT_MAX_THREADS;
	/* the threads never run the host's signal handlers (tc_start_thread) */
	for (int i = 0; i < threads; i++)
		if (tc_start_thread(&pf->th[pf->nthreads], prefault_main, pf) == 0)
			pf->nthreads++;
	if (pf->nthreads == 0)
	{
		free(pf);
		return NULL;
	}
	return pf;
}

void
tc_prefault_stop(TcPrefault *pf)
{
	if (pf == NULL)
		return;
	atomic_store(&pf->stop, true);
	for (int i = 0; i < pf->nthreads; i++)
		pthread_join(pf->th[i], NULL);
	free(pf);
}

/*
 * A large buffer's whole 2 MB pages marked for transparent huge pages (in
 * madvise mode the kernel gives them only where asked), so that filling
 * it faults once per 2 MB instead of once per 4 KB page; on this kind of
 * host the faults, not the writes, were most of a fill.
 */
static void *
mark_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
	if (p != NULL && bytes >= TC_PREFAULT_CHUNK)
	{
		uintptr_t	lo = ((uintptr_t) p + TC_PREFAULT_CHUNK - 1) & ~(uintptr_t) (TC_PREFAULT_CHUNK - 1);
		uintptr_t	hi = ((uintptr_t) p + bytes) & ~(uintptr_t) (TC_PREFAULT_CHUNK - 1);

		if (hi > lo)
			(void) madvise((void *) lo, hi - lo, MADV_HUGEPAGE);
	}
#endif
	return p;
}

/* malloc for a large fresh buffer that is filled at once (mark_huge); free with free(). */
void *
tc_malloc_huge(size_t bytes)
{
	return mark_huge(malloc(bytes > 0 ? bytes : 1), bytes);
}

/*
 * calloc marked as tc_malloc_huge's: a buffer this large comes fresh from
 * the kernel, already zero, so no thread writes its zeros before use; its
 * pages are zeroed where and when they are first touched.
 */
void *
tc_calloc_huge(size_t bytes)
{
	return mark_huge(calloc(1, bytes > 0 ? bytes : 1), bytes);
}
