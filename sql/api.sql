--
-- api: the SQL interface of tc_selfjoin() and tc_last_stats().
--
-- Every result is checked against a plain SQL reference join.  Nothing
-- that depends on where the join ran (device, threads, cells, candidates,
-- grid dimensions, timings) is printed, only facts that hold on any device.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS api CASCADE;
CREATE SCHEMA api;
RESET client_min_messages;
SET search_path = api, public;

-- The contract's distance: float8 differences, squared and summed in index
-- order, then sqrt.  real[] casts to float8[] exactly.
CREATE FUNCTION ref_dist(a float8[], b float8[]) RETURNS float8
LANGUAGE sql IMMUTABLE STRICT AS
$$ SELECT sqrt(sum((x - y) * (x - y))) FROM unnest(a, b) AS u(x, y) $$;

-- Reference self-join of rel: every pair within eps, id_a < id_b.
CREATE FUNCTION ref_join(rel regclass, vec name, eps float8, id name,
                         include_self boolean DEFAULT false)
RETURNS TABLE (id_a bigint, id_b bigint, dist float8)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'WITH p AS MATERIALIZED (
             SELECT %1$I::bigint AS i, %2$I::float8[] AS v FROM %3$s WHERE %2$I IS NOT NULL)
         SELECT a.i, b.i, r.d
           FROM p a JOIN p b ON a.i < b.i OR ($2 AND a.i = b.i),
                LATERAL (SELECT sqrt(sum((x - y) * (x - y))) AS d
                           FROM unnest(a.v, b.v) AS u(x, y)) r
          WHERE r.d <= $1', id, vec, rel)
    USING eps, include_self;
END $$;

-- Compare two queries' results as multisets: row counts, and the rows each
-- has that the other lacks (0 and 0 when they are equal).
CREATE FUNCTION diff(q1 text, q2 text, OUT rows_1 bigint, OUT rows_2 bigint,
                     OUT only_1 bigint, OUT only_2 bigint)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format(
        'WITH a AS MATERIALIZED (%s), b AS MATERIALIZED (%s)
         SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b),
                (SELECT count(*) FROM (TABLE a EXCEPT ALL TABLE b) x),
                (SELECT count(*) FROM (TABLE b EXCEPT ALL TABLE a) x)', q1, q2)
    INTO rows_1, rows_2, only_1, only_2;
END $$;

-- Nothing has run in this session yet: no statistics.
SELECT count(*) FROM tc_last_stats();

-- The declared interface.
SELECT pg_get_function_arguments('tc_selfjoin'::regproc) AS arguments,
       pg_get_function_result('tc_selfjoin'::regproc) AS result;
SELECT pg_get_function_result('tc_last_stats'::regproc) AS result;
SELECT unnest(proargnames) AS tc_last_stats_column FROM pg_proc WHERE proname = 'tc_last_stats';
SELECT pg_get_function_result('tc_devices'::regproc) AS result;
-- One row per usable GPU, none without: only the shape is machine-independent.
SELECT count(*) >= 0 AS listed, bool_and(device >= 0 AND memory_mb > 0 AND sm_count > 0) IS NOT FALSE AS sane
  FROM tc_devices();

--
-- A small table: results, column types, ordering of ids.
--
CREATE TABLE pts (id integer PRIMARY KEY, vec real[]);
INSERT INTO pts VALUES
    (1, '{0,0}'), (2, '{3,4}'), (3, '{1,1}'), (4, '{0,0}'),
    (5, '{10,10}'), (6, NULL), (7, '{3,5}'), (8, '{-1,0}');
CREATE TABLE pts_ref AS SELECT * FROM ref_join('pts', 'vec', 1.5, 'id');
SELECT * FROM pts_ref ORDER BY id_a, id_b;
SELECT * FROM tc_selfjoin('pts', 'vec', 1.5) ORDER BY id_a, id_b;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5)$$, 'TABLE pts_ref');
SELECT DISTINCT pg_typeof(id_a) AS id_a, pg_typeof(id_b) AS id_b, pg_typeof(dist) AS dist
  FROM tc_selfjoin('pts', 'vec', 1.5);
-- Each returned distance is the reference distance of the pair's vectors.
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE j.dist = ref_dist(a.vec, b.vec)) AS dist_equal,
       count(*) FILTER (WHERE j.id_a < j.id_b AND j.dist <= 1.5) AS ordered_within
  FROM tc_selfjoin('pts', 'vec', 1.5) j
  JOIN pts a ON a.id = j.id_a JOIN pts b ON b.id = j.id_b;

