#!/usr/bin/env bash
# Cancel latency through SQL.  The README promises that cancel and
# statement_timeout stop a join within a second, in any phase.  For each
# phase SQL can reach (loading the column, the grid's plan and index, the
# float32 filter's set-up, the join's work items, the output into the
# tuplestore, DBSCAN on the CPU's grid of cells) this suite
#   - sets statement_timeout to a moment inside the phase and runs the
#     join: the delay is the statement's time (psql's \timing, so the round
#     trip counts against us) minus the timeout;
#   - runs the join in one session and calls pg_cancel_backend from a
#     second one at such a moment: the delay runs from the call until the
#     first session is no longer active in that statement
#     (pg_stat_activity, polled every 2 ms);
#   - the same with pg_terminate_backend, until the backend is gone from
#     pg_stat_activity.
# After each timeout or cancel the same session runs a small join and
# checks its rows against plain SQL in float8; after a terminate a new
# session does.  Each run is one test: the expected error, a delay under
# CANCEL_LIMIT_MS, the session still right.  A table of the delays comes
# before the "N passed, N failed" line.
#
# Each phase's moments come from a calibration run (tc_last_stats of a join
# that loads and plans the same relation, then finishes; run once before,
# so that it finds the relation's pages cached, as the runs it times do)
# and are spread over the phase.  The long work item: c_cell (test/stress/cancel_setup.sql)
# holds 120,000 points of 512 dimensions in one grid cell and no pair, so
# each of the grid's 64-point work items compares its points with the rest
# of the cell (up to 64 x 120,000 pairs of 512 dimensions: seconds).
#
# Environment:
#   CANCEL_REPS       timeouts and cancels per phase (default 3)
#   CANCEL_TERM_REPS  terminates per phase (default 1)
#   CANCEL_LIMIT_MS   the delay each run must stay under (default 1000: the
#                     promise itself; see docs/reliability.md)
#   CANCEL_CELL_ROWS, CANCEL_WIDE_ROWS, CANCEL_VIEW_ROWS   data sizes
#                     (defaults 120000, 250000, 20000000)
#   CANCEL_DB         the database it creates and drops (default tcjoin_cancel)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh

DB=${CANCEL_DB:-tcjoin_cancel}
REPS=${CANCEL_REPS:-3}
TERM_REPS=${CANCEL_TERM_REPS:-1}
LIMIT_MS=${CANCEL_LIMIT_MS:-1000}
CELL_ROWS=${CANCEL_CELL_ROWS:-120000}
WIDE_ROWS=${CANCEL_WIDE_ROWS:-250000}
VIEW_ROWS=${CANCEL_VIEW_ROWS:-20000000}

T_START=$(date +%s)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok     $1"; }
bad() { fail=$((fail + 1)); echo "FAILED $1"; }

LOG=$(server_log)
LOG_AT=$(log_offset "$LOG")
PM_START=$(postmaster_start)

echo "creating $DB (c_cell $CELL_ROWS rows, c_wide $WIDE_ROWS rows, c_view $VIEW_ROWS rows)"
if ! fresh_db "$DB" ||
    ! q_db "$DB" -v cell_rows="$CELL_ROWS" -v wide_rows="$WIDE_ROWS" -v view_rows="$VIEW_ROWS" \
        -f test/stress/cancel_setup.sql >"$WORK/setup.out" 2>&1; then
    bad "set-up of $DB"
    sed 's/^/         /' "$WORK/setup.out"
    echo "$pass passed, $fail failed"
    exit 1
fi
if [ "$(q_db "$DB" -c "SELECT session_check()")" = "session ok" ]; then
    ok "the session check passes before any cancel"
else
    bad "the session check passes before any cancel"
fi

