/*
 * prewarm.c
 *		A backend's first GPU join: its CUDA context made while the table
 *		is read, instead of after.
 *
 * The engine makes the context on a thread of its own (tc_device_prewarm).
 * With tcjoin.device = gpu every self-join starts it; with auto, only a
 * table the planner's statistics put at TC_PREWARM_MIN_ROWS or more, where
 * the GPU likely wins: a context holds GPU memory for the backend's life,
 * which a backend of small joins should not take.  tcjoin.gpu_prewarm
 * starts it when the backend starts (the library preloaded) or when the
 * setting is turned on, so that even a small first join finds it made.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/syscache.h"

#include "tcjoin.h"

#define TC_PREWARM_MIN_ROWS 1000000.0

static bool exit_hook;

/* The thread must be done with CUDA before the process's exit runs CUDA's teardown. */
static void
prewarm_exit(int code, Datum arg)
{
	tc_device_prewarm_wait();
}

static void
prewarm_start(void)
{
	if (!exit_hook)
	{
		on_proc_exit(prewarm_exit, (Datum) 0);
		exit_hook = true;
	}
	tc_device_prewarm();
}

void
tc_prewarm_backend(void)
{
	/* never in the postmaster (CUDA there breaks its children) nor a helper process */
	if (IsUnderPostmaster && MyBackendType == B_BACKEND)
		prewarm_start();
}

void
tc_prewarm_for(Oid relid, const TcJoinParams *params)
{
	if (params->device == TC_DEVICE_CPU)
		return;
	if (params->device == TC_DEVICE_AUTO)
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
		float4		reltuples;

		if (!HeapTupleIsValid(tup))
			return;
		reltuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
		ReleaseSysCache(tup);
		if (reltuples < TC_PREWARM_MIN_ROWS)
			return;
	}
	prewarm_start();
}