-- Ways of naming the relation and passing arguments: all the same join.
SELECT label, d.*
  FROM (VALUES
    ('unqualified',   $$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5)$$),
    ('qualified',     $$SELECT * FROM tc_selfjoin('api.pts', 'vec', 1.5)$$),
    ('quoted',        $$SELECT * FROM tc_selfjoin('"api"."pts"', 'vec', 1.5)$$),
    ('folded',        $$SELECT * FROM tc_selfjoin('API.Pts', 'vec', 1.5)$$),
    ('oid',           $$SELECT * FROM tc_selfjoin('pts'::regclass::oid, 'vec', 1.5)$$),
    ('named args',    $$SELECT * FROM tc_selfjoin(eps => 1.5, vector_column => 'vec', relation => 'pts')$$),
    ('all args',      $$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, 'id', false, true, 'auto')$$),
    ('numeric eps',   $$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5::numeric)$$),
    ('text column',   $$SELECT * FROM tc_selfjoin('pts', 'vec'::text, 1.5)$$),
    ('null defaults', $$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, NULL, NULL, NULL, NULL)$$),
    ('null id_column',$$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, id_column => NULL)$$),
    ('null include_self', $$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, include_self => NULL)$$),
    ('null exact',    $$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, exact => NULL)$$),
    ('null method',   $$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, method => NULL)$$),
    ('method grid',   $$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, method => 'grid')$$),
    ('method brute',  $$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, method => 'brute')$$)
  ) v(label, q), LATERAL diff(v.q, 'TABLE pts_ref') d;

-- NULL relation, vector column or eps: no rows (as a STRICT function).
SELECT count(*) FROM tc_selfjoin(NULL, 'vec', 1.5);
SELECT count(*) FROM tc_selfjoin('pts', NULL, 1.5);
SELECT count(*) FROM tc_selfjoin('pts', 'vec', NULL);
SELECT count(*) FROM tc_selfjoin(NULL, NULL, NULL, NULL, NULL, NULL, NULL);

-- NULL vectors are skipped, with or without include_self.
SELECT count(*) FROM tc_selfjoin('pts', 'vec', 1000, include_self => true)
 WHERE 6 IN (id_a, id_b);
SELECT count(*) = 7 * 6 / 2 AS all_pairs_but_null
  FROM tc_selfjoin('pts', 'vec', 1000);

-- include_self adds (id, id, 0) for every non-NULL vector.
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, include_self => true)$$,
                   $$SELECT * FROM ref_join('pts', 'vec', 1.5, 'id', true)$$);
SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, include_self => true)
 WHERE id_a = id_b ORDER BY id_a;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts', 'vec', 0, include_self => true)$$,
                   $$SELECT * FROM ref_join('pts', 'vec', 0, 'id', true)$$);

-- exact => false is accepted.  These integer points lie far from eps, so
-- the pairs are the same; distances agree to rounding.
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE abs(j.dist - r.dist) <= 0.01) AS dist_close
  FROM tc_selfjoin('pts', 'vec', 1.5, exact => false) j
  FULL JOIN pts_ref r USING (id_a, id_b);

--
-- Random points, real[] and double precision[], with a reference for each.
--
SELECT setseed(0.25);
CREATE TABLE base (id integer PRIMARY KEY, v8 double precision[], v4 real[]);
INSERT INTO base (id, v8)
    SELECT i, ARRAY[random(), random(), random()] FROM generate_series(1, 300) i;
UPDATE base SET v4 = v8::real[];
UPDATE base SET v8 = NULL, v4 = NULL WHERE id % 50 = 0;
CREATE TABLE ref8 AS SELECT * FROM ref_join('base', 'v8', 0.2, 'id');
CREATE TABLE ref4 AS SELECT * FROM ref_join('base', 'v4', 0.2, 'id');
SELECT (SELECT count(*) FROM ref8) AS ref8_pairs, (SELECT count(*) FROM ref4) AS ref4_pairs;

SELECT label, d.*
  FROM (VALUES
    ('float8 auto',  $$SELECT * FROM tc_selfjoin('base', 'v8', 0.2)$$,  'TABLE ref8'),
    ('float8 grid',  $$SELECT * FROM tc_selfjoin('base', 'v8', 0.2, method => 'grid')$$,  'TABLE ref8'),
    ('float8 brute', $$SELECT * FROM tc_selfjoin('base', 'v8', 0.2, method => 'brute')$$, 'TABLE ref8'),
    ('real auto',    $$SELECT * FROM tc_selfjoin('base', 'v4', 0.2)$$,  'TABLE ref4'),
    ('real grid',    $$SELECT * FROM tc_selfjoin('base', 'v4', 0.2, method => 'grid')$$,  'TABLE ref4'),
    ('real brute',   $$SELECT * FROM tc_selfjoin('base', 'v4', 0.2, method => 'brute')$$, 'TABLE ref4')
  ) v(label, q, r), LATERAL diff(v.q, v.r) d;

