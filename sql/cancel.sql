--
-- cancel: a join stops promptly when canceled, in whichever phase it is
-- (reading rows, computing, returning pairs), and leaves the session and
-- the backend as they were.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS cancel CASCADE;
CREATE SCHEMA cancel;
RESET client_min_messages;
SET search_path = cancel, public;

-- Run q; if it is canceled, say so, with the error message and whether it
-- stopped within 1.3 s of starting (the statement timeout is 300 ms).
CREATE FUNCTION try_cancel(q text, OUT canceled boolean, OUT message text,
                           OUT stopped_in_time boolean)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    canceled := false;
    EXECUTE q;
    message := 'finished without being canceled';
EXCEPTION WHEN query_canceled THEN
    canceled := true;
    message := SQLERRM;
    stopped_in_time := clock_timestamp() - t0 BETWEEN interval '0.2 seconds'
                                                  AND interval '1.3 seconds';
END $$;

-- Threads of this backend (Linux): the workers of a CPU join must all be
-- gone when it ends, however it ends.
CREATE FUNCTION backend_threads() RETURNS integer LANGUAGE sql AS
$$ SELECT substring(pg_read_file('/proc/self/status') FROM 'Threads:\s*(\d+)')::integer $$;

CREATE TABLE small (id integer PRIMARY KEY, v real[]);
INSERT INTO small VALUES (1, '{0,0}'), (2, '{0,1}'), (3, '{5,5}');
SELECT * FROM tc_selfjoin('small', 'v', 1);

--
-- Computing: 30,000 points of 64 dimensions that differ only in the last
-- one, so a brute-force join evaluates all 450 million pairs in full and
-- finds none (several seconds on two threads).  Pinned to the CPU.
--
CREATE TABLE far (id integer PRIMARY KEY, v real[]);
INSERT INTO far
    SELECT i, array_fill(0::real, ARRAY[63]) || i::real FROM generate_series(1, 30000) i;
SET tcjoin.device = cpu;
SET tcjoin.cpu_threads = 2;
CREATE TEMP TABLE threads_before AS SELECT backend_threads() AS n;
SET statement_timeout = '300ms';
SELECT * FROM try_cancel($$SELECT * FROM tc_selfjoin('far', 'v', 0.5, method => 'brute')$$);
RESET statement_timeout;
SELECT backend_threads() = n AS workers_gone FROM threads_before;
-- The canceled join kept no statistics: the last join is still the small one.
SELECT n, eps FROM tc_last_stats();
-- Canceled at the top level, too.
SET statement_timeout = '300ms';
SELECT count(*) FROM tc_selfjoin('far', 'v', 0.5, method => 'brute');
RESET statement_timeout;
SELECT backend_threads() = n AS workers_gone FROM threads_before;
-- And inside a transaction, which the cancel aborts.
BEGIN;
SET LOCAL statement_timeout = '300ms';
SELECT count(*) FROM tc_selfjoin('far', 'v', 0.5, method => 'brute');
SELECT 1;
ROLLBACK;
SHOW statement_timeout;
SELECT backend_threads() = n AS workers_gone FROM threads_before;
RESET tcjoin.cpu_threads;

--
-- Returning pairs: 30,000 points all within eps of each other, 450 million
-- pairs, far more than can be returned in 300 ms.  On the CPU first.
--
SELECT setseed(0.5);
CREATE TABLE crowd (id integer PRIMARY KEY, v double precision[]);
INSERT INTO crowd SELECT i, ARRAY[random(), random()] FROM generate_series(1, 30000) i;
SET statement_timeout = '300ms';
SELECT * FROM try_cancel($$SELECT * FROM tc_selfjoin('crowd', 'v', 10)$$);
RESET statement_timeout;
SET statement_timeout = '300ms';
SELECT * FROM try_cancel($$SELECT * FROM tc_selfjoin('crowd', 'v', 10, method => 'brute')$$);
RESET statement_timeout;
SELECT backend_threads() = n AS workers_gone FROM threads_before;
-- tc_join with k: the workers keep each row's 3 nearest of 900 million pairs.
SET statement_timeout = '300ms';
SELECT * FROM try_cancel($$SELECT * FROM tc_join('crowd', 'v', 'crowd', 'v', 10, k => 3)$$);
RESET statement_timeout;
SELECT backend_threads() = n AS workers_gone FROM threads_before;
-- On whatever device tcjoin.device picks.
RESET tcjoin.device;
SET statement_timeout = '300ms';
SELECT * FROM try_cancel($$SELECT * FROM tc_selfjoin('crowd', 'v', 10)$$);
RESET statement_timeout;

--
-- Reading rows: a view whose vectors take 10 ms each to compute.
--
CREATE FUNCTION slow_vec(i integer) RETURNS real[] LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(0.01);
    RETURN ARRAY[i, 0]::real[];
END $$;
CREATE VIEW slow AS SELECT i AS id, slow_vec(i) AS v FROM generate_series(1, 1000) i;
SET statement_timeout = '300ms';
SELECT * FROM try_cancel($$SELECT * FROM tc_selfjoin('slow', 'v', 1, 'id')$$);
RESET statement_timeout;

--
-- The session is fine afterwards: a join gives the reference result.
--
SELECT n, eps FROM tc_last_stats();
SELECT * FROM tc_selfjoin('small', 'v', 1);
CREATE TABLE crowd_ref AS
    SELECT a.id::bigint AS id_a, b.id::bigint AS id_b, r.dist
      FROM crowd a JOIN crowd b ON a.id < b.id,
           LATERAL (SELECT sqrt(sum((x - y) * (x - y))) AS dist
                      FROM unnest(a.v, b.v) AS u(x, y)) r
     WHERE a.id <= 400 AND b.id <= 400 AND r.dist <= 0.1;
CREATE VIEW crowd_400 AS SELECT id, v FROM crowd WHERE id <= 400;
SELECT (SELECT count(*) FROM crowd_ref) AS ref_pairs,
       (SELECT count(*) FROM tc_selfjoin('crowd_400', 'v', 0.1, 'id')) AS pairs,
       (SELECT count(*) FROM (SELECT * FROM tc_selfjoin('crowd_400', 'v', 0.1, 'id')
                              EXCEPT ALL TABLE crowd_ref) x) AS only_join,
       (SELECT count(*) FROM (TABLE crowd_ref
                              EXCEPT ALL SELECT * FROM tc_selfjoin('crowd_400', 'v', 0.1, 'id')) x) AS only_ref;
SELECT n, eps FROM tc_last_stats();

--
-- LIMIT on a large join: the first rows come back, and they are pairs.
--
CREATE TABLE mid (id integer PRIMARY KEY, v real[]);
INSERT INTO mid SELECT id, v::real[] FROM crowd WHERE id <= 1000;
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE l.id_a < l.id_b AND l.dist <= 10
                          AND l.dist = (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8)))
                                          FROM unnest(a.v, b.v) AS u(x, y))) AS valid
  FROM (SELECT * FROM tc_selfjoin('mid', 'v', 10) LIMIT 5) l
  JOIN mid a ON a.id = l.id_a JOIN mid b ON b.id = l.id_b;
SELECT pairs = 1000 * 999 / 2 AS whole_join_ran FROM tc_last_stats();

SET client_min_messages = warning;
DROP SCHEMA cancel CASCADE;
RESET client_min_messages;
