#!/usr/bin/env bash
# CPU path against plain SQL and against the output floor, through PostgreSQL.
#   test/bench/cpu_vs_sql.sh [N] [EPS] [REPS]      (defaults 200000 0.004 5)
# Needs the extension installed and a server (PGHOST etc., or test/cluster.sh).
# Prints a table of medians (min-max) in ms and the ratios the docs quote.
set -euo pipefail
N=${1:-200000}
EPS=${2:-0.004}
REPS=${3:-5}
DB=${TCJOIN_BENCH_DB:-tcjoin_bench}
cd "$(dirname "$0")/../.."
if [ -z "${PGPORT:-}" ]; then eval "$(bash test/cluster.sh env)"; fi

psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

# Uniform points in the unit square; the cube copy with its GiST index is
# the best plain-SQL formulation we know for this join.
q >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION tcjoin;
CREATE EXTENSION cube;
SELECT setseed(0.25);
CREATE TABLE pts (id bigint PRIMARY KEY, vec real[]);
INSERT INTO pts SELECT i, ARRAY[random(), random()]::real[] FROM generate_series(1, $N) i;
CREATE TABLE pts_cube AS SELECT id, cube(vec::float8[]) AS c FROM pts;
CREATE INDEX ON pts_cube USING gist (c);
VACUUM ANALYZE pts;
VACUUM ANALYZE pts_cube;
-- Runs a query reps times on the server; returns each run's milliseconds.
CREATE FUNCTION bench(q text, reps int) RETURNS SETOF float8 LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz;
BEGIN
  FOR i IN 1..reps LOOP
    t0 := clock_timestamp();
    EXECUTE q;
    RETURN NEXT extract(epoch FROM clock_timestamp() - t0) * 1000;
  END LOOP;
END \$\$;
CREATE TABLE runs (name text, ms float8);
SQL

PAIRS=$(q -c "SELECT count(*) FROM tc_selfjoin('pts', 'vec', $EPS)")
run() {   # name, reps, query
  q -c "INSERT INTO runs SELECT '$1', b.ms FROM bench(\$q\$$3\$q\$, $2) AS b(ms)"
}
run "tc_selfjoin, cpu_threads=all" "$REPS" "SELECT count(*) FROM tc_selfjoin('pts', 'vec', $EPS)"
run "tc_selfjoin, cpu_threads=1"   "$REPS" "SET tcjoin.cpu_threads = 1; SELECT count(*) FROM tc_selfjoin('pts', 'vec', $EPS); RESET tcjoin.cpu_threads"
run "cube + GiST (plain SQL)" 3 "SELECT count(*) FROM pts_cube a JOIN pts_cube b ON b.c <@ cube_enlarge(a.c, $EPS, 2) AND a.id < b.id AND cube_distance(a.c, b.c) <= $EPS"
run "floor: read the table"   "$REPS" "SELECT count(vec) FROM pts"
run "floor: emit $PAIRS rows" "$REPS" "SELECT count(*) FROM generate_series(1, $PAIRS)"

echo "n=$N eps=$EPS pairs=$PAIRS reps=$REPS ($(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo none))"
q -F ' | ' <<'SQL'
WITH s AS (
  SELECT name, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS med, min(ms) AS lo, max(ms) AS hi
  FROM runs GROUP BY name)
SELECT rpad(name, 34), lpad(round(med::numeric, 1)::text, 9) || ' ms',
       '(' || round(lo::numeric, 1) || '-' || round(hi::numeric, 1) || ')'
FROM s ORDER BY med;
SQL
q -F ' | ' <<'SQL'
WITH m AS (SELECT name, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS med FROM runs GROUP BY name),
     t AS (SELECT med FROM m WHERE name = 'tc_selfjoin, cpu_threads=all')
SELECT 'speedup over cube + GiST: ' || round(((SELECT med FROM m WHERE name LIKE 'cube%') / t.med)::numeric, 1) || 'x',
       'time / (read + emit floor): ' || round((t.med / ((SELECT med FROM m WHERE name LIKE 'floor: read%') +
                                                   (SELECT med FROM m WHERE name LIKE 'floor: emit%')))::numeric, 2) || 'x'
FROM t;
SQL
q -c "SELECT 'last join: ' || method || ', grid dims ' || grid_dims::text || ', candidates ' || candidates || ', load ' || round(load_ms::numeric,1) || ' ms, index ' || round(index_ms::numeric,1) || ' ms, join+output ' || round(join_ms::numeric,1) || ' ms (output ' || round(output_ms::numeric,1) || ' ms)' FROM tc_last_stats()" 2>/dev/null || true
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null
