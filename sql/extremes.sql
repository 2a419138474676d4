--
-- extremes: the contract where float8 arithmetic overflows or underflows.
--
-- tcjoin sums the contract's terms in IEEE float8 and never raises an error
-- on the way:
--   - a difference or a square that overflows is +inf, and so is a sum that
--     overflows: the pair's sum is then +inf > eps, so it is not returned,
--     for any eps;
--   - a square that underflows is rounded as IEEE rounds it, to a subnormal
--     or to 0: distinct points whose every squared difference underflows to
--     0 are at distance 0 and are returned for any eps >= 0.
-- PostgreSQL's float8 operators raise "value out of range: overflow" where
-- a result overflows, and "value out of range: underflow" where a product
-- of nonzero numbers is 0, so the README's plain-SQL expression fails on
-- those pairs; on every other pair it gives the same value, bit for bit.
-- real[] vectors never reach either range: a float4 difference squared lies
-- between 2^-298 and 2^258.
--
-- The expected values were worked out from IEEE arithmetic by hand:
--   1e308 - (-1e308) = inf;  (1e308 - 1e154)^2 = inf;  1e154^2 + 1e154^2 = inf;
--   sqrt(fl(1e154^2)) = 1e154;
--   (1e-200)^2 = 0 (below half of 2^-1074);
--   fl((1e-160)^2) = 1e-320 to the nearest multiple of 2^-1074, whose square
--     root is 9.99994433575849e-161;
--   (1.5 * 2^-538)^2 = 0.5625 * 2^-1074, rounded up to 2^-1074, whose square
--     root is 2^-537 = 2.2227587494850775e-162: a third more than the
--     distance itself;
--   float4: FLT_MAX = 3.4028234663852886e38, 2^-149 = 1.401298464324817e-45.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS extremes CASCADE;
CREATE SCHEMA extremes;
RESET client_min_messages;
SET search_path = extremes, public;

-- The README's plain-SQL distance, or the error it raises.
CREATE FUNCTION plain_dist(a anyarray, b anyarray) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8)))
              FROM unnest(a, b) AS u(x, y))::text;
EXCEPTION WHEN numeric_value_out_of_range THEN
    RETURN 'ERROR: ' || SQLERRM;
END $$;

-- Every pair of rel: whether tc_selfjoin returns it at eps, its dist, and
-- the plain-SQL value.  float8 prints its shortest exact form, so equal text
-- is equal bits.
CREATE FUNCTION pairs(rel regclass, eps float8)
RETURNS TABLE (id_a bigint, id_b bigint, returned boolean, dist float8, plain_sql text)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
        SELECT a.id::bigint, b.id::bigint, j.id_a IS NOT NULL, j.dist,
               plain_dist(a.vec, b.vec)
          FROM %1$s a JOIN %1$s b ON a.id < b.id
          LEFT JOIN tc_selfjoin($2, 'vec', $1) j ON (j.id_a, j.id_b) = (a.id, b.id)
         ORDER BY 1, 2$q$, rel)
    USING eps, rel;
END $$;

