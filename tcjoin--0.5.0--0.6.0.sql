-- tcjoin 0.5.0 to 0.6.0: one join on several GPUs (tcjoin.devices).
-- tc_last_stats() says which GPUs ran the join and each one's share of its
-- work; tc_devices() whether tcjoin.devices lets a join use each GPU.
\echo Use "ALTER EXTENSION tcjoin UPDATE TO '0.6.0'" to load this file. \quit

-- Their result types change: drop and create again (nothing can depend on
-- a function returning SETOF record by its columns).
DROP FUNCTION tc_last_stats();
DROP FUNCTION tc_devices();

-- What the last join in this session did: plan, counts and phase timings.
CREATE FUNCTION tc_last_stats(
    OUT device text,
    OUT method text,
    OUT tensor_cores boolean,
    OUT filter text,
    OUT threads integer,
    OUT grid_dims integer[],
    OUT n bigint,
    OUT d integer,
    OUT eps double precision,
    OUT cells bigint,
    OUT candidates bigint,
    OUT rechecked bigint,
    OUT pairs bigint,
    OUT load_ms double precision,
    OUT index_ms double precision,
    OUT join_ms double precision,
    OUT output_ms double precision,
    OUT total_ms double precision,
    OUT gpu_blocks integer,
    OUT auto_grid_ms double precision,
    OUT auto_brute_ms double precision,
    OUT gpu_kernels text,
    OUT gpu_batches bigint,
    OUT gpu_reruns bigint,
    OUT device_choice text,
    OUT auto_cpu_ms double precision,
    OUT auto_gpu_ms double precision,
    OUT gpu_new_context boolean,
    OUT gpu_setup_ms double precision,
    OUT gpu_full_wait_ms double precision,
    OUT metric text,
    OUT gpus integer,
    OUT gpu_devices integer[],
    OUT gpu_shares double precision[])
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tc_last_stats'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- The GPUs this session can use (none: no rows), and whether
-- tcjoin.devices lets a join use each one.
CREATE FUNCTION tc_devices(
    OUT device integer,
    OUT name text,
    OUT compute_capability text,
    OUT memory_mb bigint,
    OUT free_memory_mb bigint,
    OUT sm_count integer,
    OUT selected boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tc_devices'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
