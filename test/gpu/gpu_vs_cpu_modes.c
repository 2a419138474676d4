/*
 * gpu_vs_cpu_modes.c
 *		The GPU-against-CPU program's clustered data, failure modes and
 *		forced paths: a cancel at the first poll and while a kernel runs,
 *		streamed joins against the whole, Hopper's clusters or not,
 *		tcjoin.gpu_memory_limit too small, result buffers halved and far
 *		smaller than the result, auto's device choice, and the filter's
 *		bound under small buffers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_vs_cpu.h"

/*
 * The brute force where candidates share rows (clusters) and where they
 * do not (uniform noise), in one join, against the CPU.
 */
void
clustered_cases(void)
{
	static const int dims[] = {128, 1024, 4096};

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
	{
		int			d = dims[di];
		int64_t		n = d >= 4096 ? 6000 : 8000;
		float	   *x = make_clusters(n, d);

		compare_case("cluster", n, d, eps_for(x, 5000, d, 48), false, TC_METHOD_BRUTE, x, TC_FLOAT4);
		if (d == 128)
		{
			double	   *x8 = malloc(sizeof(double) * n * d);

			for (int64_t i = 0; i < n * d; i++)
				x8[i] = (double) x[i] + unit() * 1e-9;
			compare_case("cluster", n, d, eps_for(x, 5000, d, 48), false, TC_METHOD_BRUTE, x8, TC_FLOAT8);
			free(x8);
		}
		free(x);
	}
}

void
failure_modes(void)
{
	int64_t		n = 400000;
	int			d = 2;
	float	   *x = make_points("uniform", n, d);
	TcPoints	p = {x, n, d, TC_FLOAT4};
	TcJoinParams params = {.eps = 0.01, .method = TC_METHOD_GRID, .device = TC_DEVICE_GPU,
	.exact = true, .threads = 1};
	Collect		c = {0};
	TcJoinStats st;
	TcError		err;
	TcStatus	rc;
	double		t0;

	/* Cancel: the first poll asks to stop. */
	c.stop_after_polls = 1;
	t0 = tc_now();
	rc = run(&p, params, &c, &st, &err);
	report(rc == TC_STOPPED && tc_now() - t0 < 1.0,
		   "cancel: status %s after %.3f s", tc_status_name(rc), tc_now() - t0);
	free(c.pairs);

	/*
	 * Cancel while a kernel runs: a join of several seconds (8-D, CUDA
	 * cores) asked to stop after 0.3 s must return within a second of the
	 * request, with the GPU's memory given back.
	 */
	for (int tc = 0; tc < 2; tc++)
	{
		int64_t		m = 2000000;
		float	   *y = make_points("expo", m, 8);
		TcPoints	q = {y, m, 8, TC_FLOAT4};
		TcJoinParams slow = {.eps = 0.0135, .method = TC_METHOD_GRID, .device = TC_DEVICE_GPU,
			.tensor_cores = tc ? TC_TENSOR_ON : TC_TENSOR_OFF, .exact = true, .threads = 1};
		TcGpuInfo	before,
					after;

		memset(&c, 0, sizeof(c));
		tc_gpu_list(&before, 1, NULL, 0);
		t0 = tc_now();
		c.stop_at = t0 + 0.3;
		rc = run(&q, slow, &c, &st, &err);
		tc_gpu_list(&after, 1, NULL, 0);
		report(rc == TC_STOPPED && c.stopped_at > 0 && tc_now() - c.stopped_at < 1.0 &&
			   after.free_memory + (64 << 20) >= before.free_memory,
			   "cancel mid-join, tc=%d: status %s, %.3f s after the request (%.3f s in all); "
			   "free GPU memory %zu MB before, %zu MB after",
			   tc, tc_status_name(rc), c.stopped_at > 0 ? tc_now() - c.stopped_at : -1.0,
			   tc_now() - t0, before.free_memory >> 20, after.free_memory >> 20);
		free(c.pairs);
		free(y);
	}

	/*
	 * Cancel during FP16 brute force: 800,000 points in 512 dimensions
	 * (about a second's work on one GPU), more on several so that the
	 * join outlasts the request (the work grows as the square).
	 */
	{
		int64_t		m = (int64_t) (800000 * sqrt((double) distinct_gpus()));
		float	   *y = make_points("uniform", m, 512);
		TcPoints	q = {y, m, 512, TC_FLOAT4};
		TcJoinParams slow = {.eps = 1.0, .method = TC_METHOD_BRUTE, .device = TC_DEVICE_GPU,
			.tensor_cores = TC_TENSOR_ON, .exact = true, .threads = 1};

		memset(&c, 0, sizeof(c));
		t0 = tc_now();
		c.stop_at = t0 + 0.3;
		rc = run(&q, slow, &c, &st, &err);
		report(rc == TC_STOPPED && c.stopped_at > 0 && tc_now() - c.stopped_at < 1.0,
			   "cancel mid-join, FP16 brute force: status %s, %.3f s after the request (%.3f s in all)",
			   tc_status_name(rc), c.stopped_at > 0 ? tc_now() - c.stopped_at : -1.0, tc_now() - t0);
		free(c.pairs);
		free(y);
	}

	/* A memory limit too small for the join: a clear error. */
	memset(&c, 0, sizeof(c));
	params.gpu_memory_limit = 1 << 20;
	rc = run(&p, params, &c, &st, &err);
	report(rc == TC_ERR_NOMEM && strstr(err.message, "gpu_memory_limit") != NULL,
		   "memory limit 1 MB: status %s: %s", tc_status_name(rc), err.message);
	free(c.pairs);
	params.gpu_memory_limit = 0;
	free(x);
}