-- tc_last_stats() describes the last join (real brute above) ...
SELECT device IN ('cpu', 'gpu') AS device_ok,
       method IN ('grid', 'brute') AS method_ok,
       n = (SELECT count(v4) FROM base) AS n_ok,
       d = 3 AS d_ok,
       eps = 0.2 AS eps_ok,
       pairs = (SELECT count(*) FROM ref4) AS pairs_ok,
       candidates >= pairs AS candidates_ok,
       cells >= 0 AS cells_ok,
       load_ms >= 0 AND index_ms >= 0 AND join_ms >= 0 AND output_ms >= 0 AS times_ok,
       total_ms >= greatest(load_ms, index_ms, join_ms, output_ms) AS total_ok
  FROM tc_last_stats();
-- ... with the GPU's batches and reruns where a GPU ran it, and the kernels
-- of FP16 brute force (NULL otherwise) ...
SELECT (device = 'gpu') = (gpu_batches IS NOT NULL) AS gpu_batches_ok,
       (device = 'gpu') = (gpu_reruns IS NOT NULL) AS gpu_reruns_ok,
       coalesce(gpu_batches >= 1 AND gpu_reruns BETWEEN 0 AND gpu_batches, true) AS gpu_counts_ok,
       (device = 'gpu' AND filter LIKE 'fp16 tensor cores%') = (gpu_kernels IS NOT NULL) AS gpu_kernels_ok,
       coalesce(gpu_kernels LIKE '% + % recheck', true) AS gpu_kernels_form_ok
  FROM tc_last_stats();
-- ... and is left alone by a call that returns early on NULL arguments.
SELECT count(*) FROM tc_selfjoin('pts', 'vec', NULL);
SELECT n = (SELECT count(v4) FROM base) AS still_last, eps = 0.2 AS same_eps
  FROM tc_last_stats();
-- pairs counts the rows returned, include_self rows too.
SELECT count(*) FROM tc_selfjoin('base', 'v8', 0.2, include_self => true);
SELECT pairs = (SELECT count(*) FROM ref8) + (SELECT count(v8) FROM base) AS pairs_ok
  FROM tc_last_stats();

--
-- Kinds of relations.
--
-- A view (no primary key: id_column names the ids).
CREATE VIEW base_view AS SELECT id AS vid, v8 FROM base;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base_view', 'v8', 0.2, 'vid')$$, 'TABLE ref8');
-- A materialized view, without and with a unique index on its ids.
CREATE MATERIALIZED VIEW base_mv AS SELECT id, v8 FROM base;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base_mv', 'v8', 0.2, 'id')$$, 'TABLE ref8');
CREATE UNIQUE INDEX ON base_mv (id);
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base_mv', 'v8', 0.2, 'id')$$, 'TABLE ref8');
-- A partitioned table: its primary key gives the ids, pairs cross partitions.
CREATE TABLE base_part (id integer PRIMARY KEY, v8 double precision[])
    PARTITION BY RANGE (id);
CREATE TABLE base_part_1 PARTITION OF base_part FOR VALUES FROM (MINVALUE) TO (100);
CREATE TABLE base_part_2 PARTITION OF base_part FOR VALUES FROM (100) TO (200);
CREATE TABLE base_part_3 PARTITION OF base_part DEFAULT;
INSERT INTO base_part SELECT id, v8 FROM base;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base_part', 'v8', 0.2)$$, 'TABLE ref8');
SELECT count(DISTINCT (a.tableoid, b.tableoid)) AS partition_combinations
  FROM tc_selfjoin('base_part', 'v8', 0.2) j
  JOIN base_part a ON a.id = j.id_a JOIN base_part b ON b.id = j.id_b;
-- One partition on its own is a table like any other.
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base_part_2', 'v8', 0.2)$$,
                   $$SELECT * FROM ref8 WHERE id_a >= 100 AND id_b < 200$$);
-- An inheritance parent: the rows of its children are read too.
CREATE TABLE base_inh (id integer PRIMARY KEY, v8 double precision[]);
CREATE TABLE base_inh_1 () INHERITS (base_inh);
CREATE TABLE base_inh_2 () INHERITS (base_inh);
INSERT INTO base_inh SELECT id, v8 FROM base WHERE id % 3 = 0;
INSERT INTO base_inh_1 SELECT id, v8 FROM base WHERE id % 3 = 1;
INSERT INTO base_inh_2 SELECT id, v8 FROM base WHERE id % 3 = 2;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base_inh', 'v8', 0.2)$$, 'TABLE ref8');
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base_inh_1', 'v8', 0.2, 'id')$$,
                   $$SELECT * FROM ref8 WHERE id_a % 3 = 1 AND id_b % 3 = 1$$);
