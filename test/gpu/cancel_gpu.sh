#!/usr/bin/env bash
# Cancel through SQL on the GPU, in every phase of a join: for each of three
# joins (the GPU grid on 2-D points, FP16 brute force at 128 dimensions, the
# same points under cosine), a
# calibration run gives the phases' spans from tc_last_stats() (load,
# index = upload and preparation, join, output into the tuplestore), then
# CANCEL_GPU_REPS statement_timeouts spread over each phase: the delay is
# the statement's time minus the timeout.  After each, the same session's
# next join must give the calibrated count, and the GPU's used memory must
# come back to where it was once every session has ended.  A table of the
# delays, then "N passed, N failed".
#   test/gpu/cancel_gpu.sh        (needs the extension installed, a server
#                                  and a GPU; PGHOST etc. in the environment)
# CANCEL_GPU_REPS (default 10 a phase), CANCEL_LIMIT_MS (default 1000),
# CANCEL_GPU_JOINS (default "grid brute cosine": which joins; one a call keeps a
# run of 100 a phase inside a machine's time limit).
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/stress/lib.sh

DB=tcjoin_cancel_gpu
REPS=${CANCEL_GPU_REPS:-10}
BRUTE_ROWS=${CANCEL_GPU_BRUTE_ROWS:-200000}	# fewer for a dry run on the CPU
LIMIT_MS=${CANCEL_LIMIT_MS:-1000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok     $1"; }
bad() { fail=$((fail + 1)); echo "FAILED $1"; }
# CANCEL_GPU_DEVICE=cpu runs the same on the CPU (a dry run of the script)
DEVICE=${CANCEL_GPU_DEVICE:-gpu}
JOINS=${CANCEL_GPU_JOINS:-grid brute cosine}
[[ " $JOINS " == *" brute "* || " $JOINS " == *" cosine "* ]] || BRUTE_ROWS=1

fresh_db "$DB" || { echo "could not create $DB"; echo "0 passed, 1 failed"; exit 1; }
q_db "$DB" <<SQL
SELECT setseed(0.25);
CREATE TABLE g2 AS SELECT i::bigint AS id,
    ARRAY[-ln(1 - random()) / 40, -ln(1 - random()) / 40]::real[] AS vec
    FROM generate_series(1, 500000) i;
ALTER TABLE g2 ADD PRIMARY KEY (id);
CREATE TABLE h128 AS SELECT i::bigint AS id,
    (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 128) k WHERE i > 0) AS vec
    FROM generate_series(1, $BRUTE_ROWS) i;
ALTER TABLE h128 ADD PRIMARY KEY (id);
VACUUM ANALYZE g2, h128;
SQL
base_used=$(gpu_used)

# name, query; the calibration's count and phase ends (ms) to $WORK/name
calibrate() {
    local name=$1 query=$2
    q_db "$DB" -c "SET tcjoin.device = $DEVICE" -c "SELECT count(*) FROM ($query) s" \
        -c "SELECT count(*) FROM ($query) s" \
        -c "SELECT method, round(load_ms), round(load_ms + index_ms), round(load_ms + index_ms + join_ms),
                   round(total_ms) FROM tc_last_stats()" | tail -2 >"$WORK/$name"
}

