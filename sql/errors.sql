--
-- errors: every argument and data check of tc_selfjoin(), with its message.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS errors CASCADE;
CREATE SCHEMA errors;
RESET client_min_messages;
SET search_path = errors, public;

CREATE TABLE pts (id integer PRIMARY KEY, vec real[], vec8 double precision[],
                  t text, ia integer[], na numeric[], nid numeric, fid double precision,
                  tid text);
INSERT INTO pts VALUES
    (1, '{0,0}', '{0,0}', 'a', '{1}', '{1}', 1, 1, 'a'),
    (2, '{1,0}', '{1,0}', 'b', '{2}', '{2}', 2, 2, 'b');
-- The table itself is fine.
SELECT * FROM tc_selfjoin('pts', 'vec', 1) ORDER BY id_a, id_b;

--
-- The relation.
--
SELECT * FROM tc_selfjoin('no_such_table', 'vec', 1);
SELECT * FROM tc_selfjoin('errors.no_such_table', 'vec', 1);
SELECT * FROM tc_selfjoin('no_such_schema.pts', 'vec', 1);
SELECT * FROM tc_selfjoin('PTS', 'vec', 1);            -- folds to pts: fine
SELECT * FROM tc_selfjoin('"PTS"', 'vec', 1);          -- quoted: no such table
CREATE SEQUENCE seq;
SELECT * FROM tc_selfjoin('seq', 'last_value', 1);
SELECT * FROM tc_selfjoin('pts_pkey', 'id', 1);
CREATE TYPE comp AS (id integer, vec real[]);
SELECT * FROM tc_selfjoin('comp', 'vec', 1, 'id');
CREATE MATERIALIZED VIEW unpopulated AS SELECT id, vec FROM pts WITH NO DATA;
SELECT * FROM tc_selfjoin('unpopulated', 'vec', 1, 'id');
-- An OID that names no relation (dropped since it was looked up).
SELECT * FROM tc_selfjoin('-'::regclass, 'vec', 1);
CREATE TABLE gone (id integer PRIMARY KEY, vec real[]);
SELECT set_config('errors_test.gone_oid', 'gone'::regclass::oid::text, false) IS NOT NULL AS saved;
DROP TABLE gone;
DO $$
BEGIN
    PERFORM * FROM tc_selfjoin(current_setting('errors_test.gone_oid')::oid, 'vec', 1);
EXCEPTION WHEN undefined_table THEN
    RAISE NOTICE '%', regexp_replace(SQLERRM, '[0-9]+', 'N');  -- the OID varies
END $$;

--
-- The vector column.
--
SELECT * FROM tc_selfjoin('pts', 'no_such_column', 1);
SELECT * FROM tc_selfjoin('pts', 'VEC', 1);            -- a name, not folded
SELECT * FROM tc_selfjoin('pts', '"vec"', 1);          -- a name, not parsed
SELECT * FROM tc_selfjoin('pts', '', 1);
SELECT * FROM tc_selfjoin('pts', 'ctid', 1);
SELECT * FROM tc_selfjoin('pts', 'xmin', 1);
SELECT * FROM tc_selfjoin('pts', 'tableoid', 1);
SELECT * FROM tc_selfjoin('pts', 't', 1);
SELECT * FROM tc_selfjoin('pts', 'ia', 1);
SELECT * FROM tc_selfjoin('pts', 'na', 1);
SELECT * FROM tc_selfjoin('pts', 'id', 1);
CREATE DOMAIN nonneg AS real CHECK (VALUE >= 0);
CREATE TABLE dom_elems (id integer PRIMARY KEY, v nonneg[]);
SELECT * FROM tc_selfjoin('dom_elems', 'v', 1);

