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