/*
 * FP16 brute force on data larger than the GPU memory it may take
 * (tcjoin.gpu_memory_limit): streamed in blocks, block pairs in turn, and
 * the pairs bit-identical to the CPU's.  Sizes chosen so that the limit
 * leaves room for a few blocks; the last block is partial.
 */
void
streamed_cases(void)
{
	struct
	{
		const char *kind;
		int64_t		n;
		int			d;
		size_t		limit_kb;
		bool		f8;
		bool		approx;
		bool		mma;		/* the mma.sync kernel (override tile_kernel=mma) */
		int			blocks;		/* the blocks expected; 0: any more than one */
	}			cases[] = {
		{"dups", 30001, 128, 16 << 10, false, false, false, 0},
		{"uniform", 20000, 16, 3 << 10, false, false, false, 0},
		{"expo", 12000, 100, 12 << 10, true, false, false, 0},
		{"uniform", 20000, 784, 64 << 10, false, false, false, 0},
		{"uniform", 20000, 128, 16 << 10, false, true, false, 0},
		{"dups", 30001, 128, 16 << 10, false, false, true, 0},
		/*
		 * blocks of one tile: the result buffers' least (2 MB) and two
		 * tiles' rows fit in 2170 KB, four tiles' do not
		 */
		{"uniform", 2000, 16, 2170, false, false, false, 16},
	};

	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
	{
		int64_t		n = cases[ci].n;
		int			d = cases[ci].d;
		float	   *x = make_points(cases[ci].kind, n, d);
		double	   *x8 = NULL;
		TcPoints	p = {x, n, d, TC_FLOAT4};
		TcJoinParams cpu = {.eps = eps_for(x, n < 5000 ? n : 5000, d, 64), .method = TC_METHOD_BRUTE,
			.device = TC_DEVICE_CPU, .exact = true, .threads = tc_cpu_count()};
		TcJoinParams gpu = cpu;
		Collect		c1 = {0},
					c2 = {0},
					c3 = {0};
		TcJoinStats s1 = {0},
					s2 = {0},
					s3 = {0};
		TcError		e;
		TcStatus	rc;

		if (cases[ci].f8)
		{
			x8 = malloc(sizeof(double) * n * d);
			for (int64_t i = 0; i < n * d; i++)
				x8[i] = (double) x[i] + unit() * 1e-9;
			p.data = x8;
			p.type = TC_FLOAT8;
		}
		gpu.device = TC_DEVICE_GPU;
		gpu.tensor_cores = TC_TENSOR_ON;
		gpu.gpu_memory_limit = cases[ci].limit_kb << 10;
		if (cases[ci].mma)
			gpu.overrides.tile_kernel = TC_TILE_MMA;
		if (cases[ci].approx)
		{
			/* exact => false streamed against exact => false whole: the same pairs */
			TcJoinParams whole;

			gpu.exact = false;
			whole = gpu;
			whole.gpu_memory_limit = 0;
			rc = run(&p, whole, &c1, &s1, &e);
		}
		else
			rc = run(&p, cpu, &c1, &s1, &e);
		/* the reference's failure reads as the case's (its message in e) */
		if (rc == TC_OK)
			rc = run(&p, gpu, &c2, &s2, &e);
		if (rc != TC_OK)
			report(0, "streamed %s n=%lld d=%d, limit %zu KB: %s", cases[ci].kind, (long long) n, d,
				   cases[ci].limit_kb, e.message);
		else
			/*
			 * exact => false: the FP16-32 decision may differ on a pair whose
			 * operands swap roles between the two runs; the counts agree closely
			 */
			report((cases[ci].approx ? fabs((double) c1.n - (double) c2.n) <= 1e-3 * (double) c1.n :
					same_pairs(&c1, &c2)) &&
				   (cases[ci].blocks ? s2.gpu_blocks == cases[ci].blocks : s2.gpu_blocks > 1),
				   "streamed %-8s %s n=%-6lld d=%-4d limit %6zu KB%s: %s, %d blocks, pairs %s %zu gpu %zu, "
				   "%.3f s, rechecked %llu",
				   cases[ci].kind, cases[ci].f8 ? "f8" : "f4", (long long) n, d, cases[ci].limit_kb,
				   cases[ci].approx ? " approx" : "", s2.gpu_kernel ? s2.gpu_kernel : "-", s2.gpu_blocks,
				   cases[ci].approx ? "whole" : "cpu", c1.n, c2.n, s2.join_seconds,
				   (unsigned long long) s2.rechecked);
		/* and the same join with no limit runs whole */
		if (ci == 0)
		{
			gpu.gpu_memory_limit = 0;
			rc = run(&p, gpu, &c3, &s3, &e);
			report(rc == TC_OK && s3.gpu_blocks == 1 && same_pairs(&c1, &c3),
				   "the same join with no memory limit: %d block, %zu pairs", s3.gpu_blocks, c3.n);
			free(c3.pairs);
		}
		free(c1.pairs);
		free(c2.pairs);
		free(x8);
		free(x);
	}
}

