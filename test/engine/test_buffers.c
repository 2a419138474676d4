/*
 * test_buffers.c
 *		The large buffers kept between joins (big_buffers.c): what is kept
 *		and given back against the limit, contents and zeroing on reuse,
 *		alignment and the offsets' spread, the copy of a grown buffer, the
 *		peak of bytes held at once, and threads taking and freeing buffers
 *		at once.
 */
#include "test_harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define MB ((size_t) 1 << 20)

/* Bytes [0, n) of p all equal to v. */
static bool
all_bytes(const void *p, size_t n, unsigned char v)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i] != v)
			return false;
	return true;
}

static void
limit_cases(void)
{
	void	   *p,
			   *q;

	case_begin("buffers: nothing kept at limit 0, kept up to the limit, released when it drops");
	tc_keep_limit(0);
	CHECK(tc_kept_bytes() == 0, "kept %zu at limit 0", tc_kept_bytes());
	p = tc_malloc_huge(5 * MB);
	CHECK(p != NULL, "5 MB");
	if (p)
		memset(p, 0xab, 5 * MB);
	tc_free_huge(p);
	CHECK(tc_kept_bytes() == 0, "limit 0 kept %zu", tc_kept_bytes());

	tc_keep_limit(64 * MB);
	p = tc_malloc_huge(5 * MB);
	CHECK(p != NULL && ((uintptr_t) p & 63) == 0, "5 MB, 64-byte aligned: %p", p);
	if (p)
		memset(p, 0xcd, 5 * MB);
	tc_free_huge(p);
	CHECK(tc_kept_bytes() >= 5 * MB && tc_kept_bytes() <= 8 * MB,
		  "a 5 MB buffer kept as %zu bytes", tc_kept_bytes());
	/* taken back by a request of about its size: nothing kept after */
	q = tc_malloc_huge(4 * MB + 12345);
	CHECK(q != NULL && tc_kept_bytes() == 0, "the kept buffer not reused: %zu kept", tc_kept_bytes());
	tc_free_huge(q);
	/* a request far smaller leaves it kept, and gets one of its own */
	q = tc_malloc_huge(MB + 1);
	CHECK(q != NULL && tc_kept_bytes() >= 4 * MB, "a 6 MB buffer given to a 1 MB request");
	tc_free_huge(q);
	/* too large to keep: released at once */
	p = tc_malloc_huge(80 * MB);
	CHECK(p != NULL, "80 MB");
	{
		size_t		before = tc_kept_bytes();

		tc_free_huge(p);
		CHECK(tc_kept_bytes() == before, "an 80 MB buffer kept past a 64 MB limit");
	}
	/* more than fit: the oldest go, the total stays under the limit */
	{
		void	   *many[20];

		for (int i = 0; i < 20; i++)
			many[i] = tc_malloc_huge(6 * MB);
		for (int i = 0; i < 20; i++)
			tc_free_huge(many[i]);
		CHECK(tc_kept_bytes() <= 64 * MB && tc_kept_bytes() >= 48 * MB,
			  "20 x 6 MB freed under a 64 MB limit: %zu kept", tc_kept_bytes());
	}
	/* more buffers than the list holds: still bounded */
	{
		void	   *many[100];

		tc_keep_limit((size_t) 1 << 40);
		for (int i = 0; i < 100; i++)
			many[i] = tc_malloc_huge(MB);
		for (int i = 0; i < 100; i++)
			tc_free_huge(many[i]);
		CHECK(tc_kept_bytes() <= 64 * 2 * MB, "100 buffers freed: %zu kept", tc_kept_bytes());
	}
	tc_keep_limit(8 * MB);
	CHECK(tc_kept_bytes() <= 8 * MB, "the limit lowered to 8 MB: %zu kept", tc_kept_bytes());
#if !defined(__SANITIZE_ADDRESS__)
	/* (the sanitizer's build never frees from the signal handler's path) */
	tc_keep_release_idle();
	CHECK(tc_kept_bytes() == 0, "released when idle: %zu kept", tc_kept_bytes());
#endif
	tc_keep_limit(0);
	case_end();
}

