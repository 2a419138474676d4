--
-- Exactness: tc_selfjoin against the contract computed in plain SQL.
--
-- Every run draws fresh random data (no setseed), so this file prints only
-- values that do not depend on the data: counts of configurations and
-- comparisons, zero mismatches, and checks that come out true.
--
-- The reference distance of a pair is
--   (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8)))
--      FROM unnest(a.vec, b.vec) AS u(x, y))
-- float8 sum adds in input order and a multi-argument unnest yields index
-- order, so this is the contract's distance bit for bit.  Results are
-- compared as multisets (EXCEPT ALL both ways) on (id_a, id_b, the bytes of
-- dist), so a lost pair, an extra or repeated pair, swapped ids or a dist off
-- by one ulp all count as a mismatch.
--
-- A mismatch does not stop the run: it is logged in exactness_log (shown at
-- the end with the rows that differ), and the data set that produced it is
-- kept in a table exactness_fail_<cfg> of the test database for reproduction.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
RESET client_min_messages;
LOAD 'tcjoin';

-- One row per comparison of tc_selfjoin with the reference.
CREATE TABLE exactness_log (
    cfg         int,        -- data set number
    d           int,
    typ         text,       -- element type of the vector column
    profile     int,        -- data profile, see exactness_make
    n           int,        -- rows
    threads     int,        -- tcjoin.cpu_threads (0: one per CPU)
    method      text,       -- method asked for
    kind        text,       -- which eps (see exactness_check), or 'self'
    eps         float8,
    pairs       bigint,     -- all pairs of the data set
    n_ref       bigint,     -- pairs the reference returns
    n_got       bigint,     -- rows tc_selfjoin returns
    missing     bigint,     -- reference rows not returned
    extra       bigint,     -- returned rows not in the reference
    used        text,       -- method tc_last_stats reports
    grid_dims   int,
    ok          boolean,
    detail      jsonb       -- on a mismatch: the rows that differ (first 20)
);

-- One row per boundary distance: an actual pair distance D and the float8
-- just below it.
CREATE TABLE exactness_bounds (
    cfg         int,
    kind        text,
    dist        float8,     -- D
    below       float8,     -- next float8 below D
    below_ok    boolean,    -- below < D and its bit pattern is D's minus one
    n_at        bigint,     -- reference pairs at eps = D
    n_below     bigint,     -- reference pairs at eps = below
    pairs       bigint
);

-- The IEEE bit pattern of a float8 as a bigint (monotone for x >= 0).
CREATE FUNCTION exactness_bits(x float8) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT
AS $$ SELECT ('x' || encode(float8send(x), 'hex'))::bit(64)::bigint $$;

--
-- Build temp tables exactness_pts (id, vec) and exactness_ref (every pair,
-- id_a < id_b, with its reference distance).
--
-- Points are float8 first: 4 clusters whose centres are spread over 100
-- units around an offset, each point off its centre by one of 1e-3, 1e-2,
-- 0.1, 1 or 10, so pairs come at many scales.  Every 10th point repeats the
-- one before it (distance 0); every 10th point from the 5th repeats the one
-- before it with one coordinate nudged by a relative 1e-6 (real) or 1e-13
-- (double precision).  Profiles:
--   0: offset 0
--   1: offset 1e4
--   2: offset 1e6 (real[]: float4 spacing 1/16 there, so rounding matters)
--   3: offset -3e6, and 3 outliers 1e7 away (wide extent: grid cells much
--      wider than eps)
--   4: coordinates rounded to multiples of 1/8 around offset 1e3 (many
--      equal distances)
-- The ids are a random permutation of 3*k - n (some negative), stored in
-- random order, in a smallint, integer or bigint primary key.
--
CREATE FUNCTION exactness_make(p_d int, p_typ text, p_profile int, p_n int,
                               p_idtype text)
RETURNS void
LANGUAGE plpgsql
SET client_min_messages = warning
AS $$
DECLARE
    off float8 := (ARRAY[0, 1e4, 1e6, -3e6, 1e3]::float8[])[1 + p_profile];
    rel float8 := CASE p_typ WHEN 'real' THEN 1e-6 ELSE 1e-13 END;
