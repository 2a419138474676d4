-- pgbench script: a long join cut by statement_timeout, 20 to 300 ms in
-- (stress_timeout in test/stress/stress_setup.sql catches the error).
\set seed random(1, 2000000000)
\set timeout_ms random(20, 300)
SET statement_timeout = :timeout_ms;
SELECT stress_timeout(:seed, :timeout_ms);
RESET statement_timeout;
