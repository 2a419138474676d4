/*
 * functions.c
 *		The joins' SQL entry points, tc_selfjoin and tc_join (with k, its
 *		ranked overload): argument checks (shared with graphs.c), then load,
 *		run and record.
 *
 * Each validates its arguments, loads the vector columns (load.c), runs the
 * engine (output.c) and returns the pairs in materialize mode, so the
 * executor's tuplestore spills to disk past work_mem.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timeout.h"

#include "engine.h"
#include "load.h"
#include "output.h"
#include "tcjoin.h"

TcMethod
tc_parse_method(const char *name)
{
	if (strcmp(name, "auto") == 0)
		return TC_METHOD_AUTO;
	if (strcmp(name, "grid") == 0)
		return TC_METHOD_GRID;
	if (strcmp(name, "brute") == 0)
		return TC_METHOD_BRUTE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown method \"%s\"", name),
			 errhint("Valid methods are \"auto\", \"grid\" and \"brute\".")));
	return TC_METHOD_AUTO;		/* keep compiler quiet */
}

static TcMetric
parse_metric(const char *name)
{
	if (strcmp(name, "euclidean") == 0)
		return TC_METRIC_EUCLIDEAN;
	if (strcmp(name, "cosine") == 0)
		return TC_METRIC_COSINE;
	if (strcmp(name, "inner_product") == 0)
		return TC_METRIC_INNER_PRODUCT;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown metric \"%s\"", name),
			 errhint("Valid metrics are \"euclidean\", \"cosine\" and \"inner_product\".")));
	return TC_METRIC_EUCLIDEAN; /* keep compiler quiet */
}

/*
 * The metric argument at position argno, where the function's SQL
 * definition has one (0.3.0 on; the library also serves older definitions
 * until ALTER EXTENSION UPDATE); NULL or absent: Euclidean.
 */
TcMetric
tc_metric_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return TC_METRIC_EUCLIDEAN;
	return parse_metric(text_to_cstring(PG_GETARG_TEXT_PP(argno)));
}

/* eps for the metric: finite; not negative but for the inner product (-dot). */
void
tc_check_eps(double eps, TcMetric metric)
{
	if (isnan(eps))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must not be NaN")));
	if (isinf(eps))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must be finite")));
	if (eps < 0 && metric != TC_METRIC_INNER_PRODUCT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must not be negative"),
				 metric == TC_METRIC_COSINE ?
				 errhint("A cosine distance lies between 0 and 2.") :
				 errhint("Only metric \"inner_product\" takes a negative eps (its dist is minus the inner product).")));
}

/* The engine's parameters from the settings and a call's arguments. */
void
tc_join_params(TcJoinParams *params, double eps, TcMetric metric, bool include_self, bool exact,
			TcMethod method)
{
	memset(params, 0, sizeof(*params));
	params->eps = eps;
	params->metric = metric;
	params->include_self = include_self;
	params->exact = exact;
	params->method = method;
	params->device = (TcDevice) tc_device_setting;
	params->tensor_cores = (TcTensorCores) tc_tensor_cores_setting;
	params->threads = tc_cpu_threads > 0 ? tc_cpu_threads : tc_cpu_count();
	params->gpu_memory_limit = (size_t) tc_gpu_memory_limit_mb << 20;
	params->gpu_full = (TcGpuFull) tc_gpu_full_setting;
	params->ndevices = tc_devices_setting.n;
	memcpy(params->devices, tc_devices_setting.devices, sizeof(params->devices));
	params->overrides = tc_overrides;
}

/*
 * The grid bins coordinates: it bounds Euclidean distances, and cosine ones
 * through unit vectors; an inner product has no such bound.
 */
void
tc_check_method_metric(const TcJoinParams *params)
{
	if (params->method == TC_METHOD_GRID && params->metric == TC_METRIC_INNER_PRODUCT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("method \"grid\" takes the Euclidean and cosine metrics only"),
				 errhint("Use method \"auto\" or \"brute\" with metric \"inner_product\".")));
}

void
tc_trace_sql(const char *step)
{
	if (tc_overrides.trace)
		fprintf(stderr, "tcjoin trace: SQL %s (clock %.3f)\n", step, tc_now() * 1e3);
}

/* An idle backend keeps the engine's freed buffers (tcjoin.keep_memory) this long. */
#define TC_KEEP_IDLE_MS 60000

