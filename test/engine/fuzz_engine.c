/*
 * fuzz_engine.c
 *		Fuzz harness for the tcjoin engine: bytes in, one small join out,
 *		checked exactly against the naive reference; abort() on any mismatch.
 *
 * Built with -DTC_LIBFUZZER it is a plain libFuzzer target.  Otherwise a
 * main() drives it with random inputs for TC_FUZZ_SECONDS seconds (default
 * 20; seed from TC_TEST_SEED or the clock), or replays the files named on
 * the command line.
 *
 * Input layout (missing bytes read as 0):
 *	 byte 0		n = b % 72
 *	 byte 1		d = 1 + (b & 0x7f) % 64 if b & 0x80, else 1 + b % 10
 *	 byte 2		bit 0 float8, bit 1 include_self, bits 2-3 method,
 *				bits 4-6 threads - 1
 *	 byte 3		eps mode (see decode_eps)
 *	 byte 4		lattice step and offset of small coordinates
 *	 then per point: 0xff copies an earlier point (next byte picks it);
 *	 otherwise d coordinates, each a byte v: v < 128 a lattice value,
 *	 v < 192 a special value, else a raw float8/float4 from the next bytes.
 *	 Then the eps bytes.
 */
#include "test_common.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef TC_LIBFUZZER
#include <signal.h>
#include <unistd.h>
#endif

typedef struct Reader
{
	const uint8_t *p;
	size_t		n;
	size_t		pos;
} Reader;

static uint8_t
rd_u8(Reader *r)
{
	return r->pos < r->n ? r->p[r->pos++] : 0;
}

static uint64_t
rd_bytes(Reader *r, int count)
{
	uint64_t	v = 0;

	for (int i = 0; i < count; i++)
		v |= (uint64_t) rd_u8(r) << (8 * i);
	return v;
}

/* Values that stress rounding, cancellation, overflow and underflow. */
static const double specials[] = {
	0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 0.2, 0.3, 0.7, -0.3, 2.0, 3.0,
	1e-3, 1e6, 1e6 + 0.1, 1e9, -1e9, 1e9 + 64, 1e-160, 1e-170, -1e-170,
	1e150, 1e155, -1e155, 1e300, -1e300, DBL_TRUE_MIN, DBL_MIN, 1e38, 3e38,
	1e-40, 16777217.0, 9007199254740993.0, 0.1 * 3, 1.0 / 3.0, M_PI
};
#define NSPECIAL (sizeof(specials) / sizeof(specials[0]))

static const double steps[] = {0.1, 1.0, 0.25, 1e-3, 1e-160, 1e150, 0.3, 1e-20};
static const double offsets[] = {0.0, 0.0, 1e6, -1e9, 0.05, 1e-300, 1e20, -7.5};

typedef struct Decoded
{
	TcPoints	pts;
	double		eps;
	int			eps_mode;
	TcJoinParams params;
} Decoded;

static double
fit(double v, TcElemType type)
{
	/* The contract requires finite coordinates in the stored type. */
	if (type == TC_FLOAT4)
		v = (double) (float) v;
	return isfinite(v) ? v : 0.0;
}

