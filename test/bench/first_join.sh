#!/usr/bin/env bash
# A backend's first GPU join against its second, phase by phase, through
# PostgreSQL: for each shape, REPS fresh sessions each run the same join
# three times; tc_last_stats() gives the phases and the GPU's set-up (the
# context when new, streams, buffers, the pinned ring).  Then auto's choice
# and both devices' times over sizes from 100 to 10 million points (warm
# backends), beside auto's estimates.  Prints tables of medians.
#   test/bench/first_join.sh [REPS]     (default 5; needs the extension
#                                        installed, a server and a GPU)
# FIRST_JOIN_MAX_N caps the 2-D sizes (default 10 million),
# FIRST_JOIN_MAX_HD the 128-D ones (default 200,000).
# Not a test: the figures go to docs/lab/ and docs/performance.md.
set -uo pipefail
REPS=${1:-5}
DB=${TCJOIN_BENCH_DB:-tcjoin_first}
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
MAX_N=${FIRST_JOIN_MAX_N:-10000000}

fresh_db "$DB" || exit 1
q_db "$DB" <<SQL
SELECT setseed(0.5);
CREATE TABLE u2 (id bigint PRIMARY KEY, vec real[]);
INSERT INTO u2 SELECT i, ARRAY[random(), random()] FROM generate_series(1, $MAX_N) i;
CREATE TABLE h128 (id bigint PRIMARY KEY, vec real[]);
INSERT INTO h128 SELECT i, (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 128) k WHERE i > 0)
  FROM generate_series(1, 200000) i;
VACUUM ANALYZE u2, h128;
-- n points of a table as a view, ids 1..n
CREATE FUNCTION prefix(rel text, n bigint) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
    EXECUTE format('CREATE OR REPLACE VIEW %I AS SELECT id, vec FROM %I WHERE id <= %s', rel || '_' || n, rel, n);
END \$\$;
SQL

# One fresh session: the join three times, each with its stats.  With
# PREWARM set, the session preloads tcjoin with tcjoin.gpu_prewarm on, and
# its first statement waits PREWARM seconds (a pooled connection's idle
# time before its first query).
session() {
    local query=$1
    PGOPTIONS=${PREWARM:+-c session_preload_libraries=tcjoin -c tcjoin.gpu_prewarm=on} \
        psql -X -q -A -t -F ' ' -d "$DB" <<SQL
SET tcjoin.device = gpu;
${PREWARM:+SELECT pg_sleep($PREWARM);}
\\timing on
SELECT count(*) FROM ($query) s;
SELECT 'stats', round(total_ms::numeric, 1), gpu_new_context, round(gpu_setup_ms::numeric, 1),
       round(load_ms::numeric, 1), round(index_ms::numeric, 1), round(join_ms::numeric, 1) FROM tc_last_stats();
SELECT count(*) FROM ($query) s;
SELECT 'stats', round(total_ms::numeric, 1), gpu_new_context, round(gpu_setup_ms::numeric, 1),
       round(load_ms::numeric, 1), round(index_ms::numeric, 1), round(join_ms::numeric, 1) FROM tc_last_stats();
SELECT count(*) FROM ($query) s;
SELECT 'stats', round(total_ms::numeric, 1), gpu_new_context, round(gpu_setup_ms::numeric, 1),
       round(load_ms::numeric, 1), round(index_ms::numeric, 1), round(join_ms::numeric, 1) FROM tc_last_stats();
SQL
}

for PREWARM in "" 0.5; do
if [ -z "$PREWARM" ]; then
    echo "== a backend's first GPU join against its second and third (medians of $REPS sessions, ms)"
else
    echo "== the same with tcjoin.gpu_prewarm, the first join $PREWARM s after the session started"
