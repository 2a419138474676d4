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
#include "../cuda/gpu.h"
#include "load.h"
#include "output.h"

PG_MODULE_MAGIC;

/* Settings. */
static int	tc_device_setting = TC_DEVICE_AUTO;
static int	tc_cpu_threads = 0;
static bool tc_log_stats = false;
static int	tc_gpu_memory_limit_mb = 0;

static const struct config_enum_entry device_options[] = {
	{"auto", TC_DEVICE_AUTO, false},
	{"cpu", TC_DEVICE_CPU, false},
	{"gpu", TC_DEVICE_GPU, false},
	{NULL, 0, false}
};

/* What the last join in this backend did, for tc_last_stats(). */
typedef struct LastStats
{
	bool		valid;
	char		device[16];
	char		method[16];
	int			threads;
	int			grid_dims;
	int			dims[8];
	int64		n;
	int			d;
	double		eps;
	int64		cells;
	uint64		candidates;
	uint64		pairs;
	double		load_ms;
	double		index_ms;
	double		join_ms;
	double		output_ms;
	double		total_ms;
} LastStats;

static LastStats last_stats;

void		_PG_init(void);

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
record_stats(const TcLoaded *loaded, double eps, const TcRunStats *rs,
			 double load_s, double total_s)
{
	LastStats  *ls = &last_stats;

	memset(ls, 0, sizeof(*ls));
	ls->valid = true;
	strlcpy(ls->device, rs->join.device, sizeof(ls->device));
	strlcpy(ls->method, rs->join.method, sizeof(ls->method));
	ls->threads = rs->join.threads;
	ls->grid_dims = rs->join.grid_dims;
	for (int i = 0; i < rs->join.grid_dims && i < 8; i++)
		ls->dims[i] = rs->join.grid_dim_ids[i] + 1;
	ls->n = loaded->points.n;
	ls->d = loaded->points.d;
	ls->eps = eps;
	ls->cells = rs->join.cells;
	ls->candidates = rs->join.candidates;
	ls->pairs = rs->join.pairs;
	ls->load_ms = load_s * 1000;
	ls->index_ms = rs->join.index_seconds * 1000;
	ls->join_ms = rs->join.join_seconds * 1000;
	ls->output_ms = rs->output_seconds * 1000;
	ls->total_ms = total_s * 1000;

	if (tc_log_stats)
		ereport(INFO,
				(errmsg("tcjoin: %s %s join of %lld vectors (d=%d), eps %g: %llu pairs from %llu candidates",
						ls->device, ls->method, (long long) ls->n, ls->d, eps,
						(unsigned long long) ls->pairs,
						(unsigned long long) ls->candidates),
				 errdetail("threads %d, grid dimensions %d, cells %lld; load %.1f ms, index %.1f ms, join %.1f ms (output %.1f ms), total %.1f ms.",
						   ls->threads, ls->grid_dims, (long long) ls->cells,
						   ls->load_ms, ls->index_ms, ls->join_ms, ls->output_ms,
						   ls->total_ms)));
}

PG_FUNCTION_INFO_V1(tc_selfjoin);

Datum
tc_selfjoin(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid;
	const char *vec_column;
	const char *id_column;
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

	relid = PG_GETARG_OID(0);
	vec_column = NameStr(*PG_GETARG_NAME(1));
	eps = PG_GETARG_FLOAT8(2);
	id_column = PG_ARGISNULL(3) ? NULL : NameStr(*PG_GETARG_NAME(3));
	check_eps(eps);

	memset(&params, 0, sizeof(params));
	params.eps = eps;
	params.include_self = PG_ARGISNULL(4) ? false : PG_GETARG_BOOL(4);
	params.exact = PG_ARGISNULL(5) ? true : PG_GETARG_BOOL(5);
	params.method = PG_ARGISNULL(6) ? TC_METHOD_AUTO :
		parse_method(text_to_cstring(PG_GETARG_TEXT_PP(6)));
	params.device = (TcDevice) tc_device_setting;
	params.threads = tc_cpu_threads > 0 ? tc_cpu_threads : tc_cpu_count();
	params.gpu_memory_limit = (size_t) tc_gpu_memory_limit_mb << 20;

	/* Everything the join allocates, PostgreSQL's or not, hangs off this. */
	mcxt = AllocSetContextCreate(CurrentMemoryContext, "tcjoin join",
								 ALLOCSET_DEFAULT_SIZES);
	t0 = tc_now();
	tc_load(relid, vec_column, id_column, mcxt, &loaded);
	t1 = tc_now();
	tc_run_selfjoin(&loaded, &params, rsinfo->setResult, rsinfo->setDesc, mcxt, &rs);
	record_stats(&loaded, eps, &rs, t1 - t0, tc_now() - t0);
	MemoryContextDelete(mcxt);

	PG_RETURN_NULL();
}

PG_FUNCTION_INFO_V1(tc_last_stats);

Datum
tc_last_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const LastStats *ls = &last_stats;
	Datum		values[15];
	bool		nulls[15] = {0};
	Datum		dims[8];

	InitMaterializedSRF(fcinfo, 0);
	if (!ls->valid)
		PG_RETURN_NULL();

	for (int i = 0; i < ls->grid_dims; i++)
		dims[i] = Int32GetDatum(ls->dims[i]);
	values[0] = CStringGetTextDatum(ls->device);
	values[1] = CStringGetTextDatum(ls->method);
	values[2] = Int32GetDatum(ls->threads);
	values[3] = PointerGetDatum(construct_array(dims, ls->grid_dims, INT4OID,
												sizeof(int32), true, TYPALIGN_INT));
	values[4] = Int64GetDatum(ls->n);
	values[5] = Int32GetDatum(ls->d);
	values[6] = Float8GetDatum(ls->eps);
	values[7] = Int64GetDatum(ls->cells);
	values[8] = Int64GetDatum((int64) ls->candidates);
	values[9] = Int64GetDatum((int64) ls->pairs);
	values[10] = Float8GetDatum(ls->load_ms);
	values[11] = Float8GetDatum(ls->index_ms);
	values[12] = Float8GetDatum(ls->join_ms);
	values[13] = Float8GetDatum(ls->output_ms);
	values[14] = Float8GetDatum(ls->total_ms);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	PG_RETURN_NULL();
}

PG_FUNCTION_INFO_V1(tc_devices);

/* The GPUs this backend can use; no rows where there are none. */
Datum
tc_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TcGpuInfo	gpus[16];
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	n = tc_gpu_list(gpus, lengthof(gpus), NULL, 0);
	for (int i = 0; i < n && i < (int) lengthof(gpus); i++)
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
