--
-- graphs: tc_count, tc_degrees, tc_neighbors, tc_components and tc_dbscan
-- against plain SQL over the contract's distance (float8, index order),
-- on fresh random points with duplicates, ids that are not consecutive,
-- eps on a pair's own distance; then the edge cases (every row noise, one
-- cluster, min_points 1) and the errors.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS graphs CASCADE;
CREATE SCHEMA graphs;
SET search_path = graphs, public;
RESET client_min_messages;
SELECT setseed(0.77);
CREATE TABLE g (id bigint PRIMARY KEY, v real[]);
-- clusters of points, scattered noise, and exact duplicates; ids 7 i mod 1009
INSERT INTO g
  SELECT (i * 7) % 1009, ARRAY[(i % 12) / 3.0 + random() * 0.3, (i % 12) % 3 + random() * 0.3]::real[]
    FROM generate_series(1, 240) i;
INSERT INTO g SELECT (i * 7) % 1009, ARRAY[random() * 5, random() * 5]::real[] FROM generate_series(241, 280) i;
INSERT INTO g SELECT (i * 7) % 1009, (SELECT v FROM g WHERE id = 7 * (i - 280)) FROM generate_series(281, 290) i;
CREATE FUNCTION ref_dist(a real[], b real[]) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8) ORDER BY i))
    FROM unnest(a, b) WITH ORDINALITY AS u(x, y, i)
$$;
CREATE TABLE allpairs AS
  SELECT a.id AS a, b.id AS b, ref_dist(a.v, b.v) AS dist FROM g a JOIN g b ON a.id < b.id;
-- eps: the 600th smallest distance, so that a pair lies on it
CREATE TABLE eps AS SELECT (SELECT dist FROM allpairs ORDER BY dist OFFSET 600 LIMIT 1) AS eps;
-- both directions of every pair within eps
CREATE VIEW edges AS
  SELECT a, b, dist FROM allpairs, eps WHERE dist <= eps.eps
  UNION ALL SELECT b, a, dist FROM allpairs, eps WHERE dist <= eps.eps;
-- tc_count: the pairs, as plain SQL and tc_selfjoin count them
SELECT tc_count('g', 'v', eps) = (SELECT count(*) FROM allpairs a WHERE a.dist <= eps.eps) AS sql,
       tc_count('g', 'v', eps) = (SELECT count(*) FROM tc_selfjoin('g', 'v', eps)) AS selfjoin,
       tc_count('g', 'v', eps) > 600 AS pairs
  FROM eps;
-- the next float8 below eps leaves the pair on it out
SELECT tc_count('g', 'v', eps * (1 - 2::float8 ^ -53)) = (SELECT count(*) FROM allpairs a WHERE a.dist < eps.eps) AS below
  FROM eps;
-- tc_degrees: every row, 0 included
CREATE TABLE ref_deg AS
  SELECT g.id, count(e.b) AS degree FROM g LEFT JOIN edges e ON e.a = g.id GROUP BY g.id;
SELECT (SELECT count(*) FROM ref_deg WHERE degree = 0) > 0 AS some_isolated,
       (SELECT count(*) FROM (SELECT * FROM tc_degrees('g', 'v', (SELECT eps FROM eps)) EXCEPT SELECT * FROM ref_deg) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM ref_deg EXCEPT SELECT * FROM tc_degrees('g', 'v', (SELECT eps FROM eps))) x) AS missing;
-- tc_neighbors: nearest first, ties by the smaller id; all, and the 3 nearest
CREATE TABLE ref_nb AS
  SELECT g.id, coalesce(array_agg(e.b ORDER BY e.dist, e.b) FILTER (WHERE e.b IS NOT NULL), '{}') AS ids,
         coalesce(array_agg(e.dist ORDER BY e.dist, e.b) FILTER (WHERE e.b IS NOT NULL), '{}') AS dists
    FROM g LEFT JOIN edges e ON e.a = g.id GROUP BY g.id;
SELECT (SELECT count(*) FROM (SELECT * FROM tc_neighbors('g', 'v', (SELECT eps FROM eps))
                              EXCEPT SELECT * FROM ref_nb) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM ref_nb
                              EXCEPT SELECT * FROM tc_neighbors('g', 'v', (SELECT eps FROM eps))) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM tc_neighbors('g', 'v', (SELECT eps FROM eps), k => 3)
                              EXCEPT SELECT id, ids[1:3], dists[1:3] FROM ref_nb) x) AS extra_k3,
       (SELECT count(*) FROM (SELECT id, ids[1:3], dists[1:3] FROM ref_nb
                              EXCEPT SELECT * FROM tc_neighbors('g', 'v', (SELECT eps FROM eps), k => 3)) x) AS missing_k3;
