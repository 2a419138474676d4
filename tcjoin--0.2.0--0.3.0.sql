-- tcjoin 0.2.0 to 0.3.0: a metric argument, 'euclidean' (as before), 'cosine'
-- or 'inner_product', last in both joins' arguments, so that every call of
-- 0.2.0 means what it meant; tc_last_stats() says which metric ran.
\echo Use "ALTER EXTENSION tcjoin UPDATE TO '0.3.0'" to load this file. \quit

-- A new argument is a new signature: drop and create again.  A view or
-- function that calls them must be dropped before the update and made again
-- after it.
DROP FUNCTION tc_selfjoin(regclass, name, double precision, name, boolean, boolean, text);
DROP FUNCTION tc_join(regclass, name, regclass, name, double precision, name, name, boolean, text);

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
    OUT gpu_full_wait_ms double precision,
    OUT metric text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tc_last_stats'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