-- The rows (and dist bits) of each method, and of a second relation, are
-- those of method 'auto' on rel.
CREATE FUNCTION same_rows(rel regclass, eps float8, other regclass DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    ref text := format('SELECT id_a, id_b, float8send(dist) FROM tc_selfjoin(%L, ''vec'', %s)',
                       rel, eps::text);
    q text;
    differ bigint;
BEGIN
    FOREACH q IN ARRAY ARRAY[
        format('SELECT id_a, id_b, float8send(dist) FROM tc_selfjoin(%L, ''vec'', %s, method => ''grid'')',
               rel, eps::text),
        format('SELECT id_a, id_b, float8send(dist) FROM tc_selfjoin(%L, ''vec'', %s, method => ''brute'')',
               rel, eps::text),
        format('SELECT id_a, id_b, float8send(dist) FROM tc_selfjoin(%L, ''vec'', %s)',
               coalesce(other, rel), eps::text)]
    LOOP
        EXECUTE format('SELECT count(*) FROM ((%1$s EXCEPT ALL %2$s) UNION ALL (%2$s EXCEPT ALL %1$s)) x',
                       ref, q) INTO differ;
        IF differ <> 0 THEN
            RAISE WARNING '% rows differ: %', differ, q;
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END $$;

--
-- Huge coordinates, double precision[].
--
CREATE TABLE huge (id integer PRIMARY KEY, vec float8[]);
INSERT INTO huge VALUES
    (1, '{1e308, 0}'),
    (2, '{-1e308, 0}'),         -- 1 - 2: the difference overflows
    (3, '{1e154, 0}'),          -- 1 - 3: the square overflows
    (4, '{0, 0}'),              -- 3 - 4: 1e154, a finite square
    (5, '{1e154, 1e154}');      -- 4 - 5: the sum overflows
-- At the largest eps every pair with a finite sum is returned, and no other.
SELECT * FROM pairs('huge', 1.7976931348623157e308);
SELECT same_rows('huge', 1.7976931348623157e308);
SELECT * FROM tc_selfjoin('huge', 'vec', 1e154) ORDER BY id_a, id_b;
-- The plain-SQL expression fails on the pair.
SELECT (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8)))
          FROM unnest(a.vec, b.vec) AS u(x, y))
  FROM huge a, huge b WHERE a.id = 1 AND b.id = 2;
SELECT (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8)))
          FROM unnest(a.vec, b.vec) AS u(x, y))
  FROM huge a, huge b WHERE a.id = 4 AND b.id = 5;

--
-- Tiny coordinates, double precision[].
--
CREATE TABLE tiny (id integer PRIMARY KEY, vec float8[]);
INSERT INTO tiny VALUES
    (1, '{0, 0}'),
    (2, '{1e-200, 0}'),         -- 1 - 2: the square underflows to 0
    (3, '{0, 1e-200}'),         -- 2 - 3: both squares underflow: distance 0
    (4, '{1e-160, 0}'),         -- 1 - 4: a subnormal square
    (5, '{1.667069062113808e-162, 0}');     -- 1.5 * 2^-538: 1 - 5 rounds up
SELECT vec[1] = 1.5 * 2 ^ -538 AS exact FROM tiny WHERE id = 5;
-- eps 0: the pairs whose every square underflows.
SELECT * FROM pairs('tiny', 0);
SELECT same_rows('tiny', 0);
-- Every pair.
SELECT * FROM pairs('tiny', 1e-150);
SELECT same_rows('tiny', 1e-150);
SELECT same_rows('tiny', 1);
-- Between the distance of 1 - 5 (0.75 * 2^-537) and its rounded sum's root
-- (2^-537): not returned, as the contract's sum decides.
SELECT * FROM tc_selfjoin('tiny', 'vec', 0.8 * 2 ^ -537) ORDER BY id_a, id_b;
SELECT * FROM tc_selfjoin('tiny', 'vec', 2 ^ -537) ORDER BY id_a, id_b;
-- The plain-SQL expression fails on the pair, though its sum is not 0.
SELECT (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8)))
          FROM unnest(a.vec, b.vec) AS u(x, y))
  FROM tiny a, tiny b WHERE a.id = 3 AND b.id = 4;

--
-- Enough points for the grid to index them, method 'grid': the cells are
-- about eps wide, and pairs in adjacent cells reach the overflow (huge) or
-- the underflow (tiny) of their squares.
--
-- k * 2^510 for k = 0 .. 20 at eps 3 * 2^510: m = l - k apart, the square is
-- m^2 2^1020, exact for m <= 3 (returned, dist m * 2^510) and +inf for m >= 4
-- (2^1024 overflows), where plain SQL fails.
CREATE TABLE huge_line (id integer PRIMARY KEY, vec float8[]);
INSERT INTO huge_line SELECT k, ARRAY[k * 2 ^ 510, 0] FROM generate_series(0, 20) k;
SELECT count(*) FROM tc_selfjoin('huge_line', 'vec', 3 * 2 ^ 510, method => 'grid');
SELECT method, grid_dims, cells >= 3 AS cells FROM tc_last_stats();
SELECT id_b - id_a AS m, count(*) AS pairs, count(*) FILTER (WHERE returned) AS returned,
       min(dist) / 2 ^ 510 AS min_dist, max(dist) / 2 ^ 510 AS max_dist,
       min(plain_sql) AS plain_sql, max(plain_sql) = min(plain_sql) AS one_value
  FROM pairs('huge_line', 3 * 2 ^ 510)
 GROUP BY 1 ORDER BY 1;
