/*
 * tcjoin.c
 *		SQL entry points and settings of the tcjoin extension.
 *
 * tc_selfjoin validates its arguments, loads the vector column (load.c),
 * runs the engine (output.c) and returns the pairs in materialize mode, so
 * the executor's tuplestore spills to disk past work_mem.
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "engine.h"
#include "load.h"
#include "output.h"

PG_MODULE_MAGIC;

/* Settings. */
static int	tc_device_setting = TC_DEVICE_AUTO;
static int	tc_cpu_threads = 0;
static bool tc_log_stats = false;
static int	tc_gpu_memory_limit_mb = 0;
static int	tc_tensor_cores_setting = TC_TENSOR_AUTO;
static char *tc_dev_overrides = NULL;
static TcOverrides tc_overrides;	/* tc_dev_overrides, parsed */

static const struct config_enum_entry device_options[] = {
	{"auto", TC_DEVICE_AUTO, false},
	{"cpu", TC_DEVICE_CPU, false},
	{"gpu", TC_DEVICE_GPU, false},
	{NULL, 0, false}
};

static const struct config_enum_entry tensor_core_options[] = {
	{"auto", TC_TENSOR_AUTO, false},
	{"on", TC_TENSOR_ON, false},
	{"off", TC_TENSOR_OFF, false},
	{"true", TC_TENSOR_ON, true},
	{"false", TC_TENSOR_OFF, true},
	{"yes", TC_TENSOR_ON, true},
	{"no", TC_TENSOR_OFF, true},
	{"1", TC_TENSOR_ON, true},
	{"0", TC_TENSOR_OFF, true},
	{NULL, 0, false}
};

/* What the last join in this backend did, for tc_last_stats(). */
typedef struct LastStats
{
	bool		valid;
	char		device[16];
	char		method[16];
	bool		tensor_cores;
	char		filter[40];
	int			threads;
	int			grid_dims;
	int			dims[8];
	int64		n;
	int			d;
	double		eps;
	int64		cells;
	uint64		candidates;
	uint64		rechecked;
	uint64		pairs;
	double		load_ms;
	double		index_ms;
	double		join_ms;
	double		output_ms;
	double		total_ms;
	int			gpu_blocks;		/* GPU brute force: row blocks (0: none ran) */
	double		auto_grid_ms;	/* auto's cost model on the GPU (0: not asked) */
	double		auto_brute_ms;
	char		gpu_kernels[80];	/* GPU brute force: its kernels ("": none ran) */
	int64		gpu_batches;	/* GPU joins: batches, reruns included (-1: CPU) */
	int64		gpu_reruns;
} LastStats;

static LastStats last_stats;

void		_PG_init(void);

/*
 * tcjoin.dev_overrides: parsed by the engine's one parser when set, so that
 * a bad value is refused by SET, not by a later join.
 */
static bool
check_dev_overrides(char **newval, void **extra, GucSource source)
{
	TcOverrides ov;
	char		msg[256];
	TcOverrides *copy;

	if (!tc_overrides_parse(*newval, &ov, msg, sizeof(msg)))
	{
		GUC_check_errdetail("%s", msg);
		return false;
	}
	copy = (TcOverrides *) malloc(sizeof(TcOverrides));	/* guc.c frees it with free() */
	if (copy == NULL)
		return false;
	*copy = ov;
	*extra = copy;
	return true;
}

static void
assign_dev_overrides(const char *newval, void *extra)
{
	if (extra)
		tc_overrides = *(TcOverrides *) extra;
	else
		memset(&tc_overrides, 0, sizeof(tc_overrides));
}

