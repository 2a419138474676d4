#!/usr/bin/env bash
# Concurrent sessions under pgbench: STRESS_CLIENTS sessions (default 8) for
# STRESS_SECONDS (default 75), each running a mix of pgbench scripts
# (test/stress/*.sql, functions in test/stress/stress_setup.sql):
#   selfjoin.sql  tc_selfjoin on fresh random points, d 2, 3, 8, 32 or 128,
#                 real[] or double precision[], auto, grid or brute force,
#                 include_self sometimes, eps a fraction of the spread or
#                 exactly a pair's distance; checked against plain SQL in
#                 float8 (count, checksum, rows and dists bit for bit)
#   join.sql      tc_join of two fresh sets (types mixed), checked the same way
#   errors.sql    errors on purpose (bad eps, unknown method, NaN and infinite
#                 rows, different dimensions) with their messages checked,
#                 and a NULL eps (no rows)
#   timeout.sql   a 300,000-point join cut by statement_timeout (20-300 ms)
# and asserts: no wrong answer, no unexpected error (either aborts a pgbench
# client with its message), no crash (the server up and not restarted, no
# PANIC or signal in its log), every kind of transaction ran, timeouts
# stopped the join within STRESS_CANCEL_LIMIT_MS, and each session's memory
# (the median of its memory contexts' size after each transaction, first
# quarter against last; the median of its resident anonymous memory sampled
# from /proc every 2 s, second quarter of the run against last) not growing
# by more than STRESS_CTX_GROWTH_MB / STRESS_RSS_GROWTH_MB.
# Prints a summary table before the "N passed, N failed" line.
#
# Environment:
#   STRESS_SECONDS         run time (default 75)
#   STRESS_CLIENTS         sessions (default 8)
#   STRESS_DEVICE          tcjoin.device for every session (default: the
#                          server's, auto); gpu on a GPU machine: self-joins
#                          then run on the GPU (tc_join stays on the CPU)
#   STRESS_SEED            pgbench's random seed (default: time-based; printed)
#   STRESS_CANCEL_LIMIT_MS default 1000
#   STRESS_CTX_GROWTH_MB   default 8
#   STRESS_RSS_GROWTH_MB   default 64
#   STRESS_DB              the database it creates and drops (default tcjoin_stress)
#   STRESS_OUT             a directory to keep pgbench's output, the memory
#                          samples and the transaction log in (default: none)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh
# column(1) where the machine has it, else the rows as they are
tabulate() {
    if command -v column >/dev/null; then column -t "$@"; else cat; fi
}

DB=${STRESS_DB:-tcjoin_stress}
SECONDS_RUN=${STRESS_SECONDS:-75}
CLIENTS=${STRESS_CLIENTS:-8}
DEVICE=${STRESS_DEVICE:-}
SEED=${STRESS_SEED:-$(date +%s)}
CANCEL_LIMIT_MS=${STRESS_CANCEL_LIMIT_MS:-1000}
CTX_GROWTH_MB=${STRESS_CTX_GROWTH_MB:-8}
RSS_GROWTH_MB=${STRESS_RSS_GROWTH_MB:-64}
PGBENCH=${PGBENCH:-$(command -v pgbench || echo /usr/lib/postgresql/15/bin/pgbench)}

