#!/usr/bin/env bash
# One join on several GPUs (tcjoin.devices), in one run on a GPU machine:
#   (a) the GPU-against-CPU comparison (gpu_vs_cpu --quick, MULTI_SECONDS
#       of its matrix, default 60) with --devices 0,0 (the several-GPU path
#       on one GPU), and with 0,1 and all where the machine has 2 or more,
#       then on the widest list again with bands of 2 squares (the
#       override band_squares=2), so that the GPUs share many bands;
#   (b) through SQL, on fresh random data, every answer under
#       tcjoin.device = gpu with tcjoin.devices = '0,0' (and '0,1' on 2 or
#       more GPUs) against tcjoin.device = cpu, rows and float8 dists equal
#       (EXCEPT ALL both ways), and tc_last_stats() after the GPU's: gpus
#       the number of GPUs listed, gpu_devices the list, gpu_shares summing
#       to 1 within 1e-9.  tc_selfjoin on the grid (2-D) and FP16 brute
#       force (128-D), tc_join of two tables of different sizes, an empty
#       side and a one-row side (each way) and the k nearest, tc_count,
#       tc_degrees, tc_components, tc_dbscan and tc_neighbors (k => 5);
#   (c) cancel: a several-GPU join of many seconds (its pairs into the
#       result) under statement_timeout = '1s' ends within MULTI_CANCEL_MS
#       (default 1000) of the timeout firing, with the timeout's error, on the grid and on FP16
#       brute force; the same session's next join gives the CPU's count,
#       the backend's free GPU memory (tc_devices()) is where it was before
#       the cancel, and once the session has ended nvidia-smi shows every
#       GPU's memory back and no process holding one;
#   (d) a list naming a GPU the process does not see ('0,7' on a machine
#       of fewer than 8): a GPU join fails with "tcjoin.devices names GPU 7,
#       but this process sees N GPU(s) (0 to N-1)", the CPU ignores the
#       list, the session's next GPU join works, and a value that is not
#       the setting's syntax is refused by SET;
#   (e) on 2 or more GPUs, GPU 1 held full by test/gpu/gpu_hog.cu during a
#       join on '0,1': the GPU-full error (gpu_full = error), the CPU's
#       answer (device auto, gpu_full = cpu), every GPU's memory back;
#   (f) on 2 or more GPUs, without the override split=all (which (b), (c)
#       and (e) set, so that their small joins use every listed GPU), a
#       small join on '1,0' runs on GPU 1 alone, with the CPU's count.
#   test/gpu/multi_gpu.sh [--no-engine] [--no-sql]
# Needs the extension built with CUDA and installed (test/gpu/run.sh does
# both, then runs this unless --no-multi), and a server: PGHOST etc. in the
# environment, the portable build in .device/, or test/cluster.sh.
# MULTI_GPU_DEVICE=cpu runs (b) and (c) with the CPU in the GPU's place (a
# dry run of the script: no lists, no GPU checks).  Ends with
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ENGINE=1 SQL=1
for a in "$@"; do
    case $a in
        --no-engine) ENGINE= ;; --no-sql) SQL= ;;
        *) echo "unknown option $a"; exit 2 ;;
    esac
