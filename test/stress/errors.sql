-- pgbench script: a join that must fail with a given message (bad eps,
-- unknown method, NaN or infinite rows, different dimensions), or, for a
-- NULL eps, return no rows (stress_errors in test/stress/stress_setup.sql).
\set seed random(1, 2000000000)
SELECT stress_errors(:seed);