--
-- The id column.
--
SELECT * FROM tc_selfjoin('pts', 'vec', 1, 'no_such_column');
SELECT * FROM tc_selfjoin('pts', 'vec', 1, 'ID');
SELECT * FROM tc_selfjoin('pts', 'vec', 1, 'ctid');
SELECT * FROM tc_selfjoin('pts', 'vec', 1, 'xmin');
SELECT * FROM tc_selfjoin('pts', 'vec', 1, 'tid');
SELECT * FROM tc_selfjoin('pts', 'vec', 1, 'nid');
SELECT * FROM tc_selfjoin('pts', 'vec', 1, 'fid');
SELECT * FROM tc_selfjoin('pts', 'vec', 1, 'vec');
-- No primary key and no id_column.
CREATE TABLE no_pk (id integer, vec real[]);
SELECT * FROM tc_selfjoin('no_pk', 'vec', 1);
CREATE VIEW pts_view AS SELECT id, vec FROM pts;
SELECT * FROM tc_selfjoin('pts_view', 'vec', 1);
-- A unique constraint is not a primary key.
CREATE TABLE unique_only (id integer UNIQUE NOT NULL, vec real[]);
SELECT * FROM tc_selfjoin('unique_only', 'vec', 1);
-- A composite primary key.
CREATE TABLE comp_pk (a integer, b integer, vec real[], PRIMARY KEY (a, b));
SELECT * FROM tc_selfjoin('comp_pk', 'vec', 1);
-- Primary keys that are not integers.
CREATE TABLE text_pk (id text PRIMARY KEY, vec real[]);
SELECT * FROM tc_selfjoin('text_pk', 'vec', 1);
CREATE TABLE numeric_pk (id numeric PRIMARY KEY, vec real[]);
SELECT * FROM tc_selfjoin('numeric_pk', 'vec', 1);
CREATE TABLE oid_pk (id oid PRIMARY KEY, vec real[]);
SELECT * FROM tc_selfjoin('oid_pk', 'vec', 1);
-- id_column works around each of them.
INSERT INTO comp_pk VALUES (1, 1, '{0}'), (1, 2, '{0.5}');
SELECT * FROM tc_selfjoin('comp_pk', 'vec', 1, 'b');

--
-- The ids.
--
-- NULL ids (of rows whose vector is not NULL).
INSERT INTO no_pk VALUES (1, '{0}'), (NULL, '{1}');
SELECT * FROM tc_selfjoin('no_pk', 'vec', 1, 'id');
-- Duplicate ids: the message names the value, whatever the id type.
TRUNCATE no_pk;
INSERT INTO no_pk VALUES (1, '{0}'), (7, '{1}'), (3, '{2}'), (7, '{3}');
SELECT * FROM tc_selfjoin('no_pk', 'vec', 1, 'id');
SELECT * FROM tc_selfjoin('pts_view', 'vec', 1, 'id');
CREATE VIEW dup_view AS SELECT id, vec FROM pts UNION ALL SELECT id, vec FROM pts WHERE id = 2;
SELECT * FROM tc_selfjoin('dup_view', 'vec', 1, 'id');
CREATE VIEW dup_view8 AS
    SELECT -9223372036854775808 AS id, '{0}'::real[] AS vec
    UNION ALL SELECT 5, '{1}' UNION ALL SELECT -9223372036854775808, '{2}';
SELECT * FROM tc_selfjoin('dup_view8', 'vec', 1, 'id');
-- A duplicate is caught even when its vector is far from the rest.
SELECT * FROM tc_selfjoin('comp_pk', 'vec', 1, 'a');
-- An inheritance child may repeat its parent's primary key values.
CREATE TABLE parent (id integer PRIMARY KEY, vec real[]);
CREATE TABLE child () INHERITS (parent);
INSERT INTO parent VALUES (1, '{0}'), (2, '{1}');
INSERT INTO child VALUES (2, '{5}');
SELECT * FROM tc_selfjoin('parent', 'vec', 1);
-- A deferred unique constraint does not prove uniqueness inside a transaction.
CREATE TABLE deferred (id integer UNIQUE DEFERRABLE INITIALLY DEFERRED, vec real[]);
BEGIN;
INSERT INTO deferred VALUES (1, '{0}'), (1, '{1}');
SELECT * FROM tc_selfjoin('deferred', 'vec', 1, 'id');
ROLLBACK;
-- A partial unique index does not either.
CREATE TABLE partial_unique (id integer, vec real[]);
CREATE UNIQUE INDEX ON partial_unique (id) WHERE id > 10;
INSERT INTO partial_unique VALUES (1, '{0}'), (1, '{1}'), (11, '{2}');
SELECT * FROM tc_selfjoin('partial_unique', 'vec', 1, 'id');