static TimeoutId keep_timeout;
static bool keep_timeout_made = false;

/* The timeout's handler, in the signal's context: munmap, nothing else. */
static void
keep_expired(void)
{
	tc_keep_release_idle();
}

/* What the engine keeps goes back a minute on, where it keeps any. */
static void
arm_keep_timeout(void)
{
	if (keep_timeout_made && tc_kept_bytes() > 0)
		enable_timeout_after(keep_timeout, TC_KEEP_IDLE_MS);
}

/* A join's context gone (its end, or an error's cleanup). */
static void
join_context_gone(void *arg)
{
	arm_keep_timeout();
}

/*
 * Any error's recovery cancels every timeout before the transaction's
 * abort, a later statement's as well as a join's: armed again here.
 */
static void
keep_after_abort(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		arm_keep_timeout();
}

/* A join's own memory context: everything it allocates hangs off it. */
MemoryContext
tc_join_context(void)
{
	MemoryContext mcxt = AllocSetContextCreate(CurrentMemoryContext, "tcjoin join",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContextCallback *cb = MemoryContextAllocZero(mcxt, sizeof(MemoryContextCallback));

	/* made here, in a backend: the postmaster's would not survive the backend's start */
	if (!keep_timeout_made)
	{
		keep_timeout = RegisterTimeout(USER_TIMEOUT, keep_expired);
		RegisterXactCallback(keep_after_abort, NULL);
		keep_timeout_made = true;
	}
	/* not while a join runs: the buffers kept are its to take */
	disable_timeout(keep_timeout, false);
	cb->func = join_context_gone;
	MemoryContextRegisterResetCallback(mcxt, cb);
	return mcxt;
}

PG_FUNCTION_INFO_V1(tc_selfjoin);

Datum
tc_selfjoin(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	double		eps;
	TcMetric	metric;
	TcJoinParams params;
	MemoryContext mcxt;
	TcLoaded	loaded;
	TcRunStats	rs;
	double		t0,
				t1;

	InitMaterializedSRF(fcinfo, 0);

	/* As a STRICT function would: no relation, column or eps, no rows. */
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_NULL();

	eps = PG_GETARG_FLOAT8(2);
	metric = tc_metric_arg(fcinfo, 7);
	tc_check_eps(eps, metric);
	tc_join_params(&params, eps, metric,
				PG_ARGISNULL(4) ? false : PG_GETARG_BOOL(4),
				PG_ARGISNULL(5) ? true : PG_GETARG_BOOL(5),
				PG_ARGISNULL(6) ? TC_METHOD_AUTO :
				tc_parse_method(text_to_cstring(PG_GETARG_TEXT_PP(6))));
	tc_check_method_metric(&params);

	mcxt = tc_join_context();
	t0 = tc_now();
	tc_trace_sql("load");
	tc_prewarm_for(PG_GETARG_OID(0), &params);
	tc_load(PG_GETARG_OID(0), NameStr(*PG_GETARG_NAME(1)),
			PG_ARGISNULL(3) ? NULL : NameStr(*PG_GETARG_NAME(3)), mcxt, &loaded);
	t1 = tc_now();
	tc_run_join(&loaded, NULL, &params, rsinfo->setResult, rsinfo->setDesc, mcxt, &rs);
	tc_record_stats(loaded.points.n, loaded.points.d, eps, &rs, t1 - t0, tc_now() - t0);
	tc_trace_sql("join recorded");
	MemoryContextDelete(mcxt);
	tc_trace_sql("returns");

	PG_RETURN_NULL();
}

/* A float4 point set as float8, exactly, so two sets can be joined. */
static void
widen(TcLoaded *l, MemoryContext mcxt)
{
	Size		count = (Size) l->points.n * (Size) l->points.d;
	double	   *wide = MemoryContextAllocExtended(mcxt, sizeof(double) * (count > 0 ? count : 1),
												  MCXT_ALLOC_HUGE);
	const float *narrow = l->points.data;

	for (Size i = 0; i < count; i++)
		wide[i] = (double) narrow[i];
	l->points.data = wide;
	l->points.type = TC_FLOAT8;
}

/*
 * tc_join and its overload with k (tc_join_k): every pair (a, b), a from
 * the first relation and b from the second, within eps, or with k each row
 * of a's nearest rows of b, ranked.  The same contract and the same checks
 * as tc_selfjoin, on each relation.  The overload's k comes after eps, so
 * the arguments from id_column_a on sit one further.
 */
static void
cross_join(FunctionCallInfo fcinfo, bool ranked)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			opt = ranked ? 6 : 5;	/* id_column_a's position */
	int			k = 0;
	double		eps;
	TcMetric	metric;
	TcJoinParams params;
	MemoryContext mcxt;
	TcLoaded	a,
				b;
	TcRunStats	rs;
	double		t0,
				t1;

	InitMaterializedSRF(fcinfo, 0);

	/* As a STRICT function would: no relation, column or eps, no rows. */
	for (int i = 0; i <= 4; i++)
		if (PG_ARGISNULL(i))
			return;

	/* k NULL: every match within eps, ranked */
	if (ranked && !PG_ARGISNULL(5))
	{
		k = PG_GETARG_INT32(5);
		if (k < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("k must be at least 1"),
					 errhint("Pass NULL for every match within eps, ranked.")));
	}
	eps = PG_GETARG_FLOAT8(4);
	metric = tc_metric_arg(fcinfo, opt + 4);
	tc_check_eps(eps, metric);
	tc_join_params(&params, eps, metric, false,
				PG_ARGISNULL(opt + 2) ? true : PG_GETARG_BOOL(opt + 2),
				PG_ARGISNULL(opt + 3) ? TC_METHOD_AUTO :
				tc_parse_method(text_to_cstring(PG_GETARG_TEXT_PP(opt + 3))));
	tc_check_method_metric(&params);

	mcxt = tc_join_context();
	t0 = tc_now();
	/* ranked rows are sized by what the join held (tc_nearest_rows) */
	tc_big_peak_reset();
	tc_trace_sql("load");
	/* a GPU join's context made while the sets load, as tc_selfjoin's */
	tc_prewarm_for(PG_GETARG_OID(0), &params);
	tc_prewarm_for(PG_GETARG_OID(2), &params);
	tc_load(PG_GETARG_OID(0), NameStr(*PG_GETARG_NAME(1)),
			PG_ARGISNULL(opt) ? NULL : NameStr(*PG_GETARG_NAME(opt)), mcxt, &a);
	tc_load(PG_GETARG_OID(2), NameStr(*PG_GETARG_NAME(3)),
			PG_ARGISNULL(opt + 1) ? NULL : NameStr(*PG_GETARG_NAME(opt + 1)), mcxt, &b);
	t1 = tc_now();

	/* Nothing to match on one side: no rows, whatever the other holds. */
	if (a.points.n > 0 && b.points.n > 0)
	{
		if (a.points.d != b.points.d)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("different vector dimensions %d and %d", a.points.d, b.points.d),
					 errdetail("Vectors of relation \"%s\" have %d dimensions, those of relation \"%s\" have %d.",
							   a.relname, a.points.d, b.relname, b.points.d)));
		/* real[] against double precision[]: both as float8, exactly. */
		if (a.points.type != b.points.type)
			widen(a.points.type == TC_FLOAT4 ? &a : &b, mcxt);
		if (ranked)
			tc_nearest_rows(&a, &b, &params, k, rsinfo, mcxt, &rs);
		else
			tc_run_join(&a, &b, &params, rsinfo->setResult, rsinfo->setDesc, mcxt, &rs);
		tc_record_stats(a.points.n + b.points.n, a.points.d, eps, &rs, t1 - t0, tc_now() - t0);
	}
	tc_trace_sql("join recorded");
	MemoryContextDelete(mcxt);
	tc_trace_sql("returns");
}

PG_FUNCTION_INFO_V1(tc_join);

Datum
tc_join(PG_FUNCTION_ARGS)
{
	cross_join(fcinfo, false);
	PG_RETURN_NULL();
}

PG_FUNCTION_INFO_V1(tc_join_k);

/*
 * tc_join with k: for each row of a, its k nearest rows of b within eps
 * (k NULL: every one), nearest first, ties by the smaller id_b, each with
 * its rank (1: the nearest).
 */
Datum
tc_join_k(PG_FUNCTION_ARGS)
{
	cross_join(fcinfo, true);
	PG_RETURN_NULL();
}
