/*
 * tcbench.c
 *		Engine-only benchmark: no PostgreSQL, so the figures are the join's.
 *
 *	tcbench [options]
 *	  --file F          raw little-endian float32, row-major n x d
 *	  --gen KIND        synthetic data: uniform | expo (rate 40) | gauss |
 *	                    cluster (Gaussian clusters of about 128 points,
 *	                    sigma 0.02 around uniform centres: neighbours local) |
 *	                    neardup (unit vectors in random directions, every
 *	                    20th a near duplicate of the one before: cosine
 *	                    distance below 0.012)
 *	  --n N --d D       size (with --file: d is required, n defaults to all;
 *	                    a smaller n takes the first n rows)
 *	  --queries M       a join of two sets: M query points against the n
 *	                    points (the corpus), tc_join_create(queries, corpus):
 *	                    with --gen, n + M points drawn as one set (clusters
 *	                    drawn for n points), the corpus the first n, the same
 *	                    as without --queries, the queries the M after them;
 *	                    with --file, the corpus its first n rows (default all
 *	                    but M) and the queries the M rows after them
 *	  --seed S          seed for --gen (default 1)
 *	  --eps E           threshold; or --neighbours K to pick eps by sampling
 *	                    for K neighbours per point on average (with
 *	                    --queries: K matches in the corpus per query)
 *	  --calibrate       with --neighbours: refine the sampled eps by counting
 *	                    the pairs of whole joins (this run's device, method
 *	                    and exactness) until they are within 2% of n K / 2
 *	                    (with --queries, M K);
 *	                    sampling alone can miss by 2x where per-point counts
 *	                    are heavy-tailed (high-dimensional Gaussian data)
 *	  --eps-only        print the chosen eps and exit (with --neighbours)
 *	  --write F         write the points as raw float32 to F and exit (with
 *	                    --queries, the corpus then the queries: --file F
 *	                    --queries M reads them back as they were)
 *	  --method M        auto | grid | brute (default auto)
 *	  --metric M        euclidean | cosine | inner_product (default euclidean)
 *	  --threads T       compute threads (default: all CPUs)
 *	  --type T          f4 | f8: element type handed to the engine (default f4)
 *	  --device D        cpu | gpu | auto (default cpu)
 *	  --exact on|off    off allows approximate arithmetic (default on)
 *	  --tensor-cores auto|on|off
 *	                    FP64 tensor cores for the GPU grid's filter (default
 *	                    auto); the output says what the join used
 *	  --sink sum|count|fold
 *	                    sum: the sink reads every pair's dist into a
 *	                    checksum (default); count: it counts the pairs, which
 *	                    are in host memory, without reading them; fold: the
 *	                    GPU counts them on the device, where they stay
 *	                    (tc_count's way; the CPU as count)
 *	  --reps R          repeats (default 3); the median is reported
 *	  --gpu-memory MB   GPU memory a join may take (tcjoin.gpu_memory_limit;
 *	                    default 0, no limit): FP16 brute force streams past it
 *	  --devices LIST    the GPUs a GPU join may use (tcjoin.devices' syntax):
 *	                    all (default: every GPU the process sees) or GPU
 *	                    numbers such as 0,1; a number may repeat (0,0: the
 *	                    several-GPU path on one GPU).  The output says which
 *	                    GPUs ran the join and each one's share of its work
 *	  --override TEXT   developer overrides (tcjoin.dev_overrides' syntax,
 *	                    docs/developing.md): force a kernel, a recheck, ...
 *	  --csv             one CSV line instead of the table row
 *
 * Each run includes index building; pairs are delivered to a sink in host
 * memory (the engine's output path, minus PostgreSQL).  Phase times
 * and counts are those of the median run.
 *
 * --csv columns, in order (the first 17 are the original ones; keep it so):
 *	source, type, n, d, eps, method (asked), method (used), threads,
 *	grid_dims, wall_med_s, wall_min_s, wall_max_s, cpu_med_s, index_s,
 *	candidates, pairs, reps, join_s, load_s, cells, device, exact,
 *	tensor_cores (what the join used: on, off, or the option given when it
 *	did not run), status, rechecked, checksum, filter_s, recheck_s (GPU
 *	brute force: its kernels' time, the tensor-core filter's and the exact
 *	recheck's; 0 otherwise), queries (M; 0 in a self-join), join_med_s
 *	(the median of the runs' join phases; join_s is the median run's),
 *	devices (--devices, its numbers separated by ';', or "all"), gpus (how
 *	many GPUs ran the median run's join; 0 on the CPU), gpu_ids and
 *	gpu_shares (theirs, separated by ';': each GPU's share of the join
 *	phase's work; "-" for none)
 * status is "ok", "n/a (no GPU)" (the engine found no usable GPU) or
 * "not built" (the engine cannot run this variant); those rows have zero
 * times and counts and the exit status is 0.  Other errors exit with 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "tcbench_data.h"

typedef struct Options
{
	const char *file;
	const char *gen;
	const char *write;
	int64_t		n;
	int64_t		queries;		/* --queries: query points; 0, a self-join */
	int			d;
	uint64_t	seed;
	double		eps;
	double		neighbours;
	int			eps_only;
	int			calibrate;
	TcMethod	method;
	const char *method_name;
	int			threads;
	TcElemType	type;
	TcDevice	device;
	bool		exact;
	TcMetric	metric;
	long		gpu_memory_mb;	/* 0: no limit */
	int			ndevices;		/* 0: every GPU the process sees */
	int			devices[TC_MAX_DEVICES];
	const char *tensor_cores;	/* "on", "off", "auto", or "-" when not given */
	TcTensorCores tc;
	bool		sink_sum;
	bool		sink_fold;		/* the GPU counts on the device (tc_count's way) */
	int			reps;
	int			csv;
	TcOverrides overrides;		/* --override */
} Options;