--
-- The vectors: shape.
--
CREATE TABLE bad4 (id integer PRIMARY KEY, v real[]);
CREATE TABLE bad8 (id integer PRIMARY KEY, v double precision[]);
-- Multi-dimensional arrays.
INSERT INTO bad4 VALUES (1, '{1,2}'), (2, '{{1,2},{3,4}}');
SELECT * FROM tc_selfjoin('bad4', 'v', 1);
TRUNCATE bad4;
INSERT INTO bad4 VALUES (5, '{{{1}}}');
SELECT * FROM tc_selfjoin('bad4', 'v', 1);
-- Empty arrays.
TRUNCATE bad4;
INSERT INTO bad4 VALUES (1, '{1,2}'), (2, '{}');
SELECT * FROM tc_selfjoin('bad4', 'v', 1);
TRUNCATE bad8;
INSERT INTO bad8 VALUES (3, '{}');
SELECT * FROM tc_selfjoin('bad8', 'v', 1);
-- NULL elements.
TRUNCATE bad4;
INSERT INTO bad4 VALUES (1, '{1,2,3}'), (2, '{1,NULL,3}');
SELECT * FROM tc_selfjoin('bad4', 'v', 1);
TRUNCATE bad8;
INSERT INTO bad8 VALUES (1, '{1,2,3,4,5,6,7,8,9,10}'), (4, '{1,2,3,4,5,6,7,8,9,NULL}');
SELECT * FROM tc_selfjoin('bad8', 'v', 1);
TRUNCATE bad8;
INSERT INTO bad8 VALUES (4, '{NULL}');
SELECT * FROM tc_selfjoin('bad8', 'v', 1);
-- Different dimensions: the message names both, the detail the row.
TRUNCATE bad4;
INSERT INTO bad4 VALUES (1, '{1,2,3}'), (2, '{1,2,3}'), (3, '{1,2}');
SELECT * FROM tc_selfjoin('bad4', 'v', 1);
TRUNCATE bad8;
INSERT INTO bad8 VALUES (10, '{1}'), (20, '{1,2,3,4}');
SELECT * FROM tc_selfjoin('bad8', 'v', 1);
-- At most a million dimensions.
TRUNCATE bad4;
INSERT INTO bad4 VALUES (1, array_fill(0::real, ARRAY[1000001]));
SELECT * FROM tc_selfjoin('bad4', 'v', 1);

--
-- The vectors: values.
--
TRUNCATE bad4;
INSERT INTO bad4 VALUES (1, '{1,2,3}'), (2, '{1,2,NaN}');
SELECT * FROM tc_selfjoin('bad4', 'v', 1);
TRUNCATE bad4;
INSERT INTO bad4 VALUES (1, '{1,2,3}'), (3, '{Infinity,2,3}');
SELECT * FROM tc_selfjoin('bad4', 'v', 1);
TRUNCATE bad4;
INSERT INTO bad4 VALUES (1, '{1,2,3}'), (4, '{1,-Infinity,3}');
SELECT * FROM tc_selfjoin('bad4', 'v', 1);
TRUNCATE bad8;
INSERT INTO bad8 VALUES (1, '{1,2,3}'), (2, '{NaN,2,3}');
SELECT * FROM tc_selfjoin('bad8', 'v', 1);
TRUNCATE bad8;
INSERT INTO bad8 VALUES (1, '{1,2,3}'), (3, '{1,2,Infinity}');
SELECT * FROM tc_selfjoin('bad8', 'v', 1);
TRUNCATE bad8;
INSERT INTO bad8 VALUES (1, '{1,2,3}'), (4, '{1,-Infinity,3}');
SELECT * FROM tc_selfjoin('bad8', 'v', 1);
-- A NaN in a NULL-id row's vector: the row is rejected for its NULL id.
CREATE TABLE bad_nullid (id integer, v double precision[]);
INSERT INTO bad_nullid VALUES (NULL, '{NaN}');
SELECT * FROM tc_selfjoin('bad_nullid', 'v', 1, 'id');
-- A bad vector fails the join whatever eps, method or include_self.
TRUNCATE bad8;
INSERT INTO bad8 VALUES (1, '{0,0}'), (2, '{1e300,NaN}');
SELECT * FROM tc_selfjoin('bad8', 'v', 0, method => 'brute');
SELECT * FROM tc_selfjoin('bad8', 'v', 0, include_self => true, method => 'grid');
-- Large finite values are fine.
TRUNCATE bad8;
INSERT INTO bad8 VALUES (1, '{1.7976931348623157e308,0}'), (2, '{1.7976931348623157e308,1}');
SELECT * FROM tc_selfjoin('bad8', 'v', 1) ORDER BY id_a, id_b;
TRUNCATE bad4;
INSERT INTO bad4 VALUES (1, '{3.4028235e38}'), (2, '{-3.4028235e38}');
SELECT count(*) FROM tc_selfjoin('bad4', 'v', 1e300);

--
-- eps.
--
SELECT * FROM tc_selfjoin('pts', 'vec', -1);
SELECT * FROM tc_selfjoin('pts', 'vec', -1e-300);
SELECT * FROM tc_selfjoin('pts', 'vec', 'NaN');
SELECT * FROM tc_selfjoin('pts', 'vec', 'Infinity');
SELECT * FROM tc_selfjoin('pts', 'vec', '-Infinity');
-- -0 is zero.
SELECT * FROM tc_selfjoin('pts', 'vec', '-0');