done
OUT=${OUT:-/tmp/tcjoin-gpu-out}
mkdir -p "$OUT"
PASSED=0 FAILED=0
. test/gpu/lib.sh
. test/stress/lib.sh
ok() { PASSED=$((PASSED + 1)); echo "ok     $1"; }
bad() { FAILED=$((FAILED + 1)); echo "FAILED $1"; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

DEVICE=${MULTI_GPU_DEVICE:-gpu}
DRY=
[ "$DEVICE" = gpu ] || DRY=1
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
echo "# $NGPU GPU(s) by nvidia-smi -L${CUDA_VISIBLE_DEVICES:+; CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES}"
LISTS=("0,0")
[ "$NGPU" -ge 2 ] && LISTS+=("0,1")

# ---- (a) the engine alone: gpu_vs_cpu on each list
if [ -n "$ENGINE" ] && [ -z "$DRY" ]; then
    echo "== GPU against CPU on several GPUs"
    if ! make -C test/bench USE_CUDA=1 GPU_VS_CPU="$OUT/gpu_vs_cpu" gpu_vs_cpu >"$OUT/gpu_vs_cpu-build.log" 2>&1; then
        tail -20 "$OUT/gpu_vs_cpu-build.log"
    fi
    secs=${MULTI_SECONDS:-60}
    engine_lists=("${LISTS[@]}")
    [ "$NGPU" -ge 2 ] && engine_lists+=(all)
    for list in "${engine_lists[@]}"; do
        echo "== gpu_vs_cpu --quick --devices $list"
        log=$OUT/multi-gpu_vs_cpu-${list//,/-}.log
        timeout $((secs + 600)) "$OUT/gpu_vs_cpu" --quick --seconds "$secs" --devices "$list" | tee "$log"
        add_counts "$log"
    done
    # bands of 2 squares: every brute-force join in many bands, their
    # batches from the GPUs' queue band after band
    list=${engine_lists[${#engine_lists[@]}-1]}
    echo "== gpu_vs_cpu --quick --devices $list --override band_squares=2"
    log=$OUT/multi-gpu_vs_cpu-bands.log
    timeout $((secs + 600)) "$OUT/gpu_vs_cpu" --quick --seconds "$secs" --devices "$list" \
        --override band_squares=2 | tee "$log"
    add_counts "$log"
fi

if [ -z "$SQL" ]; then
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
    exit
fi

# ---- the server
if [ -f .device/pg-up.sh ] && ! command -v pg_config >/dev/null; then
    . .device/pg-up.sh .device/pg15-portable.tar.xz
fi
if ! q_db postgres -c 'SELECT 1' >/dev/null 2>&1 && [ -z "${PGPORT:-}" ]; then
    bash test/cluster.sh start && eval "$(bash test/cluster.sh env)"
fi
DB=tcjoin_multi_gpu
if ! fresh_db "$DB"; then
    echo "multi_gpu: no server or no extension"
    echo "$PASSED passed, $((FAILED + 1)) failed"
    exit 1
fi

# Fresh random data each run (MULTI_SEED repeats one): exponential 2-D
# points (rate 40, as the benchmarks'), two tables of different sizes, one
# row, none; 128-D rows uniform in [-0.5, 0.5], every 8th a near copy of an
# earlier one (pairs well inside eps beside those near its edge), and
# queries drawn the same way.
SEED=${MULTI_SEED:-$(awk -v r="$RANDOM$RANDOM" 'BEGIN { srand(r); printf "%.6f", rand() * 2 - 1 }')}
N128=${MULTI_H128_ROWS:-30000}
echo "# data: setseed($SEED), $N128 rows of 128 dimensions"
q_db "$DB" <<SQL
SELECT setseed($SEED);
CREATE TABLE p2 AS SELECT i::bigint AS id,
    ARRAY[-ln(1 - random()) / 40, -ln(1 - random()) / 40]::real[] AS vec
    FROM generate_series(1, 300000) i;
CREATE TABLE a2 AS SELECT i::bigint AS id,
    ARRAY[-ln(1 - random()) / 40, -ln(1 - random()) / 40]::real[] AS vec
    FROM generate_series(1, 200000) i;
CREATE TABLE b2 AS SELECT i::bigint AS id,
    ARRAY[-ln(1 - random()) / 40, -ln(1 - random()) / 40]::real[] AS vec
    FROM generate_series(1, 70001) i;
CREATE TABLE o2 AS SELECT 7::bigint AS id, ARRAY[0.01, 0.02]::real[] AS vec;
CREATE TABLE e2 (id bigint, vec real[]);
CREATE TABLE h128 AS SELECT i::bigint AS id,
    (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 128) k WHERE i > 0) AS vec
    FROM generate_series(1, $N128) i;
UPDATE h128 t SET vec = (SELECT array_agg((x + (random() - 0.5) * 0.02)::real ORDER BY o)
                           FROM unnest(s.vec) WITH ORDINALITY u(x, o))
    FROM h128 s WHERE t.id % 8 = 0 AND s.id = t.id / 8;
CREATE TABLE q128 AS SELECT id + 1000000000 AS id,
    (SELECT array_agg((x + (random() - 0.5) * 0.02)::real ORDER BY o)
       FROM unnest(vec) WITH ORDINALITY u(x, o)) AS vec
    FROM h128 WHERE id % 10 = 3;
INSERT INTO q128 SELECT i::bigint + 2000000000,
    (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 128) k WHERE i > 0)
    FROM generate_series(1, 2000) i;
CREATE TABLE o128 AS SELECT * FROM q128 ORDER BY id LIMIT 1;
ALTER TABLE p2 ADD PRIMARY KEY (id);
ALTER TABLE a2 ADD PRIMARY KEY (id);
ALTER TABLE b2 ADD PRIMARY KEY (id);
ALTER TABLE h128 ADD PRIMARY KEY (id);
ALTER TABLE q128 ADD PRIMARY KEY (id);
ALTER TABLE o2 ADD PRIMARY KEY (id);
ALTER TABLE e2 ADD PRIMARY KEY (id);
ALTER TABLE o128 ADD PRIMARY KEY (id);
VACUUM ANALYZE p2, a2, b2, o2, e2, h128, q128, o128;
SQL

# ---- (b) every answer against the CPU's
# name|stats|query.  stats: all (tc_last_stats() names every GPU listed),
# some (one to all of them: a one-row side has little to split), none (an
# empty side: the GPUs may have nothing to do; printed only).
CASES=(
    "selfjoin grid 2-D|all|SELECT * FROM tc_selfjoin('p2', 'vec', 0.0002, method => 'grid')"
    "selfjoin brute 128-D|all|SELECT * FROM tc_selfjoin('h128', 'vec', 3.6, method => 'brute')"
    "join a2 b2 grid|all|SELECT * FROM tc_join('a2', 'vec', 'b2', 'vec', 0.0002)"
    "join b2 a2 grid|all|SELECT * FROM tc_join('b2', 'vec', 'a2', 'vec', 0.0002)"
    "join q128 h128 brute|all|SELECT * FROM tc_join('q128', 'vec', 'h128', 'vec', 3.6, method => 'brute')"
    "join a2 empty|none|SELECT * FROM tc_join('a2', 'vec', 'e2', 'vec', 0.002)"
    "join empty a2|none|SELECT * FROM tc_join('e2', 'vec', 'a2', 'vec', 0.002)"
    "join one a2|some|SELECT * FROM tc_join('o2', 'vec', 'a2', 'vec', 0.002)"
    "join a2 one|some|SELECT * FROM tc_join('a2', 'vec', 'o2', 'vec', 0.002)"
    "join one h128 brute|some|SELECT * FROM tc_join('o128', 'vec', 'h128', 'vec', 4.0, method => 'brute')"
    "join h128 one brute|some|SELECT * FROM tc_join('h128', 'vec', 'o128', 'vec', 4.0, method => 'brute')"
    "join a2 b2 k 5|all|SELECT * FROM tc_join('a2', 'vec', 'b2', 'vec', 0.0004, k => 5)"
    "count grid|all|SELECT tc_count('p2', 'vec', 0.0002) AS n"
    "count brute|all|SELECT tc_count('h128', 'vec', 3.6, method => 'brute') AS n"
    "degrees grid|all|SELECT * FROM tc_degrees('p2', 'vec', 0.0002)"
    "degrees brute|all|SELECT * FROM tc_degrees('h128', 'vec', 3.6, method => 'brute')"
    "components grid|all|SELECT * FROM tc_components('p2', 'vec', 0.0002)"
    "dbscan grid|all|SELECT * FROM tc_dbscan('p2', 'vec', 0.0002, 5)"
    "neighbors grid k 5|all|SELECT * FROM tc_neighbors('p2', 'vec', 0.0002, k => 5)"
    "neighbors brute k 5|all|SELECT * FROM tc_neighbors('h128', 'vec', 3.6, k => 5, method => 'brute')"
)

# A dry run lists the GPUs and reads the stats where the setting exists, asserting nothing of them.
STATS=1
# (the setting exists once the library is loaded: a call of the extension's loads it)
[ -n "$DRY" ] && [ "$(q_db "$DB" -c "SELECT count(*) FROM tc_devices()" \
    -c "SELECT current_setting('tcjoin.devices', true) IS NOT NULL" | tail -1)" != t ] && STATS=
echo "== through SQL: tcjoin.device = $DEVICE with tcjoin.devices against the CPU"
# The CPU's answers, once: ref_<i>, and their row counts.
{
    echo "SET tcjoin.device = cpu;"
    for i in "${!CASES[@]}"; do
        IFS='|' read -r _ _ query <<<"${CASES[$i]}"
        echo "CREATE TABLE ref_$i AS $query;"
        echo "SELECT 'rows $i ' || count(*) FROM ref_$i;"
    done
} >"$WORK/ref.sql"
t0=$(date +%s)
psql -X -q -A -t -d "$DB" -f "$WORK/ref.sql" >"$WORK/ref.out" 2>&1
echo "# the CPU's answers in $(($(date +%s) - t0)) s"
grep -E 'ERROR' "$WORK/ref.out" | head -5

for list in "${LISTS[@]}"; do
    n=$(awk -F, '{ print NF }' <<<"$list")
    {
        echo "SET tcjoin.device = $DEVICE;"
        [ -n "$STATS" ] && echo "SET tcjoin.devices = '$list'; SET tcjoin.dev_overrides = 'split=all';"
        for i in "${!CASES[@]}"; do
            IFS='|' read -r _ _ query <<<"${CASES[$i]}"
            echo "SELECT 'case $i';"
            echo "CREATE TEMP TABLE got AS $query;"
            [ -n "$STATS" ] && cat <<SQL
SELECT 'stats ' || device || '|' || coalesce(gpus, -1) || '|' ||
       coalesce(array_to_string(gpu_devices, ','), '') || '|' ||
       coalesce(array_to_string(gpu_shares, ','), '') || '|' ||
       CASE WHEN abs(coalesce((SELECT sum(s) FROM unnest(gpu_shares) s), 0) - 1) <= 1e-9
            THEN 'true' ELSE 'false' END
  FROM tc_last_stats();
SQL
            echo "SELECT 'diff ' || (SELECT count(*) FROM (TABLE ref_$i EXCEPT ALL TABLE got) x) || '|' ||
                         (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE ref_$i) y) || '|' ||
                         (SELECT count(*) FROM got);"
            echo "DROP TABLE IF EXISTS got;"
        done
    } >"$WORK/gpu.sql"
    t0=$(date +%s)
    psql -X -q -A -t -d "$DB" -f "$WORK/gpu.sql" >"$WORK/gpu-$list.out" 2>&1
    echo "# tcjoin.devices = '$list': the answers in $(($(date +%s) - t0)) s"
    for i in "${!CASES[@]}"; do
        IFS='|' read -r name want _ <<<"${CASES[$i]}"
        rows=$(sed -n "s/^rows $i //p" "$WORK/ref.out")
        # this case's lines: from its marker to the next
        awk -v i="$i" '$0 == "case " i { on = 1; next } /^case [0-9]+$/ { on = 0 } on' \
            "$WORK/gpu-$list.out" >"$WORK/case"
        IFS='|' read -r missing extra got < <(sed -n 's/^diff //p' "$WORK/case")
        IFS='|' read -r dev gpus ids shares sum_ok < <(sed -n 's/^stats //p' "$WORK/case")
        err=$(grep -m1 -E 'ERROR' "$WORK/case")
        what="devices $list: $name: ${got:-?} rows, the CPU's ${rows:-?}, ${missing:-?} missing, ${extra:-?} extra"
        same=0
        [ -n "$rows" ] && [ "${missing:-x}" = 0 ] && [ "${extra:-x}" = 0 ] && [ "${got:-x}" = "$rows" ] && same=1
        stats_ok=1
        [ -n "$STATS" ] && what="$what; $dev, ${gpus:-?} GPU(s) ($ids), shares ($shares)"
        if [ -z "$DRY" ]; then
            case $want in
                all) [ "$dev" = gpu ] && [ "$gpus" = "$n" ] && [ "$ids" = "$list" ] && [ "$sum_ok" = true ] || stats_ok=0 ;;
                some) [ "$dev" = gpu ] && [ "${gpus:-0}" -ge 1 ] && [ "${gpus:-0}" -le "$n" ] && [ "$sum_ok" = true ] || stats_ok=0 ;;
            esac
        fi
        if [ -z "$err" ] && [ "$same" = 1 ] && [ "$stats_ok" = 1 ]; then
            ok "$what"
        else
            bad "$what${err:+; $err}"
        fi
    done