-- Foreign tables: test/suites/foreign_table.sh (file_fdw is not everywhere).
-- A view whose vectors a PL/pgSQL function builds (expanded arrays).
CREATE FUNCTION build_vec(v double precision[]) RETURNS double precision[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    r double precision[];
BEGIN
    IF v IS NULL THEN
        RETURN NULL;
    END IF;
    FOR i IN 1 .. cardinality(v) LOOP
        r[i] := v[i];
    END LOOP;
    RETURN r;
END $$;
CREATE VIEW base_built AS SELECT id, build_vec(v8) AS v8 FROM base;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base_built', 'v8', 0.2, 'id')$$, 'TABLE ref8');
-- Domains over the id and vector types.
CREATE DOMAIN vec8 AS double precision[];
CREATE DOMAIN big_id AS bigint;
CREATE TABLE base_dom (id big_id PRIMARY KEY, v8 vec8);
INSERT INTO base_dom SELECT id, v8 FROM base;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base_dom', 'v8', 0.2)$$, 'TABLE ref8');
-- Long vectors stored out of line, compressed and not.
CREATE TABLE long_vecs (id integer PRIMARY KEY, v double precision[], w double precision[]);
ALTER TABLE long_vecs ALTER COLUMN w SET STORAGE EXTERNAL;
INSERT INTO long_vecs
    SELECT i, array_fill(i::float8 / 4, ARRAY[3000]), array_fill(i::float8 / 4, ARRAY[3000])
      FROM generate_series(1, 6) i;
UPDATE long_vecs SET v[3000] = 0.5, w[3000] = 0.5 WHERE id = 3;
SELECT id, pg_column_size(v) < 3000 * 8 AS v_compressed, pg_column_size(w) >= 3000 * 8 AS w_plain
  FROM long_vecs ORDER BY id;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('long_vecs', 'v', 15)$$,
                   $$SELECT * FROM ref_join('long_vecs', 'v', 15, 'id')$$);
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('long_vecs', 'w', 15)$$,
                   $$SELECT * FROM ref_join('long_vecs', 'w', 15, 'id')$$);
SELECT * FROM tc_selfjoin('long_vecs', 'w', 15) ORDER BY id_a, id_b;
-- Arrays with other lower bounds are vectors all the same.
CREATE TABLE bounds (id integer PRIMARY KEY, v real[]);
INSERT INTO bounds VALUES (1, '[0:1]={3,4}'), (2, '{3,4}'), (3, '[-5:-4]={3,4.5}');
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('bounds', 'v', 1)$$,
                   $$SELECT * FROM ref_join('bounds', 'v', 1, 'id')$$);
SELECT * FROM tc_selfjoin('bounds', 'v', 1) ORDER BY id_a, id_b;

--
-- Id columns: smallint, integer, bigint; the primary key or id_column.
--
CREATE TABLE ids (v real[], i2 smallint, i4 integer, i8 bigint PRIMARY KEY, alt bigint);
INSERT INTO ids VALUES
    ('{0}', -32768, 2147483647, 9223372036854775807, 5),
    ('{1}', 32767, -2147483648, -9223372036854775808, 4),
    ('{2}', -1, 0, 0, 3),
    ('{3}', 0, 1, -1, 2),
    ('{4}', 1, -1, 1, 1);
-- The primary key (bigint, the fourth column) gives the ids by default.
SELECT * FROM tc_selfjoin('ids', 'v', 1) ORDER BY id_a, id_b;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('ids', 'v', 1)$$,
                   $$SELECT * FROM ref_join('ids', 'v', 1, 'i8')$$);
SELECT * FROM tc_selfjoin('ids', 'v', 1, 'i2') ORDER BY id_a, id_b;
SELECT * FROM tc_selfjoin('ids', 'v', 1, 'i4') ORDER BY id_a, id_b;
SELECT * FROM tc_selfjoin('ids', 'v', 1, 'alt') ORDER BY id_a, id_b;
SELECT label, d.*
  FROM (VALUES ('i2'), ('i4'), ('i8'), ('alt')) v(label),
       LATERAL diff(format('SELECT * FROM tc_selfjoin(%L, %L, 1, %L)', 'ids', 'v', v.label),
                    format('SELECT * FROM ref_join(%L, %L, 1, %L)', 'ids', 'v', v.label)) d;
-- Primary keys of type smallint and integer.
CREATE TABLE pk2 (v real[], id smallint PRIMARY KEY);
INSERT INTO pk2 SELECT vec, id FROM pts;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pk2', 'v', 1.5)$$, 'TABLE pts_ref');
-- A nullable id column: rows with a NULL vector are skipped before their id
-- is read.
CREATE TABLE nullable_ids (id integer, v real[]);
INSERT INTO nullable_ids VALUES (1, '{0}'), (2, '{1}'), (NULL, NULL), (3, NULL);
SELECT * FROM tc_selfjoin('nullable_ids', 'v', 1, 'id') ORDER BY id_a, id_b;

