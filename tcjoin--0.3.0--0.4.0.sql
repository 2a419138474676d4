-- tcjoin 0.3.0 to 0.4.0: answers that are not pair lists: tc_count,
-- tc_degrees, tc_neighbors, tc_components and tc_dbscan.  Nothing of 0.3.0
-- changes.
\echo Use "ALTER EXTENSION tcjoin UPDATE TO '0.4.0'" to load this file. \quit

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
