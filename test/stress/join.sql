-- pgbench script: one tc_join of two fresh random point sets, checked
-- against plain SQL (stress_join in test/stress/stress_setup.sql).
\set seed random(1, 2000000000)
SELECT stress_join(:seed);