--
-- Empty, one-row and all-NULL tables.
--
CREATE TABLE empty (id integer PRIMARY KEY, v real[]);
SELECT count(*) FROM tc_selfjoin('empty', 'v', 1);
SELECT count(*) FROM tc_selfjoin('empty', 'v', 1, include_self => true);
SELECT n, pairs FROM tc_last_stats();
CREATE TABLE one_row (id integer PRIMARY KEY, v double precision[]);
INSERT INTO one_row VALUES (42, '{1,2,3}');
SELECT * FROM tc_selfjoin('one_row', 'v', 1);
SELECT * FROM tc_selfjoin('one_row', 'v', 1, include_self => true);
SELECT n, d, pairs FROM tc_last_stats();
CREATE TABLE all_null (id integer PRIMARY KEY, v real[]);
INSERT INTO all_null VALUES (1, NULL), (2, NULL);
SELECT count(*) FROM tc_selfjoin('all_null', 'v', 1, include_self => true);
SELECT n, pairs FROM tc_last_stats();

--
-- eps = 0: exact duplicates pair at distance 0, nothing else does.
--
CREATE TABLE dups (id integer PRIMARY KEY, v double precision[]);
INSERT INTO dups VALUES
    (1, '{1,2,3}'), (2, '{1,2,3}'), (3, '{1,2,3.0000000000000004}'),
    (4, '{1,2,3}'), (5, '{1,2,3.0000000000000004}'), (6, '{0,-0,0}'), (7, '{-0,0,0}'),
    (8, '{0,0,0}'), (9, '{0,1e-150,0}');
SELECT '3.0000000000000004'::float8 > 3 AS next_after_three;
SELECT * FROM tc_selfjoin('dups', 'v', 0) ORDER BY id_a, id_b;
SELECT label, d.*
  FROM (VALUES ('auto'), ('grid'), ('brute')) v(label),
       LATERAL diff(format('SELECT * FROM tc_selfjoin(%L, %L, 0, method => %L)', 'dups', 'v', v.label),
                    $$SELECT * FROM ref_join('dups', 'v', 0, 'id')$$) d;
SELECT count(*) FROM tc_selfjoin('dups', 'v', '-0');
-- The same in real[]: 3.0000002 is the next float4 after 3.
CREATE TABLE dups4 (id integer PRIMARY KEY, v real[]);
INSERT INTO dups4 SELECT id, v::real[] FROM dups WHERE id <= 8;
UPDATE dups4 SET v = '{1,2,3.0000002}' WHERE id IN (3, 5);
SELECT '3.0000002'::real > 3 AS next_after_three;
SELECT * FROM tc_selfjoin('dups4', 'v', 0) ORDER BY id_a, id_b;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('dups4', 'v', 0, method => 'grid')$$,
                   $$SELECT * FROM ref_join('dups4', 'v', 0, 'id')$$);

--
-- eps is inclusive: a pair at distance exactly eps is returned, and not
-- for the next float8 below it.
--
-- next_below(x): the largest float8 below a positive normal x, built from
-- its bits.
CREATE FUNCTION float8_bits(x float8) RETURNS bigint LANGUAGE sql IMMUTABLE STRICT AS
$$ SELECT ('x' || encode(float8send(x), 'hex'))::bit(64)::bigint $$;
CREATE FUNCTION next_below(x float8) RETURNS float8 LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT CASE WHEN m > 0 THEN (1 + (m - 1) * 2::float8 ^ (-52)) * 2::float8 ^ (e - 1023)
                ELSE (2 - 2::float8 ^ (-52)) * 2::float8 ^ (e - 1024) END
      FROM (SELECT (b >> 52) & 2047 AS e, b & 4503599627370495 AS m
              FROM (SELECT float8_bits(x) AS b) s) t
$$;
SELECT x, next_below(x), float8_bits(next_below(x)) = float8_bits(x) - 1 AS adjacent
  FROM (VALUES (5::float8), (sqrt(2::float8)), (1), (0.1), (3e-300)) v(x);

CREATE TABLE edge (id integer PRIMARY KEY, v double precision[]);
INSERT INTO edge VALUES (1, '{0,0}'), (2, '{3,4}'), (3, '{1,1}'), (4, '{0.1,0.2}');
SELECT * FROM tc_selfjoin('edge', 'v', 5) WHERE (id_a, id_b) = (1, 2);
SELECT count(*) FROM tc_selfjoin('edge', 'v', next_below(5)) WHERE (id_a, id_b) = (1, 2);
SELECT count(*) FROM tc_selfjoin('edge', 'v', 5 - 5 * 1e-15) WHERE (id_a, id_b) = (1, 2);
SELECT 5 - 5 * 1e-15 < 5 AS below;