-- tc_components: labels spread along the edges until each row has its component's smallest id
CREATE TABLE ref_comp AS
  WITH RECURSIVE lab(id, comp) AS (
    SELECT id, id FROM g
    UNION
    SELECT e.b, l.comp FROM lab l JOIN edges e ON e.a = l.id)
  SELECT id, min(comp) AS component FROM lab GROUP BY id;
SELECT (SELECT count(DISTINCT component) FROM ref_comp) > 1 AS several,
       (SELECT count(*) FROM (SELECT * FROM tc_components('g', 'v', (SELECT eps FROM eps)) EXCEPT SELECT * FROM ref_comp) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM ref_comp EXCEPT SELECT * FROM tc_components('g', 'v', (SELECT eps FROM eps))) x) AS missing;
-- tc_dbscan against DBSCAN written out: cores (degree + 1 >= min_points),
-- clusters the components of the cores' edges, a border row with its
-- nearest core (ties: the smaller id), clusters numbered by smallest member
CREATE FUNCTION ref_dbscan(min_points int) RETURNS TABLE (id bigint, cluster int, is_core boolean)
LANGUAGE sql AS $$
  WITH RECURSIVE core AS (SELECT id FROM ref_deg WHERE degree + 1 >= min_points),
  ce AS (SELECT e.a, e.b FROM edges e JOIN core c1 ON c1.id = e.a JOIN core c2 ON c2.id = e.b),
  lab(id, comp) AS (SELECT id, id FROM core UNION SELECT ce.b, l.comp FROM lab l JOIN ce ON ce.a = l.id),
  croot AS (SELECT id, min(comp) AS root FROM lab GROUP BY id),
  border AS (SELECT DISTINCT ON (e.a) e.a AS id, r.root FROM edges e JOIN croot r ON r.id = e.b
              WHERE e.a NOT IN (SELECT id FROM core) ORDER BY e.a, e.dist, e.b),
  member AS (SELECT id, root FROM croot UNION ALL SELECT id, root FROM border),
  num AS (SELECT root, (dense_rank() OVER (ORDER BY min(id)) - 1)::int AS cluster FROM member GROUP BY root)
  SELECT g.id, num.cluster, g.id IN (SELECT id FROM core)
    FROM g LEFT JOIN member m ON m.id = g.id LEFT JOIN num ON num.root = m.root
$$;
SELECT mp,
       (SELECT count(DISTINCT cluster) FROM ref_dbscan(mp)) AS clusters,
       (SELECT count(*) FROM ref_dbscan(mp) WHERE cluster IS NULL) AS noise,
       (SELECT count(*) FROM (SELECT * FROM tc_dbscan('g', 'v', (SELECT eps FROM eps), mp)
                              EXCEPT SELECT * FROM ref_dbscan(mp)) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM ref_dbscan(mp)
                              EXCEPT SELECT * FROM tc_dbscan('g', 'v', (SELECT eps FROM eps), mp)) x) AS missing
  FROM unnest(ARRAY[1, 3, 5, 8]) mp ORDER BY mp;
-- every row noise; one cluster of all rows
SELECT count(*) AS rows, count(cluster) AS clustered, bool_or(is_core) AS any_core
  FROM tc_dbscan('g', 'v', 1e-9, 3);
SELECT count(*) AS rows, count(DISTINCT cluster) AS clusters, min(cluster) AS cluster, bool_and(is_core) AS all_core
  FROM tc_dbscan('g', 'v', 10, 5);
SELECT count(DISTINCT component) AS components FROM tc_components('g', 'v', 10);
-- duplicates: at distance 0, each other's nearest
SELECT bool_and(dists[1] = 0) AS duplicates_nearest
  FROM tc_neighbors('g', 'v', 0, 1) WHERE id IN (SELECT (i * 7) % 1009 FROM generate_series(281, 290) i);
-- another metric and method, and an id column named
SELECT tc_count('g', 'v', 0.01, metric => 'cosine') = (SELECT count(*) FROM tc_selfjoin('g', 'v', 0.01, metric => 'cosine')) AS cosine,
       tc_count('g', 'v', 0.2, method => 'brute') = (SELECT count(*) FROM tc_selfjoin('g', 'v', 0.2)) AS brute;
CREATE TABLE nokey AS SELECT id AS pid, v FROM g;
SELECT (SELECT array_agg(degree ORDER BY id) FROM tc_degrees('nokey', 'v', 0.2, id_column => 'pid')) =
       (SELECT array_agg(degree ORDER BY id) FROM tc_degrees('g', 'v', 0.2)) AS id_column;