/*
 * Hopper's tile kernel in clusters of two blocks (the default there;
 * the override clusters=off keeps them apart): the kernel the stats name follows
 * the setting, and an odd number of tiles (2,900 points, 23 tiles), whose
 * last tile row has no partner in its cluster, gives the CPU's pairs.
 * Elsewhere (mma.sync) only the pairs are checked.
 */
void
cluster_choice(void)
{
	bool		apart = g_overrides.no_clusters;

	for (int d = 16; d <= 256; d *= 4)
	{
		int64_t		n = 2900;
		float	   *x = make_points("uniform", n, d);
		TcPoints	p = {x, n, d, TC_FLOAT4};
		TcJoinParams cpu = {.eps = eps_for(x, n, d, 30), .method = TC_METHOD_BRUTE, .device = TC_DEVICE_CPU,
			.exact = true, .threads = tc_cpu_count()};
		TcJoinParams gpu = cpu;
		Collect		c1 = {0},
					c2 = {0};
		TcJoinStats s1 = {0},
					s2 = {0};
		TcError		e = {0};
		TcStatus	rc;
		const char *k;
		bool		kernel_ok;

		gpu.device = TC_DEVICE_GPU;
		gpu.tensor_cores = TC_TENSOR_ON;
		rc = run(&p, cpu, &c1, &s1, &e);
		if (rc == TC_OK)
			rc = run(&p, gpu, &c2, &s2, &e);
		k = s2.gpu_kernel ? s2.gpu_kernel : "-";
		kernel_ok = strncmp(k, "wgmma", 5) != 0 || (strstr(k, "clusters of 2") == NULL) == apart;
		report(rc == TC_OK && kernel_ok && same_pairs(&c1, &c2),
			   "%d points (23 tiles) d=%d, clusters %s: %s, kernel %s, pairs cpu %zu gpu %zu",
			   (int) n, d, apart ? "off" : "as chosen", rc == TC_OK ? "ran" : e.message, k, c1.n, c2.n);
		free(c1.pairs);
		free(c2.pairs);
		free(x);
	}
}

/*
 * A limit below the least any join takes (2 MB of result buffers): the
 * join fails, saying so, and nothing is returned.
 */
void
limit_too_small(void)
{
	int64_t		n = 2000;
	float	   *x = make_points("uniform", n, 16);
	TcPoints	p = {x, n, 16, TC_FLOAT4};
	TcJoinParams gpu = {.eps = 0.1, .method = TC_METHOD_BRUTE, .device = TC_DEVICE_GPU,
		.tensor_cores = TC_TENSOR_ON, .exact = true, .threads = tc_cpu_count(),
	.gpu_memory_limit = 1 << 20};
	Collect		c = {0};
	TcJoinStats s = {0};
	TcError		e = {0};
	TcStatus	rc = run(&p, gpu, &c, &s, &e);

	report(rc == TC_ERR_NOMEM && c.n == 0 &&
		   strstr(e.message, "tcjoin.gpu_memory_limit (1 MB) is too small for this join") != NULL,
		   "a 1 MB GPU memory limit: %s", rc == TC_OK ? "the join ran" : e.message);
	free(c.pairs);
	free(x);
}