-- Every pair of random points, real[] and double precision[], by every
-- method: its own distance as eps includes it, the next float8 below does
-- not.
SELECT setseed(0.5);
CREATE TABLE edge_rand (id integer PRIMARY KEY, v8 double precision[], v4 real[]);
INSERT INTO edge_rand (id, v8)
    SELECT i, ARRAY[random() * 2 - 1, random() * 2 - 1, random() * 2 - 1, random() * 2 - 1]
      FROM generate_series(1, 12) i;
UPDATE edge_rand SET v4 = v8::real[];
CREATE TABLE edge_pairs AS
    SELECT 'v8'::name AS col, a.id AS id_a, b.id AS id_b, ref_dist(a.v8, b.v8) AS dist
      FROM edge_rand a JOIN edge_rand b ON a.id < b.id
    UNION ALL
    SELECT 'v4', a.id, b.id, ref_dist(a.v4::float8[], b.v4::float8[])
      FROM edge_rand a JOIN edge_rand b ON a.id < b.id;
SELECT col, m.method, count(*) AS pairs,
       count(*) FILTER (WHERE EXISTS (
           SELECT 1 FROM tc_selfjoin('edge_rand', p.col, p.dist, method => m.method) j
            WHERE (j.id_a, j.id_b, j.dist) = (p.id_a, p.id_b, p.dist))) AS at_eps,
       count(*) FILTER (WHERE EXISTS (
           SELECT 1 FROM tc_selfjoin('edge_rand', p.col, next_below(p.dist), method => m.method) j
            WHERE (j.id_a, j.id_b) = (p.id_a, p.id_b))) AS below_eps
  FROM edge_pairs p, (VALUES ('auto'), ('grid'), ('brute')) m(method)
 GROUP BY col, m.method ORDER BY col, m.method;

--
-- Odd identifiers are names, never SQL.
--
CREATE SCHEMA "api Odd ""Schema""; DROP SCHEMA api CASCADE; --";
CREATE TABLE "api Odd ""Schema""; DROP SCHEMA api CASCADE; --"."we""ird; DROP TABLE pts; --" (
    "Id; --" integer PRIMARY KEY,
    "V e""c); DROP TABLE pts; --" real[],
    "ALT id" bigint);
INSERT INTO "api Odd ""Schema""; DROP SCHEMA api CASCADE; --"."we""ird; DROP TABLE pts; --"
    SELECT id, vec, id + 100 FROM pts;
SELECT * FROM tc_selfjoin('"api Odd ""Schema""; DROP SCHEMA api CASCADE; --"."we""ird; DROP TABLE pts; --"',
                          'V e"c); DROP TABLE pts; --', 1.5)
 ORDER BY id_a, id_b;
SELECT * FROM diff(
    $q$SELECT * FROM tc_selfjoin('"api Odd ""Schema""; DROP SCHEMA api CASCADE; --"."we""ird; DROP TABLE pts; --"',
                                 'V e"c); DROP TABLE pts; --', 1.5)$q$,
    'TABLE pts_ref');
SELECT * FROM diff(
    $q$SELECT id_a - 100, id_b - 100, dist
         FROM tc_selfjoin((SELECT oid FROM pg_class WHERE relname = 'we"ird; DROP TABLE pts; --'),
                          'V e"c); DROP TABLE pts; --', 1.5, id_column => 'ALT id')$q$,
    'TABLE pts_ref');
CREATE TABLE "UPPER Case" ("ID" integer PRIMARY KEY, "VEC" real[]);
INSERT INTO "UPPER Case" SELECT id, vec FROM pts;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('"UPPER Case"', 'VEC', 1.5)$$, 'TABLE pts_ref');
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('api."UPPER Case"', 'VEC', 1.5, 'ID')$$, 'TABLE pts_ref');
-- Everything is still there.
SELECT count(*) FROM pts;
SELECT count(*) FROM pg_namespace WHERE nspname IN ('api', 'api Odd "Schema"; DROP SCHEMA api CASCADE; --');

--
-- Settings.
--
SELECT name, vartype, boot_val, min_val, max_val, enumvals, context
  FROM pg_settings WHERE name LIKE 'tcjoin.%' ORDER BY name COLLATE "C";
