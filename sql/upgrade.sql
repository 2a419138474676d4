--
-- upgrade: ALTER EXTENSION tcjoin UPDATE from every earlier version gives
-- the objects a fresh install of the current version has, and the library
-- serves an earlier version's definitions until the update.  In a database
-- of its own, so that the other tests' objects are untouched.
--
SELECT current_database() AS regress_db \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS tcjoin_upgrade;
CREATE DATABASE tcjoin_upgrade;
RESET client_min_messages;
\c tcjoin_upgrade
SET client_min_messages = warning;

CREATE EXTENSION tcjoin VERSION '0.1.0';
SELECT extversion FROM pg_extension WHERE extname = 'tcjoin';
CREATE TABLE pts AS
  SELECT i AS id, ARRAY[i % 7, i / 7]::real[] AS vec FROM generate_series(1, 49) i;
CREATE VIEW ref AS
  SELECT count(*) AS pairs FROM pts a JOIN pts b ON a.id < b.id
   WHERE sqrt((a.vec[1]::float8 - b.vec[1]) ^ 2 + (a.vec[2]::float8 - b.vec[2]) ^ 2) <= 1.0;
-- 0.1.0's tc_last_stats() (24 columns) from this library: its columns, right.
SELECT count(*) = (TABLE ref) AS right FROM tc_selfjoin('pts', 'vec', 1.0, id_column => 'id');
SELECT n, d, pairs = (TABLE ref) AS right FROM tc_last_stats();
SELECT count(*) AS columns FROM pg_proc, unnest(proargnames) WHERE proname = 'tc_last_stats';

ALTER EXTENSION tcjoin UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'tcjoin';
SELECT count(*) = (TABLE ref) AS right FROM tc_selfjoin('pts', 'vec', 1.0, id_column => 'id');
SELECT n, d, pairs = (TABLE ref) AS right, device_choice IS NOT NULL AS has_choice FROM tc_last_stats();

-- From 0.2.0: its tc_selfjoin and tc_join (no metric argument) served by
-- this library, then the update, after which a metric can be named (tc_join
-- and the dot-product metrics run on the CPU: auto takes it where the GPU
-- suite sets gpu).
SET tcjoin.device = auto;
DROP EXTENSION tcjoin;
CREATE EXTENSION tcjoin VERSION '0.2.0';
SELECT count(*) = (TABLE ref) AS right FROM tc_selfjoin('pts', 'vec', 1.0, 'id');
SELECT count(*) = 2 * (TABLE ref) + 49 AS right FROM tc_join('pts', 'vec', 'pts', 'vec', 1.0, 'id', 'id');
-- 0.2.0's tc_last_stats() (30 columns) from this library
SELECT n, d, pairs = 2 * (TABLE ref) + 49 AS right, device_choice IS NOT NULL AS has_choice FROM tc_last_stats();
ALTER EXTENSION tcjoin UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'tcjoin';
SELECT count(*) = (TABLE ref) AS right FROM tc_selfjoin('pts', 'vec', 1.0, 'id');
SELECT count(*) = (SELECT count(*) FROM pts a JOIN pts b ON a.id < b.id
                    WHERE 1 - (a.vec[1]::float8 * b.vec[1] + a.vec[2]::float8 * b.vec[2]) /
                              sqrt((a.vec[1]::float8 ^ 2 + a.vec[2]::float8 ^ 2) *
                                   (b.vec[1]::float8 ^ 2 + b.vec[2]::float8 ^ 2)) <= 0.01) AS right
  FROM tc_selfjoin('pts', 'vec', 0.01, 'id', metric => 'cosine');
SELECT metric FROM tc_last_stats();

-- The updated functions against a fresh install's: the same signatures,
-- arguments (OUT columns and defaults too), results, properties and
-- comments.
CREATE VIEW ext_functions AS
  SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args,
         pg_get_function_arguments(p.oid) AS all_args,
         pg_get_function_result(p.oid) AS result, p.provolatile, p.proparallel,
         p.proisstrict, p.prorows, obj_description(p.oid, 'pg_proc') AS comment
    FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
    JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'tcjoin';
CREATE TABLE updated AS TABLE ext_functions;

-- From 0.3.0: the update adds tc_count, tc_degrees, tc_neighbors,
-- tc_components and tc_dbscan, and changes nothing else.
DROP EXTENSION tcjoin;
CREATE EXTENSION tcjoin VERSION '0.3.0';
SELECT count(*) AS graph_functions FROM pg_proc
 WHERE proname IN ('tc_count', 'tc_degrees', 'tc_neighbors', 'tc_components', 'tc_dbscan');