SELECT same_rows('huge_line', 3 * 2 ^ 510);
-- k * 2^-540 for k = 0 .. 4999: m apart, the square m^2 2^-1080 rounds to
-- 0 for m <= 5 (below half of 2^-1074, or a tie to even at m^2 = 32), to
-- 2^-1074 for m = 6 .. 9 (dist 2^-537) and to more from m = 10 (100/64 of
-- 2^-1074 rounds to 2).  The grid's cells are 2^-530 wide: 1,024 points.
CREATE TABLE tiny_line (id integer PRIMARY KEY, vec float8[]);
INSERT INTO tiny_line SELECT k, ARRAY[k * 2 ^ -540, 0] FROM generate_series(0, 4999) k;
SELECT id_b - id_a AS m, count(*) AS pairs, min(dist) = 0 AS zero,
       min(dist) = 2 ^ -537 AS least, max(dist) = min(dist) AS one_value
  FROM tc_selfjoin('tiny_line', 'vec', 2 ^ -537, method => 'grid')
 GROUP BY 1 ORDER BY 1;
SELECT method, grid_dims, cells >= 3 AS cells FROM tc_last_stats();
SELECT count(*) AS pairs, max(dist) AS dist, min(id_b - id_a) AS min_m, max(id_b - id_a) AS max_m
  FROM tc_selfjoin('tiny_line', 'vec', 0, method => 'grid');
SELECT same_rows('tiny_line', 2 ^ -537), same_rows('tiny_line', 0);
-- Plain SQL: 5 and 6 apart.
SELECT plain_dist(a.vec, b.vec) FROM tiny_line a, tiny_line b
 WHERE a.id = 0 AND b.id IN (5, 6) ORDER BY b.id;

--
-- The same points in 48 dimensions (zeros added), where brute force on the
-- CPU puts a float32 filter before the exact sum: the same rows and dist.
--
CREATE TABLE huge48 AS SELECT id, vec || array_fill(0::float8, '{46}') AS vec FROM huge;
ALTER TABLE huge48 ADD PRIMARY KEY (id);
CREATE TABLE tiny48 AS SELECT id, vec || array_fill(0::float8, '{46}') AS vec FROM tiny;
ALTER TABLE tiny48 ADD PRIMARY KEY (id);
SELECT same_rows('huge48', 1.7976931348623157e308, 'huge'),
       same_rows('huge48', 1e154, 'huge'),
       same_rows('tiny48', 0, 'tiny'),
       same_rows('tiny48', 1e-150, 'tiny'),
       same_rows('tiny48', 1, 'tiny');

--
-- real[]: no difference of float4 values overflows or underflows when
-- squared in float8, so the plain-SQL expression agrees everywhere.
--
CREATE TABLE extreme4 (id integer PRIMARY KEY, vec real[]);
INSERT INTO extreme4 VALUES
    (1, '{3.4028235e38, -3.4028235e38}'),   -- FLT_MAX
    (2, '{-3.4028235e38, 3.4028235e38}'),
    (3, '{1.4e-45, 0}'),                    -- 2^-149, the least subnormal
    (4, '{0, 0}'),
    (5, '{0, 1.4e-45}');
SELECT vec[1]::float8 AS flt_max FROM extreme4 WHERE id = 1;
SELECT vec[1]::float8 = 2 ^ -149 AS least FROM extreme4 WHERE id = 3;
SELECT * FROM pairs('extreme4', 1e39);
SELECT same_rows('extreme4', 1e39);
SELECT * FROM pairs('extreme4', 2 ^ -149);
SELECT same_rows('extreme4', 2 ^ -149);

SET client_min_messages = warning;
DROP SCHEMA extremes CASCADE;
RESET client_min_messages;