BEGIN
    DROP TABLE IF EXISTS exactness_raw, exactness_pts, exactness_ref;

    CREATE TEMP TABLE exactness_raw AS
    WITH c AS (
        SELECT k, ARRAY(SELECT off + (random() - 0.5) * 100
                          FROM generate_series(1, p_d) j
                         WHERE k > 0) AS ctr
          FROM generate_series(1, 4) k
    )
    SELECT i,
           ARRAY(SELECT c.ctr[j] + (random() - 0.5) * s.sc
                   FROM generate_series(1, p_d) j) AS v
      FROM generate_series(1, p_n) i
      JOIN c ON c.k = 1 + i % 4
      CROSS JOIN LATERAL
           (SELECT (ARRAY[1e-3, 1e-2, 0.1, 1, 10]::float8[])[1 + (i / 4) % 5] AS sc) s;

    IF p_profile = 3 THEN
        UPDATE exactness_raw
           SET v = ARRAY(SELECT off + (random() - 0.5) * 2e7
                           FROM generate_series(1, p_d) j
                          WHERE i > 0)
         WHERE i IN (1, 2, 3);
    ELSIF p_profile = 4 THEN
        UPDATE exactness_raw
           SET v = ARRAY(SELECT round(x * 8) / 8 FROM unnest(v) AS x);
    END IF;

    -- Exact duplicates, then near duplicates.
    UPDATE exactness_raw r
       SET v = p.v
      FROM exactness_raw p
     WHERE p.i = r.i - 1 AND r.i % 10 IN (0, 5);
    UPDATE exactness_raw
       SET v[1 + i % p_d] = v[1 + i % p_d] * (1 + rel)
     WHERE i % 10 = 5;

    EXECUTE format('CREATE TEMP TABLE exactness_pts (id %s PRIMARY KEY, vec %s[] NOT NULL)',
                   p_idtype, p_typ);
    EXECUTE format('INSERT INTO exactness_pts
                    SELECT id, vec FROM (
                        SELECT 3 * row_number() OVER (ORDER BY random()) - %s AS id,
                               v::%s[] AS vec
                          FROM exactness_raw) s
                     ORDER BY random()',
                   p_n, p_typ);
    ANALYZE exactness_pts;

    CREATE TEMP TABLE exactness_ref AS
    SELECT a.id::bigint AS id_a, b.id::bigint AS id_b,
           (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8)))
              FROM unnest(a.vec, b.vec) AS u(x, y)) AS dist
      FROM exactness_pts a
      JOIN exactness_pts b ON a.id < b.id;
    ANALYZE exactness_ref;
END
$$;

--
-- Compare one tc_selfjoin call with the reference at eps; log it.
--
CREATE FUNCTION exactness_compare(p_cfg int, p_d int, p_typ text,
                                  p_profile int, p_n int, p_threads int,
                                  p_method text, p_kind text, p_eps float8)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    call text;
    pairs bigint;
    n_ref bigint;
    n_got bigint;
    missing jsonb;
    extra jsonb;
    used text;
    gdims int;
    ok boolean;
