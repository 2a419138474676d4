#!/usr/bin/env bash
# Reliability on a GPU machine (docs/reliability.md): builds and installs
# the extension, then
#   --stress     8 sessions under pgbench on the GPU (test/suites/stress.sh
#                with STRESS_DEVICE=gpu), the GPU's memory before and after
#                and the processes holding it once every session has ended;
#   --cancel     cancel through SQL in every phase of a GPU join
#                (test/gpu/cancel_gpu.sh);
#   --sanitize   compute-sanitizer's memcheck, racecheck and synccheck (or
#                SANITIZE_TOOLS) over small joins through every GPU kernel
#                (each run cut at SANITIZE_TIMEOUT seconds);
#   --threads    every thread of a process that ran a GPU join has all
#                signals blocked, but the caller's;
#   --joins      1,000 GPU joins (10 sessions of 100, five shapes, each
#                count against the CPU's), the GPU's free memory in each
#                session after its first and last join (cudaMemGetInfo
#                through tc_devices()) and nvidia-smi's before and after;
#   --full       the GPU full: tcjoin.gpu_full's choices, one session and
#                8 under pgbench (test/gpu/gpu_full.sh).
# With no option, all six.  Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/stress/lib.sh
OUT=${OUT:-/tmp/tcjoin-gpu-out}
mkdir -p "$OUT"
STRESS= CANCEL= SANITIZE= THREADS= JOINS= FULL=
for a in "$@"; do
    case $a in
        --stress) STRESS=1 ;; --cancel) CANCEL=1 ;; --sanitize) SANITIZE=1 ;; --threads) THREADS=1 ;;
        --joins) JOINS=1 ;; --full) FULL=1 ;;
        *) echo "unknown option $a"; exit 2 ;;
    esac
done
[ $# -eq 0 ] && STRESS=1 CANCEL=1 SANITIZE=1 THREADS=1 JOINS=1 FULL=1
PASSED=0 FAILED=0
. test/gpu/lib.sh

if [ -f .device/pg-up.sh ] && ! command -v pg_config >/dev/null; then
    . .device/pg-up.sh .device/pg15-portable.tar.xz
fi
echo "== build"
if ! make -j"$(nproc)" USE_CUDA=1 >"$OUT/build.log" 2>&1 || ! make install >>"$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"
    echo "0 passed, 1 failed"
    exit 1
fi

if [ -n "$STRESS" ]; then
    echo "== 8 sessions under pgbench on the GPU"
    before=$(gpu_used)
    STRESS_DEVICE=gpu STRESS_SECONDS=${STRESS_SECONDS:-90} test/suites/stress.sh >"$OUT/stress.log" 2>&1
    sleep 1
    after=$(gpu_used)
    apps=$(gpu_apps)
    grep -vE '^ok ' "$OUT/stress.log" | tail -30
    add_counts "$OUT/stress.log"
    echo "GPU memory used: $before MiB before, $after MiB after; processes holding the GPU after: $apps"
    if [ "$after" -le $((before + 64)) ] && [ "$apps" -eq 0 ]; then PASSED=$((PASSED + 1))
    else echo "FAILED GPU memory or contexts left after the sessions ended"; FAILED=$((FAILED + 1)); fi
fi

if [ -n "$CANCEL" ]; then
    echo "== cancel on the GPU"
    test/gpu/cancel_gpu.sh >"$OUT/cancel_gpu.log" 2>&1
    grep -vE '^ok ' "$OUT/cancel_gpu.log" | tail -30
    add_counts "$OUT/cancel_gpu.log"
fi

if [ -n "$JOINS" ]; then
    echo "== 1,000 GPU joins, the GPU's memory before and after"
    JDB=tcjoin_joins
    fresh_db "$JDB" && q_db "$JDB" <<'SQL'
SELECT setseed(0.125);
CREATE TABLE g2 AS SELECT i AS id, ARRAY[random(), random()]::real[] AS vec FROM generate_series(1, 60000) i;
CREATE TABLE g3 AS SELECT i AS id, ARRAY[random(), random(), random()]::float8[] AS vec FROM generate_series(1, 30000) i;
CREATE TABLE h32 AS SELECT i AS id,
    (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 32) k WHERE i > 0) AS vec
    FROM generate_series(1, 8000) i;