/* One timed run. */
typedef struct Run
{
	double		wall;
	double		cpu;
	TcJoinStats stats;
	uint64_t	pairs;
	double		checksum;
} Run;

static bool
on_off(const char *v)
{
	if (strcmp(v, "on") == 0)
		return true;
	if (strcmp(v, "off") != 0)
		tcbench_die("expected on or off");
	return false;
}

static int
cmp_double(const void *x, const void *y)
{
	double		a = *(const double *) x,
				b = *(const double *) y;

	return (a > b) - (a < b);
}

static int
cmp_run_wall(const void *x, const void *y)
{
	return cmp_double(&((const Run *) x)->wall, &((const Run *) y)->wall);
}

typedef struct Counter
{
	uint64_t	pairs;
	double		checksum;
} Counter;

static int
sum_pairs(void *arg, const TcPair *pairs, size_t count)
{
	Counter    *c = arg;

	c->pairs += count;
	for (size_t i = 0; i < count; i++)
		c->checksum += pairs[i].dist;
	return 0;
}

static int
count_pairs(void *arg, const TcPair *pairs, size_t count)
{
	Counter    *c = arg;

	(void) pairs;
	c->pairs += count;
	return 0;
}

static double
cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static void
parse_args(int argc, char **argv, Options *o)
{
	for (int i = 1; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--csv") == 0)
		{
			o->csv = 1;
			continue;
		}
		if (strcmp(a, "--eps-only") == 0)
		{
			o->eps_only = 1;
			continue;
		}
		if (strcmp(a, "--calibrate") == 0)
		{
			o->calibrate = 1;
			continue;
		}
		if (v == NULL)
			tcbench_die("missing value");
		i++;
		if (strcmp(a, "--file") == 0)
			o->file = v;
		else if (strcmp(a, "--gen") == 0)
			o->gen = v;
		else if (strcmp(a, "--write") == 0)
			o->write = v;
		else if (strcmp(a, "--n") == 0)
			o->n = atoll(v);
		else if (strcmp(a, "--queries") == 0)
		{
			o->queries = atoll(v);
			if (o->queries < 1)
				tcbench_die("--queries takes a count, 1 or more");
		}
		else if (strcmp(a, "--d") == 0)
			o->d = atoi(v);
		else if (strcmp(a, "--seed") == 0)
			o->seed = strtoull(v, NULL, 10);
		else if (strcmp(a, "--eps") == 0)
			o->eps = atof(v);
		else if (strcmp(a, "--neighbours") == 0)
			o->neighbours = atof(v);
		else if (strcmp(a, "--threads") == 0)
			o->threads = atoi(v);
		else if (strcmp(a, "--reps") == 0)
			o->reps = atoi(v);
		else if (strcmp(a, "--device") == 0)
			o->device = strcmp(v, "gpu") == 0 ? TC_DEVICE_GPU :
				strcmp(v, "auto") == 0 ? TC_DEVICE_AUTO : TC_DEVICE_CPU;
		else if (strcmp(a, "--exact") == 0)
			o->exact = on_off(v);
		else if (strcmp(a, "--metric") == 0)
			o->metric = strcmp(v, "cosine") == 0 ? TC_METRIC_COSINE :
				strcmp(v, "inner_product") == 0 ? TC_METRIC_INNER_PRODUCT : TC_METRIC_EUCLIDEAN;
		else if (strcmp(a, "--tensor-cores") == 0)
		{
			o->tensor_cores = strcmp(v, "auto") == 0 ? "auto" : on_off(v) ? "on" : "off";
			o->tc = strcmp(v, "auto") == 0 ? TC_TENSOR_AUTO : on_off(v) ? TC_TENSOR_ON : TC_TENSOR_OFF;
		}
		else if (strcmp(a, "--gpu-memory") == 0)
		{
			o->gpu_memory_mb = atol(v);
			if (o->gpu_memory_mb < 0)
				tcbench_die("--gpu-memory takes megabytes, 0 or more");
		}
		else if (strcmp(a, "--devices") == 0)
		{
			char		msg[256];

			if (!tc_devices_parse(v, o->devices, &o->ndevices, msg, sizeof(msg)))
			{
				fprintf(stderr, "tcbench: --devices: %s\n", msg);
				exit(1);
			}
		}
		else if (strcmp(a, "--sink") == 0)
		{
			o->sink_sum = strcmp(v, "sum") == 0;
			o->sink_fold = strcmp(v, "fold") == 0;
			if (!o->sink_sum && !o->sink_fold && strcmp(v, "count") != 0)
				tcbench_die("--sink takes sum, count or fold");
		}
		else if (strcmp(a, "--type") == 0)
			o->type = strcmp(v, "f8") == 0 ? TC_FLOAT8 : TC_FLOAT4;
		else if (strcmp(a, "--override") == 0)
		{
			char		msg[256];

			if (!tc_overrides_parse(v, &o->overrides, msg, sizeof(msg)))
			{
				fprintf(stderr, "tcbench: --override: %s\n", msg);
				exit(1);
			}
		}
		else if (strcmp(a, "--method") == 0)
		{
			o->method_name = v;
			o->method = strcmp(v, "grid") == 0 ? TC_METHOD_GRID :
				strcmp(v, "brute") == 0 ? TC_METHOD_BRUTE : TC_METHOD_AUTO;
		}
		else
			tcbench_die("unknown option");
	}
	if (o->threads <= 0)
		o->threads = tc_cpu_count();
	if (o->reps < 1)
		o->reps = 1;
}

