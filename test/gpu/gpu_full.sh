#!/usr/bin/env bash
# The GPU full (docs/reliability.md): test/gpu/gpu_hog.cu holds all but a
# little of the GPU's memory while joins run, and tcjoin.gpu_full decides:
#   - one session at a time, in a backend that has no CUDA context yet (its
#     creation fails) and in one that has (its buffers fail): error (the
#     message users can act on), cpu (device auto: the right answer from
#     the CPU, tc_last_stats() says why; device gpu: the error), wait (cut
#     by statement_timeout within a second of it; or answered on the GPU
#     once the memory is freed, the wait in tc_last_stats());
#   - 8 sessions under pgbench with the GPU nearly full, half their joins
#     under tcjoin.gpu_memory_limit: device auto with gpu_full = cpu (every
#     answer right, some on the GPU and some sent to the CPU), then device
#     gpu with gpu_full = error (every answer right or that one message);
#   - the GPU's memory and processes once every session has ended.
#   test/gpu/gpu_full.sh    (needs the extension installed, a server, a GPU,
#                            nvcc; PGHOST etc. in the environment)
# GPU_FULL_SECONDS: each pgbench run's length (default 30).  Ends with
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/stress/lib.sh

DB=tcjoin_gpu_full
SECONDS_RUN=${GPU_FULL_SECONDS:-30}
PGBENCH=${PGBENCH:-$(command -v pgbench || echo pgbench)}
WORK=$(mktemp -d)
HOG_PID=
stop_hog() {
    [ -n "$HOG_PID" ] && kill "$HOG_PID" 2>/dev/null && wait "$HOG_PID" 2>/dev/null
    HOG_PID=
    sleep 0.5
}
trap 'stop_hog; exec 3>&- 2>/dev/null; rm -rf "$WORK"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok     $1"; }
bad() { fail=$((fail + 1)); echo "FAILED $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1 ($3)"; fi; }

# Hold all but $1 MiB of the GPU; waits until the hog says how much it holds.
start_hog() {
    "$WORK/gpu_hog" "$1" >"$WORK/hog.out" 2>&1 &
    HOG_PID=$!
    for _ in $(seq 1 300); do
        grep -q '^held' "$WORK/hog.out" && break
        sleep 0.1
    done
    echo "# hog: $(cat "$WORK/hog.out")"
}

if ! nvcc -O2 -o "$WORK/gpu_hog" test/gpu/gpu_hog.cu >"$WORK/nvcc.log" 2>&1; then
    cat "$WORK/nvcc.log"; echo "0 passed, 1 failed"; exit 1
fi
fresh_db "$DB" || { echo "could not create $DB"; echo "0 passed, 1 failed"; exit 1; }
# h64: 50,000 x 64, which auto sends to the GPU; its count from the CPU.
q_db "$DB" <<'SQL'
SELECT setseed(0.75);
CREATE TABLE h64 AS SELECT i AS id,
    (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 64) k WHERE i > 0) AS vec
    FROM generate_series(1, 50000) i;
ALTER TABLE h64 ADD PRIMARY KEY (id);
VACUUM ANALYZE h64;
CREATE TABLE ref AS SELECT 2.4::float8 AS eps, 0::bigint AS pairs;
CREATE TABLE gf_log (at timestamptz DEFAULT clock_timestamp(), device text, choice text,
                     ok boolean, err text, limited boolean);
