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

-- tc_join with k: for each row of relation_a, its k nearest rows of
-- relation_b within eps (k NULL: every one), nearest first, ties by the
-- smaller id_b, each with its rank (1: the nearest).  An overload, since its
-- result has a fourth column: k has no default, so a call without it is the
-- three-column tc_join's.
CREATE FUNCTION tc_join(
    relation_a regclass,
    vector_column_a name,
    relation_b regclass,
    vector_column_b name,
    eps double precision,
    k integer,
    id_column_a name DEFAULT NULL,
    id_column_b name DEFAULT NULL,
    exact boolean DEFAULT true,
    method text DEFAULT 'auto',
    metric text DEFAULT 'euclidean')
RETURNS TABLE (id_a bigint, id_b bigint, dist double precision, rank integer)
AS 'MODULE_PATHNAME', 'tc_join_k'
LANGUAGE C STABLE PARALLEL RESTRICTED CALLED ON NULL INPUT
ROWS 1000;

COMMENT ON FUNCTION tc_join(regclass, name, regclass, name, double precision, integer, name, name, boolean, text, text) IS
'for each row of relation_a, its k nearest rows of relation_b within distance eps (every one when k is NULL), nearest first, ties by the smaller id_b, ranked from 1';

-- The sky: right ascension and declination in degrees as a unit vector, and
-- an angular radius in arcseconds as the chord between unit vectors, so that
-- a Euclidean join of the vectors at that chord matches within the radius
-- ("dec" is quoted: DEC is an SQL keyword).
CREATE FUNCTION tc_radec_to_xyz(ra double precision, "dec" double precision)
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'tc_radec_to_xyz'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION tc_radec_to_xyz(double precision, double precision) IS
'the unit vector (cos dec cos ra, cos dec sin ra, sin dec) of a direction given in degrees';

CREATE FUNCTION tc_arcsec_to_chord(arcsec double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'tc_arcsec_to_chord'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION tc_arcsec_to_chord(double precision) IS
'the chord 2 sin(theta / 2) between unit vectors an angle of arcsec arcseconds apart (2 from 180 degrees on)';

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

-- Answers that are not pair lists: one number, or one row a point.  The
-- same arguments and checks as tc_selfjoin (no include_self: a row is not
-- its own neighbour).

-- The number of rows tc_selfjoin would return.
CREATE FUNCTION tc_count(
    relation regclass,
    vector_column name,
    eps double precision,
    id_column name DEFAULT NULL,
    exact boolean DEFAULT true,
    method text DEFAULT 'auto',
    metric text DEFAULT 'euclidean')
RETURNS bigint
AS 'MODULE_PATHNAME', 'tc_count'
LANGUAGE C STABLE PARALLEL RESTRICTED CALLED ON NULL INPUT;

COMMENT ON FUNCTION tc_count(regclass, name, double precision, name, boolean, text, text) IS
'the number of pairs of rows within distance eps (what tc_selfjoin would return)';

-- Every row with its number of neighbours within eps (0 included).
CREATE FUNCTION tc_degrees(
    relation regclass,
    vector_column name,
    eps double precision,
    id_column name DEFAULT NULL,
    exact boolean DEFAULT true,
    method text DEFAULT 'auto',
    metric text DEFAULT 'euclidean')
RETURNS TABLE (id bigint, degree bigint)
AS 'MODULE_PATHNAME', 'tc_degrees'
LANGUAGE C STABLE PARALLEL RESTRICTED CALLED ON NULL INPUT
ROWS 1000;

COMMENT ON FUNCTION tc_degrees(regclass, name, double precision, name, boolean, text, text) IS
'every row with its number of neighbours within distance eps';

-- Every row with its neighbours within eps (at most the k nearest), nearest
-- first, ties by the smaller id.
CREATE FUNCTION tc_neighbors(
    relation regclass,
    vector_column name,
    eps double precision,
    k integer DEFAULT NULL,
    id_column name DEFAULT NULL,
    exact boolean DEFAULT true,
    method text DEFAULT 'auto',
    metric text DEFAULT 'euclidean')
RETURNS TABLE (id bigint, neighbor_ids bigint[], dists double precision[])
AS 'MODULE_PATHNAME', 'tc_neighbors'
LANGUAGE C STABLE PARALLEL RESTRICTED CALLED ON NULL INPUT
ROWS 1000;

COMMENT ON FUNCTION tc_neighbors(regclass, name, double precision, integer, name, boolean, text, text) IS
'every row with its neighbours within distance eps (the k nearest when k is given), nearest first';

-- The connected components of the eps-graph, each named by its smallest id.
CREATE FUNCTION tc_components(
    relation regclass,
    vector_column name,
    eps double precision,
    id_column name DEFAULT NULL,
    exact boolean DEFAULT true,
    method text DEFAULT 'auto',
    metric text DEFAULT 'euclidean')
RETURNS TABLE (id bigint, component bigint)
AS 'MODULE_PATHNAME', 'tc_components'
LANGUAGE C STABLE PARALLEL RESTRICTED CALLED ON NULL INPUT
ROWS 1000;

COMMENT ON FUNCTION tc_components(regclass, name, double precision, name, boolean, text, text) IS
'every row with its connected component of the eps-graph (single linkage), named by its smallest id';

-- DBSCAN on the exact eps-graph: min_points counts the row itself; noise has
-- cluster NULL; a border row joins its nearest core neighbour's cluster (ties:
-- the smaller id); clusters are numbered from 0 in the order of their
-- smallest member id.
CREATE FUNCTION tc_dbscan(
    relation regclass,
    vector_column name,
    eps double precision,
    min_points integer,
    id_column name DEFAULT NULL,
    exact boolean DEFAULT true,
    method text DEFAULT 'auto',
    metric text DEFAULT 'euclidean')
RETURNS TABLE (id bigint, cluster integer, is_core boolean)
AS 'MODULE_PATHNAME', 'tc_dbscan'
LANGUAGE C STABLE PARALLEL RESTRICTED CALLED ON NULL INPUT
ROWS 1000;

COMMENT ON FUNCTION tc_dbscan(regclass, name, double precision, integer, name, boolean, text, text) IS
'DBSCAN clusters of the rows (exact eps-graph; min_points counts the row itself; noise: cluster NULL)';
