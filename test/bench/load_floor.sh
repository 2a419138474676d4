#!/usr/bin/env bash
# Reading the column against the fastest plain SQL that reads every vector:
# a table of N (default 1,000,000) x 128 real[], then the median of REPS
# runs each of
#   tc_selfjoin(..., 1e-7, method => 'grid') on the CPU: its load_ms
#     (tc_last_stats(); no pair is within 1e-7, so the join is short),
#     as built (a plain table's pages read by the backend and helper
#     threads, src/pg/load_direct.c) and with the developer override
#     direct_load=off (through SPI, as views and row-level security read),
#   SELECT sum(vec[128]) FROM t with PostgreSQL's parallel workers, and
#   the same serially (max_parallel_workers_per_gather = 0).
# Prints a table; the ratios are the load over each floor.
#   test/bench/load_floor.sh [REPS] [N]    (default 5, 1000000; needs the
#                                           extension installed and a server;
#                                           KEEP_DB=1 keeps the database)
# Not a test: the figures go to docs/.
set -uo pipefail
REPS=${1:-5}
N=${2:-1000000}
DB=${TCJOIN_BENCH_DB:-tcjoin_load}
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh

fresh_db "$DB" || exit 1
# 1,000 random vectors, each row one of them with its first coordinate
# replaced by the row's own value (1e-6 apart): every row distinct, no
# pair within 1e-7, and the table built in seconds
q_db "$DB" <<SQL
SELECT setseed(0.5);
CREATE TABLE base AS SELECT k, (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 127) j WHERE k > 0) AS v
    FROM generate_series(1, 1000) k;
CREATE TABLE t (id bigint PRIMARY KEY, vec real[]);
INSERT INTO t SELECT i, array_prepend((i::float8 / 1000000)::real, b.v)
    FROM generate_series(1, $N) i JOIN base b ON b.k = i % 1000 + 1;
VACUUM ANALYZE t;
CREATE FUNCTION loads(reps int, ov text) RETURNS SETOF float8 LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM set_config('tcjoin.dev_overrides', ov, true);
    FOR i IN 1 .. reps LOOP
        PERFORM count(*) FROM tc_selfjoin('t', 'vec', 1e-7, method => 'grid');
        RETURN NEXT (SELECT load_ms FROM tc_last_stats());
    END LOOP;
END \$\$;
SQL

create_runs_fn "$DB"
echo "$N x 128 real[] ($(q_db "$DB" -c "SELECT pg_size_pretty(pg_table_size('t'))")), $(nproc) cores, medians of $REPS (ms); commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
q_db "$DB" -F ' ' <<SQL >"${TMPDIR:-/tmp}/load_floor.$$"
SET tcjoin.device = cpu;
SELECT sum(vec[128]) FROM t \\g /dev/null
SELECT count(*) FROM tc_selfjoin('t', 'vec', 1e-7, method => 'grid') \\g /dev/null
CREATE TEMP TABLE l AS SELECT * FROM loads($REPS, '') ms;
CREATE TEMP TABLE l0 AS SELECT * FROM loads($REPS, 'direct_load=off') ms;
CREATE TEMP TABLE p AS SELECT * FROM runs('SELECT sum(vec[128]) FROM t', $REPS) ms;
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE s AS SELECT * FROM runs('SELECT sum(vec[128]) FROM t', $REPS) ms;
RESET max_parallel_workers_per_gather;
SELECT round(a::numeric, 1), round(a0::numeric, 1), round(b::numeric, 1), round(c::numeric, 1),
       round((a / b)::numeric, 2), round((a / c)::numeric, 2),
       current_setting('max_parallel_workers_per_gather')
  FROM (SELECT (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM l) a,
               (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM l0) a0,
               (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM p) b,
               (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM s) c) x;
SQL
read -r load load0 par ser rpar rser workers <"${TMPDIR:-/tmp}/load_floor.$$"
printf '%-10s %16s %14s %14s %10s %10s\n' load "load, through SPI" "sum parallel" "sum serial" "/parallel" "/serial"
printf '%-10s %16s %14s %14s %10s %10s\n' "$load" "$load0" "$par" "$ser" "${rpar}x" "${rser}x"
echo "(parallel: up to $workers workers per gather)"
rm -f "${TMPDIR:-/tmp}/load_floor.$$"
[ -n "${KEEP_DB:-}" ] || q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