SET tcjoin.device = cpu;
UPDATE ref SET pairs = (SELECT count(*) FROM tc_selfjoin('h64', 'vec', (SELECT eps FROM ref)));
-- One checked join: its count against the CPU's, where it ran and why, or its error.
CREATE FUNCTION gf_join(r integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    got bigint; want bigint; dev text; why text;
BEGIN
    IF r <= 50 THEN PERFORM set_config('tcjoin.gpu_memory_limit', '256MB', true); END IF;
    SELECT pairs INTO want FROM ref;
    BEGIN
        SELECT count(*) INTO got FROM tc_selfjoin('h64', 'vec', (SELECT eps FROM ref));
        SELECT device, device_choice INTO dev, why FROM tc_last_stats();
        INSERT INTO gf_log (device, choice, ok, limited) VALUES (dev, why, got = want, r <= 50);
    EXCEPTION WHEN OTHERS THEN
        INSERT INTO gf_log (ok, err, limited) VALUES (false, sqlerrm, r <= 50);
    END;
END $$;
SQL
want=$(q_db "$DB" -c "SELECT pairs FROM ref")
echo "# h64: 50,000 x 64 real[], eps 2.4: $want pairs (CPU)"
base_used=$(gpu_used)

# A session kept open on fd 3 that has made its CUDA context (a GPU join)
# before the GPU fills; its output goes to $WORK/warm.
mkfifo "$WORK/warm.in"
psql -X -q -A -t -d "$DB" <"$WORK/warm.in" >"$WORK/warm" 2>&1 &
exec 3>"$WORK/warm.in"
echo "SET tcjoin.device = gpu; SELECT 'first=' || count(*) FROM tc_selfjoin('h64', 'vec', 2.4);" >&3
for _ in $(seq 1 600); do grep -q '^first=' "$WORK/warm" && break; sleep 0.1; done
check "a warm session's first GPU join" "grep -q '^first=$want\$' '$WORK/warm'" "$(head -3 "$WORK/warm")"

start_hog 64

# A fresh backend: no context, and none can be made.
run() { psql -X -q -A -t -d "$DB" "$@" 2>&1; }
out=$(run -c "SET tcjoin.device = gpu" -c "SET tcjoin.gpu_full = error" \
          -c "SELECT count(*) FROM tc_selfjoin('h64', 'vec', 2.4)")
echo "# cold, gpu, error: $out"
check "cold backend, gpu_full = error: the GPU-full message" \
      "echo \"\$out\" | grep -q 'ERROR:  tcjoin: the GPU is out of memory'" "$out"
out=$(run -c "SET tcjoin.device = gpu" -c "SELECT count(*) FROM tc_selfjoin('h64', 'vec', 2.4)")
check "cold backend, device gpu with gpu_full = cpu: still the error (gpu never runs on the CPU)" \
      "echo \"\$out\" | grep -q 'ERROR:  tcjoin: the GPU is out of memory'" "$out"
out=$(run -c "SET tcjoin.device = auto" -c "SELECT count(*) FROM tc_selfjoin('h64', 'vec', 2.4)" \
          -c "SELECT device || '|' || device_choice FROM tc_last_stats()")
echo "# cold, auto, cpu: $(echo $out)"
check "cold backend, auto with gpu_full = cpu: the answer, from the CPU, and why" \
      "[ \"\$(echo \"\$out\" | head -1)\" = '$want' ] && echo \"\$out\" | grep -q '^cpu|auto: .*memory was full'" "$out"
t0=$(date +%s%N)
out=$(run -c "SET tcjoin.device = gpu" -c "SET tcjoin.gpu_full = wait" -c "SET statement_timeout = 1500" \
          -c "SELECT count(*) FROM tc_selfjoin('h64', 'vec', 2.4)")
ms=$((($(date +%s%N) - t0) / 1000000))
check "cold backend, gpu_full = wait: statement_timeout ends the wait ($ms ms for a 1500 ms timeout)" \
      "echo \"\$out\" | grep -q 'statement timeout' && [ $ms -lt 2500 ]" "$out"

# The warm backend: its context is there, its buffers fail.
: >"$WORK/warm"
cat >&3 <<'SQL'
SET tcjoin.gpu_full = error;
SELECT 'error=' || count(*) FROM tc_selfjoin('h64', 'vec', 2.4);
SET tcjoin.device = auto;
SET tcjoin.gpu_full = cpu;
SELECT 'cpu=' || count(*) FROM tc_selfjoin('h64', 'vec', 2.4);
SELECT 'stats=' || device || '|' || device_choice FROM tc_last_stats();
SET tcjoin.device = gpu;
SET tcjoin.gpu_full = wait;
SET statement_timeout = 1500;
SELECT 'wait=' || count(*) FROM tc_selfjoin('h64', 'vec', 2.4);
SELECT 'done';
SQL
for _ in $(seq 1 600); do grep -q '^done' "$WORK/warm" && break; sleep 0.1; done
echo "# warm: $(tr '\n' ' ' <"$WORK/warm")"
check "warm backend, gpu_full = error: the GPU-full message" \
      "grep -q 'ERROR:  tcjoin: the GPU is out of memory' '$WORK/warm'" "see above"
check "warm backend, auto with gpu_full = cpu: the answer from the CPU, and why" \
      "grep -q '^cpu=$want\$' '$WORK/warm' && grep -q '^stats=cpu|auto: .*memory was full' '$WORK/warm'" "see above"
check "warm backend, gpu_full = wait: cut by statement_timeout" \
      "grep -q 'statement timeout' '$WORK/warm'" "see above"

# gpu_full = wait, and the memory freed 2 s later: the join ends on the GPU.
: >"$WORK/warm"
cat >&3 <<'SQL'
RESET statement_timeout;
SELECT 'wait=' || count(*) FROM tc_selfjoin('h64', 'vec', 2.4);
SELECT 'stats=' || device || '|' || round(gpu_full_wait_ms) FROM tc_last_stats();
SQL
sleep 2
stop_hog
for _ in $(seq 1 600); do grep -q '^stats=' "$WORK/warm" && break; sleep 0.1; done
echo "# wait, then freed: $(tr '\n' ' ' <"$WORK/warm")"
waited=$(sed -n 's/^stats=gpu|//p' "$WORK/warm")
check "warm backend, gpu_full = wait: answered on the GPU once memory was freed, after a wait of ${waited:-?} ms" \
      "grep -q '^wait=$want\$' '$WORK/warm' && [ \"\${waited:-0}\" -ge 1500 ]" "see above"
echo "\\q" >&3
exec 3>&-
sleep 1

# 8 sessions under pgbench, the GPU nearly full: enough for a few contexts.
echo '\set r random(1, 100)
SELECT gf_join(:r);' >"$WORK/txn.sql"
for mode in "auto cpu" "gpu error"; do
    read -r dev full <<<"$mode"
    q_db "$DB" -c "TRUNCATE gf_log"
    start_hog "${GPU_FULL_LEAVE_MIB:-1536}"
    PGOPTIONS="-c tcjoin.device=$dev -c tcjoin.gpu_full=$full" \
        "$PGBENCH" -n -c 8 -j 2 -T "$SECONDS_RUN" -f "$WORK/txn.sql" "$DB" >"$WORK/pgbench-$dev.log" 2>&1
    rc=$?
    stop_hog
    q_db "$DB" -F ' ' -c "SELECT count(*), count(*) FILTER (WHERE ok),
                                 count(*) FILTER (WHERE NOT ok AND err IS NULL),
                                 count(*) FILTER (WHERE device = 'gpu'),
                                 count(*) FILTER (WHERE choice LIKE '%memory was full%'),
                                 count(*) FILTER (WHERE err LIKE 'tcjoin: the GPU is out of memory%'),
                                 count(*) FILTER (WHERE err IS NOT NULL AND err NOT LIKE 'tcjoin: the GPU is out of memory%'),
                                 count(*) FILTER (WHERE limited)
                            FROM gf_log" >"$WORK/counts"
    read -r n right wrong on_gpu to_cpu full_err other_err limited <"$WORK/counts"
    echo "# 8 sessions, device $dev, gpu_full $full: $n joins ($limited under a 256 MB limit): $right right, $wrong wrong, $on_gpu on the GPU, $to_cpu sent to the CPU, $full_err GPU-full errors, $other_err other errors"
    q_db "$DB" -c "SELECT DISTINCT err FROM gf_log WHERE err IS NOT NULL" | head -5 | sed 's/^/#   /'
    check "8 sessions, device $dev: pgbench ran to the end" "[ $rc -eq 0 ] && [ $n -gt 0 ]" "$(tail -3 "$WORK/pgbench-$dev.log")"
    check "8 sessions, device $dev: no wrong answer, no other error" "[ $wrong -eq 0 ] && [ $other_err -eq 0 ]" "$wrong wrong, $other_err other"
    if [ "$dev" = auto ]; then
        check "8 sessions, auto with gpu_full = cpu: every join answered, some on the GPU, some sent to the CPU" \
              "[ $right -eq $n ] && [ $on_gpu -gt 0 ] && [ $to_cpu -gt 0 ]" "$right of $n, $on_gpu GPU, $to_cpu CPU"
    else
        check "8 sessions, gpu with gpu_full = error: answers or the GPU-full message, nothing else" \
              "[ $((right + full_err)) -eq $n ]" "$right + $full_err of $n"
    fi
done

sleep 1
after=$(gpu_used)
apps=$(gpu_apps)
echo "GPU memory used: $base_used MiB before, $after MiB after; processes holding the GPU now: $apps"
check "no GPU memory or context left once the sessions ended" \
      "[ $after -le $((base_used + 64)) ] && [ $apps -eq 0 ]" "$base_used -> $after MiB, $apps processes"
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