ALTER EXTENSION tcjoin UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'tcjoin';
SELECT tc_count('pts', 'vec', 1.0, 'id') = (TABLE ref) AS right;
SELECT sum(degree) = 2 * (TABLE ref) AS right FROM tc_degrees('pts', 'vec', 1.0, 'id');
CREATE TABLE updated_03 AS TABLE ext_functions;

-- From 0.4.0: the update adds tc_join with k, tc_radec_to_xyz and
-- tc_arcsec_to_chord.
DROP EXTENSION tcjoin;
CREATE EXTENSION tcjoin VERSION '0.4.0';
SELECT count(*) AS sky_functions FROM pg_proc WHERE proname IN ('tc_radec_to_xyz', 'tc_arcsec_to_chord');
ALTER EXTENSION tcjoin UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'tcjoin';
SELECT tc_count('pts', 'vec', 1.0, 'id') = (TABLE ref) AS right;
SELECT count(*) = 49 AND bool_and(id_b = id_a AND dist = 0 AND rank = 1) AS right
  FROM tc_join('pts', 'vec', 'pts', 'vec', 1.0, k => 1, id_column_a => 'id', id_column_b => 'id');
SELECT tc_radec_to_xyz(0, 90) AS pole, tc_arcsec_to_chord(648000) AS half_turn;
CREATE TABLE updated_04 AS TABLE ext_functions;

-- From 0.5.0: 0.5.0's tc_last_stats() (31 columns) and tc_devices() (6)
-- from this library, then the update: tc_last_stats() gains the GPUs that
-- ran the join (NULL on the CPU), tc_devices() whether tcjoin.devices
-- selects each GPU.
DROP EXTENSION tcjoin;
CREATE EXTENSION tcjoin VERSION '0.5.0';
SET tcjoin.device = cpu;
SELECT tc_count('pts', 'vec', 1.0, 'id') = (TABLE ref) AS right;
SELECT pairs = (TABLE ref) AS right, metric FROM tc_last_stats();
SELECT count(*) >= 0 AS listed FROM tc_devices();
SELECT count(*) AS columns FROM pg_proc, unnest(proargnames) WHERE proname = 'tc_last_stats';
ALTER EXTENSION tcjoin UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'tcjoin';
SELECT tc_count('pts', 'vec', 1.0, 'id') = (TABLE ref) AS right;
SELECT pairs = (TABLE ref) AS right, metric, gpus, gpu_devices, gpu_shares FROM tc_last_stats();
SELECT proname, proargnames[array_length(proargnames, 1) - 2:] AS last_columns
  FROM pg_proc WHERE proname IN ('tc_last_stats', 'tc_devices') ORDER BY proname;
SELECT count(*) >= 0 AS listed, bool_and(selected) IS NOT FALSE AS all_selected FROM tc_devices();
RESET tcjoin.device;
CREATE TABLE updated_05 AS TABLE ext_functions;
DROP EXTENSION tcjoin;
CREATE EXTENSION tcjoin;
CREATE TABLE fresh AS TABLE ext_functions;
SELECT count(*) AS functions FROM fresh;
SELECT 'only after update' AS side, * FROM (TABLE updated EXCEPT TABLE fresh) u
UNION ALL
SELECT 'only in a fresh install', * FROM (TABLE fresh EXCEPT TABLE updated) f
UNION ALL
SELECT 'only after update from 0.3.0', * FROM (TABLE updated_03 EXCEPT TABLE fresh) u
UNION ALL
SELECT 'only in a fresh install, not from 0.3.0', * FROM (TABLE fresh EXCEPT TABLE updated_03) f
UNION ALL
SELECT 'only after update from 0.4.0', * FROM (TABLE updated_04 EXCEPT TABLE fresh) u
UNION ALL
SELECT 'only in a fresh install, not from 0.4.0', * FROM (TABLE fresh EXCEPT TABLE updated_04) f
UNION ALL
SELECT 'only after update from 0.5.0', * FROM (TABLE updated_05 EXCEPT TABLE fresh) u
UNION ALL
SELECT 'only in a fresh install, not from 0.5.0', * FROM (TABLE fresh EXCEPT TABLE updated_05) f;

\c :regress_db
SET client_min_messages = warning;
DROP DATABASE tcjoin_upgrade;
