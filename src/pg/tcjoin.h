/*
 * tcjoin.h
 *		What the extension's PostgreSQL files share: the settings (module.c)
 *		and the record of the last join (stats.c).
 */
#ifndef TCJOIN_TCJOIN_H
#define TCJOIN_TCJOIN_H

#include "fmgr.h"
#include "funcapi.h"

#include "engine.h"
#include "output.h"

/* Settings, as tcjoin.* sets them. */
extern int	tc_device_setting;	/* a TcDevice */
extern int	tc_cpu_threads;
extern bool tc_log_stats;
extern int	tc_gpu_memory_limit_mb;
extern int	tc_tensor_cores_setting;	/* a TcTensorCores */
extern int	tc_gpu_full_setting;	/* a TcGpuFull */
extern bool tc_gpu_prewarm_setting;
extern int	tc_lists_memory_limit_kb;	/* 0: a quarter of the memory; -1: none */
extern int	tc_keep_memory_mb;
extern TcOverrides tc_overrides;	/* tcjoin.dev_overrides, parsed */

/* tcjoin.devices, parsed: n 0 for "all", else the GPUs' numbers. */
typedef struct TcDeviceSetting
{
	int			n;
	int			devices[TC_MAX_DEVICES];
} TcDeviceSetting;

extern TcDeviceSetting tc_devices_setting;

/* The trace override (tcjoin.dev_overrides): a step of the SQL function, on stderr. */
extern void tc_trace_sql(const char *step);

/*
 * Keep what a finished join did for tc_last_stats(); with tcjoin.log_stats,
 * also report it.  n counts the points of both sets.
 */
extern void tc_record_stats(int64 n, int d, double eps, const TcRunStats *rs,
							double load_s, double total_s);

/*
 * Start making the GPU's context while relid is read, where the join will
 * likely run on the GPU (prewarm.c).
 */
extern void tc_prewarm_for(Oid relid, const TcJoinParams *params);

/* The arguments every join function takes (functions.c). */
extern TcMethod tc_parse_method(const char *name);
/* The metric at argument argno (absent or NULL: Euclidean). */
extern TcMetric tc_metric_arg(FunctionCallInfo fcinfo, int argno);
extern void tc_check_eps(double eps, TcMetric metric);
/* A join's parameters from its arguments and the session's settings. */
extern void tc_join_params(TcJoinParams *params, double eps, TcMetric metric, bool include_self,
						   bool exact, TcMethod method);
extern void tc_check_method_metric(const TcJoinParams *params);
/* A join's own memory context: everything it allocates hangs off it. */
extern MemoryContext tc_join_context(void);

/*
 * tc_join with k: each row of a's nearest rows of b within eps (the k
 * nearest; k 0: all) into rsinfo's tuplestore as (id_a, id_b, dist,
 * rank), nearest first, ties by the smaller id_b; the tuplestore sized
 * again first as the graph functions' (graphs.c).
 */
extern void tc_nearest_rows(const TcLoaded *a, const TcLoaded *b, const TcJoinParams *params,
							int k, ReturnSetInfo *rsinfo, MemoryContext mcxt, TcRunStats *rs);

/* The same for this backend as a whole (tcjoin.gpu_prewarm); not in the postmaster. */
extern void tc_prewarm_backend(void);

#endif							/* TCJOIN_TCJOIN_H */