done

# ---- (c) cancel: a several-GPU join of many seconds under statement_timeout = '1s'
# The GPUs' used memory (MiB), one number a GPU.
gpus_used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | paste -sd' ' -; }
# Whether every GPU's used memory ($2, gpus_used) is back within 64 MiB of $1.
memory_back() {
    awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); m = split(b, y, " ")
        if (n == 0 || n != m) exit 1
        for (i = 1; i <= n; i++) if (y[i] > x[i] + 64) exit 1 }'
}
LIST=${LISTS[-1]}
# the delay past the 1 s timeout, as cancel_gpu.sh and the project's standard count it
LIMIT_MS=${MULTI_CANCEL_MS:-1000}
# the count the joins after a cancel and after an error must give: the CPU's
small=$(q_db "$DB" -c "SET tcjoin.device = cpu" -c "SELECT tc_count('p2', 'vec', 0.0002)" 2>/dev/null)
sleep 1	# the sessions above have ended: their backends gone
base_used=$(gpus_used)
echo "== cancel on tcjoin.devices = '$LIST' (GPU memory used before: ${base_used:-n/a} MiB)"
# name|the join cut|its pairs, counted on the device|the same join at a small eps, run
# before the GPUs' free memory is read: whatever a join of its kind keeps
# in the backend (the contexts, kernels) is then there before and after
for spec in "grid|SELECT count(*) FROM tc_selfjoin('p2', 'vec', 0.005)|SELECT tc_count('p2', 'vec', 0.005)|SELECT count(*) FROM tc_selfjoin('p2', 'vec', 0.0002)" \
            "brute|SELECT count(*) FROM tc_selfjoin('h128', 'vec', 4.4, method => 'brute')|SELECT tc_count('h128', 'vec', 4.4, method => 'brute')|SELECT count(*) FROM tc_selfjoin('h128', 'vec', 3.6, method => 'brute')"; do
    IFS='|' read -r name query count_q warm_q <<<"$spec"
    cat >"$WORK/cancel.sql" <<SQL
