/*
 * stats.c
 *		What the last join did (tc_last_stats), and the GPUs there are
 *		(tc_devices).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "engine.h"
#include "output.h"
#include "tcjoin.h"

/*
 * What the last join in this backend did, for tc_last_stats().  Its counts
 * describe rows that only the user whose rights read them may see, so the
 * record names that user (GetUserId() when the join ran: SET ROLE, SET
 * SESSION AUTHORIZATION and SECURITY DEFINER functions all change it), and
 * tc_last_stats() shows it to that user alone.
 */
typedef struct LastStats
{
	bool		valid;
	Oid			userid;			/* whose join it was */
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
	char		device_choice[128]; /* the setting, or auto's reason */
	double		auto_cpu_ms;	/* auto's estimates (0: not asked) */
	double		auto_gpu_ms;
	bool		gpu_new_context;
	double		gpu_setup_ms;
	double		gpu_full_wait_ms;
	char		metric[16];
	int			gpus;			/* the GPUs that ran it (0: the CPU) */
	int			gpu_ids[TC_MAX_DEVICES];
	double		gpu_share[TC_MAX_DEVICES];
} LastStats;

static LastStats last_stats;

static void log_stats(const LastStats *ls);

/*
 * tc_last_stats()'s columns in this version, in 0.3.0 to 0.5.0, and in
 * 0.2.0 and 0.1.0 (its first ones).
 */
#define TC_STATS_COLUMNS 34
#define TC_STATS_COLUMNS_0_5 31
#define TC_STATS_COLUMNS_0_2 30
#define TC_STATS_COLUMNS_0_1 24

/* Keep a finished join's statistics, and report them if asked to. */
void
tc_record_stats(int64 n, int d, double eps, const TcRunStats *rs,
				double load_s, double total_s)
{
	LastStats  *ls = &last_stats;

	memset(ls, 0, sizeof(*ls));
	ls->valid = true;
	ls->userid = GetUserId();
	/* a graph of no rows ran no join: nothing to name */
	strlcpy(ls->device, rs->join.device ? rs->join.device : "none", sizeof(ls->device));
	strlcpy(ls->method, rs->join.method ? rs->join.method : "none", sizeof(ls->method));
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
	strlcpy(ls->device_choice, rs->join.device_choice, sizeof(ls->device_choice));
	ls->auto_cpu_ms = rs->join.auto_cpu_seconds * 1000;
	ls->auto_gpu_ms = rs->join.auto_gpu_seconds * 1000;
	ls->gpu_new_context = rs->join.gpu_cold;
	ls->gpu_setup_ms = rs->join.gpu_setup_seconds * 1000;
	ls->gpu_full_wait_ms = rs->join.gpu_full_wait_seconds * 1000;
	strlcpy(ls->metric, rs->join.metric ? rs->join.metric : "euclidean", sizeof(ls->metric));
	ls->gpus = Max(0, Min(rs->join.gpus, TC_MAX_DEVICES));
	for (int i = 0; i < ls->gpus; i++)
	{
		ls->gpu_ids[i] = rs->join.gpu_ids[i];
		ls->gpu_share[i] = rs->join.gpu_share[i];
	}

	if (tc_log_stats)
		log_stats(ls);
}

/* tcjoin.log_stats' message: the plan and counts, then the phases. */
static void
log_stats(const LastStats *ls)
{
	StringInfoData gpus;

	/* one GPU says nothing a GPU join does not; several, each one's share */
	initStringInfo(&gpus);
	if (ls->gpus > 1)
	{
		appendStringInfo(&gpus, " on %d GPUs (", ls->gpus);
		for (int i = 0; i < ls->gpus; i++)
			appendStringInfo(&gpus, "%s%d: %.0f%%", i > 0 ? ", " : "",
							 ls->gpu_ids[i], ls->gpu_share[i] * 100);
		appendStringInfoChar(&gpus, ')');
	}
	ereport(INFO,
			(errmsg("tcjoin: %s %s%s join%s of %lld vectors (d=%d), eps %g: %llu pairs from %llu candidates",
					ls->device, ls->method, ls->tensor_cores ? " (tensor cores)" : "",
					gpus.data, (long long) ls->n, ls->d, ls->eps,
					(unsigned long long) ls->pairs,
					(unsigned long long) ls->candidates),
			 errdetail("threads %d, grid dimensions %d, cells %lld, rechecked %llu; load %.1f ms, index %.1f ms, join %.1f ms (output %.1f ms), total %.1f ms.",
					   ls->threads, ls->grid_dims, (long long) ls->cells,
					   (unsigned long long) ls->rechecked,
					   ls->load_ms, ls->index_ms, ls->join_ms, ls->output_ms,
					   ls->total_ms)));
	pfree(gpus.data);
}

PG_FUNCTION_INFO_V1(tc_last_stats);

