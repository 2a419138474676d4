-- tcjoin 0.2.0 to 0.3.0: a metric argument, 'euclidean' (as before), 'cosine'
-- or 'inner_product', last in both joins' arguments, so that every call of
-- 0.2.0 means what it meant.
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