SET tcjoin.device = $DEVICE;
$([ -z "$DRY" ] && echo "SET tcjoin.devices = '$LIST'; SET tcjoin.dev_overrides = 'split=all';")
SELECT 'warm ' || tc_count('p2', 'vec', 0.0002);
SELECT 'warm ' || ($warm_q);
$([ -z "$DRY" ] && echo "SELECT 'pairs ' || ($count_q);")
SELECT 'free0 ' || coalesce(string_agg(device || ':' || free_memory_mb, ' ' ORDER BY device), '') FROM tc_devices();
SET statement_timeout = '1s';
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
$query;
SELECT 'ms ' || round((extract(epoch FROM clock_timestamp()) - :t0) * 1000);
RESET statement_timeout;
SELECT 'after ' || tc_count('p2', 'vec', 0.0002);
SELECT 'free1 ' || coalesce(string_agg(device || ':' || free_memory_mb, ' ' ORDER BY device), '') FROM tc_devices();
SQL
    psql -X -q -A -t -d "$DB" -f "$WORK/cancel.sql" >"$WORK/cancel.out" 2>&1
    ms=$(sed -n 's/^ms //p' "$WORK/cancel.out")
    pairs=$(sed -n 's/^pairs //p' "$WORK/cancel.out")
    after=$(sed -n 's/^after //p' "$WORK/cancel.out")
    free0=$(sed -n 's/^free0 //p' "$WORK/cancel.out")
    free1=$(sed -n 's/^free1 //p' "$WORK/cancel.out")
    echo "# $name: ${pairs:-?} pairs uncut; the statement took ${ms:-?} ms; free MiB before $free0, after $free1"
    if grep -q 'canceling statement due to statement timeout' "$WORK/cancel.out" && [ -n "$ms" ] &&
        [ $((ms - 1000)) -lt "$LIMIT_MS" ]; then
        ok "cancel $name on '$LIST': statement_timeout 1s ended the join $((ms - 1000)) ms after it fired (limit $LIMIT_MS)"
    else
        bad "cancel $name on '$LIST': the statement took ${ms:-?} ms; $(grep -m1 ERROR "$WORK/cancel.out" || echo 'no timeout error: it ended first')"
    fi
    if [ -n "$after" ] && [ "$after" = "$small" ]; then
        ok "cancel $name on '$LIST': the session's next join gives the CPU's count ($after)"
    else
        bad "cancel $name on '$LIST': the next join gave ${after:-nothing}, the CPU ${small:-?}; $(grep -m1 ERROR "$WORK/cancel.out")"
    fi
    if [ -z "$DRY" ]; then
        # each GPU's free memory, seen by the backend, where it was before the cancel
        drift=$(awk -v a="$free0" -v b="$free1" 'BEGIN {
            n = split(a, x, " "); m = split(b, y, " "); if (n == 0 || n != m) { print -1; exit }
            worst = 0
            for (i = 1; i <= n; i++) { split(x[i], p, ":"); split(y[i], q, ":"); d = p[2] - q[2]; if (d > worst) worst = d }
            print worst }')
        if [ "$drift" -ge 0 ] && [ "$drift" -le 64 ]; then
            ok "cancel $name on '$LIST': no GPU's free memory lower after the cancel (at most $drift MiB)"
        else
            bad "cancel $name on '$LIST': free GPU memory before ($free0) and after ($free1)"
        fi
    fi
