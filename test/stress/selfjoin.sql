-- pgbench script: one tc_selfjoin on fresh random points, checked against
-- plain SQL (stress_selfjoin in test/stress/stress_setup.sql).
\set seed random(1, 2000000000)
SELECT stress_selfjoin(:seed);