static const char *
device_name(TcDevice device)
{
	return device == TC_DEVICE_GPU ? "gpu" : device == TC_DEVICE_AUTO ? "auto" : "cpu";
}

/* The GPUs that ran a join and their shares, separated by sep ("-" for none). */
static void
gpu_lists(const TcJoinStats *st, char sep, char *ids, char *shares, size_t len)
{
	size_t		a = 0,
				b = 0;
	char		s[2] = {sep, '\0'};

	snprintf(ids, len, "-");
	snprintf(shares, len, "-");
	for (int i = 0; i < st->gpus && i < TC_MAX_DEVICES && a < len && b < len; i++)
	{
		a += (size_t) snprintf(ids + a, len - a, "%s%d", i ? s : "", st->gpu_ids[i]);
		b += (size_t) snprintf(shares + b, len - b, "%s%.4f", i ? s : "", st->gpu_share[i]);
	}
}

static void
report(const Options *o, int64_t n, double load_s, Run *runs, const char *status)
{
	const Run  *med = &runs[o->reps / 2];
	double	   *joins = malloc(sizeof(double) * o->reps);
	double		join_med;
	const TcJoinStats *st = &med->stats;
	const char *source = o->file ? o->file : o->gen;
	const char *type = o->type == TC_FLOAT4 ? "f4" : "f8";
	const char *used = st->method ? st->method : "-";
	const char *device = st->device ? st->device : device_name(o->device);
	const char *tc = strcmp(status, "ok") != 0 ? o->tensor_cores :
		st->tensor_cores ? "on" : "off";
	char		ids[200],
				shares[200],
				asked[200] = "all";	/* --devices, separated by sep */

	if (joins == NULL)
		tcbench_die("out of memory");
	for (int r = 0; r < o->reps; r++)
		joins[r] = runs[r].stats.join_seconds;
	qsort(joins, o->reps, sizeof(double), cmp_double);
	join_med = joins[o->reps / 2];
	free(joins);
	gpu_lists(st, o->csv ? ';' : ' ', ids, shares, sizeof(ids));
	for (int i = 0, len = 0; i < o->ndevices && len < (int) sizeof(asked); i++)
		len += snprintf(asked + len, sizeof(asked) - len, "%s%d", i ? (o->csv ? ";" : ",") : "",
						o->devices[i]);
	if (o->csv)
		printf("%s,%s,%lld,%d,%.9g,%s,%s,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%llu,%llu,%d,"
			   "%.6f,%.6f,%lld,%s,%s,%s,%s,%llu,%.17g,%.6f,%.6f,%lld,%.6f,%s,%d,%s,%s\n",
			   source, type, (long long) n, o->d, o->eps, o->method_name, used, o->threads,
			   st->grid_dims, med->wall, runs[0].wall, runs[o->reps - 1].wall,
			   med->cpu, st->index_seconds,
			   (unsigned long long) st->candidates,
			   (unsigned long long) med->pairs, o->reps,
			   st->join_seconds, load_s, (long long) st->cells, device,
			   o->exact ? "on" : "off", tc, status,
			   (unsigned long long) st->rechecked, med->checksum,
			   st->gpu_recheck_seconds > 0 ? st->gpu_kernel_seconds - st->gpu_recheck_seconds : 0.0,
			   st->gpu_recheck_seconds, (long long) o->queries, join_med, asked, st->gpus,
			   ids, shares);
	else if (strcmp(status, "ok") != 0)
		printf("%-10s %-3s n=%-9lld d=%-4d eps=%-10.4g %s %-5s exact=%s tc=%s  %s\n",
			   o->file ? "file" : o->gen, type, (long long) n, o->d, o->eps, device,
			   o->method_name, o->exact ? "on" : "off", o->tensor_cores, status);
	else
		printf("%-10s %-3s n=%-9lld d=%-4d eps=%-10.4g %s %-5s->%-5s tc=%-3s thr=%-2d dims=%d  "
			   "median %8.3f s (%.3f-%.3f)  cpu %8.3f s  index %.3f s  cand %llu  rechecked %llu  pairs %llu  %.1f Mpairs/s\n",
			   o->file ? "file" : o->gen, type, (long long) n, o->d, o->eps, device,
			   o->method_name, used, tc, o->threads, st->grid_dims,
			   med->wall, runs[0].wall, runs[o->reps - 1].wall,
			   med->cpu, st->index_seconds,
			   (unsigned long long) st->candidates,
			   (unsigned long long) st->rechecked,
			   (unsigned long long) med->pairs,
			   med->pairs / med->wall / 1e6);
	if (strcmp(status, "ok") == 0 && !o->csv && o->queries > 0)
		printf("  two sets: %lld queries against the n corpus points, %.2f pairs a query; "
			   "join phase median %.3f s\n",
			   (long long) o->queries, (double) med->pairs / (double) o->queries, join_med);
	/* several GPUs, or a list asked for: which ran and how the work was split */
	if (strcmp(status, "ok") == 0 && !o->csv && (st->gpus > 1 || o->ndevices > 0))
		printf("  devices %s: %d GPU%s ran the join (%s), shares of its work %s; join phase median %.3f s\n",
			   asked, st->gpus, st->gpus == 1 ? "" : "s", ids, shares, join_med);
	if (strcmp(status, "ok") == 0 && !o->csv && o->metric != TC_METRIC_EUCLIDEAN)
		printf("  metric %s, filter %s\n", st->metric ? st->metric : "-", st->filter ? st->filter : "-");
	if (strcmp(status, "ok") == 0 && !o->csv && st->gpu_batches > 0)
		printf("  gpu: %lld batches (%lld rerun), kernels %.3f s, waiting for kernels %.3f s, pairs to the sink %.3f s, "
			   "join phase %.3f s\n",
			   (long long) st->gpu_batches, (long long) st->gpu_reruns, st->gpu_kernel_seconds, st->gpu_wait_seconds,
			   st->gpu_drain_seconds, st->join_seconds);
	if (strcmp(status, "ok") == 0 && !o->csv && st->method && strcmp(st->method, "brute") == 0)
	{
		/*
		 * The papers' count: 2 n^2 d, whether or not symmetry halves it; 2 m
		 * n d for m queries, a GEMM's.
		 */
		double		flops = 2.0 * (double) (o->queries > 0 ? o->queries : n) * (double) n * o->d;

		printf("  brute force: %.1f TFLOP/s end to end, %.1f TFLOP/s in the join phase, "
			   "%.4f%% of candidates rechecked, %llu of %llu tile pairs kept by pruning\n",
			   flops / med->wall / 1e12, st->join_seconds > 0 ? flops / st->join_seconds / 1e12 : 0.0,
			   st->candidates ? 100.0 * (double) st->rechecked / (double) st->candidates : 0.0,
			   (unsigned long long) st->gpu_tile_pairs_kept, (unsigned long long) st->gpu_tile_pairs);
		if (st->gpu_kernel)
		{
			double		filter_s = st->gpu_kernel_seconds - st->gpu_recheck_seconds;

			printf("  brute force on the GPU: %s kernel, %s recheck; upload %.3f s, ordering %.3f s; %d block%s\n",
				   st->gpu_kernel, st->gpu_recheck ? st->gpu_recheck : "no", st->gpu_upload_seconds,
				   st->gpu_order_seconds, st->gpu_blocks, st->gpu_blocks == 1 ? " (whole)" : "s, streamed");
			printf("  of the kernels: the tensor-core filter %.3f s (%.1f TFLOP/s), the exact recheck adds %.3f s\n",
				   filter_s, filter_s > 0 ? flops / filter_s / 1e12 : 0.0, st->gpu_recheck_seconds);
		}
	}
	if (strcmp(status, "ok") == 0 && !o->csv && st->auto_grid_seconds > 0)
		printf("  auto on the GPU: %s (cost model: grid %.3f s, FP16 brute force %.3f s)\n",
			   st->method, st->auto_grid_seconds, st->auto_brute_seconds);
}

