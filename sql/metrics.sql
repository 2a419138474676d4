--
-- metrics: cosine and inner product against plain SQL, the README's
-- contract written out: the dot product and both squared norms summed in
-- float8 in index order; inner product dist = -dot; cosine
-- dist = 1 - clamp(dot / sqrt(na * nb), -1, 1).  eps at a pair's own dist.
--
-- The GPU suite runs this file with tcjoin.device = gpu: the same rows
-- from FP16 brute force and the unit vectors' grid there; tc_join runs
-- under auto (two sets run on the CPU).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS metrics CASCADE;
CREATE SCHEMA metrics;
SET search_path = metrics, public;
RESET client_min_messages;
SELECT setseed(0.42);
-- On the GPU the cosine and inner-product metrics run on FP16 tensor cores
-- only (the refusal with tcjoin.tensor_cores = off is the engine tests'):
-- the GPU suite's pass with them off runs this file's joins with them on.
DO $$ BEGIN
  IF current_setting('tcjoin.tensor_cores', true) = 'off' THEN
    PERFORM set_config('tcjoin.tensor_cores', 'auto', false);
  END IF;
END $$;
CREATE TABLE mv (id int PRIMARY KEY, v real[], w float8[]);
INSERT INTO mv (id, v)
  SELECT i, (SELECT array_agg((random() * 2 - 1)::real) FROM generate_series(1, 6) k WHERE i > 0)
    FROM generate_series(1, 150) i;
-- near duplicates: a scaled copy (cosine 0) and a nudged one
INSERT INTO mv (id, v) SELECT id + 1000, (SELECT array_agg(x * 3) FROM unnest(v) x) FROM mv WHERE id % 10 = 0;
INSERT INTO mv (id, v) SELECT id + 2000, (SELECT array_agg(x + 0.01::real) FROM unnest(v) x) FROM mv WHERE id % 10 = 5;
UPDATE mv SET w = v::float8[];
CREATE FUNCTION ref_metric(a float8[], b float8[], metric text) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE metric
           WHEN 'inner_product' THEN -dot
           ELSE 1 - greatest(-1::float8, least(1::float8, dot / sqrt(na * nb)))
         END
    FROM (SELECT sum(x * y ORDER BY i) AS dot, sum(x * x ORDER BY i) AS na, sum(y * y ORDER BY i) AS nb
            FROM unnest(a, b) WITH ORDINALITY AS u(x, y, i)) s
$$;
CREATE TABLE ref AS
  SELECT m AS metric, a.id AS id_a, b.id AS id_b, ref_metric(a.w, b.w, m) AS dist
    FROM mv a JOIN mv b ON a.id < b.id, unnest(ARRAY['cosine', 'inner_product']) m;
-- eps: the 40th smallest dist under each metric, so that a pair lies on it
CREATE TABLE eps AS
  SELECT metric, (SELECT dist FROM ref r WHERE r.metric = m.metric ORDER BY dist OFFSET 40 LIMIT 1) AS eps
    FROM (VALUES ('cosine'), ('inner_product')) m(metric);
-- real[] and float8[] columns, each metric: rows missing and extra against the reference
SELECT e.metric, col,
       (SELECT count(*) FROM ref r WHERE r.metric = e.metric AND r.dist <= e.eps) AS rows,
       (SELECT count(*) FROM (SELECT * FROM tc_selfjoin('mv', col, e.eps, metric => e.metric)
                              EXCEPT ALL
                              SELECT id_a, id_b, dist FROM ref r WHERE r.metric = e.metric AND r.dist <= e.eps) x) AS extra,
       (SELECT count(*) FROM (SELECT id_a, id_b, dist FROM ref r WHERE r.metric = e.metric AND r.dist <= e.eps
                              EXCEPT ALL
                              SELECT * FROM tc_selfjoin('mv', col, e.eps, metric => e.metric)) x) AS missing
  FROM eps e, unnest(ARRAY['v', 'w']::name[]) col ORDER BY 1, 2;
-- the next float8 below eps leaves the pair on it out
SELECT e.metric,
       (SELECT count(*) FROM tc_selfjoin('mv', 'v', e.eps * (1 - 2::float8 ^ -53), metric => e.metric)) =
       (SELECT count(*) FROM ref r WHERE r.metric = e.metric AND r.dist < e.eps) AS right
  FROM eps e WHERE e.eps > 0 ORDER BY 1;
-- scaled copies are at cosine distance 0 (or within rounding of it)
SELECT count(*) AS scaled_copies FROM tc_selfjoin('mv', 'v', 1e-12, metric => 'cosine') WHERE id_b = id_a + 1000;
-- the inner product with a negative eps: pairs whose dot product is at least 2
SELECT (SELECT count(*) FROM tc_selfjoin('mv', 'w', -2, metric => 'inner_product')) =
       (SELECT count(*) FROM ref WHERE metric = 'inner_product' AND dist <= -2) AS right;
-- include_self: a row with itself where its own dist is within eps
SELECT (SELECT count(*) FROM tc_selfjoin('mv', 'w', -2, include_self => true, metric => 'inner_product') WHERE id_a = id_b) =
       (SELECT count(*) FROM mv WHERE ref_metric(w, w, 'inner_product') <= -2) AS right,
       (SELECT count(*) FROM tc_selfjoin('mv', 'v', 0, include_self => true, metric => 'cosine') WHERE id_a = id_b) AS cosine_self;
-- tc_join, real[] with float8[]: every ordered pair
SET tcjoin.device = auto;
SELECT (SELECT count(*) FROM tc_join('mv', 'v', 'mv', 'w', 0.05, metric => 'cosine')) =
       (SELECT count(*) FROM mv a, mv b WHERE ref_metric(a.w, b.w, 'cosine') <= 0.05) AS right;
RESET tcjoin.device;
-- method brute is the same join; method grid with the inner product and bad values are errors
SELECT count(*) > 0 AS rows FROM tc_selfjoin('mv', 'v', 0.05, method => 'brute', metric => 'cosine');
SELECT method, metric FROM tc_last_stats();
-- cosine through the grid of unit vectors: the same rows as brute force
SELECT (SELECT count(*) FROM (SELECT * FROM tc_selfjoin('mv', 'v', 0.05, method => 'grid', metric => 'cosine')
                              EXCEPT ALL
                              SELECT * FROM tc_selfjoin('mv', 'v', 0.05, method => 'brute', metric => 'cosine')) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM tc_selfjoin('mv', 'v', 0.05, method => 'brute', metric => 'cosine')
                              EXCEPT ALL
                              SELECT * FROM tc_selfjoin('mv', 'v', 0.05, method => 'grid', metric => 'cosine')) x) AS missing;