static void
decode(const uint8_t *data, size_t size, Decoded *dec)
{
	Reader		r = {data, size, 0};
	int64_t		n = rd_u8(&r) % 72;
	uint8_t		db = rd_u8(&r);
	int32_t		d = (db & 0x80) ? 1 + (db & 0x7f) % 64 : 1 + db % 10;
	uint8_t		flags = rd_u8(&r);
	TcElemType	type = (flags & 1) ? TC_FLOAT8 : TC_FLOAT4;
	int			eps_mode = rd_u8(&r) % 10;
	uint8_t		lat = rd_u8(&r);
	double		step = steps[lat % 8];
	double		offset = offsets[(lat >> 3) % 8];

	memset(&dec->params, 0, sizeof(dec->params));
	dec->params.method = (TcMethod) (((flags >> 2) & 3) % 3);
	dec->params.device = TC_DEVICE_CPU;
	dec->params.exact = true;
	dec->params.include_self = (flags & 2) != 0;
	dec->params.threads = 1 + ((flags >> 4) & 7);

	points_alloc(&dec->pts, n, d, type);
	for (int64_t i = 0; i < n; i++)
	{
		uint8_t		first = rd_u8(&r);

		if (first == 0xff && i > 0)
		{
			int64_t		src = rd_u8(&r) % i;

			for (int32_t k = 0; k < d; k++)
				points_set(&dec->pts, i, k, points_get(&dec->pts, src, k));
			continue;
		}
		for (int32_t k = 0; k < d; k++)
		{
			uint8_t		v = (k == 0) ? first : rd_u8(&r);
			double		x;

			if (v < 128)
				x = offset + step * (double) ((int) v - 64);
			else if (v < 192)
				x = specials[(v - 128) % NSPECIAL];
			else if (type == TC_FLOAT8)
			{
				uint64_t	bits = rd_bytes(&r, 8);

				memcpy(&x, &bits, sizeof(x));
			}
			else
			{
				uint32_t	bits = (uint32_t) rd_bytes(&r, 4);
				float		f;

				memcpy(&f, &bits, sizeof(f));
				x = f;
			}
			points_set(&dec->pts, i, k, fit(x, type));
		}
	}

	/* eps */
	double		eps = 0.0;

	switch (eps_mode)
	{
		case 0:
			eps = 0.0;
			break;
		case 1:					/* an exact pair distance: boundary */
		case 2:					/* just below it */
		case 3:					/* just above it */
			if (n >= 1)
			{
				int64_t		i = rd_u8(&r) % n;
				int64_t		j = rd_u8(&r) % n;

				eps = ref_dist(&dec->pts, i, &dec->pts, j);
				if (!isfinite(eps))
					eps = 0.0;
				if (eps_mode == 2 && eps > 0)
					eps = nextafter(eps, 0.0);
				if (eps_mode == 3 && eps < DBL_MAX)
					eps = nextafter(eps, INFINITY);
			}
			break;
		case 4:
			{
				uint64_t	bits = rd_bytes(&r, 8) & ~(UINT64_C(1) << 63);

				memcpy(&eps, &bits, sizeof(eps));
				if (!isfinite(eps))
					eps = 1.0;
			}
			break;
		case 5:
			eps = fabs(specials[rd_u8(&r) % NSPECIAL]);
			break;
		case 6:
			eps = 1e200;
			break;
		case 7:
			eps = DBL_MAX;
			break;
		default:				/* a multiple of the lattice step */
			eps = step * (double) (rd_u8(&r) % 16);
			break;
	}
	dec->eps = eps;
	dec->eps_mode = eps_mode;
	dec->params.eps = eps;
}

typedef struct Sink
{
	PairVec		pairs;
} Sink;

static int
sink_emit(void *arg, const TcPair *pairs, size_t count)
{
	pairvec_append(&((Sink *) arg)->pairs, pairs, count);
	return 0;
}

static int
sink_poll(void *arg)
{
	(void) arg;
	return 0;
}

static void
describe(const Decoded *dec)
{
	fprintf(stderr, "config: n=%" PRId64 " d=%d %s eps=%.17g (%a, mode %d) method=%d threads=%d self=%d\n",
			dec->pts.n, dec->pts.d, dec->pts.type == TC_FLOAT4 ? "float4" : "float8",
			dec->eps, dec->eps, dec->eps_mode, (int) dec->params.method,
			dec->params.threads, (int) dec->params.include_self);
	for (int64_t i = 0; i < dec->pts.n && i < 16; i++)
	{
		fprintf(stderr, "  p%" PRId64 ":", i);
		for (int32_t k = 0; k < dec->pts.d && k < 8; k++)
			fprintf(stderr, " %a", points_get(&dec->pts, i, k));
		fprintf(stderr, dec->pts.d > 8 ? " ...\n" : "\n");
	}
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Decoded		dec;
	TcError		err;
	TcJoin	   *join;
	Sink		s = {{0}};
	TcSink		sink = {sink_emit, sink_poll, &s, 0, NULL, NULL, NULL};
	TcJoinStats stats;
	PairVec		want = {0};
	TcStatus	st;
	bool		bad = false;

	decode(data, size, &dec);
	memset(&err, 0, sizeof(err));
	join = tc_join_create(&dec.pts, NULL, &dec.params, &err);
	if (!join)
	{
		describe(&dec);
		fprintf(stderr, "tc_join_create failed: %s: %s\n",
				tc_status_name(err.status), err.message);
		abort();
	}
	st = tc_join_run(join, &sink, &err);
	tc_join_get_stats(join, &stats);
	tc_join_destroy(join);
	if (st != TC_OK)
	{
		describe(&dec);
		fprintf(stderr, "tc_join_run returned %s: %s\n", tc_status_name(st), err.message);
		abort();
	}
	if (stats.pairs != s.pairs.n)
	{
		fprintf(stderr, "stats.pairs = %" PRIu64 " but %zu pairs emitted\n",
				stats.pairs, s.pairs.n);
		bad = true;
	}
	for (size_t i = 0; i < s.pairs.n; i++)
	{
		const TcPair *p = &s.pairs.v[i];

		if (p->a < 0 || p->a >= dec.pts.n || p->b < 0 || p->b >= dec.pts.n)
		{
			fprintf(stderr, "pair index out of range: (%" PRId64 ", %" PRId64 ")\n",
					p->a, p->b);
			bad = true;
			break;
		}
	}

	if (!bad)
	{
		pairvec_sort(&s.pairs, true, dec.pts.n);
		ref_join(&dec.pts, NULL, dec.eps, dec.params.include_self, &want);
		if (compare_pairs("fuzz", &s.pairs, &want, 10) > 0)
			bad = true;
	}
	if (bad)
	{
		fflush(stdout);
		describe(&dec);
		abort();
	}
	pairvec_free(&want);
	pairvec_free(&s.pairs);
	points_free(&dec.pts);
	return 0;
}