/* The join's parameters under the options, at eps. */
static TcJoinParams
join_params(const Options *o, double eps)
{
	TcJoinParams params = {.eps = eps, .metric = o->metric, .method = o->method, .device = o->device,
		.tensor_cores = o->tc, .exact = o->exact, .threads = o->threads,
	.gpu_memory_limit = (size_t) o->gpu_memory_mb << 20, .overrides = o->overrides};

	params.ndevices = o->ndevices;
	memcpy(params.devices, o->devices, sizeof(params.devices));
	return params;
}

/*
 * The run's join at eps: the corpus (data's first n rows) with itself, or
 * the queries (the rows after them) against it.  sets holds the point sets,
 * which must outlive the join.
 */
static TcJoin *
create_join(const Options *o, const void *data, int64_t n, double eps, TcPoints sets[2],
			TcError *err)
{
	size_t		elem = o->type == TC_FLOAT4 ? sizeof(float) : sizeof(double);
	TcJoinParams params = join_params(o, eps);

	sets[0] = (TcPoints) {.data = data, .n = n, .d = o->d, .type = o->type};
	sets[1] = (TcPoints) {.data = (const char *) data + elem * n * o->d, .n = o->queries,
	.d = o->d, .type = o->type};
	if (o->queries > 0)
		return tc_join_create(&sets[1], &sets[0], &params, err);
	return tc_join_create(&sets[0], NULL, &params, err);
}

