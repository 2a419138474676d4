-- Tables and functions for test/suites/stress.sh; the pgbench scripts
-- test/stress/*.sql call the functions.
--
-- Every checked join runs on fresh random points (seeded by the
-- transaction's seed, which every message names) in the session's own
-- temporary tables, and is compared with plain SQL computing the contract's
-- distance in float8:
--     sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8))) over unnest
-- on the count, a checksum (sum of id_a * 31 + id_b) and the rows
-- themselves, dist bit for bit.  A mismatch raises 'WRONG ANSWER', which
-- aborts the pgbench client: the suite counts those.  Errors the test
-- provokes are caught and checked here; any other error reaches pgbench.
SET client_min_messages = warning;

-- One row per transaction: what ran and how it ended.
CREATE UNLOGGED TABLE stress_log (
    kind text,          -- selfjoin, join, error, timeout
    outcome text,       -- ok, the expected error's message, timeout, ...
    d int,
    typ text,
    method text,
    device text,        -- tc_last_stats().device, where a join ran
    n int,
    pairs bigint,
    ms float8,          -- timeout: from the statement's start to the error
    pid int DEFAULT pg_backend_pid(),
    ctx_bytes bigint,   -- this backend's memory contexts, after the transaction's work
    at timestamptz DEFAULT clock_timestamp()
);

-- 300,000 8-D points: joins long enough for statement_timeout to cut.
CREATE TABLE stress_big (id int PRIMARY KEY, vec real[]);
INSERT INTO stress_big
    SELECT i, ARRAY[random(), random(), random(), random(),
                    random(), random(), random(), random()]::real[]
    FROM generate_series(1, 300000) i;

-- Bad rows: a NaN, an infinity, and a 2-D table beside 3-D ones.
CREATE TABLE stress_nan (id int PRIMARY KEY, vec real[]);
INSERT INTO stress_nan SELECT i, ARRAY[i, i + 1, i + 2]::real[] FROM generate_series(1, 200) i;
UPDATE stress_nan SET vec = ARRAY[1, 'NaN', 3]::real[] WHERE id = 150;
CREATE TABLE stress_inf (id int PRIMARY KEY, vec float8[]);
INSERT INTO stress_inf SELECT i, ARRAY[i, i + 1, i + 2]::float8[] FROM generate_series(1, 200) i;
UPDATE stress_inf SET vec = ARRAY[1, 2, '-Infinity']::float8[] WHERE id = 77;
CREATE TABLE stress_2d (id int PRIMARY KEY, vec float8[]);
INSERT INTO stress_2d SELECT i, ARRAY[i, i]::float8[] FROM generate_series(1, 50) i;
CREATE TABLE stress_3d (id int PRIMARY KEY, vec real[]);
INSERT INTO stress_3d SELECT i, ARRAY[i, i, i]::real[] FROM generate_series(1, 50) i;

-- The session's temporary tables (created once, emptied for each use): the
-- points, one table per element type and side.
CREATE FUNCTION stress_temp_tables() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS sp_a4 (id bigint PRIMARY KEY, vec real[]);
    CREATE TEMP TABLE IF NOT EXISTS sp_a8 (id bigint PRIMARY KEY, vec float8[]);
    CREATE TEMP TABLE IF NOT EXISTS sp_b4 (id bigint PRIMARY KEY, vec real[]);
    CREATE TEMP TABLE IF NOT EXISTS sp_b8 (id bigint PRIMARY KEY, vec float8[]);
    -- The join's rows and the reference's.
    CREATE TEMP TABLE IF NOT EXISTS stress_j (id_a bigint, id_b bigint, dist float8);
    CREATE TEMP TABLE IF NOT EXISTS stress_r (id_a bigint, id_b bigint, dist float8);
    TRUNCATE stress_j, stress_r;
END
$$;

-- Fresh points in tbl: n of them around nc random centres in [0,1)^d, each
-- coordinate off its centre by up to s; a few exact duplicates of a point
-- (distance 0); ids spread out (i * 13 + off), so they are not row numbers.
CREATE FUNCTION stress_fill(tbl text, n int, d int, nc int, s float8, off int)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    centres float8[] := ARRAY(SELECT random() FROM generate_series(1, nc * d));
BEGIN
    EXECUTE format('TRUNCATE %I', tbl);
    EXECUTE format($q$
        INSERT INTO %I
        SELECT i * 13 + $4,
               ARRAY(SELECT $1[(i %% $2) * $3 + k] + (random() * 2 - 1) * $5
                     FROM generate_series(1, $3) k)
        FROM generate_series(1, $6) i$q$, tbl)
        USING centres, nc, d, off, s, n;
    -- Duplicates: the last two points repeat the first ones' vectors.
    EXECUTE format('UPDATE %1$I t SET vec = u.vec FROM %1$I u
                    WHERE t.id IN ($1 * 13 + $2, ($1 - 1) * 13 + $2) AND u.id = t.id - ($1 - 2) * 13',
                   tbl) USING n, off;
END
$$;

-- Points per dimension: small enough for the plain-SQL reference.
CREATE FUNCTION stress_n(d int) RETURNS int LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN d <= 3 THEN 500 WHEN d <= 8 THEN 300 WHEN d <= 32 THEN 160 ELSE 90 END
$$;

-- This backend's memory contexts, in bytes.
CREATE FUNCTION stress_ctx_bytes() RETURNS bigint LANGUAGE sql AS $$
    SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts
$$;

-- Compare the join's rows in temp table j with the reference's in temp
-- table r; raise WRONG ANSWER on any difference.
CREATE FUNCTION stress_compare(what text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    jn bigint; rn bigint; jc numeric; rc numeric; missing bigint; extra bigint;
BEGIN
    SELECT count(*), coalesce(sum(id_a::numeric * 31 + id_b), 0) INTO jn, jc FROM stress_j;
    SELECT count(*), coalesce(sum(id_a::numeric * 31 + id_b), 0) INTO rn, rc FROM stress_r;
    SELECT count(*) INTO missing FROM (TABLE stress_r EXCEPT ALL TABLE stress_j) x;
    SELECT count(*) INTO extra FROM (TABLE stress_j EXCEPT ALL TABLE stress_r) x;
    IF jn <> rn OR jc <> rc OR missing <> 0 OR extra <> 0 THEN
        RAISE EXCEPTION 'WRONG ANSWER: %: % pairs, checksum %; the reference: % pairs, checksum %; % missing, % extra (pairs or dists)',
            what, jn, jc, rn, rc, missing, extra;
    END IF;
    RETURN jn;
END
$$;

-- A checked self-join on fresh points: d, element type, method and eps
-- from the seed.  eps is a random fraction of the clusters' spread, or,
-- one time in four, exactly the distance of a pair (the boundary case).
CREATE FUNCTION stress_selfjoin(seed int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    d int; typ text; tbl text; method text; n int; s float8; eps float8;
    incl boolean; what text; pairs bigint; dev text;
BEGIN
    PERFORM setseed((seed % 1000000) / 1000000.0);
    PERFORM stress_temp_tables();
    d := (ARRAY[2, 3, 8, 32, 128])[1 + floor(random() * 5)::int];
    typ := CASE WHEN random() < 0.5 THEN 'real' ELSE 'float8' END;
    tbl := CASE typ WHEN 'real' THEN 'sp_a4' ELSE 'sp_a8' END;
    method := (ARRAY['auto', 'grid', 'brute'])[1 + floor(random() * 3)::int];
    incl := random() < 0.2;
    n := stress_n(d);
    s := 0.05 * random() + 0.01;
    PERFORM stress_fill(tbl, n, d, 1 + floor(random() * 8)::int, s, floor(random() * 13)::int);

    EXECUTE format($q$
        INSERT INTO stress_r
        SELECT a.id AS id_a, b.id AS id_b, x.dist
        FROM %1$I a JOIN %1$I b ON a.id < b.id,
             LATERAL (SELECT sqrt(sum((u::float8 - v::float8) * (u::float8 - v::float8))) AS dist
                      FROM unnest(a.vec, b.vec) AS t(u, v)) x$q$, tbl);
    IF random() < 0.25 THEN
        SELECT dist INTO eps FROM stress_r ORDER BY random() LIMIT 1;
    ELSE
        eps := s * sqrt(2.0 * d / 3) * (0.3 + random());
    END IF;
    DELETE FROM stress_r WHERE NOT dist <= eps;
    IF incl THEN
        EXECUTE format('INSERT INTO stress_r SELECT id, id, 0 FROM %I', tbl);
    END IF;

    EXECUTE format('INSERT INTO stress_j SELECT * FROM tc_selfjoin(%L, %L, $1, include_self => $2, method => $3)',
                   tbl, 'vec') USING eps, incl, method;
    SELECT device INTO dev FROM tc_last_stats();
    what := format('tc_selfjoin seed %s: %s-D %s[], %s points, eps %s, method %s, include_self %s, device %s',
                   seed, d, typ, n, eps, method, incl, dev);
    pairs := stress_compare(what);
    INSERT INTO stress_log (kind, outcome, d, typ, method, device, n, pairs, ctx_bytes)
        VALUES ('selfjoin', 'ok', d, typ, method, dev, n, pairs, stress_ctx_bytes());
    RETURN 'ok';
END
$$;

-- A checked tc_join of two fresh point sets, each real[] or float8[], the
-- second a shifted copy of part of the first plus new points.  tc_join
-- runs on the CPU only: with tcjoin.device = gpu it runs on auto here.
CREATE FUNCTION stress_join(seed int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    d int; ta text; tb text; method text; na int; nb int; s float8; eps float8;
    what text; pairs bigint; dev text;
BEGIN
    PERFORM setseed((seed % 1000000) / 1000000.0);
    PERFORM stress_temp_tables();
    IF current_setting('tcjoin.device', true) = 'gpu' THEN
        PERFORM set_config('tcjoin.device', 'auto', true);
    END IF;
    d := (ARRAY[2, 3, 8, 32, 128])[1 + floor(random() * 5)::int];
    ta := CASE WHEN random() < 0.5 THEN 'sp_a4' ELSE 'sp_a8' END;
    tb := CASE WHEN random() < 0.5 THEN 'sp_b4' ELSE 'sp_b8' END;
    method := (ARRAY['auto', 'grid', 'brute'])[1 + floor(random() * 3)::int];
    na := stress_n(d);
    nb := stress_n(d) * (1 + floor(random() * 3)::int) / 2;
    s := 0.05 * random() + 0.01;
    PERFORM stress_fill(ta, na, d, 4, s, 0);
    PERFORM stress_fill(tb, nb, d, 4, s, 5);
    -- Some of b near some of a (cross pairs even when the centres differ).
    EXECUTE format('UPDATE %I b SET vec = ARRAY(SELECT x + $1 FROM unnest(a.vec) x) FROM %I a
                    WHERE a.id = b.id - 5 AND b.id %% 3 = 0', tb, ta) USING s / 4;

    EXECUTE format($q$
        INSERT INTO stress_r
        SELECT a.id AS id_a, b.id AS id_b, x.dist
        FROM %I a, %I b,
             LATERAL (SELECT sqrt(sum((u::float8 - v::float8) * (u::float8 - v::float8))) AS dist
                      FROM unnest(a.vec, b.vec) AS t(u, v)) x$q$, ta, tb);
    IF random() < 0.25 THEN
        SELECT dist INTO eps FROM stress_r ORDER BY random() LIMIT 1;
    ELSE
        eps := s * sqrt(2.0 * d / 3) * (0.3 + random());
    END IF;
    DELETE FROM stress_r WHERE NOT dist <= eps;

    EXECUTE format('INSERT INTO stress_j SELECT * FROM tc_join(%L, %L, %L, %L, $1, method => $2)',
                   ta, 'vec', tb, 'vec') USING eps, method;
    SELECT device INTO dev FROM tc_last_stats();
    what := format('tc_join seed %s: %s-D %s x %s, %s x %s points, eps %s, method %s',
                   seed, d, ta, tb, na, nb, eps, method);
    pairs := stress_compare(what);
    INSERT INTO stress_log (kind, outcome, d, typ, method, device, n, pairs, ctx_bytes)
        VALUES ('join', 'ok', d,
                CASE ta WHEN 'sp_a4' THEN 'real' ELSE 'float8' END || ' x ' ||
                CASE tb WHEN 'sp_b4' THEN 'real' ELSE 'float8' END,
                method, dev, na + nb, pairs, stress_ctx_bytes());
    RETURN 'ok';
END
$$;

-- Errors on purpose: one case a call, from the seed.  The expected message
-- is checked; anything else (no error, another error) is raised as
-- UNEXPECTED and aborts the client.
CREATE FUNCTION stress_errors(seed int) RETURNS text LANGUAGE plpgsql AS $fn$
DECLARE
    cases text[] := ARRAY[
        $$SELECT count(*) FROM tc_selfjoin('stress_big', 'vec', -0.5)$$,
        $$SELECT count(*) FROM tc_selfjoin('stress_3d', 'vec', 'NaN')$$,
        $$SELECT count(*) FROM tc_selfjoin('stress_3d', 'vec', 'Infinity', method => 'grid')$$,
        $$SELECT count(*) FROM tc_selfjoin('stress_3d', 'vec', 1, method => 'nearest')$$,
        $$SELECT count(*) FROM tc_selfjoin('stress_nan', 'vec', 0.5)$$,
        $$SELECT count(*) FROM tc_selfjoin('stress_nan', 'vec', 0.5, method => 'brute')$$,
        $$SELECT count(*) FROM tc_selfjoin('stress_inf', 'vec', 2)$$,
        $$SELECT count(*) FROM tc_join('stress_3d', 'vec', 'stress_nan', 'vec', 1)$$,
        $$SELECT count(*) FROM tc_join('stress_3d', 'vec', 'stress_2d', 'vec', 1)$$,
        $$SELECT count(*) FROM tc_selfjoin('stress_3d', 'vec', NULL)$$];
    expected text[] := ARRAY[
        'eps must not be negative',
        'eps must not be NaN',
        'eps must be finite',
        'unknown method "nearest"',
        'NaN not allowed in vector',
        'NaN not allowed in vector',
        'infinite value not allowed in vector',
        'NaN not allowed in vector',
        'different vector dimensions 3 and 2',
        '0 rows'];   -- a NULL eps: no rows, no error
    i int;
    got bigint;
BEGIN
    PERFORM setseed((seed % 1000000) / 1000000.0);
    IF current_setting('tcjoin.device', true) = 'gpu' THEN
        PERFORM set_config('tcjoin.device', 'auto', true);   -- tc_join is CPU-only
    END IF;
    i := 1 + floor(random() * array_length(cases, 1))::int;
    BEGIN
        EXECUTE cases[i] INTO got;
    EXCEPTION WHEN query_canceled THEN
        RAISE;
    WHEN OTHERS THEN
        IF SQLERRM <> expected[i] THEN
            RAISE EXCEPTION 'UNEXPECTED error from %: "%" (expected "%")', cases[i], SQLERRM, expected[i];
        END IF;
        INSERT INTO stress_log (kind, outcome, ctx_bytes) VALUES ('error', SQLERRM, stress_ctx_bytes());
        RETURN SQLERRM;
    END;
    IF expected[i] <> got || ' rows' THEN
        RAISE EXCEPTION 'UNEXPECTED: % returned % rows (expected "%")', cases[i], got, expected[i];
    END IF;
    INSERT INTO stress_log (kind, outcome, ctx_bytes) VALUES ('error', 'NULL eps: 0 rows', stress_ctx_bytes());
    RETURN 'ok';
END
$fn$;

-- A join that statement_timeout (set by the script) cuts: 300,000 8-D
-- points, grid or brute force.  ms: from the statement's start to the
-- error, under whatever load the other sessions make.
CREATE FUNCTION stress_timeout(seed int, timeout_ms int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    method text;
    got bigint;
BEGIN
    PERFORM setseed((seed % 1000000) / 1000000.0);
    method := (ARRAY['grid', 'brute'])[1 + floor(random() * 2)::int];
    BEGIN
        SELECT count(*) INTO got FROM tc_selfjoin('stress_big', 'vec', 0.15, method => method);
    EXCEPTION WHEN query_canceled THEN
        IF SQLERRM <> 'canceling statement due to statement timeout' THEN
            RAISE;
        END IF;
        INSERT INTO stress_log (kind, outcome, method, ms, ctx_bytes)
            VALUES ('timeout', 'timeout', method,
                    extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000 - timeout_ms,
                    stress_ctx_bytes());
        RETURN 'timeout';
    END;
    INSERT INTO stress_log (kind, outcome, method, pairs, ctx_bytes)
        VALUES ('timeout', 'finished first', method, got, stress_ctx_bytes());
    RETURN 'finished first';
END
$$;
