-- The graph functions from SQL on 2,000,000 exponential 2-D points (the papers' set),
-- eps 0.0002, min_points 5, beside count(*) over tc_selfjoin and the read and
-- write floors: psql -X -f test/bench/sql/graphs_expo2m.sql (drops and makes database gb).
SET client_min_messages = warning;
DROP DATABASE IF EXISTS gb;
CREATE DATABASE gb;
\c gb
CREATE EXTENSION tcjoin;
SELECT setseed(0.5);
CREATE TABLE e2 AS SELECT i::bigint AS id, ARRAY[-ln(1 - random()) / 40, -ln(1 - random()) / 40]::real[] AS v
  FROM generate_series(1, 2000000) i;
ALTER TABLE e2 ADD PRIMARY KEY (id);
VACUUM ANALYZE e2;
CREATE FUNCTION runs(q text, reps int) RETURNS SETOF float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN FOR i IN 1 .. reps LOOP t0 := clock_timestamp(); EXECUTE q; RETURN NEXT extract(epoch FROM clock_timestamp() - t0) * 1000; END LOOP; END $$;
SET tcjoin.device = gpu;
SELECT 'warm', tc_count('e2', 'v', 0.0002);
SELECT 'tc_dbscan ms', string_agg(round(ms)::text, ' ') FROM runs($q$SELECT count(*) FROM tc_dbscan('e2', 'v', 0.0002, 5)$q$, 3) ms;
SELECT device, method, round(load_ms) AS load, round(index_ms) AS index, round(join_ms) AS join, pairs FROM tc_last_stats();
SELECT 'tc_count ms', string_agg(round(ms)::text, ' ') FROM runs($q$SELECT tc_count('e2', 'v', 0.0002)$q$, 3) ms;
SELECT 'tc_degrees ms', string_agg(round(ms)::text, ' ') FROM runs($q$SELECT count(*) FROM tc_degrees('e2', 'v', 0.0002)$q$, 3) ms;
SELECT 'tc_components ms', string_agg(round(ms)::text, ' ') FROM runs($q$SELECT count(*) FROM tc_components('e2', 'v', 0.0002)$q$, 3) ms;
SELECT 'tc_neighbors k10 ms', string_agg(round(ms)::text, ' ') FROM runs($q$SELECT count(*) FROM tc_neighbors('e2', 'v', 0.0002, 10)$q$, 1) ms;
SELECT 'count(*) tc_selfjoin ms', string_agg(round(ms)::text, ' ') FROM runs($q$SELECT count(*) FROM tc_selfjoin('e2', 'v', 0.0002)$q$, 1) ms;
SELECT 'floor read ms', string_agg(round(ms)::text, ' ') FROM runs($q$SELECT sum(v[1]) FROM e2$q$, 3) ms;
SELECT 'floor write ms', string_agg(round(ms)::text, ' ') FROM runs($q$SELECT count(*) FROM generate_series(1, 2000000)$q$, 3) ms;
SELECT 'clusters', count(DISTINCT cluster), 'noise', count(*) - count(cluster) FROM tc_dbscan('e2', 'v', 0.0002, 5);
SET tcjoin.device = cpu;
SELECT 'cpu tc_dbscan ms', string_agg(round(ms)::text, ' ') FROM runs($q$SELECT count(*) FROM tc_dbscan('e2', 'v', 0.0002, 5)$q$, 1) ms;
