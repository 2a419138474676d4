-- tcjoin 0.1.0 to 0.2.0: tc_last_stats() says where the join ran and why
-- (tcjoin.device's auto estimates both devices), the GPU's set-up and any
-- wait for GPU memory (tcjoin.gpu_full).
\echo Use "ALTER EXTENSION tcjoin UPDATE TO '0.2.0'" to load this file. \quit

-- Its result type changes: drop and create again (nothing can depend on a
-- function returning SETOF record by its columns).
DROP FUNCTION tc_last_stats();

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
    OUT gpu_full_wait_ms double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tc_last_stats'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
