/*
 * threads.c
 *		The engine's helper threads: started with every signal blocked, and
 *		a step run on several parts at once.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "engine_int.h"

#define TC_RUN_PARTS_MAX 64		/* parts on helpers at most; the rest on the caller */

/*
 * A thread of the engine's, started with every signal blocked, so that the
 * host's handlers (PostgreSQL's) run only on its own thread: blocked here
 * around pthread_create, so that the new thread inherits the mask and no
 * signal can land on it before it could block them itself.  Returns
 * pthread_create's result (0: started).
 */
int
tc_start_thread(pthread_t *th, void *(*fn) (void *), void *arg)
{
	sigset_t	all,
				old;
	int			rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int
tc_parts_for(int64_t items, int64_t min_part, int threads, int max)
{
	int64_t		n = threads < max ? threads : max;

	if (n > items / min_part)
		n = items / min_part;
	return n > 1 ? (int) n : 1;
}

void
tc_run_parts(void *(*fn) (void *), void *parts, size_t stride, int n)
{
	pthread_t	th[TC_RUN_PARTS_MAX];
	bool		started[TC_RUN_PARTS_MAX] = {false};
	char	   *at = parts;

	for (int t = 1; t < n && t < TC_RUN_PARTS_MAX; t++)
		started[t] = tc_start_thread(&th[t], fn, at + (size_t) t * stride) == 0;
	for (int t = 0; t < n; t++)
		if (t >= TC_RUN_PARTS_MAX || !started[t])
			fn(at + (size_t) t * stride);
	for (int t = 1; t < n && t < TC_RUN_PARTS_MAX; t++)
		if (started[t])
			pthread_join(th[t], NULL);
}