BEGIN
    -- The three methods, called in three ways.
    call := CASE p_method
        WHEN 'auto' THEN
            'tc_selfjoin(''exactness_pts'', ''vec'', $1)'
        WHEN 'grid' THEN
            'tc_selfjoin(''exactness_pts'', ''vec'', $1, ''id'', method => ''grid'')'
        ELSE
            'tc_selfjoin(''exactness_pts'', ''vec'', $1, id_column => ''id'',
                         include_self => false, exact => true, method => ' ||
            quote_literal(p_method) || ')'
        END;
    EXECUTE format($q$
        WITH g AS MATERIALIZED (
                SELECT id_a, id_b, dist, float8send(dist) AS bits FROM %s),
             r AS MATERIALIZED (
                SELECT id_a, id_b, dist, float8send(dist) AS bits
                  FROM exactness_ref WHERE dist <= $1),
             m AS MATERIALIZED (SELECT * FROM r EXCEPT ALL SELECT * FROM g),
             e AS MATERIALIZED (SELECT * FROM g EXCEPT ALL SELECT * FROM r)
        SELECT (SELECT count(*) FROM exactness_ref),
               (SELECT count(*) FROM r), (SELECT count(*) FROM g),
               (SELECT coalesce(jsonb_agg(m), '[]') FROM m),
               (SELECT coalesce(jsonb_agg(e), '[]') FROM e)$q$, call)
        INTO pairs, n_ref, n_got, missing, extra
        USING p_eps;
    SELECT s.method, coalesce(cardinality(s.grid_dims), 0)
      INTO used, gdims
      FROM tc_last_stats() s;
    ok := n_ref = n_got AND jsonb_array_length(missing) = 0
          AND jsonb_array_length(extra) = 0;
    INSERT INTO exactness_log
    VALUES (p_cfg, p_d, p_typ, p_profile, p_n, p_threads, p_method, p_kind,
            p_eps, pairs, n_ref, n_got, jsonb_array_length(missing),
            jsonb_array_length(extra), used, gdims, ok,
            CASE WHEN ok THEN NULL ELSE
                jsonb_build_object(
                    'missing', jsonb_path_query_array(missing, '$[0 to 19]'),
                    'extra', jsonb_path_query_array(extra, '$[0 to 19]'))
            END);
    RETURN ok;
END
$$;

--
-- include_self => true must add exactly the rows (id, id, 0) of every row
-- and change nothing else.
--
CREATE FUNCTION exactness_self(p_cfg int, p_d int, p_typ text,
                               p_profile int, p_n int, p_threads int,
                               p_method text, p_eps float8)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    pairs bigint;
    n_plain bigint;
    n_self bigint;
    missing jsonb;
    extra jsonb;
    ok boolean;
BEGIN
    EXECUTE $q$
        WITH s AS MATERIALIZED (
                SELECT id_a, id_b, dist, float8send(dist) AS bits
                  FROM tc_selfjoin('exactness_pts', 'vec', $1, include_self => true,
                                   method => $2)),
             p AS MATERIALIZED (
                SELECT id_a, id_b, dist, float8send(dist) AS bits
                  FROM tc_selfjoin('exactness_pts', 'vec', $1, include_self => false,
                                   method => $2)),
             -- what the self rows should be: the plain result plus (id, id, +0)
             want AS MATERIALIZED (
                SELECT * FROM p
                UNION ALL
                SELECT id, id, 0::float8, float8send(0::float8) FROM exactness_pts),
             m AS MATERIALIZED (SELECT * FROM want EXCEPT ALL SELECT * FROM s),
             e AS MATERIALIZED (SELECT * FROM s EXCEPT ALL SELECT * FROM want)
        SELECT (SELECT count(*) FROM exactness_ref),
               (SELECT count(*) FROM p), (SELECT count(*) FROM s),
               (SELECT coalesce(jsonb_agg(m), '[]') FROM m),
               (SELECT coalesce(jsonb_agg(e), '[]') FROM e)$q$
        INTO pairs, n_plain, n_self, missing, extra
        USING p_eps, p_method;
    ok := n_self = n_plain + p_n AND jsonb_array_length(missing) = 0
          AND jsonb_array_length(extra) = 0;
    INSERT INTO exactness_log
    VALUES (p_cfg, p_d, p_typ, p_profile, p_n, p_threads, p_method, 'self',
            p_eps, pairs, n_plain + p_n, n_self, jsonb_array_length(missing),
            jsonb_array_length(extra), NULL, NULL, ok,
            CASE WHEN ok THEN NULL ELSE
                jsonb_build_object(
                    'missing', jsonb_path_query_array(missing, '$[0 to 19]'),
                    'extra', jsonb_path_query_array(extra, '$[0 to 19]'))
            END);
    RETURN ok;
END
$$;