-- NULL arguments: no rows (tc_count: NULL)
SELECT tc_count('g', 'v', NULL) IS NULL AS null_eps,
       (SELECT count(*) FROM tc_dbscan('g', 'v', 0.1, NULL)) AS null_min_points,
       (SELECT count(*) FROM tc_degrees(NULL, 'v', 0.1)) AS null_relation;
-- errors
SELECT * FROM tc_neighbors('g', 'v', 0.1, k => 0);
SELECT * FROM tc_dbscan('g', 'v', 0.1, 0);
SELECT tc_count('g', 'v', -1);
SELECT * FROM tc_degrees('g', 'v', 0.1, method => 'grid', metric => 'inner_product');
SELECT * FROM tc_components('g', 'nope', 0.1);
-- tcjoin.lists_memory_limit: lists of every match (without k, or k past 16)
-- stop at it with an error, before the memory runs out; small k keep rows
-- made whole, never limited; -1 is no limit.  Every row within eps 10 here.
SET tcjoin.lists_memory_limit = '64kB';
SELECT * FROM tc_neighbors('g', 'v', 10);
SELECT count(*) = (SELECT count(*) FROM g) AS small_k FROM tc_neighbors('g', 'v', 10, k => 3);
SELECT * FROM tc_join('g', 'v', 'g', 'v', 10, k => 100);
SET tcjoin.lists_memory_limit = -1;
SELECT bool_and(cardinality(neighbor_ids) = (SELECT count(*) - 1 FROM g)) AS unlimited
  FROM tc_neighbors('g', 'v', 10);
RESET tcjoin.lists_memory_limit;
-- tcjoin.keep_memory: a backend keeps the large buffers of its last joins
-- for its next.  Buffers taken again, dirty, must give the answers fresh
-- ones give: 200,000 points (arrays past a megabyte), each answer with
-- nothing kept, then twice with buffers kept.
SHOW tcjoin.keep_memory;
CREATE TABLE big (id bigint PRIMARY KEY, v real[]);
INSERT INTO big SELECT i, ARRAY[random() * 100, random() * 100]::real[] FROM generate_series(1, 200000) i;
SET tcjoin.keep_memory = 0;
CREATE TABLE fresh_dbscan AS SELECT * FROM tc_dbscan('big', 'v', 0.2, 3);
CREATE TABLE fresh_degrees AS SELECT * FROM tc_degrees('big', 'v', 0.2);
CREATE TABLE fresh_components AS SELECT * FROM tc_components('big', 'v', 0.2);
CREATE TABLE fresh_count AS SELECT tc_count('big', 'v', 0.2) AS n;
SELECT (SELECT n FROM fresh_count) = (SELECT sum(degree) / 2 FROM fresh_degrees) AS count_is_half_the_degrees,
       (SELECT n FROM fresh_count) = (SELECT count(*) FROM tc_selfjoin('big', 'v', 0.2)) AS count_is_the_pairs,
       (SELECT count(*) FROM fresh_dbscan WHERE is_core) > 1000 AS some_cores;
SET tcjoin.keep_memory = '256MB';
SELECT (SELECT count(*) FROM (SELECT * FROM tc_dbscan('big', 'v', 0.2, 3)
                              EXCEPT SELECT * FROM fresh_dbscan) x) AS dbscan_differ,
       (SELECT count(*) FROM (SELECT * FROM tc_degrees('big', 'v', 0.2)
                              EXCEPT SELECT * FROM fresh_degrees) x) AS degrees_differ,
       (SELECT count(*) FROM (SELECT * FROM tc_components('big', 'v', 0.2)
                              EXCEPT SELECT * FROM fresh_components) x) AS components_differ,
       tc_count('big', 'v', 0.2) = (SELECT n FROM fresh_count) AS count_same;
SELECT (SELECT count(*) FROM (SELECT * FROM tc_dbscan('big', 'v', 0.2, 3)
                              EXCEPT SELECT * FROM fresh_dbscan) x) AS dbscan_differ,
       (SELECT count(*) FROM (SELECT * FROM tc_components('big', 'v', 0.2)
                              EXCEPT SELECT * FROM fresh_components) x) AS components_differ,
       (SELECT count(*) FROM (SELECT * FROM tc_degrees('big', 'v', 0.2)
                              EXCEPT SELECT * FROM fresh_degrees) x) AS degrees_differ;