static void
contents_cases(void)
{
	static const size_t sizes[] = {0, 1, 100, MB - 1, MB, MB + 1, 2 * MB - 64, 2 * MB, 3 * MB + 7, 17 * MB};

	case_begin("buffers: zeroed by calloc on reuse, contents kept by a copy to a larger one, offsets spread");
	tc_keep_limit(256 * MB);
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		{
			size_t		n = sizes[i];
			unsigned char *p = tc_malloc_huge(n);
			unsigned char *z;
			unsigned char *g;

			CHECK(p != NULL && ((uintptr_t) p & 15) == 0, "%zu bytes: %p", n, (void *) p);
			if (p == NULL)
				continue;
			memset(p, 0x5a, n);
			tc_free_huge(p);
			/* likely the same buffer again, dirty: calloc's must be zero */
			z = tc_calloc_huge(n);
			CHECK(z != NULL && all_bytes(z, n, 0), "calloc of %zu bytes (round %d) not zero", n, round);
			if (z == NULL)
				continue;
			for (size_t j = 0; j < n; j++)
				z[j] = (unsigned char) (j * 7 + 1);
			g = tc_realloc_huge(z, n, n * 2 + 3 * MB);
			CHECK(g != NULL, "grown from %zu", n);
			if (g == NULL)
			{
				tc_free_huge(z);
				continue;
			}
			for (size_t j = 0; j < n; j++)
				if (g[j] != (unsigned char) (j * 7 + 1))
				{
					CHECK(false, "grown from %zu: byte %zu changed", n, j);
					break;
				}
			memset(g + n, 0xee, n + 3 * MB);	/* the new part is the caller's */
			tc_free_huge(g);
		}
	/* arrays taken together start at offsets from their 2 MB pages that differ */
	{
		void	   *a[8];
		int			same = 0;

		for (int i = 0; i < 8; i++)
			a[i] = tc_malloc_huge(4 * MB);
		for (int i = 1; i < 8; i++)
			same += a[i] && a[0] && ((uintptr_t) a[i] & (2 * MB - 1)) == ((uintptr_t) a[0] & (2 * MB - 1));
		CHECK(same == 0, "%d of 7 arrays at the first one's offset into a 2 MB page", same);
		for (int i = 0; i < 8; i++)
			tc_free_huge(a[i]);
	}
	tc_free_huge(NULL);
	tc_keep_limit(0);
	case_end();
}

typedef struct Churn
{
	int			seed;
	bool		ok;
} Churn;

static void *
churn_main(void *arg)
{
	Churn	   *c = arg;
	uint64_t	x = (uint64_t) c->seed * 0x9e3779b97f4a7c15u + 1;

	c->ok = true;
	for (int i = 0; i < 60; i++)
	{
		size_t		n = (size_t) ((x >> 33) % (6 * MB)) + 1;
		unsigned char v = (unsigned char) (c->seed * 31 + i);
		unsigned char *p;

		x = x * 6364136223846793005u + 1442695040888963407u;
		p = (i & 1) ? tc_calloc_huge(n) : tc_malloc_huge(n);
		if (p == NULL || ((i & 1) && !all_bytes(p, n, 0)))
		{
			c->ok = false;
			tc_free_huge(p);
			continue;
		}
		memset(p, v, n);
		if (!all_bytes(p, n, v))
			c->ok = false;		/* another thread wrote into it */
		tc_free_huge(p);
	}
	return NULL;
}

static void
thread_cases(void)
{
	pthread_t	th[6];
	Churn		c[6];

	case_begin("buffers: six threads taking, writing and freeing buffers at once");
	tc_keep_limit(48 * MB);
	for (int t = 0; t < 6; t++)
	{
		c[t].seed = t + 1;
		c[t].ok = false;
		pthread_create(&th[t], NULL, churn_main, &c[t]);
	}
	for (int t = 0; t < 6; t++)
	{
		pthread_join(th[t], NULL);
		CHECK(c[t].ok, "thread %d saw a buffer not its own or not zeroed", t);
	}
	CHECK(tc_kept_bytes() <= 48 * MB, "%zu kept past 48 MB", tc_kept_bytes());
	tc_keep_limit(0);
	CHECK(tc_kept_bytes() == 0, "%zu kept at limit 0", tc_kept_bytes());
	case_end();
}

/* The peak of live bytes: asked sizes, kept buffers not counted, and its reset to what is live. */
static void
peak_cases(void)
{
	void	   *a,
			   *b,
			   *c;
	size_t		base;

	case_begin("buffers: the peak of bytes held at once, and its reset");
	tc_keep_limit(64 * MB);
	tc_big_peak_reset();
	base = tc_big_peak();
	a = tc_malloc_huge(3 * MB);
	b = tc_calloc_huge(5 * MB + 7);
	CHECK(tc_big_peak() == base + 8 * MB + 7, "two buffers: peak %zu, expected %zu",
		  tc_big_peak(), base + 8 * MB + 7);
	tc_free_huge(a);
	c = tc_malloc_huge(1000);	/* from malloc: counted too */
	CHECK(tc_big_peak() == base + 8 * MB + 7, "a free lowers no peak: %zu", tc_big_peak());
	tc_big_peak_reset();
	CHECK(tc_big_peak() == base + 5 * MB + 1007, "reset to what is held: %zu, expected %zu",
		  tc_big_peak(), base + 5 * MB + 1007);
	tc_free_huge(b);
	tc_free_huge(c);
	/* a kept buffer taken again counts as asked, not as its mapping */
	a = tc_malloc_huge(5 * MB);
	CHECK(tc_big_peak() == base + 5 * MB + 1007, "a kept buffer's reuse: peak %zu", tc_big_peak());
	tc_free_huge(a);
	tc_big_peak_reset();
	CHECK(tc_big_peak() == base, "all freed: peak %zu, expected %zu", tc_big_peak(), base);
	tc_keep_limit(0);
	case_end();
}

void
test_buffers(void)
{
	peak_cases();
	limit_cases();
	contents_cases();
	thread_cases();
}
