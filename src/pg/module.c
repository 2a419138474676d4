/*
 * module.c
 *		The tcjoin module: its loading and its settings.
 *
 * The settings' values live here; functions.c turns them into a join's
 * parameters.  tcjoin.dev_overrides and tcjoin.devices are parsed by the
 * engine's own parsers when they are set, so a bad value is refused by SET,
 * never by a later join.
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "utils/guc.h"

#include "engine.h"
#include "tcjoin.h"

PG_MODULE_MAGIC;

/* Settings. */
int			tc_device_setting = TC_DEVICE_AUTO;
int			tc_cpu_threads = 0;
bool		tc_log_stats = false;
int			tc_gpu_memory_limit_mb = 0;
int			tc_tensor_cores_setting = TC_TENSOR_AUTO;
int			tc_gpu_full_setting = TC_GPU_FULL_CPU;
bool		tc_gpu_prewarm_setting = false;
int			tc_lists_memory_limit_kb = 0;
int			tc_keep_memory_mb = 512;
TcOverrides tc_overrides;		/* tcjoin.dev_overrides, parsed */
TcDeviceSetting tc_devices_setting;	/* tcjoin.devices, parsed */

static char *tc_dev_overrides = NULL;
static char *tc_devices_string = NULL;

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

static const struct config_enum_entry gpu_full_options[] = {
	{"cpu", TC_GPU_FULL_CPU, false},
	{"wait", TC_GPU_FULL_WAIT, false},
	{"error", TC_GPU_FULL_ERROR, false},
	{NULL, 0, false}
};

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

/*
 * tcjoin.devices: the engine's parser, at SET; whether each GPU exists is
 * the join's question (the GPUs a backend sees may differ from the
 * postmaster's, and the setting may be made where none is).
 */
static bool
check_devices(char **newval, void **extra, GucSource source)
{
	TcDeviceSetting ds;
	char		msg[256];
	TcDeviceSetting *copy;

	if (!tc_devices_parse(*newval, ds.devices, &ds.n, msg, sizeof(msg)))
	{
		GUC_check_errdetail("%s", msg);
		return false;
	}
	copy = (TcDeviceSetting *) malloc(sizeof(TcDeviceSetting));	/* guc.c frees it with free() */
	if (copy == NULL)
		return false;
	*copy = ds;
	*extra = copy;
	return true;
}

static void
assign_devices(const char *newval, void *extra)
{
	if (extra)
		tc_devices_setting = *(TcDeviceSetting *) extra;
	else
		memset(&tc_devices_setting, 0, sizeof(tc_devices_setting));
}

/* tcjoin.keep_memory: the engine's limit, the excess released now. */
static void
assign_keep_memory(int newval, void *extra)
{
	tc_keep_limit((size_t) newval << 20);
}

/* tcjoin.gpu_prewarm turned on: the context now, on a thread of its own. */
static void
assign_gpu_prewarm(bool newval, void *extra)
{
	if (newval)
		tc_prewarm_backend();
}

void
_PG_init(void)
{
	DefineCustomEnumVariable("tcjoin.device",
							 "Where joins run: auto (the device whose estimate is lower, tc_last_stats() says why), cpu or gpu.",
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
							"GPU memory one join may take on each GPU it uses; 0 means no limit.",
							NULL,
							&tc_gpu_memory_limit_mb,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("tcjoin.lists_memory_limit",
							"Host memory the lists that grow with the matches may take (tc_neighbors and tc_join's ranked matches, without k or with k above 16); 0 means a quarter of the machine's memory, -1 no limit.",
							"Past it the join stops with an error, before the memory runs out.  Superuser only: the default keeps one role from taking the server's memory.",
							&tc_lists_memory_limit_kb,
							0, -1, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("tcjoin.keep_memory",
							"Memory a backend keeps, after a join, of the large buffers the join used, for its next join; 0 keeps none.",
							"A fresh buffer's pages are zeroed by the kernel as they are first touched; a kept one's are present already.  "
							"What is kept goes back after a minute with no join, or at once where it would pass this.  Superuser only.",
							&tc_keep_memory_mb,
							512, 0, INT_MAX / 2,
							PGC_SUSET,
							GUC_UNIT_MB,
							NULL, assign_keep_memory, NULL);
	DefineCustomEnumVariable("tcjoin.gpu_full",
							 "What a GPU join does when the GPU's memory is full: cpu (run on the CPU instead), wait (until memory is free) or error.",
							 "cpu applies where tcjoin.device is auto; with device gpu it raises the error.  wait ends with the statement's cancel or timeout.",
							 &tc_gpu_full_setting,
							 TC_GPU_FULL_CPU,
							 gpu_full_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("tcjoin.gpu_prewarm",
							 "Make this backend's CUDA context as soon as the backend starts (with tcjoin in session_preload_libraries) or the setting is turned on.",
							 "A backend's first GPU join otherwise waits for it.  The context holds GPU memory until the backend ends.",
							 &tc_gpu_prewarm_setting,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, assign_gpu_prewarm, NULL);
	DefineCustomEnumVariable("tcjoin.tensor_cores",
							 "FP64 tensor cores for a GPU grid join's distance filter: auto (where they pay), on or off.",
							 "The filter only discards pairs beyond a proven error margin; every returned pair is checked, and its distance computed, exactly.",
							 &tc_tensor_cores_setting,
							 TC_TENSOR_AUTO,
							 tensor_core_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("tcjoin.devices",
							   "The GPUs one join may use: all, or their numbers separated by commas, such as 0,2.",
							   "all is every GPU the backend sees (CUDA_VISIBLE_DEVICES applies; numbers count the visible GPUs from 0).  "
							   "A join on several GPUs returns the rows it returns on one; tcjoin.gpu_memory_limit applies to each GPU.  "
							   "A number may repeat: 0,0 runs the several-GPU path on GPU 0.",
							   &tc_devices_string,
							   "all",
							   PGC_USERSET,
							   GUC_LIST_INPUT,
							   check_devices, assign_devices, NULL);
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