SHOW tcjoin.cpu_threads;
SHOW tcjoin.log_stats;
SET tcjoin.log_stats = on;
SHOW tcjoin.log_stats;
RESET tcjoin.log_stats;
-- The prefix is reserved: a misspelt setting is an error, not a placeholder.
SET tcjoin.foo = 1;
SET tcjoin.cpu_threads = 1;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base', 'v4', 0.2)$$, 'TABLE ref4');
SET tcjoin.cpu_threads = 3;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base', 'v4', 0.2)$$, 'TABLE ref4');
RESET tcjoin.cpu_threads;
-- On the CPU, the statistics are fully known.
SET tcjoin.device = cpu;
SHOW tcjoin.device;
SET tcjoin.cpu_threads = 3;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base', 'v8', 0.2, method => 'grid')$$, 'TABLE ref8');
SELECT device, method, threads BETWEEN 1 AND 3 AS threads_ok,
       cardinality(grid_dims) BETWEEN 1 AND 3 AS grid_dims_ok,
       grid_dims <@ ARRAY[1, 2, 3] AS grid_dim_ids_ok,
       cells >= 1 AS cells_ok, candidates >= pairs AS candidates_ok,
       pairs = (SELECT count(*) FROM ref8) AS pairs_ok
  FROM tc_last_stats();
SET tcjoin.cpu_threads = 1;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base', 'v8', 0.2, method => 'brute')$$, 'TABLE ref8');
SELECT device, method, threads, grid_dims, cells,
       candidates = (SELECT count(v8) * (count(v8) - 1) / 2 FROM base) AS candidates_ok,
       pairs = (SELECT count(*) FROM ref8) AS pairs_ok
  FROM tc_last_stats();
RESET tcjoin.cpu_threads;
SET tcjoin.device = auto;
SHOW tcjoin.device;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base', 'v8', 0.2)$$, 'TABLE ref8');
SELECT device IN ('cpu', 'gpu') AS device_ok FROM tc_last_stats();
RESET tcjoin.device;

-- tcjoin.tensor_cores: FP64 tensor cores filter a GPU grid join's distances;
-- the answers are the same whatever it says.  A GPU join with it on says so,
-- and rechecks (exactly) between all pairs and all candidates; the CPU
-- ignores it.
SET tcjoin.tensor_cores = on;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base', 'v8', 0.2, method => 'grid')$$, 'TABLE ref8');
SELECT (device = 'gpu') = tensor_cores AS tensor_cores_ok,
       CASE WHEN tensor_cores THEN rechecked BETWEEN pairs AND candidates
            ELSE rechecked = 0 END AS rechecked_ok
  FROM tc_last_stats();
SELECT filter = CASE WHEN device = 'gpu' THEN 'fp64 tensor cores' ELSE 'none' END AS filter_ok
  FROM tc_last_stats();
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base', 'v4', 0.2)$$, 'TABLE ref4');
SET tcjoin.tensor_cores = off;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base', 'v8', 0.2, method => 'grid')$$, 'TABLE ref8');
SELECT NOT tensor_cores AS off_ok, rechecked = 0 AS rechecked_ok, filter FROM tc_last_stats();
SET tcjoin.tensor_cores = auto;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('base', 'v8', 0.2)$$, 'TABLE ref8');
RESET tcjoin.tensor_cores;
-- On the CPU, brute force from 48 dimensions filters in float4 first:
-- rechecked counts what the filter kept, every pair and far from every
-- candidate.
SET tcjoin.device = cpu;
SELECT setseed(0.25);
CREATE TABLE hd AS
  SELECT i AS id, (SELECT array_agg(random()::real) FROM generate_series(1, 64) WHERE i > 0) AS v
    FROM generate_series(1, 300) i;
SELECT count(*) > 0 AS some_pairs FROM tc_selfjoin('hd', 'v', 2.9, 'id', method => 'brute');
SELECT rechecked BETWEEN pairs AND candidates / 2 AS rechecked_ok, candidates = 300 * 299 / 2 AS all_candidates,
       filter
  FROM tc_last_stats();
-- tc_last_stats().filter says what filtered: on a GPU, brute force runs on
-- the FP16 tensor cores, and exact => false lets them decide.
RESET tcjoin.device;
SELECT count(*) > 0 AS some_pairs FROM tc_selfjoin('hd', 'v', 2.9, 'id', method => 'brute');
SELECT filter = CASE WHEN device = 'cpu' THEN 'float32'
                     WHEN tensor_cores THEN 'fp16 tensor cores' ELSE 'none' END AS filter_ok
  FROM tc_last_stats();
SELECT count(*) > 0 AS some_pairs FROM tc_selfjoin('hd', 'v', 2.9, 'id', exact => false, method => 'brute');
SELECT filter = CASE WHEN device = 'cpu' THEN 'float32'
                     WHEN tensor_cores THEN 'fp16 tensor cores, approximate' ELSE 'none' END AS filter_ok
  FROM tc_last_stats();
