--
-- crossmatch: tc_join(), every pair (a from one relation, b from another)
-- within eps, against the plain-SQL reference on fresh random data.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS crossmatch CASCADE;
CREATE SCHEMA crossmatch;
RESET client_min_messages;
SET search_path = crossmatch, public;
-- tc_join runs on the CPU; auto lets the suite run unchanged where the
-- session's default is tcjoin.device = gpu.
SET tcjoin.device = auto;

-- Two catalogues of different sizes and element types, overlapping in part.
CREATE TABLE cat_a (id integer PRIMARY KEY, vec real[]);
CREATE TABLE cat_b (oid8 bigint PRIMARY KEY, label text, vec double precision[]);
INSERT INTO cat_a SELECT i, ARRAY[1000 + random(), 1000 + random(), 1000 + random()]::real[]
  FROM generate_series(1, 400) i;
INSERT INTO cat_b SELECT 10000 + i, 'b' || i, ARRAY[1000 + random(), 1000 + random(), 1000 + random()]
  FROM generate_series(1, 300) i;
-- Exact duplicates across the two sides: pairs at distance 0.
INSERT INTO cat_b SELECT 20000 + id, 'copy', vec::float8[] FROM cat_a WHERE id <= 5;

-- The reference: the contract's formula in plain SQL, over every pair.
CREATE FUNCTION ref(eps float8) RETURNS TABLE (id_a bigint, id_b bigint, dist float8)
LANGUAGE sql AS $$
  SELECT * FROM (
    SELECT a.id::bigint, b.oid8,
           (SELECT sqrt(sum((x - y) * (x - y))) FROM unnest(a.vec::float8[], b.vec) AS u(x, y))
      FROM cat_a a, cat_b b) r
  WHERE r.sqrt <= eps
$$;
CREATE FUNCTION mismatches(q text, eps float8) RETURNS TABLE (joined bigint, missing bigint, extra bigint)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TEMP TABLE got AS %s', q);
  CREATE TEMP TABLE want AS SELECT * FROM ref(eps);
  RETURN QUERY SELECT (SELECT count(*) FROM got),
    (SELECT count(*) FROM (TABLE want EXCEPT ALL TABLE got) x),
    (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE want) x);
  DROP TABLE got;
  DROP TABLE want;
END $$;

-- eps: 0, the smallest positive pair distance (a boundary pair), and a
-- denser one; every method; the two sides in real[] and double precision[].
SELECT min(dist) FILTER (WHERE dist > 0) AS d_min,
       percentile_disc(0.01) WITHIN GROUP (ORDER BY dist) AS d_1pct
  FROM ref(1e9) \gset
SELECT e.name, m.method, (SELECT joined = (SELECT count(*) FROM ref(e.eps)) AND missing = 0 AND extra = 0
                            FROM mismatches(format('SELECT * FROM tc_join(%L, %L, %L, %L, %s, method => %L)',
                                                   'cat_a', 'vec', 'cat_b', 'vec', e.eps, m.method), e.eps)) AS same
  FROM (VALUES ('zero', 0::float8), ('boundary', :d_min), ('1 percent', :d_1pct)) e(name, eps),
       (VALUES ('auto'), ('grid'), ('brute')) m(method)
 ORDER BY e.name, m.method;
-- The boundary pair is in at eps = its distance, out just below.
SELECT count(*) >= 1 AS boundary_in FROM tc_join('cat_a', 'vec', 'cat_b', 'vec', :d_min) WHERE dist = :d_min;
SELECT count(*) = 0 AS boundary_out
  FROM tc_join('cat_a', 'vec', 'cat_b', 'vec', (SELECT max(x) FROM (VALUES (:d_min * (1 - 1e-15))) v(x)))
 WHERE dist = :d_min;
-- The duplicates are found at distance 0, with the ids of each side.
SELECT id_a, id_b, dist FROM tc_join('cat_a', 'vec', 'cat_b', 'vec', 0) ORDER BY id_a;

-- Column types of the result, and which side each id comes from.
SELECT pg_typeof(id_a), pg_typeof(id_b), pg_typeof(dist),
       bool_and(id_a < 10000 AND id_b >= 10000) AS sides
  FROM tc_join('cat_a', 'vec', 'cat_b', 'vec', :d_1pct) GROUP BY 1, 2, 3;

-- A relation against itself: both orders of every pair, and each row with itself.
SELECT (SELECT count(*) FROM tc_join('cat_a', 'vec', 'cat_a', 'vec', :d_1pct)) =
       2 * (SELECT count(*) FROM tc_selfjoin('cat_a', 'vec', :d_1pct)) + 400 AS both_orders;

-- Named id columns, and a view on one side.
CREATE VIEW b_view AS SELECT oid8 AS key, vec FROM cat_b WHERE label <> 'copy';
SELECT (SELECT count(*) FROM tc_join('cat_a', 'vec', 'b_view', 'vec', :d_1pct, id_column_b => 'key')) =
       (SELECT count(*) FROM ref(:d_1pct) WHERE id_b < 20000) AS view_side;

-- Empty sides and NULL arguments: no rows.
CREATE TABLE empty_cat (id integer PRIMARY KEY, vec real[]);
SELECT count(*) FROM tc_join('cat_a', 'vec', 'empty_cat', 'vec', 1);
SELECT count(*) FROM tc_join('empty_cat', 'vec', 'cat_a', 'vec', 1);
SELECT count(*) FROM tc_join(NULL, 'vec', 'cat_a', 'vec', 1);
SELECT count(*) FROM tc_join('cat_a', 'vec', 'cat_b', 'vec', NULL);

-- Errors: each side is checked as tc_selfjoin checks its relation.
CREATE TABLE cat_2d (id integer PRIMARY KEY, vec real[]);
INSERT INTO cat_2d VALUES (1, '{0,0}');
SELECT * FROM tc_join('cat_a', 'vec', 'cat_2d', 'vec', 1);
CREATE TABLE dup_ids (id integer, vec real[]);
INSERT INTO dup_ids VALUES (1, '{0,0,0}'), (1, '{1,1,1}');
SELECT * FROM tc_join('cat_a', 'vec', 'dup_ids', 'vec', 1, id_column_b => 'id');
SELECT * FROM tc_join('cat_a', 'vec', 'cat_b', 'label', 1);
SELECT * FROM tc_join('cat_a', 'vec', 'cat_b', 'vec', -1);
SELECT * FROM tc_join('cat_a', 'vec', 'cat_b', 'vec', 1, method => 'fast');
SET tcjoin.device = gpu;
SELECT * FROM tc_join('cat_a', 'vec', 'cat_b', 'vec', 1);
SET tcjoin.device = auto;

SET client_min_messages = warning;
DROP SCHEMA crossmatch CASCADE;
RESET client_min_messages;