--
-- method.
--
SELECT * FROM tc_selfjoin('pts', 'vec', 1, method => 'fast');
SELECT * FROM tc_selfjoin('pts', 'vec', 1, method => 'GRID');
SELECT * FROM tc_selfjoin('pts', 'vec', 1, method => '');
SELECT * FROM tc_selfjoin('pts', 'vec', 1, method => ' brute');

--
-- Settings.
--
SET tcjoin.device = 'tpu';
SET tcjoin.device = '';
SET tcjoin.cpu_threads = -1;
SET tcjoin.cpu_threads = 1025;
SET tcjoin.cpu_threads = 'many';
SET tcjoin.log_stats = 'maybe';
SET tcjoin.tensor_cores = 'sometimes';
SET tcjoin.gpu_memory_limit = -1;
SET tcjoin.no_such_setting = 1;
-- Nothing above changed a setting.
SELECT name, setting = reset_val AS unchanged
  FROM pg_settings WHERE name IN ('tcjoin.cpu_threads', 'tcjoin.log_stats', 'tcjoin.tensor_cores',
                                  'tcjoin.gpu_memory_limit') ORDER BY name;

--
-- A library newer than the installed SQL definitions fails clearly instead
-- of misreading its result type.
--
CREATE FUNCTION stale_last_stats(OUT device text, OUT method text) RETURNS SETOF record
    AS '$libdir/tcjoin', 'tc_last_stats' LANGUAGE C;
SELECT * FROM stale_last_stats();
DROP FUNCTION stale_last_stats();
CREATE FUNCTION stale_devices(OUT device integer, OUT name text) RETURNS SETOF record
    AS '$libdir/tcjoin', 'tc_devices' LANGUAGE C;
SELECT * FROM stale_devices();
DROP FUNCTION stale_devices();

--
-- The SQLSTATE of each kind of error.
--
CREATE FUNCTION sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
SELECT label, sqlstate_of(format('SELECT * FROM tc_selfjoin(%s)', args)) AS sqlstate
  FROM (VALUES
    ('no such relation', $$'no_such_table', 'vec', 1$$),
    ('not a table',      $$'seq', 'last_value', 1$$),
    ('no such column',   $$'pts', 'no_such_column', 1$$),
    ('system column',    $$'pts', 'ctid', 1$$),
    ('vector type',      $$'pts', 't', 1$$),
    ('id type',          $$'pts', 'vec', 1, 'tid'$$),
    ('no primary key',   $$'no_pk', 'vec', 1$$),
    ('null id',          $$'bad_nullid', 'v', 1, 'id'$$),
    ('duplicate id',     $$'no_pk', 'vec', 1, 'id'$$),
    ('eps negative',     $$'pts', 'vec', -1$$),
    ('eps NaN',          $$'pts', 'vec', 'NaN'$$),
    ('eps infinite',     $$'pts', 'vec', 'Infinity'$$),
    ('unknown method',   $$'pts', 'vec', 1, method => 'fast'$$)
  ) v(label, args);
-- Each bad vector after a good one.
CREATE FUNCTION vector_sqlstate(bad real[]) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM bad4;
    INSERT INTO bad4 VALUES (1, '{1,2}'), (2, bad);
    RETURN sqlstate_of($q$SELECT * FROM tc_selfjoin('bad4', 'v', 1)$q$);
END $$;
SELECT label, vector_sqlstate(v) AS sqlstate
  FROM (VALUES
    ('good',              '{3,4}'::real[]),
    ('multi-dimensional', '{{1,2}}'),
    ('empty',             '{}'),
    ('NULL element',      '{NULL,1}'),
    ('other dimension',   '{1,2,3}'),
    ('NaN',               '{NaN,1}'),
    ('infinity',          '{1,Infinity}')
  ) v(label, v);
TRUNCATE bad4;
INSERT INTO bad4 VALUES (1, array_fill(0::real, ARRAY[1000001]));
SELECT sqlstate_of($q$SELECT * FROM tc_selfjoin('bad4', 'v', 1)$q$) AS too_long;

--
-- After all these errors the session works.
--
SELECT * FROM tc_selfjoin('pts', 'vec', 1) ORDER BY id_a, id_b;

SET client_min_messages = warning;
DROP SCHEMA errors CASCADE;
RESET client_min_messages;