DROP TABLE hd;

--
-- Composition: LATERAL, CTEs, subqueries, prepared statements.
--
SELECT e.eps, count(j.id_a) AS pairs,
       (SELECT count(*) FROM ref_join('pts', 'vec', e.eps, 'id')) AS ref_pairs
  FROM (VALUES (0::float8), (1), (1.5), (5), (100)) e(eps)
  LEFT JOIN LATERAL tc_selfjoin('pts', 'vec', e.eps) j ON true
 GROUP BY e.eps ORDER BY e.eps;
SELECT r.rel, count(*) AS pairs
  FROM (VALUES ('pts'::regclass), ('pk2'), ('"UPPER Case"')) r(rel),
       LATERAL tc_selfjoin(r.rel, CASE WHEN r.rel = 'pts'::regclass THEN 'vec'
                                       WHEN r.rel = 'pk2'::regclass THEN 'v' ELSE 'VEC' END, 1.5) j
 GROUP BY r.rel ORDER BY r.rel::text COLLATE "C";
WITH pairs AS (
    SELECT * FROM tc_selfjoin('base', 'v8', 0.2)
), neighbours AS (
    SELECT id_a AS id, count(*) AS k FROM pairs GROUP BY id_a
    UNION ALL
    SELECT id_b, count(*) FROM pairs GROUP BY id_b
)
SELECT sum(k) = 2 * (SELECT count(*) FROM ref8) AS degrees_ok FROM neighbours;
SELECT count(*) FROM base
 WHERE id IN (SELECT id_a FROM tc_selfjoin('base', 'v8', 0.2)
              UNION SELECT id_b FROM tc_selfjoin('base', 'v8', 0.2))
   AND id NOT IN (SELECT id_a FROM ref8 UNION SELECT id_b FROM ref8);
-- In the select list, with ORDINALITY, through a cursor.
SELECT tc_selfjoin('pts', 'vec', 1.5) AS pair ORDER BY 1;
SELECT max(ordinality) FROM tc_selfjoin('pts', 'vec', 1.5) WITH ORDINALITY;
BEGIN;
DECLARE pairs SCROLL CURSOR FOR
    SELECT * FROM tc_selfjoin('pts', 'vec', 1.5) ORDER BY id_a, id_b;
FETCH 2 FROM pairs;
FETCH ALL FROM pairs;
FETCH BACKWARD 1 FROM pairs;
CLOSE pairs;
COMMIT;
PREPARE tcj(regclass, name, float8) AS SELECT count(*) FROM tc_selfjoin($1, $2, $3);
EXECUTE tcj('pts', 'vec', 1.5);
EXECUTE tcj('base', 'v4', 0.2);
DEALLOCATE tcj;

--
-- A result larger than work_mem spills to disk and comes back whole.
--
SELECT setseed(0.75);
CREATE TABLE spill (id integer PRIMARY KEY, v real[]);
INSERT INTO spill SELECT i, ARRAY[random(), random()] FROM generate_series(1, 400) i;
CREATE TABLE spill_ref AS SELECT * FROM ref_join('spill', 'v', 0.6, 'id');
SET work_mem = '64kB';
SELECT count(*) > 30000 AS big, count(*), sum(id_a), sum(id_b), sum(dist::numeric) FROM spill_ref;
SELECT count(*) > 30000 AS big, count(*), sum(id_a), sum(id_b), sum(dist::numeric)
  FROM tc_selfjoin('spill', 'v', 0.6);
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('spill', 'v', 0.6)$$, 'TABLE spill_ref');
-- The join's own result went to a temporary file: with a small work_mem a
-- temporary file is written, with a large one none is.
CREATE FUNCTION temp_files() RETURNS bigint LANGUAGE sql AS
$$ SELECT temp_files FROM pg_stat_database WHERE datname = current_database() $$;
SELECT pg_stat_force_next_flush();
CREATE TEMP TABLE temp_files_before AS SELECT temp_files() AS n;
SELECT count(*) FROM tc_selfjoin('spill', 'v', 0.6);
SELECT pg_stat_force_next_flush();
SELECT temp_files() > n AS spilled FROM temp_files_before;
SET work_mem = '64MB';
UPDATE temp_files_before SET n = temp_files();
SELECT count(*) FROM tc_selfjoin('spill', 'v', 0.6);
SELECT pg_stat_force_next_flush();
SELECT temp_files() > n AS spilled FROM temp_files_before;
RESET work_mem;

SET client_min_messages = warning;
DROP SCHEMA "api Odd ""Schema""; DROP SCHEMA api CASCADE; --" CASCADE;
DROP SCHEMA api CASCADE;
RESET client_min_messages;