done
if [ -z "$DRY" ]; then
    sleep 1
    now_used=$(gpus_used)
    apps=$(gpu_apps)
    echo "# GPU memory used: before ${base_used} MiB, after the sessions ${now_used} MiB; processes holding a GPU: $apps"
    if memory_back "$base_used" "$now_used" && [ "$apps" -eq 0 ]; then
        ok "no GPU memory or process left once the cancelled sessions ended"
    else
        bad "GPU memory or processes left: $base_used -> $now_used MiB, $apps processes"
    fi
fi

# ---- (d) a GPU the process does not see
if [ -z "$DRY" ] && [ "$NGPU" -lt 8 ]; then
    echo "== tcjoin.devices = '0,7' on $NGPU GPU(s)"
    psql -X -q -A -t -d "$DB" >"$WORK/err.out" 2>&1 <<SQL
SET tcjoin.device = gpu;
SET tcjoin.devices = '0,7';
SELECT 'gpu ' || count(*) FROM tc_selfjoin('p2', 'vec', 0.0002);
SET tcjoin.device = cpu;
SELECT 'cpu ' || tc_count('p2', 'vec', 0.0002);
SET tcjoin.device = gpu;
SET tcjoin.devices = '0';
SELECT 'again ' || tc_count('p2', 'vec', 0.0002);
SELECT 'bad syntax';
SET tcjoin.devices = 'x';
SELECT 'past 16';
SET tcjoin.devices = '0,16';
SELECT 'shown ' || current_setting('tcjoin.devices');
SQL
    sed 's/^/#   /' "$WORK/err.out"
    if grep -qE 'ERROR: .*tcjoin\.devices names GPU 7, but this process sees [0-9]+ GPUs? \(0 to [0-9]+\)' "$WORK/err.out" &&
        ! grep -q '^gpu ' "$WORK/err.out"; then
        ok "devices '0,7': the GPU join fails with tcjoin.devices' message"
    else
        bad "devices '0,7': no such error"
    fi
    if grep -q "^cpu $small\$" "$WORK/err.out" && grep -q "^again $small\$" "$WORK/err.out"; then
        ok "devices '0,7': the CPU ignores the list, and the session's next GPU join (devices '0') works"
    else
        bad "devices '0,7': the CPU's count or the next GPU join (want $small)"
    fi
    # SET refuses both; the setting keeps '0'
    if [ "$(grep -c 'invalid value for parameter "tcjoin.devices"' "$WORK/err.out")" -eq 2 ] &&
        grep -q '^shown 0' "$WORK/err.out"; then
        ok "devices 'x' and '0,16': refused by SET, the setting unchanged"
    else
        bad "devices 'x' and '0,16': not refused by SET as invalid values"
    fi
