--
-- Reading the column.  A plain table's pages are read by the backend and
-- helper threads; tcjoin.dev_overrides = 'direct_load=off' reads through
-- SPI, as views, inheritance and row-level security always do.  Both must
-- give the same rows, and the rows plain SQL sees, whatever the tuples
-- hold: NULL vectors between the rows, dead and updated tuples, a dropped
-- column before the vector, a column added after the rows were written,
-- out-of-line and compressed vectors, other id types, and a transaction's
-- own changes.  Fresh random data each run; only data-independent values
-- are printed.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
RESET client_min_messages;
CREATE SCHEMA load_t;
SET search_path = load_t, public;

-- Pairs of a join read both ways, against each other; rows: the loaded
-- ids (tc_degrees gives one a row) against plain SQL's non-NULL vectors.
CREATE FUNCTION both_ways(rel text, col text, eps float8, sql_rows text)
RETURNS TABLE (pairs_same boolean, some_pairs boolean, rows_same boolean, rows_spi_same boolean)
LANGUAGE plpgsql AS $$
BEGIN
    CREATE TEMP TABLE j_direct AS SELECT * FROM tc_selfjoin(rel::regclass, col, eps, 'id');
    CREATE TEMP TABLE d_direct AS SELECT id FROM tc_degrees(rel::regclass, col, eps, 'id');
    SET LOCAL tcjoin.dev_overrides = 'direct_load=off';
    CREATE TEMP TABLE j_spi AS SELECT * FROM tc_selfjoin(rel::regclass, col, eps, 'id');
    CREATE TEMP TABLE d_spi AS SELECT id FROM tc_degrees(rel::regclass, col, eps, 'id');
    SET LOCAL tcjoin.dev_overrides = '';
    EXECUTE 'CREATE TEMP TABLE d_sql AS ' || sql_rows;
    RETURN QUERY SELECT
        (SELECT count(*) FROM j_direct) = (SELECT count(*) FROM j_spi) AND
            NOT EXISTS (SELECT * FROM j_direct EXCEPT SELECT * FROM j_spi),
        (SELECT count(*) FROM j_direct) > 0,
        (SELECT count(*) FROM d_direct) = (SELECT count(*) FROM d_sql) AND
            NOT EXISTS (SELECT * FROM d_direct EXCEPT SELECT * FROM d_sql),
        (SELECT count(*) FROM d_spi) = (SELECT count(*) FROM d_sql) AND
            NOT EXISTS (SELECT * FROM d_spi EXCEPT SELECT * FROM d_sql);
    DROP TABLE j_direct, d_direct, j_spi, d_spi, d_sql;
END $$;

-- Short arrays, a NULL vector every seventh row, a dropped column before
-- the vector, dead rows and updated ones; never analyzed, so the matrix
-- starts small and grows while the threads read.
CREATE TABLE pts (id int, junk text, v real[]);
INSERT INTO pts SELECT i, repeat('x', i % 50),
    CASE WHEN i % 7 = 0 THEN NULL ELSE ARRAY[random(), random(), random()]::real[] END
  FROM generate_series(1, 20000) i;
ALTER TABLE pts DROP COLUMN junk;
DELETE FROM pts WHERE id % 11 = 0;
UPDATE pts SET v = ARRAY[v[2], v[1], v[3]] WHERE id % 13 = 0 AND v IS NOT NULL;
SELECT * FROM both_ways('pts', 'v', 0.05, 'SELECT id FROM pts WHERE v IS NOT NULL');

-- The backend alone (no helper threads).
SET tcjoin.cpu_threads = 1;
SELECT * FROM both_ways('pts', 'v', 0.05, 'SELECT id FROM pts WHERE v IS NOT NULL');
RESET tcjoin.cpu_threads;

-- A column added with a default after the rows were written: their tuples
-- end before it, and the default is read for them.
CREATE TABLE late (id int PRIMARY KEY, v real[]);
INSERT INTO late SELECT i, ARRAY[random(), random()]::real[] FROM generate_series(1, 300) i;
ALTER TABLE late ADD COLUMN w real[] DEFAULT '{0.5,0.5}';
INSERT INTO late SELECT i, NULL, ARRAY[random(), random()]::real[] FROM generate_series(301, 600) i;
SELECT * FROM both_ways('late', 'w', 0.05, 'SELECT id FROM late WHERE w IS NOT NULL');
SELECT count(*) AS defaults_at_0 FROM tc_degrees('late', 'w', 0) WHERE degree = 299;