fi
printf '%-34s %4s %9s %8s %8s %8s %8s %8s\n' join run statement total setup load index join
for spec in "u2 1000|SELECT * FROM tc_selfjoin('u2_1000', 'vec', 0.01, id_column => 'id')" \
            "u2 1000000|SELECT * FROM tc_selfjoin('u2_1000000', 'vec', 0.0015, id_column => 'id')" \
            "h128 200000|SELECT * FROM tc_selfjoin('h128', 'vec', 3.3)"; do
    name=${spec%%|*} query=${spec#*|}
    read -r rel n <<<"$name"
    [ "$rel" = u2 ] && q_db "$DB" -c "SELECT prefix('u2', $n)" >/dev/null
    : >"$WORK/runs"
    for ((r = 0; r < REPS; r++)); do
        session "$query" >"$WORK/s" 2>&1
        # "Time: x ms" lines follow each statement; the count's is the 1st, 3rd, 5th
        awk '/^Time:/ { t[++nt] = $2 } /^stats / { s[++ns] = $0 }
             END { for (i = 1; i <= 3; i++) print i, t[2 * i - 1], s[i] }' "$WORK/s" >>"$WORK/runs"
    done
    for i in 1 2 3; do
        awk -v i="$i" '$1 == i' "$WORK/runs" >"$WORK/ri"
        row=""
        for col in 2 4 6 7 8 9; do
            m=$(awk -v c="$col" '{ print $c }' "$WORK/ri" | median_max | cut -d' ' -f1)
            row="$row $(printf '%8s' "$m")"
        done
        newctx=$(awk '{ print $5 }' "$WORK/ri" | sort | uniq -c | tr -s ' ' | tr '\n' ',')
        printf '%-34s %4s %s  (new context: %s)\n' "$name" "$i" "$row" "$newctx"
    done
done
done

echo
echo "== auto's choice against both devices, warm backends (medians of 3, ms)"
printf '%-22s %10s %10s %10s %10s %10s %-6s %-14s %-14s %s\n' join n cpu gpu auto_est_cpu auto_est_gpu auto \
    "cpu idx/join" "gpu idx/join" why
for spec in "u2 100 0.05" "u2 1000 0.01" "u2 10000 0.004" "u2 100000 0.002" "u2 1000000 0.0015" \
            "u2 10000000 0.0005" "h128 1000 3.3" "h128 10000 3.3" "h128 100000 3.3" "h128 200000 3.3"; do
    read -r rel n eps <<<"$spec"
    [ "$n" -gt "$MAX_N" ] && continue
    # 128-D on the CPU is brute force: 200,000 points take about half a minute a run
    [ "$rel" = h128 ] && [ "$n" -gt "${FIRST_JOIN_MAX_HD:-200000}" ] && continue
    q_db "$DB" -c "SELECT prefix('$rel', $n)" >/dev/null
    query="SELECT count(*) FROM tc_selfjoin('${rel}_$n', 'vec', $eps, id_column => 'id')"
    q_db "$DB" -F ' ' >"$WORK/a" <<SQL
SET tcjoin.device = gpu;
$query;
SET tcjoin.device = cpu;
$query;
CREATE TEMP TABLE t (dev text, ms float8, est_cpu float8, est_gpu float8, ran text, why text,
                     idx float8, jn float8);
DO \$\$
DECLARE dev text;
BEGIN
    FOR k IN 1 .. 3 LOOP
        FOREACH dev IN ARRAY ARRAY['cpu', 'gpu', 'auto'] LOOP
            PERFORM set_config('tcjoin.device', dev, false);
            PERFORM count(*) FROM tc_selfjoin('${rel}_$n', 'vec', $eps, id_column => 'id');
            INSERT INTO t SELECT dev, total_ms, auto_cpu_ms, auto_gpu_ms, device, device_choice,
                                 index_ms, join_ms FROM tc_last_stats();
        END LOOP;
    END LOOP;
END \$\$;
SELECT (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM t WHERE dev = 'cpu')::numeric(12,1),
       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM t WHERE dev = 'gpu')::numeric(12,1),
       (SELECT max(est_cpu) FROM t WHERE dev = 'auto')::numeric(12,2),
       (SELECT max(est_gpu) FROM t WHERE dev = 'auto')::numeric(12,2),
       (SELECT string_agg(DISTINCT ran, ',') FROM t WHERE dev = 'auto'),
       (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY idx))::text || '/' ||
               round(percentile_cont(0.5) WITHIN GROUP (ORDER BY jn))::text FROM t WHERE dev = 'cpu'),
       (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY idx))::text || '/' ||
               round(percentile_cont(0.5) WITHIN GROUP (ORDER BY jn))::text FROM t WHERE dev = 'gpu'),
       (SELECT max(why) FROM t WHERE dev = 'auto');
SQL
    read -r cpu gpu ecpu egpu ran cph gph why <<<"$(tail -1 "$WORK/a")"
    printf '%-22s %10s %10s %10s %10s %10s %-6s %-14s %-14s %s\n' "$rel eps $eps" "$n" "$cpu" "$gpu" "$ecpu" "$egpu" \
        "$ran" "$cph" "$gph" "$why"
done
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
