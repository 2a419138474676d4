/*
 * band_queue.cu
 *		The several-GPU queue of bands (queue_band, open_band,
 *		claim_band_units in cuda/runtime/join_state.h) under many threads,
 *		on the host alone: no GPU is needed or touched.
 *
 * Each thread plays a GPU of FP16 brute force's join_set: it walks the
 * bands in order, passes over a band the queue has already left, "lists"
 * the band (a random pause, as pruning takes time), opens it, and takes
 * batches of its entries until the band's are all taken; each batch a
 * guided size from next().  The check: every entry of every band taken by
 * exactly one thread, every band opened by exactly one thread (which
 * counts its tile pairs), whatever the threads' number, the bands' sizes
 * (empty ones too) and the pauses.  Ends with "N passed, N failed".
 *
 *   band_queue [--seed S] [--rounds R]
 */
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "join_state.h"

struct Round
{
	int			threads;
	std::vector<unsigned long long> sizes;	/* each band's entries */
	std::vector<std::atomic<unsigned int>> taken;	/* per entry, of every band in turn */
	std::vector<std::atomic<unsigned int>> opened;	/* per band */
	std::vector<unsigned long long> first;	/* each band's first entry in taken */
	int			max_pause_us;
};

/* Now and then a pause of some microseconds, as a GPU's listing or batch takes. */
static void
pause_for(std::mt19937_64 &rng, int max_us)
{
	int			us = (int) (rng() % (unsigned) (max_us + 1));

	if (us > 0 && rng() % 8 == 0)
		std::this_thread::sleep_for(std::chrono::microseconds(us));
	else if (rng() % 4 == 0)
		std::this_thread::yield();
}

/* One GPU's walk over the bands, as join_set and run_batches take them. */
static void
walk(GpuShare *sh, Round *r, unsigned long long seed)
{
	std::mt19937_64 rng(seed);
	const unsigned long long nbands = r->sizes.size();

	for (unsigned long long k = 0; k < nbands; k++)
	{
		if (queue_band(sh) > (long long) k)
		{
			k = (unsigned long long) queue_band(sh) - 1;
			continue;
		}
		pause_for(rng, r->max_pause_us);	/* the band's pruning */
		if (open_band(sh, k))
			r->opened[k].fetch_add(1);

		const unsigned long long n = r->sizes[k];
		const unsigned long long G = (unsigned long long) sh->ngpus;
		auto		next = [&] (unsigned long long lo) {
			/* guided: a GPU's share of what is left, at least 1, at most 7 */
			unsigned long long want = std::max(1ull, std::min(7ull, (n - lo) / G));

			return lo + want;
		};
		unsigned long long lo,
					hi;

		while (claim_band_units(sh, k, n, next, &lo, &hi))
		{
			if (hi > n || lo >= hi)
			{
				std::fprintf(stderr, "band %llu: a batch [%llu, %llu) of %llu entries\n", k, lo, hi, n);
				std::abort();
			}
			for (unsigned long long e = lo; e < hi; e++)
				r->taken[r->first[k] + e].fetch_add(1);
			pause_for(rng, r->max_pause_us);	/* the batch's kernels */
		}
	}
}

/* One round: fresh bands, threads and pauses from rng; true where it checks out. */
static bool
run_round(std::mt19937_64 &rng, int round, char *msg, size_t len)
{
	Round		r;
	GpuShare	sh{};
	unsigned long long total = 0;
	const int	nbands = 1 + (int) (rng() % 40);

	r.threads = 1 + (int) (rng() % TC_MAX_DEVICES);
	r.max_pause_us = round % 3 == 0 ? 0 : (int) (rng() % 100);
	for (int k = 0; k < nbands; k++)
	{
		/* empty bands, single entries and long ones */
		unsigned long long n = rng() % 5 == 0 ? 0 : rng() % 4 == 0 ? 1 : rng() % 3000;

		r.first.push_back(total);
		r.sizes.push_back(n);
		total += n;
	}
	r.taken = std::vector<std::atomic<unsigned int>>(total);
	r.opened = std::vector<std::atomic<unsigned int>>(nbands);
	for (auto &t : r.taken)
		t.store(0);
	for (auto &o : r.opened)
		o.store(0);

	sh.ngpus = r.threads;
	sh.next.store(0);
	sh.stop.store(0);

	std::vector<std::thread> th;

	for (int t = 0; t < r.threads; t++)
		th.emplace_back(walk, &sh, &r, rng());
	for (auto &t : th)
		t.join();

	for (int k = 0; k < nbands; k++)
	{
		if (r.opened[k].load() != 1)
		{
			std::snprintf(msg, len, "round %d (%d threads, %d bands): band %d of %llu entries opened %u times",
						  round, r.threads, nbands, k, r.sizes[k], r.opened[k].load());
			return false;
		}
		for (unsigned long long e = 0; e < r.sizes[k]; e++)
			if (r.taken[r.first[k] + e].load() != 1)
			{
				std::snprintf(msg, len, "round %d (%d threads, %d bands): band %d entry %llu of %llu taken %u times",
							  round, r.threads, nbands, k, e, r.sizes[k], r.taken[r.first[k] + e].load());
				return false;
			}
	}
	std::snprintf(msg, len, "round %d: %d threads, %d bands, %llu entries, each taken once, each band opened once",
				  round, r.threads, nbands, total);
	return true;
}

int
main(int argc, char **argv)
{
	unsigned long long seed = (unsigned long long) std::random_device()() << 32 ^ std::random_device()();
	int			rounds = 200;
	int			passed = 0,
				failed = 0;

	for (int i = 1; i + 1 < argc; i += 2)
	{
		if (std::strcmp(argv[i], "--seed") == 0)
			seed = std::strtoull(argv[i + 1], NULL, 0);
		else if (std::strcmp(argv[i], "--rounds") == 0)
			rounds = std::atoi(argv[i + 1]);
	}
	std::printf("band_queue: seed %llu (repeat with --seed %llu)\n", seed, seed);

	std::mt19937_64 rng(seed);

	for (int round = 0; round < rounds; round++)
	{
		char		msg[256];

		if (run_round(rng, round, msg, sizeof(msg)))
		{
			passed++;
			if (round < 5 || round % 50 == 0)
				std::printf("ok     %s\n", msg);
		}
		else
		{
			failed++;
			std::printf("FAILED %s\n", msg);
		}
	}
	std::printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
