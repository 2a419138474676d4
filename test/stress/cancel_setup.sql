-- Data and helpers for test/suites/cancel.sh, run by psql with
--   -v cell_rows=N   rows of c_cell (one grid cell, no pairs: long work items)
--   -v wide_rows=N   rows of c_wide (a large n x 512 for the plan and the filter)
--   -v view_rows=N   rows of the view c_view (a long load)
SET client_min_messages = warning;

-- One grid cell that yields no pair.  Every vector is zero but its last
-- coordinate, which is the row's id (1 apart, far beyond eps), and one row
-- lies at 1e12: the grid's widest-possible cells (range / 2^20, about 950,000)
-- then hold all the other rows in one cell, so a forced grid join compares
-- each work item's 64 points with the rest of the cell, and the early exit
-- fires only in the last 8 of 512 dimensions.  Zeros compress: the table is
-- small on disk.
CREATE UNLOGGED TABLE c_cell (id int PRIMARY KEY, vec real[]);
INSERT INTO c_cell
    SELECT i, array_fill(0::real, ARRAY[511]) || i::real FROM generate_series(1, :cell_rows) i;
INSERT INTO c_cell VALUES (0, array_fill(0::real, ARRAY[511]) || 1e12::real);

-- The same shape, larger and without the far row: the grid's plan and
-- index, and the float32 filter's set-up (brute force from 48 dimensions),
-- on n x 512.  Here every point has a grid cell of its own, so the grid's
-- work items are short and the join ends soon after the index.
CREATE UNLOGGED TABLE c_wide (id int PRIMARY KEY, vec real[]);
INSERT INTO c_wide
    SELECT i, array_fill(0::real, ARRAY[511]) || i::real FROM generate_series(1, :wide_rows) i;

-- One row of the same dimension: tc_join(x, c_one) loads and plans x as the
-- self-join would, and finishes at once, which times the phases before the join.
CREATE TABLE c_one (id int PRIMARY KEY, vec real[]);
INSERT INTO c_one VALUES (1, array_fill(0::real, ARRAY[512]));
CREATE TABLE c_one8 (id int PRIMARY KEY, vec real[]);
INSERT INTO c_one8 VALUES (1, array_fill(0::real, ARRAY[8]));

-- A long load: a view computes its vectors, nothing is stored.
CREATE VIEW c_view AS
    SELECT i AS id, ARRAY[sin(i), cos(i)]::float8[] AS vec FROM generate_series(1, :view_rows) i;

-- 8-D uniform points: many grid cells and short items; brute force without
-- the filter.
CREATE UNLOGGED TABLE c_8d (id int PRIMARY KEY, vec real[]);
INSERT INTO c_8d
    SELECT i, ARRAY[random(), random(), random(), random(),
                    random(), random(), random(), random()]::real[]
    FROM generate_series(1, 300000) i;

-- Every pair within eps: 12.5 million rows into the tuplestore.
-- DBSCAN on the CPU's grid of cells (no join): 1,500,000 uniform 2-D points.
CREATE UNLOGGED TABLE c_2d (id int PRIMARY KEY, vec real[]);
INSERT INTO c_2d SELECT i, ARRAY[random(), random()]::real[] FROM generate_series(1, 1500000) i;
ANALYZE c_2d;

CREATE UNLOGGED TABLE c_dense (id int PRIMARY KEY, vec float8[]);
INSERT INTO c_dense
    SELECT i, ARRAY[random() * 1e-3, random() * 1e-3, random() * 1e-3]
    FROM generate_series(1, 5000) i;

-- The session check: a small join against plain SQL in float8 (the
-- contract's sum), computed once here.
CREATE TABLE c_small (id int PRIMARY KEY, vec real[]);
INSERT INTO c_small
    SELECT i, ARRAY[random(), random(), random()]::real[] FROM generate_series(1, 300) i;
CREATE TABLE c_small_ref AS
    SELECT a.id::bigint AS id_a, b.id::bigint AS id_b, d.dist
    FROM c_small a JOIN c_small b ON a.id < b.id,
         LATERAL (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8))) AS dist
                  FROM unnest(a.vec, b.vec) AS u(x, y)) d
    WHERE d.dist <= 0.3;

-- 'session ok' when tc_selfjoin gives exactly the reference's rows (ids
-- and dists, bit for bit), else what differs.
CREATE FUNCTION session_check() RETURNS text LANGUAGE sql AS $$
    WITH j AS MATERIALIZED (SELECT * FROM tc_selfjoin('c_small', 'vec', 0.3)),
         missing AS (SELECT count(*) AS n FROM (TABLE c_small_ref EXCEPT ALL TABLE j) x),
         extra AS (SELECT count(*) AS n FROM (TABLE j EXCEPT ALL TABLE c_small_ref) x)
    SELECT CASE WHEN missing.n = 0 AND extra.n = 0 AND (SELECT count(*) FROM j) > 0
                THEN 'session ok'
                ELSE format('session WRONG: %s rows, %s missing, %s extra',
                            (SELECT count(*) FROM j), missing.n, extra.n) END
    FROM missing, extra
$$;

-- From a second session: wait until the backend whose application_name is
-- app runs a tcjoin call, until at_ms after that statement began, then
-- cancel or terminate it (how), and measure until it stopped: for a
-- cancel, until it is no longer active in that statement; for a terminate,
-- until it is gone from pg_stat_activity.  outcome is 'ok' or why nothing
-- was measured.
CREATE FUNCTION interrupt_backend(app text, how text, at_ms float8,
                                  OUT delay_ms float8, OUT outcome text)
LANGUAGE plpgsql AS $$
DECLARE
    target int;
    qs timestamptz;
    t0 timestamptz;
BEGIN
    LOOP
        PERFORM pg_stat_clear_snapshot();
        SELECT pid, query_start INTO target, qs FROM pg_stat_activity
            WHERE application_name = app AND state = 'active' AND query ~ 'tc_(self)?join|tc_dbscan';
        EXIT WHEN FOUND;
        IF clock_timestamp() > statement_timestamp() + interval '30 s' THEN
            outcome := 'the join never started';
            RETURN;
        END IF;
        PERFORM pg_sleep(0.002);
    END LOOP;
    PERFORM pg_sleep(greatest(0, extract(epoch FROM qs + at_ms * interval '1 ms' - clock_timestamp())));
    PERFORM pg_stat_clear_snapshot();
    IF NOT EXISTS (SELECT 1 FROM pg_stat_activity
                   WHERE pid = target AND state = 'active' AND query_start = qs) THEN
        outcome := 'the join ended before the signal';
        RETURN;
    END IF;
    t0 := clock_timestamp();
    IF how = 'cancel' THEN
        PERFORM pg_cancel_backend(target);
    ELSE
        PERFORM pg_terminate_backend(target);
    END IF;
    LOOP
        PERFORM pg_stat_clear_snapshot();
        PERFORM 1 FROM pg_stat_activity WHERE pid = target
            AND (how = 'terminate' OR (state = 'active' AND query_start = qs));
        EXIT WHEN NOT FOUND;
        IF clock_timestamp() > t0 + interval '120 s' THEN
            outcome := 'still running 120 s after the signal';
            RETURN;
        END IF;
        PERFORM pg_sleep(0.002);
    END LOOP;
    delay_ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
    outcome := 'ok';
END
$$;