SELECT count(*) > 0 AS rows FROM tc_selfjoin('mv', 'v', 0.05, metric => 'cosine');
SELECT filter, metric FROM tc_last_stats();
SELECT * FROM tc_selfjoin('mv', 'v', 0.05, method => 'grid', metric => 'inner_product');
SELECT * FROM tc_selfjoin('mv', 'v', 0.05, metric => 'manhattan');
SELECT * FROM tc_selfjoin('mv', 'v', -0.05, metric => 'cosine');
SELECT * FROM tc_selfjoin('mv', 'v', -0.05);
SELECT * FROM tc_selfjoin('mv', 'v', 'Infinity', metric => 'inner_product');
SELECT count(*) AS null_metric_is_euclidean FROM tc_selfjoin('mv', 'v', 0.3, metric => NULL);
-- a zero vector has no cosine distance: the error names its row
INSERT INTO mv VALUES (5000, '{0,0,0,0,0,0}', '{0,0,0,0,0,0}');
SELECT * FROM tc_selfjoin('mv', 'v', 0.05, metric => 'cosine');
SET tcjoin.device = auto;
SELECT * FROM tc_join('mv', 'w', 'mv', 'v', 0.05, metric => 'cosine');
RESET tcjoin.device;
SELECT count(*) >= 0 AS inner_product_takes_it FROM tc_selfjoin('mv', 'v', 0.05, metric => 'inner_product');
SET client_min_messages = warning;
DROP SCHEMA metrics CASCADE;