CREATE TABLE h128 AS SELECT i AS id,
    (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 128) k WHERE i > 0) AS vec
    FROM generate_series(1, 6000) i;
CREATE TABLE h77 AS SELECT i AS id,
    (SELECT array_agg((random() - 0.5)::float8) FROM generate_series(1, 77) k WHERE i > 0) AS vec
    FROM generate_series(1, 3000) i;
CREATE TABLE shapes (k int, rel text, eps float8, method text, pairs bigint);
INSERT INTO shapes VALUES (0, 'g2', 0.004, 'auto', 0), (1, 'g3', 0.03, 'grid', 0),
    (2, 'h32', 1.2, 'auto', 0), (3, 'h128', 2.9, 'brute', 0), (4, 'h77', 2.3, 'auto', 0);
SET tcjoin.device = cpu;
UPDATE shapes SET pairs = (SELECT count(*) FROM tc_selfjoin(rel::regclass, 'vec', eps, id_column => 'id', method => method));
-- n joins on the GPU, each count against the CPU's; the GPU's free MiB after the first and the last
CREATE FUNCTION gpu_joins(n int, OUT wrong int, OUT free_first bigint, OUT free_last bigint)
LANGUAGE plpgsql AS $$
DECLARE s record; got bigint;
BEGIN
    wrong := 0;
    PERFORM set_config('tcjoin.device', 'gpu', true);
    FOR i IN 0 .. n - 1 LOOP
        SELECT * INTO s FROM shapes WHERE k = i % 5;
        SELECT count(*) INTO got FROM tc_selfjoin(s.rel::regclass, 'vec', s.eps, id_column => 'id', method => s.method);
        IF got <> s.pairs THEN wrong := wrong + 1; END IF;
        IF i = 0 THEN SELECT free_memory_mb INTO free_first FROM tc_devices() LIMIT 1; END IF;
    END LOOP;
    SELECT free_memory_mb INTO free_last FROM tc_devices() LIMIT 1;
END $$;
SQL
    sleep 1
    before=$(gpu_used)
    wrong=0 drift=0 runs=0
    for s in $(seq 1 10); do
        IFS='|' read -r w f1 f2 < <(q_db "$JDB" -c "SELECT * FROM gpu_joins(100)")
        echo "session $s: 100 joins, ${w:-?} wrong; free GPU memory ${f1:-?} MiB after the first, ${f2:-?} MiB after the last"
        [ -n "$w" ] && runs=$((runs + 100)) && wrong=$((wrong + w))
        [ -n "$f1" ] && [ -n "$f2" ] && [ $((f1 - f2)) -gt "$drift" ] && drift=$((f1 - f2))
    done
    sleep 1
    after=$(gpu_used)
    apps=$(gpu_apps)
    echo "$runs GPU joins, $wrong wrong; a session's free memory fell by at most $drift MiB from its first join to its last; nvidia-smi: $before MiB used before, $after MiB after, $apps processes after"
    if [ "$runs" -eq 1000 ] && [ "$wrong" -eq 0 ]; then PASSED=$((PASSED + 1)); else echo "FAILED 1,000 GPU joins: $runs ran, $wrong wrong"; FAILED=$((FAILED + 1)); fi
    if [ "$drift" -le 64 ]; then PASSED=$((PASSED + 1)); else echo "FAILED a session's GPU memory grew by $drift MiB over 100 joins"; FAILED=$((FAILED + 1)); fi
    if [ "$after" -le $((before + 64)) ] && [ "$apps" -eq 0 ]; then PASSED=$((PASSED + 1))
    else echo "FAILED GPU memory or contexts left after the sessions ended"; FAILED=$((FAILED + 1)); fi
    q_db postgres -c "DROP DATABASE IF EXISTS $JDB WITH (FORCE)" >/dev/null 2>&1
fi

if [ -n "$FULL" ]; then
    echo "== the GPU full"
    test/gpu/gpu_full.sh >"$OUT/gpu_full.log" 2>&1
    grep -vE '^ok ' "$OUT/gpu_full.log" | tail -40
    add_counts "$OUT/gpu_full.log"