/* The pairs of one whole join at eps (this run's settings); -1: no GPU. */
static int64_t
join_count(const Options *o, void *data, int64_t n, double eps)
{
	TcPoints	sets[2];
	Counter		counter = {0};
	TcSink		sink = {.emit = count_pairs, .poll = NULL, .arg = &counter};
	TcError		err;
	TcJoin	   *join = create_join(o, data, n, eps, sets, &err);
	TcStatus	st = join ? tc_join_run(join, &sink, &err) : err.status;

	tc_join_destroy(join);
	if (st == TC_ERR_NO_GPU)
		return -1;
	if (st != TC_OK)
	{
		fprintf(stderr, "tcbench: %s\n", err.message);
		exit(1);
	}
	return (int64_t) counter.pairs;
}

/*
 * --calibrate: eps such that the join returns n k / 2 pairs (m k with m
 * queries), within 2%.
 * Pairs grow as a power of eps (steeply where distances concentrate), so
 * the steps are secants in log-log space, kept inside the bracket found so
 * far (a geometric bisection where a secant would leave it); at most 12
 * joins.  The sampled eps is the start; its guess of the power is d.
 */
static double
calibrate_eps(const Options *o, void *data, int64_t n, double eps)
{
	double		target = o->queries > 0 ? (double) o->queries * o->neighbours :
		(double) n * o->neighbours / 2,
				lo = 0,			/* the bracket: fewer pairs at lo, more at hi */
				hi = 0,
				prev_e = 0, prev_c = 0,
				t0 = tc_now();
	int			joins = 0;
	int64_t		c = -1;
	bool		within = false;

	if (target < 1)
		return eps;
	for (; joins < 12; joins++)
	{
		double		next;

		c = join_count(o, data, n, eps);
		if (c < 0)
			return eps;			/* no GPU: the run reports it */
		if (fabs((double) c - target) <= 0.02 * target)
		{
			within = true;
			joins++;
			break;
		}
		if ((double) c < target && (lo == 0 || eps > lo))
			lo = eps;
		if ((double) c > target && (hi == 0 || eps < hi))
			hi = eps;
		if (prev_e > 0 && prev_c > 0 && c > 0 && prev_e != eps && prev_c != (double) c)
		{
			double		power = log((double) c / prev_c) / log(eps / prev_e);

			next = eps * pow(target / (double) c, 1.0 / power);
		}
		else
			next = eps * pow(target / fmax((double) c, 0.5), 1.0 / o->d);
		/* inside the bracket, or a geometric bisection of it */
		if (lo > 0 && hi > 0 && !(next > lo && next < hi))
			next = sqrt(lo * hi);
		else if (!(next > 0) || !isfinite(next))
			next = c < target ? eps * 2 : eps / 2;
		prev_e = eps, prev_c = (double) c;
		eps = next;
	}
	if (within)
		fprintf(stderr, "tcbench: eps %.9g calibrated by %d joins: %lld pairs, %.0f asked (%.1f s)\n",
				eps, joins, (long long) c, target, tc_now() - t0);
	else						/* the last eps is the next step's, not counted */
		fprintf(stderr, "tcbench: eps %.9g after %d joins, not within 2%%: %lld pairs at eps %.9g, %.0f asked\n",
				eps, joins, (long long) c, prev_e, target);
	return eps;
}