/*
 * A result buffer that is not a power of two (the engine's
 * gpu_result_pairs), halved to fit a memory limit: it must stay at least
 * one Hopper item's pairs (two tiles, 32,768), or a batch of one item
 * whose every pair is a candidate (384 equal points, three tiles) would
 * overflow and be rerun at the same size for ever: 40,000 halved was
 * 20,000.  The limit leaves the set whole (no blocks) but too little room
 * for 40,000 pairs' buffers.  With 512 points (four tiles) an item of
 * Hopper's clusters (two rows against two columns, 65,536 pairs) would
 * not fit either: the join must run without clusters there.
 */
void
result_buffer_halved(void)
{
	for (int64_t n = 384; n <= 512; n += 128)
	{
		int			d = 16;
		float	   *x = malloc(sizeof(float) * n * d);
		TcPoints	p = {x, n, d, TC_FLOAT4};
		TcJoinParams cpu = {.eps = 0.5, .method = TC_METHOD_BRUTE, .device = TC_DEVICE_CPU, .exact = true,
			.threads = tc_cpu_count()};
		TcJoinParams gpu = cpu;
		Collect		c1 = {0},
					c2 = {0};
		TcJoinStats s1 = {0},
					s2 = {0};
		TcError		e = {0};
		TcStatus	rc;

		for (int64_t i = 0; i < n * d; i++)
			x[i] = 1.5f;
		gpu.device = TC_DEVICE_GPU;
		gpu.tensor_cores = TC_TENSOR_ON;
		gpu.gpu_result_pairs = 40000;
		gpu.gpu_memory_limit = 2400 << 10;
		rc = run(&p, cpu, &c1, &s1, &e);
		if (rc == TC_OK)
			rc = run(&p, gpu, &c2, &s2, &e);
		report(rc == TC_OK && s2.gpu_blocks == 1 && same_pairs(&c1, &c2),
			   "%lld equal points, result buffer of 40,000 pairs under a 2,400 KB limit: %s, %d block, "
			   "kernel %s, pairs cpu %zu gpu %zu, %llu reruns", (long long) n,
			   rc == TC_OK ? "ran" : e.message, s2.gpu_blocks, s2.gpu_kernel ? s2.gpu_kernel : "-",
			   c1.n, c2.n, (unsigned long long) s2.gpu_reruns);
		free(c1.pairs);
		free(c2.pairs);
		free(x);
	}
}

/*
 * auto on the GPU below 12 dimensions: the cost model's choice where one
 * side wins by far (8-D, 100,000 points: brute force about 3x cheaper by
 * the model and by measurement; 2-D, a million points: the grid), and
 * the pairs of the chosen engine against the CPU's.
 */
void
auto_cases(void)
{
	struct
	{
		int64_t		n;
		int			d;
		const char *want;
	}			cases[] = {{100000, 8, "brute"}, {1000000, 2, "grid"}};

	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
	{
		int64_t		n = cases[ci].n;
		int			d = cases[ci].d;
		float	   *x = make_points("uniform", n, d);
		TcPoints	p = {x, n, d, TC_FLOAT4};
		TcJoinParams cpu = {.eps = eps_for(x, 20000, d, 64) * pow(20000.0 / (double) n, 1.0 / d),
			.method = TC_METHOD_AUTO, .device = TC_DEVICE_CPU, .exact = true,
			.threads = tc_cpu_count()};
		TcJoinParams gpu = cpu;
		Collect		c1 = {0},
					c2 = {0};
		TcJoinStats s1 = {0},
					s2 = {0};
		TcError		e;
		TcStatus	rc;

		gpu.device = TC_DEVICE_GPU;
		rc = run(&p, cpu, &c1, &s1, &e);
		if (rc == TC_OK)
			rc = run(&p, gpu, &c2, &s2, &e);
		report(rc == TC_OK && s2.method && strcmp(s2.method, cases[ci].want) == 0 &&
			   s2.auto_grid_seconds > 0 && same_pairs(&c1, &c2),
			   "auto on the GPU, uniform n=%lld d=%d: %s (want %s; model: grid %.3f s, brute %.3f s), "
			   "pairs cpu %zu gpu %zu", (long long) n, d, rc == TC_OK ? s2.method : e.message,
			   cases[ci].want, s2.auto_grid_seconds, s2.auto_brute_seconds, c1.n, c2.n);
		free(c1.pairs);
		free(c2.pairs);
		free(x);
	}
}

