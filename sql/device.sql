--
-- device: where a join runs and why.  tcjoin.device = auto estimates the
-- join on the CPU and on the GPU (its fixed costs included: a backend's
-- first GPU join creates the CUDA context) and takes the lower;
-- tc_last_stats() says which and why.  tcjoin.gpu_full says what a GPU
-- join does when the GPU's memory is full, tcjoin.devices which GPUs one
-- join may use.  Only facts that hold with and without a GPU, and with any
-- number of GPUs, are printed.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS device CASCADE;
CREATE SCHEMA device;
RESET client_min_messages;
SET search_path = device, public;

SELECT setseed(0.5);
CREATE TABLE small (id integer PRIMARY KEY, vec real[]);
INSERT INTO small SELECT i, ARRAY[random(), random()] FROM generate_series(1, 500) i;
-- the plain SQL reference
CREATE TABLE small_ref AS
  SELECT a.id AS id_a, b.id AS id_b,
         sqrt((a.vec[1]::float8 - b.vec[1]) ^ 2 + (a.vec[2]::float8 - b.vec[2]) ^ 2) AS dist
    FROM small a JOIN small b ON a.id < b.id
   WHERE sqrt((a.vec[1]::float8 - b.vec[1]) ^ 2 + (a.vec[2]::float8 - b.vec[2]) ^ 2) <= 0.02;

-- tcjoin.device = cpu: the setting is the reason; no estimates.
SET tcjoin.device = cpu;
SELECT count(*) FROM (SELECT * FROM tc_selfjoin('small', 'vec', 0.02)
                      EXCEPT SELECT * FROM small_ref) s;
SELECT device, device_choice, auto_cpu_ms IS NULL AS no_estimates,
       gpu_new_context IS NULL AND gpu_setup_ms IS NULL AND gpu_full_wait_ms IS NULL AS no_gpu_columns
  FROM tc_last_stats();

-- auto, 500 points: the CPU's estimate is under any GPU join's fixed
-- costs, on every machine: the CPU, CUDA not even asked.
SET tcjoin.device = auto;
SELECT (SELECT count(*) FROM tc_selfjoin('small', 'vec', 0.02)) = (SELECT count(*) FROM small_ref) AS same_count;
SELECT device, device_choice,
       auto_cpu_ms > 0 AND auto_cpu_ms < auto_gpu_ms AS cpu_lower,
       auto_gpu_ms >= 1 AS gpu_costs_its_setup
  FROM tc_last_stats();
SELECT count(*) FROM (SELECT * FROM tc_selfjoin('small', 'vec', 0.02, include_self => true)
                      EXCEPT (SELECT * FROM small_ref UNION ALL SELECT id, id, 0 FROM small)) s;

-- Two point sets: auto prices both devices as for one set; this join is small.
SELECT count(*) > 0 AS pairs FROM tc_join('small', 'vec', 'small', 'vec', 0.02);
SELECT device, device_choice FROM tc_last_stats();

-- tcjoin.gpu_full: cpu by default; wait and error; nothing else.
SHOW tcjoin.gpu_full;
SET tcjoin.gpu_full = wait;
SHOW tcjoin.gpu_full;
SET tcjoin.gpu_full = error;
SHOW tcjoin.gpu_full;
SET tcjoin.gpu_full = queue;
SET tcjoin.gpu_full = '';
RESET tcjoin.gpu_full;
SHOW tcjoin.gpu_full;
-- It changes nothing where the GPU is not full (or absent).
SET tcjoin.gpu_full = error;
SELECT count(*) FROM (SELECT * FROM tc_selfjoin('small', 'vec', 0.02)
                      EXCEPT SELECT * FROM small_ref) s;
RESET tcjoin.gpu_full;

-- tcjoin.gpu_prewarm: off by default; a superuser's setting (every backend
-- that has it holds a CUDA context); on, a join runs as before (without a
-- GPU there is nothing to make).
SHOW tcjoin.gpu_prewarm;
CREATE ROLE device_user;
GRANT USAGE ON SCHEMA device TO device_user;
GRANT SELECT ON small TO device_user;
SET ROLE device_user;
SET tcjoin.gpu_prewarm = on;
SHOW tcjoin.gpu_prewarm;
RESET ROLE;
SET tcjoin.gpu_prewarm = on;
SHOW tcjoin.gpu_prewarm;
SELECT count(*) FROM (SELECT * FROM tc_selfjoin('small', 'vec', 0.02)
                      EXCEPT SELECT * FROM small_ref) s;
RESET tcjoin.gpu_prewarm;
REVOKE ALL ON small FROM device_user;
REVOKE USAGE ON SCHEMA device FROM device_user;
DROP ROLE device_user;

-- tcjoin.devices: the GPUs one join may use, all (the default) or a list
-- of their numbers; a number may repeat.  SET refuses a value that is
-- neither; whether each GPU exists is the join's question, on the GPU.
SHOW tcjoin.devices;
SET tcjoin.devices = 'x';
SET tcjoin.devices = '0,';
SET tcjoin.devices = '-1';
SET tcjoin.devices = '16';
SET tcjoin.devices = '0,,1';
SET tcjoin.devices = '';
SET tcjoin.devices = '1 2';
SET tcjoin.devices = '0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,0';
SHOW tcjoin.devices;
SET tcjoin.devices = ' ALL ';
SHOW tcjoin.devices;
SET tcjoin.devices = '0';
SHOW tcjoin.devices;
SET tcjoin.devices = '0,0';
SHOW tcjoin.devices;
SET tcjoin.devices = '1, 2';
SHOW tcjoin.devices;
SET tcjoin.devices = 3, 1;
SHOW tcjoin.devices;
SET tcjoin.devices = '0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15';
SHOW tcjoin.devices;
-- tc_devices() says which GPUs the setting lets a join use (none listed
-- without a GPU: only facts that hold for any list are printed).
SET tcjoin.devices = '0';
SELECT bool_and(selected = (device = 0)) IS NOT FALSE AS only_0 FROM tc_devices();
RESET tcjoin.devices;
SELECT bool_and(selected) IS NOT FALSE AS every_one FROM tc_devices();
-- A CPU join does not read the list (so a GPU the machine lacks is no
-- error), and its GPU columns are NULL.
SET tcjoin.device = cpu;
SET tcjoin.devices = '15';
SELECT count(*) FROM (SELECT * FROM tc_selfjoin('small', 'vec', 0.02)
                      EXCEPT SELECT * FROM small_ref) s;
SELECT device, gpus IS NULL AND gpu_devices IS NULL AND gpu_shares IS NULL AS no_gpus
  FROM tc_last_stats();
RESET tcjoin.devices;
RESET tcjoin.device;

-- A role sees the reason of its own joins only (as every statistic).
CREATE ROLE device_other;
GRANT USAGE ON SCHEMA device TO device_other;
SET ROLE device_other;
SELECT count(*) AS rows_for_another_role FROM tc_last_stats();
RESET ROLE;
SELECT device_choice IS NOT NULL AS own_row FROM tc_last_stats();
REVOKE USAGE ON SCHEMA device FROM device_other;
DROP ROLE device_other;

RESET tcjoin.device;
SET client_min_messages = warning;
DROP SCHEMA device CASCADE;