void
_PG_init(void)
{
	DefineCustomEnumVariable("tcjoin.device",
							 "Where joins run: auto (a GPU when usable, else the CPU), cpu or gpu.",
							 NULL,
							 &tc_device_setting,
							 TC_DEVICE_AUTO,
							 device_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("tcjoin.cpu_threads",
							"Threads a CPU join computes with; 0 means one per online CPU.",
							NULL,
							&tc_cpu_threads,
							0, 0, 1024,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("tcjoin.log_stats",
							 "Report each join's plan, counts and phase timings as an INFO message.",
							 NULL,
							 &tc_log_stats,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("tcjoin.gpu_memory_limit",
							"GPU memory one join may take; 0 means no limit.",
							NULL,
							&tc_gpu_memory_limit_mb,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("tcjoin.tensor_cores",
							 "FP64 tensor cores for a GPU grid join's distance filter: auto (where they pay), on or off.",
							 "The filter only discards pairs beyond a proven error margin; every returned pair is checked, and its distance computed, exactly.",
							 &tc_tensor_cores_setting,
							 TC_TENSOR_AUTO,
							 tensor_core_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("tcjoin.dev_overrides",
							   "Developers only: force GPU kernels and paths the engine would not choose.",
							   "Comma-separated key=value items (docs/developing.md); empty for the engine's own choices.",
							   &tc_dev_overrides,
							   "",
							   PGC_SUSET,
							   GUC_NOT_IN_SAMPLE,
							   check_dev_overrides, assign_dev_overrides, NULL);
	MarkGUCPrefixReserved("tcjoin");
}

static TcMethod
parse_method(const char *name)
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

static void
check_eps(double eps)
{
	if (isnan(eps))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must not be NaN")));
	if (isinf(eps))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must be finite")));
	if (eps < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must not be negative")));
}

static void
record_stats(int64 n, int d, double eps, const TcRunStats *rs,
			 double load_s, double total_s)
{
	LastStats  *ls = &last_stats;

	memset(ls, 0, sizeof(*ls));
	ls->valid = true;
	strlcpy(ls->device, rs->join.device, sizeof(ls->device));
	strlcpy(ls->method, rs->join.method, sizeof(ls->method));
	ls->tensor_cores = rs->join.tensor_cores;
	strlcpy(ls->filter, rs->join.filter ? rs->join.filter : "none", sizeof(ls->filter));
	ls->threads = rs->join.threads;
	ls->grid_dims = rs->join.grid_dims;
	for (int i = 0; i < rs->join.grid_dims && i < 8; i++)
		ls->dims[i] = rs->join.grid_dim_ids[i] + 1;
	ls->n = n;
	ls->d = d;
	ls->eps = eps;
	ls->cells = rs->join.cells;
	ls->candidates = rs->join.candidates;
	ls->rechecked = rs->join.rechecked;
	ls->pairs = rs->join.pairs;
	ls->load_ms = load_s * 1000;
	ls->index_ms = rs->join.index_seconds * 1000;
	ls->join_ms = rs->join.join_seconds * 1000;
	ls->output_ms = rs->output_seconds * 1000;
	ls->total_ms = total_s * 1000;
	ls->gpu_blocks = rs->join.gpu_kernel ? rs->join.gpu_blocks : 0;
	ls->auto_grid_ms = rs->join.auto_grid_seconds * 1000;
	ls->auto_brute_ms = rs->join.auto_brute_seconds * 1000;
	ls->gpu_kernels[0] = '\0';
	if (rs->join.gpu_kernel)
		snprintf(ls->gpu_kernels, sizeof(ls->gpu_kernels), "%s + %s recheck", rs->join.gpu_kernel,
				 rs->join.gpu_recheck ? rs->join.gpu_recheck : "no");
	/* NULL for a CPU join: -1 */
	ls->gpu_batches = ls->gpu_reruns = -1;
	if (strcmp(ls->device, "gpu") == 0)
	{
		ls->gpu_batches = rs->join.gpu_batches;
		ls->gpu_reruns = rs->join.gpu_reruns;
	}

	if (tc_log_stats)
		ereport(INFO,
				(errmsg("tcjoin: %s %s%s join of %lld vectors (d=%d), eps %g: %llu pairs from %llu candidates",
						ls->device, ls->method, ls->tensor_cores ? " (tensor cores)" : "",
						(long long) ls->n, ls->d, eps,
						(unsigned long long) ls->pairs,
						(unsigned long long) ls->candidates),
				 errdetail("threads %d, grid dimensions %d, cells %lld, rechecked %llu; load %.1f ms, index %.1f ms, join %.1f ms (output %.1f ms), total %.1f ms.",
						   ls->threads, ls->grid_dims, (long long) ls->cells,
						   (unsigned long long) ls->rechecked,
						   ls->load_ms, ls->index_ms, ls->join_ms, ls->output_ms,
						   ls->total_ms)));
}

/* The engine's parameters from the settings and a call's arguments. */
static void
join_params(TcJoinParams *params, double eps, bool include_self, bool exact,
			TcMethod method)
{
	memset(params, 0, sizeof(*params));
	params->eps = eps;
	params->include_self = include_self;
	params->exact = exact;
	params->method = method;
	params->device = (TcDevice) tc_device_setting;
	params->tensor_cores = (TcTensorCores) tc_tensor_cores_setting;
	params->threads = tc_cpu_threads > 0 ? tc_cpu_threads : tc_cpu_count();
	params->gpu_memory_limit = (size_t) tc_gpu_memory_limit_mb << 20;
	params->overrides = tc_overrides;
}

/* A join's own memory context: everything it allocates hangs off it. */
static MemoryContext
join_context(void)
{
	return AllocSetContextCreate(CurrentMemoryContext, "tcjoin join",
								 ALLOCSET_DEFAULT_SIZES);
}

PG_FUNCTION_INFO_V1(tc_selfjoin);

Datum
tc_selfjoin(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	double		eps;
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
	check_eps(eps);
	join_params(&params, eps,
				PG_ARGISNULL(4) ? false : PG_GETARG_BOOL(4),
				PG_ARGISNULL(5) ? true : PG_GETARG_BOOL(5),
				PG_ARGISNULL(6) ? TC_METHOD_AUTO :
				parse_method(text_to_cstring(PG_GETARG_TEXT_PP(6))));

	mcxt = join_context();
	t0 = tc_now();
	tc_load(PG_GETARG_OID(0), NameStr(*PG_GETARG_NAME(1)),
			PG_ARGISNULL(3) ? NULL : NameStr(*PG_GETARG_NAME(3)), mcxt, &loaded);
	t1 = tc_now();
	tc_run_join(&loaded, NULL, &params, rsinfo->setResult, rsinfo->setDesc, mcxt, &rs);
	record_stats(loaded.points.n, loaded.points.d, eps, &rs, t1 - t0, tc_now() - t0);
	MemoryContextDelete(mcxt);

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

PG_FUNCTION_INFO_V1(tc_join);

/*
 * Every pair (a, b), a from the first relation and b from the second,
 * within eps: a cross-match.  The same contract and the same checks as
 * tc_selfjoin, on each relation.
 */
Datum
tc_join(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	double		eps;
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
			PG_RETURN_NULL();

	eps = PG_GETARG_FLOAT8(4);
	check_eps(eps);
	if (tc_device_setting == TC_DEVICE_GPU)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tc_join runs on the CPU only, and tcjoin.device is \"gpu\""),
				 errhint("Set tcjoin.device to \"auto\" or \"cpu\".")));
	join_params(&params, eps, false,
				PG_ARGISNULL(7) ? true : PG_GETARG_BOOL(7),
				PG_ARGISNULL(8) ? TC_METHOD_AUTO :
				parse_method(text_to_cstring(PG_GETARG_TEXT_PP(8))));

	mcxt = join_context();
	t0 = tc_now();
	tc_load(PG_GETARG_OID(0), NameStr(*PG_GETARG_NAME(1)),
			PG_ARGISNULL(5) ? NULL : NameStr(*PG_GETARG_NAME(5)), mcxt, &a);
	tc_load(PG_GETARG_OID(2), NameStr(*PG_GETARG_NAME(3)),
			PG_ARGISNULL(6) ? NULL : NameStr(*PG_GETARG_NAME(6)), mcxt, &b);
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
		tc_run_join(&a, &b, &params, rsinfo->setResult, rsinfo->setDesc, mcxt, &rs);
		record_stats(a.points.n + b.points.n, a.points.d, eps, &rs, t1 - t0, tc_now() - t0);
	}
	MemoryContextDelete(mcxt);

	PG_RETURN_NULL();
}

PG_FUNCTION_INFO_V1(tc_last_stats);

Datum
tc_last_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const LastStats *ls = &last_stats;
	Datum		values[24];
	bool		nulls[24] = {0};
	Datum		dims[8];
	int			i = 0;

	InitMaterializedSRF(fcinfo, 0);
	/* An older SQL definition with this library: fail, never misread. */
	if (rsinfo->setDesc->natts != (int) lengthof(values))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("tc_last_stats() returns %d columns, but this tcjoin library fills %d",
						rsinfo->setDesc->natts, (int) lengthof(values)),
				 errhint("Recreate the extension: DROP EXTENSION tcjoin; CREATE EXTENSION tcjoin;")));
	if (!ls->valid)
		PG_RETURN_NULL();

	for (int j = 0; j < ls->grid_dims; j++)
		dims[j] = Int32GetDatum(ls->dims[j]);
	values[i++] = CStringGetTextDatum(ls->device);
	values[i++] = CStringGetTextDatum(ls->method);
	values[i++] = BoolGetDatum(ls->tensor_cores);
	values[i++] = CStringGetTextDatum(ls->filter);
	values[i++] = Int32GetDatum(ls->threads);
	values[i++] = PointerGetDatum(construct_array(dims, ls->grid_dims, INT4OID,
												  sizeof(int32), true, TYPALIGN_INT));
	values[i++] = Int64GetDatum(ls->n);
	values[i++] = Int32GetDatum(ls->d);
	values[i++] = Float8GetDatum(ls->eps);
	values[i++] = Int64GetDatum(ls->cells);
	values[i++] = Int64GetDatum((int64) ls->candidates);
	values[i++] = Int64GetDatum((int64) ls->rechecked);
	values[i++] = Int64GetDatum((int64) ls->pairs);
	values[i++] = Float8GetDatum(ls->load_ms);
	values[i++] = Float8GetDatum(ls->index_ms);
	values[i++] = Float8GetDatum(ls->join_ms);
	values[i++] = Float8GetDatum(ls->output_ms);
	values[i++] = Float8GetDatum(ls->total_ms);
	nulls[i] = ls->gpu_blocks == 0;
	values[i++] = Int32GetDatum(ls->gpu_blocks);
	/* the model sets both or neither, and its grid estimate is never 0 */
	nulls[i] = ls->auto_grid_ms == 0;
	values[i++] = Float8GetDatum(ls->auto_grid_ms);
	nulls[i] = ls->auto_grid_ms == 0;
	values[i++] = Float8GetDatum(ls->auto_brute_ms);
	nulls[i] = ls->gpu_kernels[0] == '\0';
	values[i++] = CStringGetTextDatum(ls->gpu_kernels);
	nulls[i] = ls->gpu_batches < 0;
	values[i++] = Int64GetDatum(ls->gpu_batches);
	nulls[i] = ls->gpu_reruns < 0;
	values[i++] = Int64GetDatum(ls->gpu_reruns);
	Assert(i == lengthof(values));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	PG_RETURN_NULL();
}

PG_FUNCTION_INFO_V1(tc_devices);

/* The GPUs this backend can use; no rows where there are none. */
Datum
tc_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TcDeviceInfo gpus[TC_MAX_DEVICES];
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	n = tc_device_list(gpus, lengthof(gpus));
	for (int i = 0; i < n; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {0};

		values[0] = Int32GetDatum(gpus[i].device);
		values[1] = CStringGetTextDatum(gpus[i].name);
		values[2] = CStringGetTextDatum(psprintf("%d.%d", gpus[i].major, gpus[i].minor));
		values[3] = Int64GetDatum((int64) (gpus[i].total_memory >> 20));
		values[4] = Int64GetDatum((int64) (gpus[i].free_memory >> 20));
		values[5] = Int32GetDatum(gpus[i].sm_count);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_NULL();
}