fi

if [ -n "$THREADS" ] || [ -n "$SANITIZE" ]; then
    make -C test/bench USE_CUDA=1 tcbench >"$OUT/bench-build.log" 2>&1 || tail -20 "$OUT/bench-build.log"
fi

if [ -n "$THREADS" ]; then
    echo "== signals blocked in every thread of a process that ran GPU joins"
    # a long join in the background; its threads' masks read from /proc meanwhile
    test/bench/tcbench --gen gauss --n 400000 --d 128 --neighbours 64 --method brute --device gpu \
        --sink count --reps 20 >/dev/null 2>&1 &
    pid=$!
    sleep 4
    open=0 threads=0
    for st in /proc/$pid/task/*/status; do
        [ "$(basename "$(dirname "$st")")" = "$pid" ] && continue	# the caller's own thread
        threads=$((threads + 1))
        blk=$(awk '/^SigBlk/ { print $2 }' "$st")
        # all blocked but SIGKILL, SIGSTOP and glibc's two own (32, 33), which no mask holds
        [ $((0x$blk | 0x0000000180040100)) -eq -1 ] || {
            open=$((open + 1)); echo "thread $(basename "$(dirname "$st")"): SigBlk $blk"; }
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    if [ "$threads" -gt 0 ] && [ "$open" -eq 0 ]; then
        echo "ok     $threads threads besides the caller's, every one with all signals blocked"; PASSED=$((PASSED + 1))
    else
        echo "FAILED $open of $threads threads with signals open"; FAILED=$((FAILED + 1))
    fi
fi

if [ -n "$SANITIZE" ]; then
    # Small joins through every GPU kernel: the grid on CUDA cores and on
    # FP64 tensor cores, FP16 brute force exact (Hopper's clusters, the
    # bulk-copy recheck) and approximate, the mma.sync kernel with the lane
    # recheck, a streamed join (blocks) and float8 rows (staged recheck).
    B=test/bench/tcbench
    cases=("--gen expo --n 20000 --d 2 --eps 0.01 --device gpu --tensor-cores off"
           "--gen gauss --n 20000 --d 8 --neighbours 32 --method grid --device gpu --tensor-cores on"
           "--gen gauss --n 4000 --d 256 --neighbours 32 --method brute --device gpu"
           "--gen gauss --n 4000 --d 256 --neighbours 32 --method brute --device gpu --exact off"
           "--gen gauss --n 4000 --d 100 --neighbours 32 --method brute --device gpu --override tile_kernel=mma,recheck=lane"
           "--gen gauss --n 6000 --d 64 --neighbours 32 --method brute --device gpu --gpu-memory 5"
           "--gen gauss --n 3000 --d 77 --neighbours 32 --method brute --device gpu --type f8"
           "--gen neardup --n 4000 --d 256 --eps 0.02 --metric cosine --method brute --device gpu"
           "--gen neardup --n 4000 --d 256 --eps 0.02 --metric cosine --method brute --device gpu --exact off"
           "--gen neardup --n 3000 --d 100 --eps -0.9 --metric inner_product --method brute --device gpu --type f8"
           "--gen neardup --n 6000 --d 64 --eps 0.02 --metric cosine --method brute --device gpu --gpu-memory 5")
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
        echo "== compute-sanitizer --tool $tool"
        for c in "${cases[@]}"; do
            log=$OUT/sanitize-$tool.log
            echo "# $c" >>"$log"
            timeout "${SANITIZE_TIMEOUT:-120}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
                --print-limit 20 $B $c --reps 1 --sink sum >>"$log" 2>&1
            rc=$?
            if [ "$rc" -eq 0 ]; then
                PASSED=$((PASSED + 1))
            else
                echo "FAILED $tool (exit $rc): $c"; FAILED=$((FAILED + 1))
                grep -m 12 -E '^=========' "$log" | tail -12
            fi
        done
        grep -E 'ERROR SUMMARY' "$OUT/sanitize-$tool.log" | sort | uniq -c
    done
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