#ifndef TC_LIBFUZZER

/* Random inputs, biased so that most coordinates are lattice or specials. */
static size_t
random_input(Rng *r, uint8_t *buf, size_t cap)
{
	size_t		len = 5 + (size_t) rng_below(r, cap - 5);
	unsigned	raw_share = (unsigned) rng_below(r, 4); /* in 8ths */

	for (size_t i = 0; i < len; i++)
	{
		uint8_t		b = (uint8_t) rng_next(r);

		if (i >= 5 && b >= 192 && rng_below(r, 8) >= raw_share)
			b = (uint8_t) rng_below(r, 192);
		buf[i] = b;
	}
	/* Mostly small n and d, so each run is cheap. */
	if (rng_below(r, 4) != 0)
		buf[1] &= 0x7f;
	return len;
}

/* On a failure, save the input so that it can be replayed alone. */
static const uint8_t *g_input;
static size_t g_input_len;

static void
save_input(int sig)
{
	static const char msg[] = "fuzz_engine: failing input saved to fuzz-crash.bin "
		"(replay: fuzz_engine fuzz-crash.bin)\n";
	FILE	   *f = fopen("fuzz-crash.bin", "wb");

	if (f)
	{
		fwrite(g_input, 1, g_input_len, f);
		fclose(f);
		(void) !write(STDERR_FILENO, msg, sizeof(msg) - 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static int
replay_file(const char *path)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *buf;
	long		len;

	if (!f)
	{
		perror(path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t) (len > 0 ? len : 1));
	if (!buf || fread(buf, 1, (size_t) len, f) != (size_t) len)
	{
		fclose(f);
		free(buf);
		fprintf(stderr, "%s: read error\n", path);
		return 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t) len);
	free(buf);
	printf("%s: ok\n", path);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *sec_env = getenv("TC_FUZZ_SECONDS");
	const char *seed_env = getenv("TC_TEST_SEED");
	double		seconds = sec_env ? atof(sec_env) : 20.0;
	uint64_t	seed;
	Rng			r;
	uint8_t		buf[4096];
	uint64_t	iters = 0;
	double		start = now_seconds();

	if (argc > 1)
	{
		int			rc = 0;

		for (int i = 1; i < argc; i++)
			rc |= replay_file(argv[i]);
		return rc;
	}

	if (seed_env && *seed_env)
		seed = strtoull(seed_env, NULL, 0);
	else
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = mix_seed((uint64_t) ts.tv_sec, (uint64_t) ts.tv_nsec);
	}
	printf("fuzz_engine: seed 0x%016" PRIx64 " (repeat with TC_TEST_SEED=0x%016" PRIx64 "), %.0f s\n",
		   seed, seed, seconds);
	fflush(stdout);
	rng_seed(&r, seed);
	signal(SIGABRT, save_input);
	signal(SIGSEGV, save_input);
	signal(SIGBUS, save_input);
	signal(SIGFPE, save_input);
	while (now_seconds() - start < seconds)
	{
		/* Each input gets its own seed, so a failure can be replayed alone. */
		for (int k = 0; k < 64; k++)
		{
			uint64_t	iseed = rng_next(&r);
			Rng			ir;
			size_t		len;

			rng_seed(&ir, iseed);
			len = random_input(&ir, buf, sizeof(buf));
			g_input = buf;
			g_input_len = len;
			LLVMFuzzerTestOneInput(buf, len);
			iters++;
		}
	}
	printf("fuzz_engine: %" PRIu64 " inputs, no mismatch\n", iters);
	return 0;
}

#endif							/* TC_LIBFUZZER */