-- The transaction's own changes, seen as its SELECT would.
BEGIN;
DELETE FROM pts WHERE id % 5 = 0;
INSERT INTO pts SELECT i, ARRAY[random(), random(), random()]::real[] FROM generate_series(30001, 31000) i;
SELECT * FROM both_ways('pts', 'v', 0.05, 'SELECT id FROM pts WHERE v IS NOT NULL');
ROLLBACK;

-- Vectors out of line (random: incompressible) and compressed (zeros), in
-- double precision; bigint ids.
CREATE TABLE wide (id bigint PRIMARY KEY, v float8[]);
ALTER TABLE wide ALTER COLUMN v SET STORAGE EXTENDED;
INSERT INTO wide SELECT i * 1000000000::bigint, CASE WHEN i % 3 = 0
        THEN array_fill(0::float8, ARRAY[600])
        ELSE ARRAY(SELECT random() / 4 FROM generate_series(1, 600 + 0 * i)) END
  FROM generate_series(1, 300) i;
SELECT count(*) FILTER (WHERE pg_column_compression(v) IS NOT NULL) > 0 AS some_compressed,
       count(*) FILTER (WHERE pg_column_size(v) < 600 * 8) > 0 AS some_small
  FROM wide;
SELECT * FROM both_ways('wide', 'v', 5, 'SELECT id FROM wide');

-- smallint ids.
CREATE TABLE small_ids (id smallint PRIMARY KEY, v real[]);
INSERT INTO small_ids SELECT i, ARRAY[random(), random()]::real[] FROM generate_series(-3000, 3000) i;
SELECT * FROM both_ways('small_ids', 'v', 0.02, 'SELECT id FROM small_ids');

-- No rows: an empty table and one whose every vector is NULL.
CREATE TABLE none_here (id int PRIMARY KEY, v real[]);
SELECT count(*) AS empty_rows FROM tc_degrees('none_here', 'v', 1);
INSERT INTO none_here SELECT i, NULL FROM generate_series(1, 1000) i;
SELECT count(*) AS null_rows FROM tc_degrees('none_here', 'v', 1);
SELECT tc_count('none_here', 'v', 1) AS no_pairs;

-- A role with SELECT on the two columns alone reads them; without the
-- vector's, the error is the SELECT's own.
CREATE ROLE tcjoin_load_reader;
GRANT USAGE ON SCHEMA load_t TO tcjoin_load_reader;
GRANT SELECT (id, v) ON small_ids TO tcjoin_load_reader;
GRANT SELECT (id) ON wide TO tcjoin_load_reader;
SET ROLE tcjoin_load_reader;
SELECT count(*) > 0 AS reads_granted_columns FROM tc_degrees('small_ids', 'v', 0.02);
SELECT count(*) FROM tc_degrees('wide', 'v', 1);
RESET ROLE;
-- Without USAGE on the schema, the table named by its OID: the SELECT's
-- refusal, as through SPI, though the table itself is granted.
CREATE ROLE tcjoin_load_outsider;
GRANT SELECT ON small_ids TO tcjoin_load_outsider;
CREATE TEMP TABLE small_ids_oid AS SELECT 'load_t.small_ids'::regclass::oid AS oid;
GRANT SELECT ON small_ids_oid TO tcjoin_load_outsider;
SET ROLE tcjoin_load_outsider;
SELECT count(*) FROM tc_degrees((SELECT oid FROM small_ids_oid)::regclass, 'v', 0.02);
RESET ROLE;
DROP TABLE small_ids_oid;

-- The rows of an error are named as before: the first bad row in the
-- table's order, whichever path reads it.
CREATE TABLE bad (id int PRIMARY KEY, v real[]);
INSERT INTO bad SELECT i, ARRAY[i, i]::real[] FROM generate_series(1, 5000) i;
UPDATE bad SET v = '{1,2,3}' WHERE id = 4000;
UPDATE bad SET v = ARRAY['NaN', 1]::real[] WHERE id = 4500;
SELECT count(*) FROM tc_degrees('bad', 'v', 1);
SET tcjoin.dev_overrides = 'direct_load=off';
SELECT count(*) FROM tc_degrees('bad', 'v', 1);
RESET tcjoin.dev_overrides;

RESET search_path;
DROP SCHEMA load_t CASCADE;
DROP ROLE tcjoin_load_reader;
DROP ROLE tcjoin_load_outsider;