printf '%-8s %-7s %6s %8s %8s %8s\n' join phase runs "med ms" "max ms" "span ms" >"$WORK/table"
for spec in "grid|SELECT * FROM tc_selfjoin('g2', 'vec', 0.0002)" \
            "brute|SELECT * FROM tc_selfjoin('h128', 'vec', 3.3, method => 'brute')" \
            "cosine|SELECT * FROM tc_selfjoin('h128', 'vec', 0.7, metric => 'cosine')"; do
    name=${spec%%|*} query=${spec#*|}
    [[ " $JOINS " == *" $name "* ]] || continue
    calibrate "$name" "$query"
    count=$(sed -n 1p "$WORK/$name")
    IFS='|' read -r method t_load t_index t_join t_total < <(sed -n 2p "$WORK/$name")
    echo "# $name: $count pairs, method $method, phases end at $t_load, $t_index, $t_join, $t_total ms"
    prev=0
    for phase in load:$t_load index:$t_index join:$t_join output:$t_total; do
        pname=${phase%%:*} end=${phase#*:}
        : >"$WORK/delays"
        # One session for the phase's runs: each a timed join, then the same
        # join whole and the GPU's free memory (the context's, kept, and
        # nothing of the cancelled join's).
        for ((r = 0; r < REPS; r++)); do
            # a moment inside the phase, spread over it (at least 1 ms)
            t=$(awk -v a="$prev" -v b="$end" -v r="$r" -v n="$REPS" \
                'BEGIN { t = a + (b - a) * (r + 0.5) / n; if (t < 1) t = 1; printf "%d", t }')
            cat <<SQL
SELECT 'rep=$r $t';
SET statement_timeout = $t;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset
SELECT 'count=' || count(*) FROM ($query) s;
SELECT 'ms=' || round((extract(epoch FROM clock_timestamp()) - :t0) * 1000);
RESET statement_timeout;
SELECT 'count=' || count(*) FROM ($query) s;
SELECT 'free=' || coalesce((SELECT free_memory_mb FROM tc_devices() LIMIT 1), 0);
SQL
        done >"$WORK/phase.sql"
        psql -X -q -A -t -d "$DB" -c "SET tcjoin.device = $DEVICE" -f "$WORK/phase.sql" >"$WORK/phase.out" 2>&1
        # per run: "rep r t", then its lines up to the next run's
        awk -v want="$count" -v out="$WORK/delays" -v bad="$WORK/bad" '
            function done_rep() {
                if (rep == "") return
                if (cancelled) { printf "%.0f\n", ms - t >> out; if (last != want) printf "timeout %d ms: the next join gave %s, not %s\n", t, last, want >> bad }
                else if (last != want) printf "timeout %d ms: the join finished with %s, not %s\n", t, last, want >> bad
                if (free != "") print free > (out ".free")
            }
            /^rep=/ { done_rep(); split(substr($0, 5), f, " "); rep = f[1]; t = f[2]; cancelled = 0; last = ""; free = ""; next }
            /canceling statement due to statement timeout/ { cancelled = 1; next }
            /^ms=/ { ms = substr($0, 4); next }
            /^count=/ { last = substr($0, 7); next }
            /^free=/ { free = substr($0, 6); next }
            END { done_rep() }' "$WORK/phase.out"
        if [ -s "$WORK/bad" ]; then
            while read -r line; do bad "$name $pname $line"; done <"$WORK/bad"
            : >"$WORK/bad"
        fi
        # the GPU's free memory after every run: no run's memory left behind
        read -r fmin fmax < <(sort -g "$WORK/delays.free" | awk 'NR == 1 { a = $1 } { b = $1 } END { print a, b }')
        if [ -n "$fmin" ] && [ $((fmax - fmin)) -gt 64 ]; then
            bad "$name $pname: the GPU's free memory after the runs varied from $fmin to $fmax MiB"
        fi
        rm -f "$WORK/delays.free"
        read -r med max < <(median_max <"$WORK/delays")
        runs=$(wc -l <"$WORK/delays")
        printf '%-8s %-7s %6d %8s %8s %8d\n' "$name" "$pname" "$runs" "$med" "$max" $((end - prev)) >>"$WORK/table"
        if [ "$runs" -gt 0 ] && [ "$max" -lt "$LIMIT_MS" ]; then
            ok "$name $pname: $runs timeouts, worst delay $max ms"
        elif [ "$runs" -gt 0 ]; then
            bad "$name $pname: worst delay $max ms (limit $LIMIT_MS)"
        else
            echo "note   $name $pname: no timeout landed in the phase ($((end - prev)) ms)"
        fi
        prev=$end
    done
done

# A cancel from another session and a terminate, in the middle of the grid join.
[ -f "$WORK/grid" ] || calibrate grid "SELECT * FROM tc_selfjoin('g2', 'vec', 0.0002)"
IFS='|' read -r _ t_load t_index t_join t_total < <(sed -n 2p "$WORK/grid")
for sig in cancel terminate; do
    q_db "$DB" -c "SET tcjoin.device = $DEVICE" -c "SELECT count(*) FROM tc_selfjoin('g2', 'vec', 0.0002)" \
        >/dev/null 2>&1 &
    sleep "$(awk -v t="$t_join" 'BEGIN { printf "%.3f", t / 1000 * 0.9 }')"
    t0=$(date +%s%N)
    q_db "$DB" -c "SELECT pg_${sig}_backend(pid) FROM pg_stat_activity
                   WHERE datname = '$DB' AND query LIKE '%tc_selfjoin%' AND pid <> pg_backend_pid()" >/dev/null
    while [ "$(q_db "$DB" -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$DB'
                 AND state = 'active' AND query LIKE '%tc_selfjoin(''g2''%' AND pid <> pg_backend_pid()")" != 0 ]; do
        sleep 0.002
    done
    ms=$((($(date +%s%N) - t0) / 1000000))
    wait
    if [ "$ms" -lt "$LIMIT_MS" ]; then ok "grid: pg_${sig}_backend stopped the join in $ms ms"
    else bad "grid: pg_${sig}_backend took $ms ms"; fi
done

# Every session has ended: the GPU memory is back (give the driver a moment).
sleep 1
after=$(gpu_used)
apps=$(gpu_apps)
echo "GPU memory used: $base_used MiB before, $after MiB after; processes holding the GPU now: $apps"
if [ "$after" -le $((base_used + 64)) ] && [ "$apps" -eq 0 ]; then
    ok "no GPU memory or context left by the ended sessions"
else
    bad "GPU memory or contexts left: $base_used -> $after MiB, $apps processes"
fi
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
cat "$WORK/table"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