--
-- All comparisons for the current data set.  The eps values:
--   zero       0: exactly the duplicate pairs
--   qNN        D, the distance of the pair at the NN-th percentile of the
--              pairs at positive distance (q00: the smallest positive
--              distance), so the boundary pair is in
--   qNN-       the float8 just below D, so it is out
--   mid        halfway between q15 and q50 (usually no pair's distance)
--   max        the largest distance: every pair
-- each with methods auto, grid and brute; then include_self at q15.
-- p_full: q00, q02, q15, q50, mid and max; otherwise zero and q15, and max
-- if there are over 20000 pairs (results of several batches).
--
CREATE FUNCTION exactness_check(p_cfg int, p_d int, p_typ text,
                                p_profile int, p_n int, p_threads int,
                                p_full boolean)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    npairs bigint;
    npos bigint;
    q float8;
    dq float8;
    below float8;
    q15 float8;
    q50 float8;
    kind text;
    m text;
    ok boolean := true;
    epss float8[] := '{}';
    kinds text[] := '{}';
BEGIN
    SELECT count(*), count(*) FILTER (WHERE dist > 0)
      INTO npairs, npos FROM exactness_ref;

    epss := epss || 0::float8;
    kinds := kinds || 'zero'::text;
    FOREACH q IN ARRAY CASE WHEN p_full THEN ARRAY[0, 0.02, 0.15, 0.5]::float8[]
                            ELSE ARRAY[0.15]::float8[] END
    LOOP
        kind := 'q' || lpad((q * 100)::int::text, 2, '0');
        SELECT dist INTO dq FROM exactness_ref WHERE dist > 0
         ORDER BY dist OFFSET floor(q * npos)::bigint LIMIT 1;
        below := dq * (1 - 2::float8 ^ -53);
        INSERT INTO exactness_bounds
        SELECT p_cfg, kind, dq, below,
               below < dq AND exactness_bits(below) = exactness_bits(dq) - 1,
               count(*) FILTER (WHERE dist <= dq),
               count(*) FILTER (WHERE dist <= below),
               npairs
          FROM exactness_ref;
        epss := epss || dq || below;
        kinds := kinds || kind || (kind || '-');
        IF q = 0.15 THEN q15 := dq; END IF;
        IF q = 0.5 THEN q50 := dq; END IF;
    END LOOP;
    IF p_full THEN
        epss := epss || (q15 + (q50 - q15) / 2);
        kinds := kinds || 'mid'::text;
    END IF;
    IF p_full OR npairs > 20000 THEN
        epss := epss || (SELECT max(dist) FROM exactness_ref);
        kinds := kinds || 'max'::text;
    END IF;

    FOR i IN 1 .. cardinality(epss) LOOP
        FOREACH m IN ARRAY ARRAY['auto', 'grid', 'brute'] LOOP
            IF NOT exactness_compare(p_cfg, p_d, p_typ, p_profile, p_n, p_threads,
                                     m, kinds[i], epss[i]) THEN
                ok := false;
            END IF;
        END LOOP;
    END LOOP;
    FOREACH m IN ARRAY ARRAY['auto', 'grid', 'brute'] LOOP
        IF NOT exactness_self(p_cfg, p_d, p_typ, p_profile, p_n, p_threads, m, q15) THEN
            ok := false;
        END IF;
    END LOOP;

    IF NOT ok THEN
        -- Keep the data for reproduction.
        EXECUTE format('DROP TABLE IF EXISTS %I', 'exactness_fail_' || p_cfg);
        EXECUTE format('CREATE TABLE %I AS SELECT * FROM exactness_pts',
                       'exactness_fail_' || p_cfg);
    END IF;
    RETURN ok;
END
$$;

--
-- One data set per d and type (p_full) or per d, committed one by one, of
-- p_n rows (default: 150 up to d = 64, 100 above; 20 unless p_full).  The
-- data profile, the thread count and the id type rotate with the data set
-- number.
--
CREATE PROCEDURE exactness_run(p_ds int[], p_first_cfg int, p_full boolean,
                               p_n int DEFAULT NULL)
LANGUAGE plpgsql
AS $$
DECLARE
    cfg int := p_first_cfg;
    d int;
    typ text;
    n int;
    threads int;
BEGIN
    FOREACH d IN ARRAY p_ds LOOP
        FOREACH typ IN ARRAY CASE
                WHEN p_full THEN ARRAY['real', 'double precision']
                -- one type, switching every 8 dimensions: each d mod 8 meets both
                WHEN (d + d / 8) % 2 = 0 THEN ARRAY['real']
                ELSE ARRAY['double precision'] END
        LOOP
            n := coalesce(p_n, CASE WHEN NOT p_full THEN 20
                                    WHEN d <= 64 THEN 150 ELSE 100 END);
            threads := (ARRAY[0, 1, 3])[1 + cfg % 3];
            PERFORM set_config('tcjoin.cpu_threads', threads::text, true);
            PERFORM exactness_make(d, typ, cfg % 5, n,
                                   (ARRAY['bigint', 'integer', 'smallint'])[1 + cfg / 3 % 3]);
            PERFORM exactness_check(cfg, d, typ, cfg % 5, n, threads, p_full);
            COMMIT;
            cfg := cfg + 1;
        END LOOP;
    END LOOP;
END
$$;

-- Representative dimensions, both element types, every eps, larger data
-- sets (data sets 1 to 52).
CALL exactness_run(ARRAY[1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 24, 31, 32, 33,
                         50, 64, 65, 100, 128, 200, 255, 256, 299, 300],
                   1, true);

-- Every dimension from 1 to 300, small data sets, one element type each,
-- eps 0 and one boundary (data sets 1001 to 1300).
DO $$
DECLARE
    ds int[] := ARRAY(SELECT generate_series(1, 300));
BEGIN
    CALL exactness_run(ds, 1001, false);
END
$$;

-- Two larger data sets: brute force compares a point with more than one
-- tile of points, grid cells hold more points than one work item takes,
-- and eps = max returns several batches of pairs.
CALL exactness_run(ARRAY[5, 13], 2001, false, 300);

-- Results: data sets, comparisons, mismatches.
SELECT CASE WHEN cfg < 1000 THEN 'representative d'
            WHEN cfg < 2000 THEN 'd = 1..300' ELSE 'n = 300' END AS run,
       count(DISTINCT cfg) AS data_sets,
       count(DISTINCT d) AS dims,
       count(*) AS comparisons,
       count(*) FILTER (WHERE NOT ok) AS mismatches,
       sum(missing) AS missing,
       sum(extra) AS extra,
       bool_and(n_got = n_ref) AS counts_equal
  FROM exactness_log
 GROUP BY 1
 ORDER BY min(cfg);

-- Every method and element type was checked.
SELECT typ, method, count(*) AS comparisons, count(*) FILTER (WHERE NOT ok) AS mismatches
  FROM exactness_log
 GROUP BY typ, method
 ORDER BY typ, method;

-- The boundary eps values were non-trivial: D is a pair's distance, the
-- value below it is the next float8 down, at least that pair drops out,
-- and some but not all pairs are within D.
SELECT count(*) AS boundaries,
       bool_and(below_ok) AS below_is_next_float8,
       bool_and(n_below < n_at) AS boundary_pair_drops_out,
       bool_and(n_at > 0 AND n_at < pairs) AS some_pairs_not_all
  FROM exactness_bounds;

-- eps = 0 found the duplicates; eps = max found every pair; include_self
-- added one row per vector.
SELECT bool_and(n_ref > 0 AND n_ref < pairs) FILTER (WHERE kind = 'zero') AS zero_finds_duplicates,
       bool_and(n_ref = pairs) FILTER (WHERE kind = 'max') AS max_finds_all,
       count(*) FILTER (WHERE kind = 'self') AS include_self_checks
  FROM exactness_log;

-- Mismatches (none expected), the first 50 with the rows that differ.  The
-- data set of a mismatch is kept in table exactness_fail_<cfg>.
SELECT cfg, d, typ, profile, n, threads, method, kind, eps, n_ref, n_got,
       missing, extra, used, grid_dims, detail
  FROM exactness_log
 WHERE NOT ok
 ORDER BY cfg, method, kind
 LIMIT 50;

-- Clean up (the exactness_fail_* tables of a failed run stay).
DROP PROCEDURE exactness_run(int[], int, boolean, int);
DROP FUNCTION exactness_check(int, int, text, int, int, int, boolean);
DROP FUNCTION exactness_self(int, int, text, int, int, int, text, float8);
DROP FUNCTION exactness_compare(int, int, text, int, int, int, text, text, float8);
DROP FUNCTION exactness_make(int, text, int, int, text);
DROP FUNCTION exactness_bits(float8);
DROP TABLE exactness_log, exactness_bounds;
