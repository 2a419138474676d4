--
-- crossmatch: tc_join(), every pair (a from one relation, b from another)
-- within eps, against the plain-SQL reference on fresh random data; then
-- tc_join with k, each row's k nearest, against the reference ranked.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS crossmatch CASCADE;
CREATE SCHEMA crossmatch;
RESET client_min_messages;
SET search_path = crossmatch, public;
-- On the GPU the cosine and inner-product metrics run on FP16 tensor cores
-- only (the refusal with tcjoin.tensor_cores = off is the engine tests'):
-- the GPU suite's pass with them off runs this file's joins with them on.
DO $$ BEGIN
  IF current_setting('tcjoin.tensor_cores', true) = 'off' THEN
    PERFORM set_config('tcjoin.tensor_cores', 'auto', false);
  END IF;
END $$;

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

--
-- tc_join with k: for each row of a, its k nearest rows of b within eps,
-- nearest first, ties by the smaller id_b, ranked from 1 (k NULL: all),
-- against the same reference ranked by a window function, for every
-- metric.  Points on a small integer lattice, so that distances tie
-- exactly, b holding copies of rows of a (distance 0) and of itself; ids
-- of b not in the order of the rows, so that ties by id are not ties by
-- position.
SELECT setseed(0.27);
CREATE TABLE ka (id integer PRIMARY KEY, vec real[]);
CREATE TABLE kb (id bigint PRIMARY KEY, vec double precision[]);
INSERT INTO ka SELECT i, ARRAY[1 + floor(random() * 5), 1 + floor(random() * 5), 1 + floor(random() * 5)]::real[]
  FROM generate_series(1, 150) i;
INSERT INTO kb SELECT (i * 37) % 1009, ARRAY[1 + floor(random() * 5), 1 + floor(random() * 5), 1 + floor(random() * 5)]
  FROM generate_series(1, 200) i;
INSERT INTO kb SELECT 2000 + id, vec::float8[] FROM ka WHERE id % 10 = 0;
-- the README's contract for each metric, summed in float8 in index order
CREATE FUNCTION kdist(a float8[], b float8[], metric text) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE metric
           WHEN 'euclidean' THEN sqrt(sq)
           WHEN 'inner_product' THEN -dot
           ELSE 1 - greatest(-1::float8, least(1::float8, dot / sqrt(na * nb)))
         END
    FROM (SELECT sum((x - y) * (x - y) ORDER BY i) AS sq, sum(x * y ORDER BY i) AS dot,
                 sum(x * x ORDER BY i) AS na, sum(y * y ORDER BY i) AS nb
            FROM unnest(a, b) WITH ORDINALITY AS u(x, y, i)) s
$$;
CREATE TABLE kpairs AS
  SELECT m AS metric, a.id::bigint AS id_a, b.id AS id_b, kdist(a.vec::float8[], b.vec, m) AS dist
    FROM ka a, kb b, unnest(ARRAY['euclidean', 'cosine', 'inner_product']) m;
-- each metric's eps: a pair's own dist, about a tenth of the pairs within
CREATE TABLE keps AS
  SELECT metric, percentile_disc(0.1) WITHIN GROUP (ORDER BY dist) AS eps FROM kpairs GROUP BY metric;
-- rows of the reference: every pair within eps, ranked per id_a by (dist, id_b), the first k
CREATE FUNCTION kref(m text, k integer, a_side text DEFAULT 'a') RETURNS TABLE (id_a bigint, id_b bigint, dist float8, rank integer)
LANGUAGE sql AS $$
  SELECT * FROM (
    SELECT p.id_a, p.id_b, p.dist, (row_number() OVER (PARTITION BY p.id_a ORDER BY p.dist, p.id_b))::integer AS rank
      FROM (SELECT CASE a_side WHEN 'a' THEN kp.id_a ELSE kp.id_b END AS id_a,
                   CASE a_side WHEN 'a' THEN kp.id_b ELSE kp.id_a END AS id_b, kp.dist
              FROM kpairs kp WHERE kp.metric = m) p, keps e
     WHERE e.metric = m AND p.dist <= e.eps) r
   WHERE k IS NULL OR r.rank <= k
$$;
-- rows missing and extra, the query's against the reference's
CREATE FUNCTION kdiff(q text, m text, k integer, a_side text DEFAULT 'a') RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  EXECUTE format('CREATE TEMP TABLE kgot AS %s', q);
  SELECT (SELECT count(*) FROM (TABLE kgot EXCEPT ALL SELECT * FROM kref(m, k, a_side)) x) +
         (SELECT count(*) FROM (SELECT * FROM kref(m, k, a_side) EXCEPT ALL TABLE kgot) y) INTO n;
  DROP TABLE kgot;
  RETURN n;
END $$;
-- the data tie: some row of a has two matches of b at the same dist, under every metric
SELECT metric, bool_or(ties) AS ties
  FROM (SELECT kp.metric, count(*) > count(DISTINCT dist) AS ties
          FROM kpairs kp JOIN keps e USING (metric) WHERE kp.dist <= e.eps GROUP BY kp.metric, kp.id_a) t
 GROUP BY metric ORDER BY metric;
-- every metric, k NULL (all, ranked), 1, 3 and past every row's matches;
-- each method the metric takes
SELECT e.metric, k.k, m.method,
       kdiff(format('SELECT * FROM tc_join(%L, %L, %L, %L, %s, k => %s, method => %L, metric => %L)',
                    'ka', 'vec', 'kb', 'vec', e.eps, coalesce(k.k::text, 'NULL'), m.method, e.metric),
             e.metric, k.k) AS differ
  FROM keps e, (VALUES (NULL::integer), (1), (3), (100000)) k(k), (VALUES ('auto'), ('grid'), ('brute')) m(method)
 WHERE NOT (m.method = 'grid' AND e.metric = 'inner_product')
 ORDER BY 1, 2 NULLS FIRST, 3;
-- the sides swapped (double precision[] first): b's rows' nearest of a
SELECT e.metric,
       kdiff(format('SELECT * FROM tc_join(%L, %L, %L, %L, %s, k => 2, metric => %L)',
                    'kb', 'vec', 'ka', 'vec', e.eps, e.metric), e.metric, 2, 'b') AS differ
  FROM keps e ORDER BY 1;
-- k => 1, the best match: one row for each row of a that has a match,
-- its dist the least; at eps 0 the matches are the equal rows of b (the
-- lattice repeats points), and the best is the one of smallest id
SELECT (SELECT count(*) FROM tc_join('ka', 'vec', 'kb', 'vec', 2, k => 1)) =
       (SELECT count(DISTINCT id_a) FROM kpairs WHERE metric = 'euclidean' AND dist <= 2) AS one_a_row,
       (SELECT bool_and(t.dist = (SELECT min(dist) FROM kpairs p WHERE p.metric = 'euclidean' AND p.id_a = t.id_a) AND rank = 1)
          FROM tc_join('ka', 'vec', 'kb', 'vec', 2, k => 1) t) AS least;
SELECT count(*) = (SELECT count(*) FROM ka WHERE EXISTS (SELECT 1 FROM kb WHERE kb.vec = ka.vec::float8[])) AS every_equal,
       bool_and(t.dist = 0 AND t.id_b = (SELECT min(kb.id) FROM ka, kb WHERE ka.id = t.id_a AND kb.vec = ka.vec::float8[])) AS smallest_id,
       (SELECT count(*) FROM ka a, kb b WHERE b.vec = a.vec::float8[]) > 2 * count(*) AS ties
  FROM tc_join('ka', 'vec', 'kb', 'vec', 0, k => 1) t;
-- the result's columns and their types; without k, the three columns as before
SELECT pg_typeof(id_a), pg_typeof(id_b), pg_typeof(dist), pg_typeof(rank), min(rank), max(rank)
  FROM tc_join('ka', 'vec', 'kb', 'vec', 3, k => 4) GROUP BY 1, 2, 3, 4;
SELECT * FROM tc_join('ka', 'vec', 'kb', 'vec', 1, 'id', 'id') LIMIT 0;
SELECT * FROM tc_join('ka', 'vec', 'kb', 'vec', 1, 2) LIMIT 0;
-- k NULL ranks every match: as many rows as the join without k
SELECT (SELECT count(*) FROM tc_join('ka', 'vec', 'kb', 'vec', 2, k => NULL)) =
       (SELECT count(*) FROM tc_join('ka', 'vec', 'kb', 'vec', 2)) AS all_ranked;
-- sides of 0 and 1 rows
CREATE TABLE k_one (id integer PRIMARY KEY, vec real[]);
INSERT INTO k_one VALUES (7, '{3,3,3}');
SELECT count(*) FROM tc_join('empty_cat', 'vec', 'kb', 'vec', 2, k => 3);
SELECT count(*) FROM tc_join('ka', 'vec', 'empty_cat', 'vec', 2, k => 3);
SELECT count(*) = least(3, (SELECT count(*) FROM kb WHERE kdist('{3,3,3}', vec, 'euclidean') <= 2)) AS one_a,
       bool_and(id_a = 7) AS its_id, array_agg(rank ORDER BY rank) = '{1,2,3}' AS ranks
  FROM tc_join('k_one', 'vec', 'kb', 'vec', 2, k => 3);
SELECT count(*) = (SELECT count(*) FROM ka WHERE kdist(vec::float8[], '{3,3,3}', 'euclidean') <= 2) AS one_b,
       bool_and(id_b = 7 AND rank = 1) AS its_id
  FROM tc_join('ka', 'vec', 'k_one', 'vec', 2, k => 3);
-- NULL arguments: no rows
SELECT count(*) FROM tc_join(NULL, 'vec', 'kb', 'vec', 2, k => 1);
SELECT count(*) FROM tc_join('ka', 'vec', 'kb', 'vec', NULL, k => 1);
-- errors
SELECT * FROM tc_join('ka', 'vec', 'kb', 'vec', 2, k => 0);
SELECT * FROM tc_join('ka', 'vec', 'kb', 'vec', 2, k => -1);
SELECT * FROM tc_join('ka', 'vec', 'cat_2d', 'vec', 2, k => 1);
SELECT * FROM tc_join('ka', 'vec', 'kb', 'vec', 2, k => 1, metric => 'manhattan');

SET client_min_messages = warning;
DROP SCHEMA crossmatch CASCADE;
RESET client_min_messages;