fi

# ---- (f) without split=all, a join too small to gain from several GPUs
# keeps the list's first: tc_last_stats() says 1 GPU, GPU 1 on '1,0'
if [ -z "$DRY" ] && [ "$NGPU" -ge 2 ]; then
    echo "== a small join on '1,0' without split=all"
    got=$(q_db "$DB" -c "SET tcjoin.device = gpu" -c "SET tcjoin.devices = '1,0'" \
              -c "SELECT count(*) FROM tc_selfjoin('p2', 'vec', 0.0002)" \
              -c "SELECT gpus || '|' || array_to_string(gpu_devices, ',') FROM tc_last_stats()" 2>&1 | tr '\n' ' ')
    if [ "$got" = "$small 1|1 " ]; then
        ok "devices '1,0', a small join: the CPU's $small pairs on GPU 1 alone"
    else
        bad "devices '1,0', a small join: got '$got', want '$small 1|1 '"
    fi
fi

# ---- (e) one GPU of the list full: test/gpu/gpu_hog.cu holds all but 64 MiB of
# GPU 1 while a join on '0,1' runs: gpu_full = error gives the GPU-full
# message, device auto with gpu_full = cpu the CPU's answer, and once the
# sessions end every GPU's memory is back
if [ -z "$DRY" ] && [ "$NGPU" -ge 2 ]; then
    echo "== GPU 1 full during a join on '0,1'"
    if nvcc -O2 -o "$WORK/gpu_hog" test/gpu/gpu_hog.cu >"$WORK/hog-nvcc.log" 2>&1; then
        base_used=$(gpus_used)
        CUDA_VISIBLE_DEVICES=1 "$WORK/gpu_hog" 64 >"$WORK/hog.out" 2>&1 &
        hog=$!
        for _ in $(seq 1 300); do grep -q '^held' "$WORK/hog.out" && break; sleep 0.1; done
        echo "# hog on GPU 1: $(cat "$WORK/hog.out")"
        psql -X -q -A -t -d "$DB" >"$WORK/full.out" 2>&1 <<SQL
