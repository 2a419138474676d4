--
-- overrides: tcjoin.dev_overrides, the developers' setting that forces GPU
-- kernels and paths.  Only a superuser may set it; its text is checked when
-- it is set, by the engine's own parser, whose message is the error's
-- detail; on the CPU it changes nothing.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS overrides CASCADE;
CREATE SCHEMA overrides;
-- Roles are shared by the whole cluster: start from none of ours.
DROP ROLE IF EXISTS tcjoin_test_developer;
RESET client_min_messages;
SET search_path = overrides, public;
-- The library defines the setting: before it is loaded, SET would make an
-- unchecked placeholder.
LOAD 'tcjoin';

-- Empty by default, and not in postgresql.conf.sample.
SHOW tcjoin.dev_overrides;
SELECT name, context, vartype, setting = '' AS empty
  FROM pg_settings WHERE name = 'tcjoin.dev_overrides';

--
-- A superuser sets it; SHOW gives the text back as set.
--
SET tcjoin.dev_overrides = 'recheck=lane, trace=off';
SHOW tcjoin.dev_overrides;
SET tcjoin.dev_overrides = 'tile_kernel=mma,recheck=staged,recheck_group=off,clusters=off,pingpong=off,filter_bound=whole,batch_rate=0.5,trace=off';
SHOW tcjoin.dev_overrides;
SET tcjoin.dev_overrides = '';
SHOW tcjoin.dev_overrides;
SET tcjoin.dev_overrides = 'batch_rate=0';
SHOW tcjoin.dev_overrides;
SET tcjoin.dev_overrides = 'split=all';
SHOW tcjoin.dev_overrides;
SET tcjoin.dev_overrides = 'split=auto';
SHOW tcjoin.dev_overrides;
SET tcjoin.dev_overrides = 'band_squares=3';
SHOW tcjoin.dev_overrides;

--
-- Bad text is refused, with the parser's message as the detail, and the
-- setting keeps its value.
--
-- An unknown key.
SET tcjoin.dev_overrides = 'colour=blue';
SET tcjoin.dev_overrides = 'recheck=lane, Trace=on';
-- A bad value for a known key.
SET tcjoin.dev_overrides = 'recheck=fast';
SET tcjoin.dev_overrides = 'tile_kernel=wgmma';
SET tcjoin.dev_overrides = 'clusters=yes';
SET tcjoin.dev_overrides = 'batch_rate=2';
SET tcjoin.dev_overrides = 'batch_rate=half';
SET tcjoin.dev_overrides = 'split=some';
SET tcjoin.dev_overrides = 'band_squares=-1';
SET tcjoin.dev_overrides = 'band_squares=1.5';
-- Not key=value at all.
SET tcjoin.dev_overrides = 'trace';
SET tcjoin.dev_overrides = '=on';
SET tcjoin.dev_overrides = 'trace=';
SHOW tcjoin.dev_overrides;

--
-- Other roles may not set it, nor change it for a session, function or role.
--
CREATE ROLE tcjoin_test_developer;
GRANT USAGE ON SCHEMA overrides TO tcjoin_test_developer;
SET ROLE tcjoin_test_developer;
SET tcjoin.dev_overrides = 'trace=on';
SET tcjoin.dev_overrides = '';
SELECT set_config('tcjoin.dev_overrides', 'recheck=lane', false);
RESET tcjoin.dev_overrides;
SHOW tcjoin.dev_overrides;
RESET ROLE;
-- A superuser may reset it.
RESET tcjoin.dev_overrides;
SHOW tcjoin.dev_overrides;

--
-- On the CPU the overrides steer nothing: the same rows as without them,
-- and as a plain SQL join.
--
CREATE FUNCTION ref_join(rel regclass, vec name, eps float8)
RETURNS TABLE (id_a bigint, id_b bigint, dist float8)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'WITH p AS MATERIALIZED (SELECT id::bigint AS i, %1$I::float8[] AS v FROM %2$s)
         SELECT a.i, b.i, r.d
           FROM p a JOIN p b ON a.i < b.i,
                LATERAL (SELECT sqrt(sum((x - y) * (x - y))) AS d
                           FROM unnest(a.v, b.v) AS u(x, y)) r
          WHERE r.d <= $1', vec, rel)
    USING eps;
END $$;
CREATE FUNCTION diff(q1 text, q2 text, OUT rows_1 bigint, OUT rows_2 bigint,
                     OUT only_1 bigint, OUT only_2 bigint)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format(
        'WITH a AS MATERIALIZED (%s), b AS MATERIALIZED (%s)
         SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b),
                (SELECT count(*) FROM (TABLE a EXCEPT ALL TABLE b) x),
                (SELECT count(*) FROM (TABLE b EXCEPT ALL TABLE a) x)', q1, q2)
    INTO rows_1, rows_2, only_1, only_2;
END $$;

-- 300 points in 3 and in 20 dimensions, reproducibly spread.
CREATE TABLE pts3 (id integer PRIMARY KEY, vec real[]);
INSERT INTO pts3
    SELECT i, ARRAY[(i * 37 % 101) / 10.0, (i * 53 % 97) / 10.0, (i * 71 % 89) / 10.0]
      FROM generate_series(1, 300) i;
CREATE TABLE pts20 (id integer PRIMARY KEY, vec double precision[]);
INSERT INTO pts20
    SELECT i, ARRAY(SELECT ((i * (k + 3) * 7919) % 211) / 100.0 FROM generate_series(1, 20) k)
      FROM generate_series(1, 300) i;

SET tcjoin.device = cpu;
CREATE TABLE plain3 AS SELECT * FROM tc_selfjoin('pts3', 'vec', 1.5);
CREATE TABLE plain20 AS SELECT * FROM tc_selfjoin('pts20', 'vec', 3);
SELECT * FROM diff('TABLE plain3', $$SELECT * FROM ref_join('pts3', 'vec', 1.5)$$);
SELECT * FROM diff('TABLE plain20', $$SELECT * FROM ref_join('pts20', 'vec', 3)$$);
SELECT (SELECT count(*) FROM plain3) > 0 AS some_pairs_3,
       (SELECT count(*) FROM plain20) > 0 AS some_pairs_20;

SET tcjoin.dev_overrides = 'tile_kernel=mma,recheck=staged,recheck_group=off,clusters=off,pingpong=off,filter_bound=whole,batch_rate=0.5,trace=off';
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts3', 'vec', 1.5)$$, 'TABLE plain3');
SELECT device FROM tc_last_stats();
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts3', 'vec', 1.5, method => 'brute')$$, 'TABLE plain3');
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts3', 'vec', 1.5, method => 'grid')$$, 'TABLE plain3');
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts20', 'vec', 3)$$, 'TABLE plain20');
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts20', 'vec', 3, method => 'brute')$$, 'TABLE plain20');
SET tcjoin.dev_overrides = 'recheck=bulk256, batch_rate=0.01';
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts20', 'vec', 3)$$, 'TABLE plain20');
SELECT * FROM diff($$SELECT * FROM tc_join('pts3', 'vec', 'pts3', 'vec', 1.5)
                       WHERE id_a < id_b$$, 'TABLE plain3');
SELECT device FROM tc_last_stats();
RESET tcjoin.dev_overrides;
RESET tcjoin.device;

SET client_min_messages = warning;
DROP SCHEMA overrides CASCADE;
DROP OWNED BY tcjoin_test_developer;
DROP ROLE tcjoin_test_developer;
RESET client_min_messages;