T_START=$(date +%s)
WORK=$(mktemp -d)
SAMPLER=""
cleanup() {
    [ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null
    if [ -n "${STRESS_OUT:-}" ]; then
        mkdir -p "$STRESS_OUT" && cp "$WORK"/* "$STRESS_OUT"/ 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok     $1"; }
bad() { fail=$((fail + 1)); echo "FAILED $1"; }
finish() {
    echo "stress suite: $(($(date +%s) - T_START)) s"
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}

if ! [ -x "$PGBENCH" ]; then
    bad "pgbench found (postgresql-15 or postgresql-client-15 ships it)"
    finish
fi

LOG=$(server_log)
LOG_AT=$(log_offset "$LOG")
PM_START=$(postmaster_start)

if ! fresh_db "$DB" || ! q_db "$DB" -f test/stress/stress_setup.sql >"$WORK/setup.out" 2>&1; then
    bad "set-up of $DB"
    sed 's/^/         /' "$WORK/setup.out"
    finish
fi

OPTS="-c client_min_messages=warning"
[ -n "$DEVICE" ] && OPTS="$OPTS -c tcjoin.device=$DEVICE"

# Every few seconds, each pgbench session's resident anonymous memory (kB):
# "seconds pid kB".
sample_memory() {
    local t0 pids p kb
    t0=$(date +%s)
    while :; do
        pids=$(q_db "$DB" -c "SELECT pid FROM pg_stat_activity
                              WHERE datname = current_database() AND application_name = 'pgbench'" 2>/dev/null)
        for p in $pids; do
            kb=$(awk '/^RssAnon:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
            [ -n "$kb" ] && echo "$(($(date +%s) - t0)) $p $kb"
        done
        sleep 2
    done
}
sample_memory >"$WORK/rss" &
SAMPLER=$!

echo "pgbench: $CLIENTS sessions, $SECONDS_RUN s, seed $SEED${DEVICE:+, tcjoin.device = $DEVICE}"
PGOPTIONS="$OPTS" PGAPPNAME=pgbench "$PGBENCH" -n -c "$CLIENTS" -j 2 -T "$SECONDS_RUN" \
    --random-seed="$SEED" -P 15 \
    -f test/stress/selfjoin.sql@4 -f test/stress/join.sql@3 \
    -f test/stress/errors.sql@2 -f test/stress/timeout.sql@2 \
    "$DB" >"$WORK/pgbench.out" 2>"$WORK/pgbench.err"
rc=$?
kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
SAMPLER=""
grep -E '^progress:' "$WORK/pgbench.err" | sed 's/^/  /'

# pgbench: a client that hits an error is aborted and says why, on a line
# "client N script M aborted in command ...: ERROR: ...".
aborts=$(grep -E 'client [0-9]+ .*aborted' "$WORK/pgbench.err")
wrong=$(grep -c 'WRONG ANSWER' <<<"$aborts")
unexpected=$(grep -v 'WRONG ANSWER' <<<"$aborts" | grep -c .)
txns=$(awk -F': ' '/^number of transactions actually processed/ { split($2, a, "/"); print a[1] }' "$WORK/pgbench.out")
if [ "$rc" -eq 0 ] && [ -n "$txns" ] && [ "$txns" -gt 0 ]; then
    ok "pgbench ran $txns transactions in $CLIENTS sessions, none aborted"
else
    bad "pgbench ran to the end with no client aborted (exit $rc, ${txns:-no} transactions)"
    head -n 40 "$WORK/pgbench.err" | grep -v '^progress:' | sed 's/^/         /'
fi
if [ "$wrong" -eq 0 ]; then ok "no wrong answer"; else
    bad "no wrong answer: $wrong"
    grep 'WRONG ANSWER' <<<"$aborts" | head -n 10 | sed 's/^/         /'
fi
if [ "$unexpected" -eq 0 ]; then ok "no unexpected error"; else
    bad "no unexpected error: $unexpected"
    grep -v 'WRONG ANSWER' <<<"$aborts" | head -n 10 | sed 's/^/         /'
fi

# The server: still up, not restarted, no crash in its log.
check_server "$PM_START" "$LOG" "$LOG_AT"

# Every kind ran; the timeouts' delays.
for kind in selfjoin join error timeout; do
    n=$(q_db "$DB" -c "SELECT count(*) FROM stress_log WHERE kind = '$kind'")
    if [ "${n:-0}" -gt 0 ]; then ok "$kind transactions ran: $n"; else bad "$kind transactions ran: ${n:-0}"; fi
done
for method in grid brute; do
    worst=$(q_db "$DB" -c "SELECT coalesce(round(max(ms))::text, '-') FROM stress_log
                           WHERE kind = 'timeout' AND outcome = 'timeout' AND method = '$method'")
    if [ "$worst" = - ]; then
        bad "statement_timeout cut a $method join at least once"
    elif [ "$worst" -lt "$CANCEL_LIMIT_MS" ]; then
        ok "statement_timeout stopped every $method join within $worst ms (limit $CANCEL_LIMIT_MS)"
    else
        bad "statement_timeout stopped every $method join within $CANCEL_LIMIT_MS ms: worst $worst ms"
    fi
done
if [ -n "$DEVICE" ] && [ "$DEVICE" != cpu ]; then
    n=$(q_db "$DB" -c "SELECT count(*) FROM stress_log WHERE kind = 'selfjoin' AND device = '$DEVICE'")
    if [ "${n:-0}" -gt 0 ]; then ok "self-joins ran on the $DEVICE: $n"; else bad "self-joins ran on the $DEVICE"; fi
fi

# Memory: each session's memory contexts (after each transaction's work),
# the median of its first quarter of transactions against its last quarter.
q_db "$DB" >"$WORK/ctx" -F ' ' <<'SQL'
WITH t AS (SELECT pid, ctx_bytes, ntile(4) OVER (PARTITION BY pid ORDER BY at) AS q,
                  count(*) OVER (PARTITION BY pid) AS n
           FROM stress_log WHERE ctx_bytes IS NOT NULL)
SELECT pid, max(n),
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ctx_bytes) FILTER (WHERE q = 1))::numeric / 1048576, 1),
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ctx_bytes) FILTER (WHERE q = 4))::numeric / 1048576, 1),
       round(max(ctx_bytes) / 1048576.0, 1)
FROM t GROUP BY pid HAVING max(n) >= 4 ORDER BY pid
SQL
ctx_bad=$(awk -v g="$CTX_GROWTH_MB" '$4 - $3 > g { print "pid " $1 ": " $3 " -> " $4 " MB" }' "$WORK/ctx")
if [ ! -s "$WORK/ctx" ]; then
    bad "memory contexts sampled"
elif [ -z "$ctx_bad" ]; then
    ok "no session's memory contexts grew by more than $CTX_GROWTH_MB MB (first quarter to last)"
else
    bad "no session's memory contexts grew by more than $CTX_GROWTH_MB MB: $ctx_bad"
fi
# Resident anonymous memory: the median of each session's samples in the
# second quarter of the run (the first warms up) against the last quarter;
# single samples swing with each join's own memory, the medians do not.
awk -v T="$SECONDS_RUN" '{ q = ($1 > T / 4 && $1 <= T / 2) ? 2 : ($1 >= 3 * T / 4 ? 4 : 0)
                           print $2, q, $3 }' "$WORK/rss" | sort -k1,1n -k2,2n -k3,3n |
    awk 'function flush() { if (n > 0) med[p, q] = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; n = 0 }
         { if ($1 != p || $2 != q) { flush(); p = $1; q = $2 }
           v[++n] = $3; m[$1] = ($3 > m[$1] ? $3 : m[$1]) }
         END { flush(); for (x in m) if (((x, 2) in med) && ((x, 4) in med))
                   printf "%s %.1f %.1f %.1f\n", x, med[x, 2] / 1024, med[x, 4] / 1024, m[x] / 1024 }' |
    sort -n >"$WORK/rss.sum"
rss_bad=$(awk -v g="$RSS_GROWTH_MB" '$3 - $2 > g { print "pid " $1 ": " $2 " -> " $3 " MB" }' "$WORK/rss.sum")
if [ ! -s "$WORK/rss.sum" ]; then
    echo "note: no session's /proc/PID/status was readable at both ends of the run: RSS not checked"
elif [ -z "$rss_bad" ]; then
    ok "no session's resident anonymous memory grew by more than $RSS_GROWTH_MB MB (median, second quarter to last)"
else
    bad "no session's resident anonymous memory grew by more than $RSS_GROWTH_MB MB: $rss_bad"
fi

echo
echo "Summary ($CLIENTS sessions, $SECONDS_RUN s, seed $SEED${DEVICE:+, tcjoin.device = $DEVICE}):"
grep -E '^(number of transactions actually processed|latency average|tps)' "$WORK/pgbench.out" | sed 's/^/  /'
grep -E '^SQL script [0-9]+:|^ - [0-9]+ transactions' "$WORK/pgbench.out" |
    paste -d ' ' - - | sed -E 's/^SQL script [0-9]+: test\/stress\/([a-z]+)\.sql +- ([0-9]+) transactions.*/  \1.sql: \2 transactions/'
echo "  wrong answers: $wrong; unexpected errors (aborted clients): $unexpected; crashes: $([ -z "$crashes" ] && echo 0 || grep -c . <<<"$crashes")"
echo
echo "Checked joins (rows against plain SQL), by kind and dimension:"
q_db "$DB" -P footer=off -A -F '|' <<'SQL' | tabulate -s '|' | sed 's/^/  /'
SELECT 'kind', 'd', 'joins', 'auto', 'grid', 'brute', 'real', 'float8', 'mixed', 'pairs', 'device'
UNION ALL
SELECT * FROM (
    SELECT kind, d::text, count(*)::text,
           count(*) FILTER (WHERE method = 'auto')::text, count(*) FILTER (WHERE method = 'grid')::text,
           count(*) FILTER (WHERE method = 'brute')::text,
           count(*) FILTER (WHERE typ IN ('real', 'real x real'))::text,
           count(*) FILTER (WHERE typ IN ('float8', 'float8 x float8'))::text,
           count(*) FILTER (WHERE typ IN ('real x float8', 'float8 x real'))::text,
           sum(pairs)::text, string_agg(DISTINCT device, ',')
    FROM stress_log WHERE kind IN ('selfjoin', 'join')
    GROUP BY kind, d ORDER BY kind DESC, d + 0) x
SQL
echo
echo "Errors on purpose and timeouts:"
q_db "$DB" -P footer=off -A -F '|' <<'SQL' | tabulate -s '|' | sed 's/^/  /'
SELECT 'kind', 'outcome', 'n', 'median_ms', 'worst_ms'
UNION ALL
SELECT * FROM (
SELECT kind, outcome || coalesce(' (' || method || ')', '') AS outcome, count(*)::text AS n,
       coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::text, '') AS median_ms,
       coalesce(round(max(ms))::text, '') AS worst_ms
FROM stress_log WHERE kind IN ('error', 'timeout')
GROUP BY kind, outcome, method ORDER BY kind, outcome, method) x
SQL
echo
echo "Memory per session (MB): memory contexts after each transaction, median of the first and"
echo "last quarter of its transactions and the largest; resident anonymous memory (/proc), median"
echo "of the samples in the second and the last quarter of the run and the largest:"
join -a 1 -e - -o 0,1.2,1.3,1.4,1.5,2.2,2.3,2.4 <(sort "$WORK/ctx") <(sort "$WORK/rss.sum") |
    sort -n | awk 'BEGIN { print "pid txns ctx_q1 ctx_q4 ctx_max rss_q2 rss_q4 rss_max" } { print }' |
    tabulate | sed 's/^/  /'
[ -n "${STRESS_OUT:-}" ] && q_db "$DB" -c "COPY stress_log TO STDOUT WITH (FORMAT csv, HEADER)" >"$WORK/stress_log.csv"
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
finish