# Scenarios: phase | method | the statement | the calibration statement
# (empty: none; "self": the statement itself) | where the phase starts
# (load, load+index, or 0) | its span (index, join, or ms).
SCEN=(
"load: a view of $VIEW_ROWS rows|auto|SELECT count(*) FROM tc_selfjoin('c_view', 'vec', 0.001, id_column => 'id')||0|900"
"plan and index: $WIDE_ROWS x 512|grid|SELECT count(*) FROM tc_selfjoin('c_wide', 'vec', 0.1, method => 'grid')|self|load|index"
"float32 filter set-up: $WIDE_ROWS x 512|brute|SELECT count(*) FROM tc_selfjoin('c_wide', 'vec', 0.1, method => 'brute')|SELECT count(*) FROM tc_join('c_wide', 'vec', 'c_one', 'vec', 0.1, method => 'brute')|load|index"
"work items: one cell of $CELL_ROWS x 512|grid|SELECT count(*) FROM tc_selfjoin('c_cell', 'vec', 0.1, method => 'grid')|SELECT count(*) FROM tc_join('c_cell', 'vec', 'c_one', 'vec', 0.1, method => 'grid')|load+index|600"
"work items: $CELL_ROWS x 512, float32 filter|brute|SELECT count(*) FROM tc_selfjoin('c_cell', 'vec', 0.1, method => 'brute')|SELECT count(*) FROM tc_join('c_cell', 'vec', 'c_one', 'vec', 0.1, method => 'brute')|load+index|600"
"dot-product norms and filter set-up: $WIDE_ROWS x 512, inner product|brute|SELECT count(*) FROM tc_selfjoin('c_wide', 'vec', -1e30, metric => 'inner_product')|SELECT count(*) FROM tc_join('c_wide', 'vec', 'c_one', 'vec', -1e30, metric => 'inner_product')|load|index"
"work items: $CELL_ROWS x 512, inner product, float32 filter|brute|SELECT count(*) FROM tc_selfjoin('c_cell', 'vec', -1e30, metric => 'inner_product')|SELECT count(*) FROM tc_join('c_cell', 'vec', 'c_one', 'vec', -1e30, metric => 'inner_product')|load+index|600"
"work items: 300,000 x 8, many cells|grid|SELECT count(*) FROM tc_selfjoin('c_8d', 'vec', 0.15, method => 'grid')|self|load+index|join"
"work items: 300,000 x 8, no filter|brute|SELECT count(*) FROM tc_selfjoin('c_8d', 'vec', 0.15, method => 'brute')|SELECT count(*) FROM tc_join('c_8d', 'vec', 'c_one8', 'vec', 0.15, method => 'brute')|load+index|600"
"output: 12.5 million pairs|auto|SELECT count(*) FROM tc_selfjoin('c_dense', 'vec', 0.01)|self|load+index|join"
"DBSCAN on the CPU's grid: 1,500,000 x 2|auto|SELECT count(*) FROM tc_dbscan('c_2d', 'vec', 0.002, 5)|self|load|join"
)

RESULTS=$WORK/results   # scenario index, how, delay ms
: >"$RESULTS"

# One statement_timeout run: scenario index, label, statement, moment (ms).
run_timeout() {
    local i=$1 label=$2 sql=$3 at=$4 out=$WORK/t.out err=$WORK/t.err t delay try
    # a join that finished before its timeout (a loaded machine ran it faster
    # than its calibration): again, at half the moment, twice at most
    for try in 1 2 3; do
        psql -X -q -A -t -d "$DB" -c '\timing on' -c "SET statement_timeout = $at" -c "$sql" \
            -c 'RESET statement_timeout' -c 'SELECT session_check()' >"$out" 2>"$err"
        t=$(grep '^Time:' "$out" | sed -n 2p | awk '{ print $2 }')
        grep -q 'canceling statement due to statement timeout' "$err" || [ "$try" -eq 3 ] || {
            echo "note   $label: statement_timeout at $at ms: the join finished first; again at $((at / 2)) ms"
            at=$((at / 2)); continue; }
        break
    done
    if ! grep -q 'canceling statement due to statement timeout' "$err"; then
        bad "$label: statement_timeout at $at ms: no timeout error ($(head -c 300 "$err" | tr '\n' ' '); the join took ${t:-?} ms: the moment is past the phase)"
        return
    fi
    delay=$(awk -v t="$t" -v a="$at" 'BEGIN { printf "%.1f", t - a }')
    echo "$i timeout $delay" >>"$RESULTS"
    if ! grep -q '^session ok$' "$out"; then
        bad "$label: statement_timeout at $at ms: the session afterwards: $(grep -v '^Time:' "$out" | tr '\n' ' ') $(tail -c 300 "$err" | tr '\n' ' ')"
    elif awk -v d="$delay" -v l="$LIMIT_MS" 'BEGIN { exit !(d < l) }'; then
        ok "$label: statement_timeout at $at ms stopped it in $delay ms; the session is right"
    else
        bad "$label: statement_timeout at $at ms stopped it in $delay ms (limit $LIMIT_MS ms)"
    fi
}

