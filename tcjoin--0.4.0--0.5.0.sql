-- tcjoin 0.4.0 to 0.5.0.  Nothing of 0.4.0 changes.
\echo Use "ALTER EXTENSION tcjoin UPDATE TO '0.5.0'" to load this file. \quit

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