SET tcjoin.devices = '0,1';
SET tcjoin.dev_overrides = 'split=all';
SET tcjoin.device = gpu;
SET tcjoin.gpu_full = error;
SELECT 'gpu ' || count(*) FROM tc_selfjoin('h128', 'vec', 3.6, method => 'brute');
SET tcjoin.device = auto;
SET tcjoin.gpu_full = cpu;
SELECT 'auto ' || count(*) FROM tc_selfjoin('h128', 'vec', 3.6, method => 'brute');
SELECT 'ran ' || device FROM tc_last_stats();
SQL
        kill "$hog" 2>/dev/null
        wait "$hog" 2>/dev/null
        sed 's/^/#   /' "$WORK/full.out"
        want=$(q_db "$DB" -c "SET tcjoin.device = cpu" -c "SELECT count(*) FROM tc_selfjoin('h128', 'vec', 3.6, method => 'brute')" 2>/dev/null)
        if grep -q 'ERROR:  tcjoin: the GPU is out of memory' "$WORK/full.out" && ! grep -q '^gpu ' "$WORK/full.out"; then
            ok "GPU 1 full, devices '0,1', gpu_full = error: the GPU-full message"
        else
            bad "GPU 1 full, devices '0,1', gpu_full = error: no GPU-full error"
        fi
        if [ -n "$want" ] && grep -q "^auto $want\$" "$WORK/full.out"; then
            ok "GPU 1 full, device auto, gpu_full = cpu: the CPU's count ($want; $(grep '^ran ' "$WORK/full.out"))"
        else
            bad "GPU 1 full, device auto, gpu_full = cpu: want $want"
        fi
        sleep 1
        now_used=$(gpus_used)
        if memory_back "$base_used" "$now_used"; then
            ok "GPU 1 full: every GPU's memory back once the session ended ($base_used -> $now_used MiB)"
        else
            bad "GPU 1 full: memory left: $base_used -> $now_used MiB"
        fi
    else
        bad "gpu_hog did not build: $(head -3 "$WORK/hog-nvcc.log")"
    fi
fi

q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
