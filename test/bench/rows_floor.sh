#!/usr/bin/env bash
# Pair rows through SQL against the executor's floor: for about 1, 10 and
# 100 million rows (uniform 2-D points, eps set for that count), the
# median of REPS runs of
#   SELECT count(*) FROM tc_selfjoin(...)
# beside SELECT count(*) FROM generate_series(1, <the same row count>),
# at the default work_mem and at WORK_MEM_LARGE, with tc_last_stats()'s
# phases.  Prints a table; the ratio is tc_selfjoin over the floor.
#   test/bench/rows_floor.sh [REPS] [MAX_ROWS]   (default 3, 100000000;
#                                                 DEVICE=cpu|gpu|auto, default cpu)
# Needs the extension installed and a server (PGHOST etc., or
# test/cluster.sh).  Not a test: the figures go to docs/.
set -uo pipefail
REPS=${1:-3}
MAX_ROWS=${2:-100000000}
DEVICE=${DEVICE:-cpu}
WORK_MEM_LARGE=${WORK_MEM_LARGE:-4GB}
DB=${TCJOIN_BENCH_DB:-tcjoin_rows}
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh

fresh_db "$DB" || exit 1
q_db "$DB" <<'SQL'
SELECT setseed(0.5);
CREATE TABLE u200k (id bigint PRIMARY KEY, vec real[]);
INSERT INTO u200k SELECT i, ARRAY[random(), random()] FROM generate_series(1, 200000) i;
CREATE TABLE u1m (id bigint PRIMARY KEY, vec real[]);
INSERT INTO u1m SELECT i, ARRAY[random(), random()] FROM generate_series(1, 1000000) i;
VACUUM ANALYZE u200k, u1m;
SQL

create_runs_fn "$DB"
echo "device $DEVICE, $(nproc) cores, medians of $REPS (ms); commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
printf '%-12s %-9s %11s %10s %10s %7s %8s %8s %8s\n' rows work_mem tc_selfjoin floor ratio load index join+out output
# table, eps: about 1, 10 and 100 million pairs (n^2 / 2 * pi eps^2, less the edges)
for spec in "u200k 0.004" "u1m 0.00253" "u1m 0.008"; do
    read -r rel eps <<<"$spec"
    rows=$(q_db "$DB" -c "SET tcjoin.device = cpu; SELECT count(*) FROM tc_selfjoin('$rel', 'vec', $eps)")
    [ "$rows" -gt "$MAX_ROWS" ] && continue
    for wm in default "$WORK_MEM_LARGE"; do
        set_wm=""
        [ "$wm" != default ] && set_wm="SET work_mem = '$wm';"
        q_db "$DB" -F ' ' <<SQL >"${TMPDIR:-/tmp}/rows_floor.$$"
SET tcjoin.device = $DEVICE;
$set_wm
SELECT count(*) FROM tc_selfjoin('$rel', 'vec', $eps) \\g /dev/null
CREATE TEMP TABLE t AS SELECT * FROM runs(\$q\$SELECT count(*) FROM tc_selfjoin('$rel', 'vec', $eps)\$q\$, $REPS) ms;
CREATE TEMP TABLE s AS SELECT * FROM tc_last_stats();
CREATE TEMP TABLE f AS SELECT * FROM runs('SELECT count(*) FROM generate_series(1, $rows)', $REPS) ms;
SELECT round((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM t)::numeric, 1),
       round((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM f)::numeric, 1),
       round(((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM t) /
              (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM f))::numeric, 2),
       round(load_ms::numeric), round(index_ms::numeric), round(join_ms::numeric), round(output_ms::numeric)
  FROM s;
SQL
        read -r tc floor ratio load index join out <"${TMPDIR:-/tmp}/rows_floor.$$"
        printf '%-12s %-9s %11s %10s %10s %7s %8s %8s %8s\n' "$rows" "$wm" "$tc" "$floor" "${ratio}x" "$load" "$index" "$join" "$out"
    done
done
rm -f "${TMPDIR:-/tmp}/rows_floor.$$"
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