# One cancel or terminate from a second session: index, label, statement, moment, how.
run_signal() {
    local i=$1 label=$2 sql=$3 at=$4 how=$5 out=$WORK/s.out err=$WORK/s.err
    local app bg res delay outcome want check try
    # a join that ended before the signal (a loaded machine ran it faster
    # than its calibration): again, at half the moment, twice at most
    for try in 1 2 3; do
        app="tc_cancel_$$_$RANDOM"
        PGAPPNAME=$app psql -X -q -A -t -d "$DB" -c "$sql" -c 'SELECT session_check()' \
            >"$out" 2>"$err" &
        bg=$!
        res=$(q_db "$DB" -c "SELECT coalesce(round(delay_ms::numeric, 1)::text, '-') || ' ' || outcome
                             FROM interrupt_backend('$app', '$how', $at)" 2>&1)
        wait "$bg"
        read -r delay outcome <<<"$res"
        [ "$outcome" = "the join ended before the signal" ] && [ "$try" -lt 3 ] || break
        echo "note   $label: $how at $at ms: the join ended before the signal; again at $((at / 2)) ms"
        at=$((at / 2))
    done
    if [ "$outcome" != ok ]; then
        bad "$label: $how at $at ms: $res"
        return
    fi
    echo "$i $how $delay" >>"$RESULTS"
    if [ "$how" = cancel ]; then
        want='canceling statement due to user request'
        check=$(grep -v '^[0-9]*$' "$out")
    else
        want='terminating connection due to administrator command'
        check=$(q_db "$DB" -c 'SELECT session_check()' 2>&1)
    fi
    if ! grep -q "$want" "$err"; then
        bad "$label: $how at $at ms: expected \"$want\", got: $(head -c 300 "$err" | tr '\n' ' ')"
    elif [ "$check" != "session ok" ]; then
        bad "$label: $how at $at ms: the session afterwards: $check"
    elif awk -v d="$delay" -v l="$LIMIT_MS" 'BEGIN { exit !(d < l) }'; then
        ok "$label: $how at $at ms stopped it in $delay ms; $([ "$how" = cancel ] && echo "the session" || echo "a new session") is right"
    else
        bad "$label: $how at $at ms stopped it in $delay ms (limit $LIMIT_MS ms)"
    fi
}

for i in "${!SCEN[@]}"; do
    IFS='|' read -r phase method sql calib base span <<<"${SCEN[$i]}"
    label="$phase ($method)"
    L=0 I=0 J=0
    if [ -n "$calib" ]; then
        [ "$calib" = self ] && calib=$sql
        # once to warm the relation's pages, then timed in a new session, as the runs below are
        q_db "$DB" -c "$calib" >/dev/null 2>&1
        stats=$(q_db "$DB" -c "$calib" -c "SELECT round(load_ms) || ' ' || round(index_ms) || ' ' || round(join_ms) FROM tc_last_stats()" 2>&1 | tail -n 1)
        if ! read -r L I J <<<"$stats" || ! [[ $L =~ ^[0-9]+$ && $I =~ ^[0-9]+$ && $J =~ ^[0-9]+$ ]]; then
            bad "$label: calibration: $stats"
            continue
        fi
    fi
    case $base in load) b=$L ;; load+index) b=$((L + I)) ;; *) b=$base ;; esac
    case $span in index) s=$I ;; join) s=$((J * 8 / 10)) ;; *) s=$span ;; esac
    echo "--- $label: phase from $b ms, $s ms long (calibration: load $L, index $I, join $J ms)"
    for ((k = 0; k < REPS; k++)); do
        at=$((b + s * (2 * k + 1) / (2 * REPS)))
        [ "$at" -lt 20 ] && at=20
        run_timeout "$i" "$label" "$sql" "$at"
        run_signal "$i" "$label" "$sql" "$at" cancel
    done
    for ((k = 0; k < TERM_REPS; k++)); do
        at=$((b + s * (2 * k + 1) / (2 * TERM_REPS)))
        [ "$at" -lt 20 ] && at=20
        run_signal "$i" "$label" "$sql" "$at" terminate
    done
done

# The server: still up, not restarted, no crash in its log.
check_server "$PM_START" "$LOG" "$LOG_AT"
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1

echo
echo "Delay from the timeout or the signal until the join stopped (ms; limit $LIMIT_MS):"
printf '%-50s %-6s %-10s %5s %8s %8s\n' phase method how runs median worst
for i in "${!SCEN[@]}"; do
    IFS='|' read -r phase method _ <<<"${SCEN[$i]}"
    for how in timeout cancel terminate; do
        vals=$(awk -v i="$i" -v h="$how" '$1 == i && $2 == h { print $3 }' "$RESULTS")
        n=$(grep -c . <<<"$vals")
        [ "$n" -gt 0 ] || continue
        read -r med max < <(median_max <<<"$vals")
        flag=""
        awk -v d="$max" -v l="$LIMIT_MS" 'BEGIN { exit !(d >= l) }' && flag="  > limit"
        printf '%-50s %-6s %-10s %5d %8s %8s%s\n' "$phase" "$method" "$how" "$n" "$med" "$max" "$flag"
    done
done
echo "cancel suite: $(($(date +%s) - T_START)) s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
