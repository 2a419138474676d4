-- tcjoin: exact epsilon similarity joins
\echo Use "CREATE EXTENSION tcjoin" to load this file. \quit

-- Every pair of rows whose vectors lie within distance eps under the metric.
-- Not STRICT: a NULL default (id_column) must not turn the call into no rows.
CREATE FUNCTION tc_selfjoin(
    relation regclass,
    vector_column name,
    eps double precision,
    id_column name DEFAULT NULL,
    include_self boolean DEFAULT false,
    exact boolean DEFAULT true,
    method text DEFAULT 'auto',
    metric text DEFAULT 'euclidean')
RETURNS TABLE (id_a bigint, id_b bigint, dist double precision)
AS 'MODULE_PATHNAME', 'tc_selfjoin'
LANGUAGE C STABLE PARALLEL RESTRICTED CALLED ON NULL INPUT
ROWS 1000;

COMMENT ON FUNCTION tc_selfjoin(regclass, name, double precision, name, boolean, boolean, text, text) IS
'pairs of rows whose vectors are within distance eps (Euclidean, cosine or negative inner product), each once, id_a < id_b';

-- Every pair (a, b), a from relation_a and b from relation_b, within eps.
CREATE FUNCTION tc_join(
    relation_a regclass,
    vector_column_a name,
    relation_b regclass,
    vector_column_b name,
    eps double precision,
    id_column_a name DEFAULT NULL,
    id_column_b name DEFAULT NULL,
    exact boolean DEFAULT true,
    method text DEFAULT 'auto',
    metric text DEFAULT 'euclidean')
RETURNS TABLE (id_a bigint, id_b bigint, dist double precision)
AS 'MODULE_PATHNAME', 'tc_join'
LANGUAGE C STABLE PARALLEL RESTRICTED CALLED ON NULL INPUT
ROWS 1000;

COMMENT ON FUNCTION tc_join(regclass, name, regclass, name, double precision, name, name, boolean, text, text) IS
'pairs (a from relation_a, b from relation_b) whose vectors are within distance eps (Euclidean, cosine or negative inner product)';

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
    OUT metric text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tc_last_stats'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- The GPUs this session can use (none: no rows).
CREATE FUNCTION tc_devices(
    OUT device integer,
    OUT name text,
    OUT compute_capability text,
    OUT memory_mb bigint,
    OUT free_memory_mb bigint,
    OUT sm_count integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tc_devices'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