/*
 * A result buffer far smaller than the result: batches rerun, none lost.
 * with_grid: the grid join's case too (the brute-force passes, whose
 * settings the grid does not read, leave it to the main run: its 94
 * million pairs through 4,096 at a time take a while).
 */
void
small_buffer(bool with_grid)
{
	Collect		c1 = {0},
				c2 = {0};
	TcJoinStats s1,
				s2;
	TcError		e;

	if (with_grid)
	{
		int64_t		n = 200000;
		float	   *x = make_points("expo", n, 2);
		TcPoints	p = {x, n, 2, TC_FLOAT4};
		TcJoinParams cpu = {.eps = 0.002, .method = TC_METHOD_GRID, .device = TC_DEVICE_CPU,
		.exact = true, .threads = tc_cpu_count()};
		TcJoinParams gpu = cpu;

		gpu.device = TC_DEVICE_GPU;
		gpu.gpu_result_pairs = 4096;
		run(&p, cpu, &c1, &s1, &e);
		for (int tc = 0; tc < 2; tc++)
		{
			gpu.tensor_cores = tc ? TC_TENSOR_ON : TC_TENSOR_OFF;
			if (run(&p, gpu, &c2, &s2, &e) != TC_OK)
				report(0, "small result buffer, tc=%d: %s", tc, e.message);
			else
				report(same_pairs(&c1, &c2),
					   "result buffer of 4096 pairs, tc=%d: cpu %zu pairs, gpu %zu pairs", tc, c1.n, c2.n);
			free(c2.pairs);
			memset(&c2, 0, sizeof(c2));
		}
		free(c1.pairs);
		free(x);
	}

	/* The same for brute force on the FP16 tensor cores (a tile at least). */
	{
		int64_t		m = 20000;
		float	   *y = make_points("dups", m, 128);
		TcPoints	q = {y, m, 128, TC_FLOAT4};
		TcJoinParams cb = {.eps = eps_for(y, 5000, 128, 200), .method = TC_METHOD_BRUTE,
			.device = TC_DEVICE_CPU, .exact = true, .threads = tc_cpu_count()};
		TcJoinParams gb = cb;
		TcStatus	rc;

		memset(&c1, 0, sizeof(c1));
		memset(&c2, 0, sizeof(c2));
		gb.device = TC_DEVICE_GPU;
		gb.tensor_cores = TC_TENSOR_ON;
		gb.gpu_result_pairs = 4096;
		run(&q, cb, &c1, &s1, &e);
		/* the first batches sized for almost no pairs: they overflow and are rerun */
		gb.overrides.batch_rate = 1e-6;
		rc = run(&q, gb, &c2, &s2, &e);
		if (rc != TC_OK)
			report(0, "small result buffer, FP16 brute force: %s", e.message);
		else
			report(same_pairs(&c1, &c2) && s2.gpu_batches > 1,
				   "result buffer of one tile, FP16 brute force: cpu %zu pairs, gpu %zu pairs, %lld batches",
				   c1.n, c2.n, (long long) s2.gpu_batches);

		/*
		 * Batches dropped on overflow and rerun count once: with its many
		 * reruns, the counts of candidates and rechecked pairs are those
		 * of the same join with the default buffer.
		 */
		{
			Collect		c3 = {0};
			TcJoinStats s3;

			gb.gpu_result_pairs = 0;
			if (run(&q, gb, &c3, &s3, &e) != TC_OK)
				report(0, "FP16 brute force, default buffer: %s", e.message);
			else
				report(s2.gpu_reruns > 0 && s2.candidates == s3.candidates &&
					   s2.rechecked == s3.rechecked && s2.rechecked > 0,
					   "with reruns, the same counts: candidates %llu and %llu, rechecked %llu and %llu "
					   "(%lld batches, %lld rerun; %lld batches, %lld rerun)",
					   (unsigned long long) s2.candidates, (unsigned long long) s3.candidates,
					   (unsigned long long) s2.rechecked, (unsigned long long) s3.rechecked,
					   (long long) s2.gpu_batches, (long long) s2.gpu_reruns,
					   (long long) s3.gpu_batches, (long long) s3.gpu_reruns);
			free(c3.pairs);
		}
		free(c1.pairs);
		free(c2.pairs);
		free(y);
	}
}

