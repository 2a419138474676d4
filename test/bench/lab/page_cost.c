/*
 * page_cost.c
 *		What fresh memory costs on this machine: 512 MB made present in a
 *		POSIX shared memory file (ftruncate, posix_fallocate as PostgreSQL's
 *		dynamic shared memory does, the first touch of each page, a second
 *		mapping's touch) and in private anonymous memory.  The costs behind
 *		docs/lab/2026-11-26-parallel-column-read.md.
 *
 *	  gcc -O2 -o /tmp/page_cost test/bench/lab/page_cost.c && /tmp/page_cost
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* one write (or read) a 4 kB page */
static long
touch(char *p, size_t bytes, int write)
{
	long		s = 0;

	for (size_t i = 0; i < bytes; i += 4096)
	{
		if (write)
			p[i] = 1;
		else
			s += p[i];
	}
	return s;
}

int
main(void)
{
	const size_t bytes = (size_t) 512 << 20;
	int			fd = shm_open("/tcjoin_page_cost", O_CREAT | O_RDWR, 0600);
	double		t0,
				t1,
				t2,
				t3,
				t4,
				t5;
	char	   *p,
			   *q,
			   *a;
	long		s;
	int			rc;

	if (fd < 0)
	{
		perror("shm_open");
		return 1;
	}
	t0 = now_ms();
	if (ftruncate(fd, (off_t) bytes) != 0)
	{
		perror("ftruncate");
		return 1;
	}
	rc = posix_fallocate(fd, 0, (off_t) bytes);
	t1 = now_ms();
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	q = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (rc != 0 || p == MAP_FAILED || q == MAP_FAILED)
	{
		fprintf(stderr, "posix_fallocate or mmap failed\n");
		shm_unlink("/tcjoin_page_cost");
		return 1;
	}
	t2 = now_ms();
	touch(p, bytes, 1);
	t3 = now_ms();
	s = touch(q, bytes, 0);
	t4 = now_ms();
	shm_unlink("/tcjoin_page_cost");
	a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
	{
		perror("mmap");
		return 1;
	}
	t5 = now_ms();
	touch(a, bytes, 1);
	printf("512 MB, ms: shared file: ftruncate + posix_fallocate %.1f, first touch %.1f, "
		   "second mapping's touch %.1f (%ld pages); private anonymous: first touch %.1f\n",
		   t1 - t0, t3 - t2, t4 - t3, s, now_ms() - t5);
	return 0;
}