-- The result of one row a point stays in memory up to what the call's
-- engine held (the vectors, the index, the per-row state), whatever
-- work_mem says (tc_join's ranked rows too); past that (tc_neighbors'
-- arrays outweigh its lists, every match's rows its list) and for pair
-- rows, past work_mem, the rows spill as any tuplestore's.
CREATE FUNCTION spills(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) ' || q INTO plan;
  RETURN (plan->0->'Plan'->>'Temp Written Blocks')::bigint > 0;
END $$;
-- On the CPU: a GPU join keeps the degrees and components on the device,
-- and holds too little on the host for their rows.
SET tcjoin.device = cpu;
CREATE TABLE big_moved AS SELECT id, ARRAY[v[1] + 0.05, v[2] - 0.03]::real[] AS v FROM big;
ALTER TABLE big_moved ADD PRIMARY KEY (id);
SET work_mem = '64kB';
SELECT spills($q$SELECT count(*) FROM tc_dbscan('big', 'v', 0.2, 3)$q$) AS dbscan_spills,
       spills($q$SELECT count(*) FROM tc_degrees('big', 'v', 0.2)$q$) AS degrees_spill,
       spills($q$SELECT count(*) FROM tc_components('big', 'v', 0.2)$q$) AS components_spill,
       spills($q$SELECT count(*) FROM tc_neighbors('big', 'v', 0.2, k => 2)$q$) AS neighbors_spill,
       spills($q$SELECT count(*) FROM tc_join('big', 'v', 'big_moved', 'v', 0.2, k => 1)$q$) AS nearest_spills,
       spills($q$SELECT count(*) FROM tc_join('big', 'v', 'big_moved', 'v', 0.2, k => NULL)$q$) AS ranked_spill,
       spills($q$SELECT count(*) FROM tc_selfjoin('big', 'v', 0.2)$q$) AS pairs_spill,
       spills($q$SELECT count(*) FROM generate_series(1, 200000)$q$) AS series_spills;
-- every match ranked where the rows would fit what the join held (2,000
-- 64-D vectors, one match each): still work_mem, since such lists grow
-- with the pairs and their own limit must hold; k => 1 in memory
CREATE TABLE hd AS SELECT i::bigint AS id, ARRAY(SELECT random()::real + 0 * i FROM generate_series(1, 64)) AS v
  FROM generate_series(1, 2000) i;
ALTER TABLE hd ADD PRIMARY KEY (id);
CREATE TABLE hd_moved AS SELECT id, ARRAY(SELECT v[j] + 0.001 FROM generate_series(1, 64) j ORDER BY j)::real[] AS v FROM hd;
ALTER TABLE hd_moved ADD PRIMARY KEY (id);
SELECT spills($q$SELECT count(*) FROM tc_join('hd', 'v', 'hd_moved', 'v', 0.05, k => NULL)$q$) AS ranked_hd_spill,
       spills($q$SELECT count(*) FROM tc_join('hd', 'v', 'hd_moved', 'v', 0.05, k => 1)$q$) AS nearest_hd_spills,
       (SELECT count(*) FROM tc_join('hd', 'v', 'hd_moved', 'v', 0.05, k => NULL)) AS ranked_rows;
-- and the same rows as a spilled tuplestore's (the fresh ones, at 4MB, and
-- tc_join's nearest against its ranked rows, spilled)
SELECT (SELECT count(*)
          FROM (SELECT * FROM tc_join('big', 'v', 'big_moved', 'v', 0.2, k => 1)
                EXCEPT SELECT * FROM tc_join('big', 'v', 'big_moved', 'v', 0.2, k => NULL) WHERE rank = 1) x) AS nearest_differ,
       (SELECT count(*) FROM tc_join('big', 'v', 'big_moved', 'v', 0.2, k => 1)) =
       (SELECT count(*) FROM tc_join('big', 'v', 'big_moved', 'v', 0.2, k => NULL) WHERE rank = 1) AS nearest_same_count;
SELECT (SELECT count(*) FROM (SELECT * FROM tc_dbscan('big', 'v', 0.2, 3)
                              EXCEPT SELECT * FROM fresh_dbscan) x) AS dbscan_differ,
       (SELECT count(*) FROM (SELECT * FROM tc_degrees('big', 'v', 0.2)
                              EXCEPT SELECT * FROM fresh_degrees) x) AS degrees_differ;
-- read backward, as a scroll cursor does
BEGIN;
DECLARE back SCROLL CURSOR FOR SELECT id FROM tc_dbscan('big', 'v', 0.2, 3);
MOVE FORWARD ALL IN back;
MOVE BACKWARD ALL IN back;
FETCH 2 FROM back;
COMMIT;
RESET work_mem;
RESET tcjoin.device;
-- superusers' settings: no other role may raise them
CREATE ROLE tcjoin_graphs_user;
SET ROLE tcjoin_graphs_user;
SET tcjoin.lists_memory_limit = -1;
SET tcjoin.keep_memory = '1GB';
RESET ROLE;
DROP ROLE tcjoin_graphs_user;
SET client_min_messages = warning;
DROP SCHEMA graphs CASCADE;