Datum
tc_last_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const LastStats *ls = &last_stats;
	Datum		values[TC_STATS_COLUMNS];
	bool		nulls[TC_STATS_COLUMNS] = {0};
	Datum		dims[8];
	Datum		ids[TC_MAX_DEVICES];
	Datum		shares[TC_MAX_DEVICES];
	int			i = 0;
	int			natts;

	InitMaterializedSRF(fcinfo, 0);
	/*
	 * Earlier versions' definitions (before ALTER EXTENSION UPDATE) have
	 * the first columns only, in the same order: they get those.  Any
	 * other shape is no definition this library knows: fail, never
	 * misread.
	 */
	natts = rsinfo->setDesc->natts;
	if (natts != TC_STATS_COLUMNS && natts != TC_STATS_COLUMNS_0_5 &&
		natts != TC_STATS_COLUMNS_0_2 && natts != TC_STATS_COLUMNS_0_1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("tc_last_stats() returns %d columns, but this tcjoin library fills %d",
						natts, TC_STATS_COLUMNS),
				 errhint("Update the extension: ALTER EXTENSION tcjoin UPDATE;")));
	/* No join yet, or another user's: no row. */
	if (!ls->valid || ls->userid != GetUserId())
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
	Assert(i == TC_STATS_COLUMNS_0_1);
	values[i++] = CStringGetTextDatum(ls->device_choice);
	nulls[i] = ls->auto_cpu_ms == 0 && ls->auto_gpu_ms == 0;
	values[i++] = Float8GetDatum(ls->auto_cpu_ms);
	nulls[i] = ls->auto_cpu_ms == 0 && ls->auto_gpu_ms == 0;
	values[i++] = Float8GetDatum(ls->auto_gpu_ms);
	/* the GPU's columns: NULL for a CPU join */
	nulls[i] = ls->gpu_batches < 0;
	values[i++] = BoolGetDatum(ls->gpu_new_context);
	nulls[i] = ls->gpu_batches < 0;
	values[i++] = Float8GetDatum(ls->gpu_setup_ms);
	nulls[i] = ls->gpu_batches < 0;
	values[i++] = Float8GetDatum(ls->gpu_full_wait_ms);
	Assert(i == TC_STATS_COLUMNS_0_2);
	values[i++] = CStringGetTextDatum(ls->metric);
	Assert(i == TC_STATS_COLUMNS_0_5);
	/* the GPUs that ran it: NULL for a CPU join */
	if (ls->gpus > 0)
	{
		for (int j = 0; j < ls->gpus; j++)
		{
			ids[j] = Int32GetDatum(ls->gpu_ids[j]);
			shares[j] = Float8GetDatum(ls->gpu_share[j]);
		}
		values[i] = Int32GetDatum(ls->gpus);
		values[i + 1] = PointerGetDatum(construct_array(ids, ls->gpus, INT4OID, sizeof(int32),
														true, TYPALIGN_INT));
		values[i + 2] = PointerGetDatum(construct_array(shares, ls->gpus, FLOAT8OID, sizeof(float8),
														FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	}
	else
		nulls[i] = nulls[i + 1] = nulls[i + 2] = true;
	i += 3;
	Assert(i == lengthof(values));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	PG_RETURN_NULL();
}

/* tc_devices()'s columns in this version, and in 0.1.0 to 0.5.0. */
#define TC_DEVICES_COLUMNS 7
#define TC_DEVICES_COLUMNS_0_5 6

/* Whether tcjoin.devices lets a join use this GPU. */
static bool
device_selected(int device)
{
	if (tc_devices_setting.n == 0)
		return true;
	for (int i = 0; i < tc_devices_setting.n; i++)
		if (tc_devices_setting.devices[i] == device)
			return true;
	return false;
}

PG_FUNCTION_INFO_V1(tc_devices);

/* The GPUs this backend can use; no rows where there are none. */
Datum
tc_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TcDeviceInfo gpus[TC_MAX_DEVICES];
	int			n;
	int			natts;

	InitMaterializedSRF(fcinfo, 0);
	/* 0.1.0 to 0.5.0's definition has the first six columns, not selected */
	natts = rsinfo->setDesc->natts;
	if (natts != TC_DEVICES_COLUMNS && natts != TC_DEVICES_COLUMNS_0_5)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("tc_devices() returns %d columns, but this tcjoin library fills %d",
						natts, TC_DEVICES_COLUMNS),
				 errhint("Update the extension: ALTER EXTENSION tcjoin UPDATE;")));
	n = tc_device_list(gpus, lengthof(gpus));
	for (int i = 0; i < n; i++)
	{
		Datum		values[TC_DEVICES_COLUMNS];
		bool		nulls[TC_DEVICES_COLUMNS] = {0};

		values[0] = Int32GetDatum(gpus[i].device);
		values[1] = CStringGetTextDatum(gpus[i].name);
		values[2] = CStringGetTextDatum(psprintf("%d.%d", gpus[i].major, gpus[i].minor));
		values[3] = Int64GetDatum((int64) (gpus[i].total_memory >> 20));
		values[4] = Int64GetDatum((int64) (gpus[i].free_memory >> 20));
		values[5] = Int32GetDatum(gpus[i].sm_count);
		values[6] = BoolGetDatum(device_selected(gpus[i].device));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_NULL();
}