int
main(int argc, char **argv)
{
	Options		o = {.gen = "uniform", .seed = 1, .eps = NAN, .method = TC_METHOD_AUTO,
		.method_name = "auto", .threads = 0, .type = TC_FLOAT4, .device = TC_DEVICE_CPU,
	.exact = true, .tensor_cores = "-", .tc = TC_TENSOR_AUTO, .sink_sum = true, .reps = 3};
	int64_t		n,
				rows;			/* the corpus's and the queries' */
	float	   *pts;
	void	   *data;
	double		load_s;
	Run		   *runs;
	Counter		counter = {0};
	DataSpec	spec;

	parse_args(argc, argv, &o);
	spec = (DataSpec) {.file = o.file, .gen = o.gen, .n = o.n, .queries = o.queries, .d = o.d,
	.seed = o.seed};

	load_s = tc_now();
	pts = tcbench_load(&spec, &n);
	load_s = tc_now() - load_s;
	rows = n + o.queries;
	if (o.write)
	{
		FILE	   *f = fopen(o.write, "wb");

		if (f == NULL || fwrite(pts, sizeof(float) * o.d, rows, f) != (size_t) rows || fclose(f) != 0)
			tcbench_die("cannot write --write");
		return 0;
	}
	if (isnan(o.eps) && o.neighbours > 0)
		o.eps = tcbench_eps_for_neighbours(pts, n, o.queries > 0 ? pts + n * o.d : NULL,
										   o.queries, o.d, o.neighbours, o.threads);
	if (isnan(o.eps))
		tcbench_die("--eps or --neighbours is required");
	if (o.type == TC_FLOAT8)
	{
		double	   *p8 = malloc(sizeof(double) * rows * o.d);

		if (p8 == NULL)
			tcbench_die("out of memory");
		for (int64_t i = 0; i < rows * o.d; i++)
			p8[i] = pts[i];
		data = p8;
	}
	else
		data = pts;
	if (o.calibrate && o.neighbours > 0)
		o.eps = calibrate_eps(&o, data, n, o.eps);
	if (o.eps_only)
	{
		printf("%.9g\n", o.eps);
		return 0;
	}

	runs = calloc(o.reps, sizeof(Run));
	for (int r = 0; r < o.reps; r++)
	{
		TcPoints	sets[2];
		TcDeviceFold fold = {.kind = TC_FOLD_COUNT, .n = o.queries > 0 ? o.queries : n};
		TcSink		sink = {.emit = o.sink_sum ? sum_pairs : count_pairs, .poll = NULL,
		.arg = &counter, .fold = o.sink_fold ? &fold : NULL};
		TcError		err;
		TcJoin	   *join;
		TcStatus	st = TC_OK;
		double		t0 = tc_now(),
					c0 = cpu_seconds();

		counter.pairs = 0;
		counter.checksum = 0;
		join = create_join(&o, data, n, o.eps, sets, &err);
		if (join == NULL || (st = tc_join_run(join, &sink, &err)) != TC_OK)
		{
			if (join == NULL)
				st = err.status;
			tc_join_destroy(join);
			fprintf(stderr, "tcbench: %s\n", err.message);
			if (st == TC_ERR_NO_GPU)
			{
				memset(runs, 0, sizeof(Run) * o.reps);
				report(&o, n, load_s, runs, "n/a (no GPU)");
				return 0;
			}
			return 1;
		}
		runs[r].wall = tc_now() - t0;
		runs[r].cpu = cpu_seconds() - c0;
		tc_join_get_stats(join, &runs[r].stats);
		/* folded on the GPU, the pairs never reach the sink: the join counted them */
		runs[r].pairs = fold.folded ? runs[r].stats.pairs : counter.pairs;
		runs[r].checksum = counter.checksum;
		tc_join_destroy(join);
	}
	qsort(runs, o.reps, sizeof(Run), cmp_run_wall);
	report(&o, n, load_s, runs, "ok");
	return 0;
}
