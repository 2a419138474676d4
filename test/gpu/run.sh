#!/usr/bin/env bash
# The GPU suite, for a machine with an NVIDIA GPU and a PostgreSQL (PG_CONFIG
# on the PATH, or the portable build: put pg15-portable.tar.xz and pg-up.sh
# in .device/).  Builds and installs the extension with its CUDA back ends,
# runs the whole pg_regress suite with tcjoin.device = gpu (same expected
# files as the CPU run), then the GPU-against-CPU exactness stress and the
# GPU failure modes, each with tensor cores off and on, then the brute-force
# cases again under each developer override of OVERRIDES (the paths other
# GPUs or other shapes take, forced here: the staged recheck, the candidates
# ungrouped, the lane recheck, 256-byte bulk copies at every row length,
# the filter's whole-dot bound, Hopper's warpgroups in step, Hopper's blocks
# apart), RECHECK_SECONDS each, then engine benchmarks of the GPU paths (and
# with --sql, the same join through PostgreSQL against its floors).  Between
# the stress and the benchmarks, one join on several GPUs
# (test/gpu/multi_gpu.sh: the comparison with tcjoin.devices '0,0', and
# '0,1' where the machine has 2 GPUs or more, through the engine and SQL).
#   test/gpu/run.sh [--quick] [--no-regress] [--no-stress] [--no-multi] [--no-bench] [--no-grid-bench] [--sql]
#                   [--auto-sweep]   (auto's choices against both engines: test/bench/auto-sweep)
#                   [--dot-bench]    (only the cosine and inner-product benchmarks of --bench)
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
QUICK= REGRESS=1 STRESS=1 MULTI=1 BENCH=1 GRIDBENCH=1 SQL= SWEEP= DOTBENCH=
for a in "$@"; do
    case $a in
        --quick) QUICK=--quick ;; --no-regress) REGRESS= ;; --no-stress) STRESS= ;; --no-multi) MULTI= ;;
        --no-bench) BENCH= ;; --no-grid-bench) GRIDBENCH= ;; --sql) SQL=1 ;; --auto-sweep) SWEEP=1 ;; --dot-bench) DOTBENCH=1 ;;
        *) echo "unknown option $a"; exit 2 ;;
    esac
done
OUT=${OUT:-/tmp/tcjoin-gpu-out}
mkdir -p "$OUT"
PASSED=0 FAILED=0

. test/gpu/lib.sh

if [ -f .device/pg-up.sh ] && ! command -v pg_config >/dev/null; then
    . .device/pg-up.sh .device/pg15-portable.tar.xz
fi
nvidia-smi -L || true
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv || true

echo "== build"
if ! make -j"$(nproc)" USE_CUDA=1 >"$OUT/build.log" 2>&1 || ! make install >>"$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"
    echo "0 passed, 1 failed"
    exit 1
fi

# REGRESS_TC: the tcjoin.tensor_cores settings to run pg_regress under.
for tc in ${REGRESS:+${REGRESS_TC:-off on}}; do
    echo "== pg_regress with tcjoin.device = gpu, tcjoin.tensor_cores = $tc"
    PGOPTIONS="-c tcjoin.device=gpu -c tcjoin.tensor_cores=$tc" timeout 400 make installcheck >"$OUT/regress-$tc.log" 2>&1
    grep -E '\.\.\. +(ok|FAILED)' "$OUT/regress-$tc.log"
    p=$(grep -cE '\.\.\. +ok( |$)' "$OUT/regress-$tc.log")
    f=$(grep -cE '\.\.\. +FAILED' "$OUT/regress-$tc.log")
    [ -f regression.diffs ] && cp regression.diffs "$OUT/regression-$tc.diffs" && head -60 regression.diffs
    PASSED=$((PASSED + p)) FAILED=$((FAILED + f))
done

if [ -n "$STRESS" ]; then
    echo "== the tensor cores' FP16 accumulation against the filter's error model"
    nvcc -O2 -std=c++17 -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90a,code=sm_90a \
        -o "$OUT/mma_error" test/gpu/mma_error.cu && "$OUT/mma_error" 100 | tee "$OUT/mma_error.log"
    add_counts "$OUT/mma_error.log"

    echo "== GPU against CPU"
    make -C test/bench USE_CUDA=1 GPU_VS_CPU="$OUT/gpu_vs_cpu" gpu_vs_cpu >"$OUT/gpu_vs_cpu-build.log" 2>&1 ||
        tail -20 "$OUT/gpu_vs_cpu-build.log"
    timeout 400 "$OUT/gpu_vs_cpu" $QUICK --seconds "${STRESS_SECONDS:-200}" | tee "$OUT/gpu_vs_cpu.log"
    add_counts "$OUT/gpu_vs_cpu.log"
    # The staged recheck kernel (the default where rows are not 16-byte
    # aligned), candidates as they came (the default when streamed or short
    # of memory), the lane kernel (the default where the build has no
    # Hopper code), 256-byte bulk copies at every row length in place of
    # Hopper's bulk-copy recheck (192 bytes up to 4 KB rows, 256 beyond),
    # the filter's whole-dot bound (the default where K > 2^16), Hopper's
    # warpgroups in step where they take turns (d <= 128), and Hopper's
    # blocks one at a time (not in clusters of two), so that every way stays
    # right.  Tensor cores on only (--tc-only): none of these touches the
    # FP64 path, and without it the passes reach higher d in their time.
    # (An item may be several overrides, comma-separated.)
    for ov in ${OVERRIDES:-recheck=staged recheck_group=off recheck=lane recheck=bulk256 \
               filter_bound=whole pingpong=off clusters=off}; do
        echo "== GPU against CPU, brute force with $ov"
        log=$OUT/gpu_vs_cpu-$(echo "$ov" | tr '=_,' '--.').log
        timeout 200 "$OUT/gpu_vs_cpu" --quick --brute-only --tc-only --override "$ov" \
            --seconds "${RECHECK_SECONDS:-40}" | tee "$log"
        add_counts "$log"
    done
fi

if [ -n "$MULTI" ]; then
    # gpu_vs_cpu for MULTI_SECONDS a list (default 60; --quick: 30)
    echo "== one join on several GPUs (tcjoin.devices)"
    OUT=$OUT MULTI_SECONDS=${MULTI_SECONDS:-$([ -n "$QUICK" ] && echo 30 || echo 60)} \
        test/gpu/multi_gpu.sh | tee "$OUT/multi_gpu.log"
    add_counts "$OUT/multi_gpu.log"
fi

if [ -n "$BENCH" ]; then
    rm -f test/bench/tcbench && make -C test/bench USE_CUDA=1 >/dev/null
    B=test/bench/tcbench
    if [ -n "$GRIDBENCH" ]; then
        echo "== engine benchmarks (GPU grid against the CPU)"
        make -C test/bench copy_floor >/dev/null && echo "copy floor (d2h chunked, d2h large, h2d GB/s, gpu): $(test/bench/copy_floor)"
        for eps in 0.0002 0.0005; do
            for tc in off on; do
                $B --gen expo --n 2000000 --d 2 --eps $eps --device gpu --tensor-cores $tc --sink count --reps 5
            done
            $B --gen expo --n 2000000 --d 2 --eps $eps --device gpu --sink sum --reps 3
        done
        for d in 2 3 4 8 16; do
            n=2000000; [ $d -gt 8 ] && n=1000000
            for tc in off on; do
                $B --gen expo --n $n --d $d --neighbours 64 --device gpu --tensor-cores $tc --sink count --reps 3
            done
        done
        for d in 3 4; do
            for tc in off on; do
                $B --gen uniform --n 2000000 --d $d --neighbours 64 --device gpu --tensor-cores $tc --sink count --reps 3
            done
        done
        $B --gen expo --n 2000000 --d 2 --eps 0.0002 --device cpu --sink count --reps 3
    fi

    echo "== FP16 brute force against cuBLAS (FLOPs counted as 2 n^2 d)"
    make -C test/bench gemm_floor >/dev/null
    for nd in 100000:128 200000:384 100000:960 100000:1024 100000:4096; do
        n=${nd%:*} d=${nd#*:}
        echo "gemm_floor $n $d: $(test/bench/gemm_floor $n $d)"
        # eps for 64 neighbours a point, counted (--calibrate), shared by the variants below
        E="--eps $($B --gen gauss --n $n --d $d --neighbours 64 --method brute --device gpu --calibrate --eps-only)"
        $B --gen gauss --n $n --d $d $E --method brute --device gpu --sink count --reps 3
        # the same on the mma.sync kernel (Hopper's own runs wgmma), and approximate (exact off)
        $B --gen gauss --n $n --d $d $E --method brute --device gpu --sink count --reps 3 --override tile_kernel=mma
        $B --gen gauss --n $n --d $d $E --method brute --device gpu --exact off --sink count --reps 3
        # the staged recheck kernel; the candidates as they came (not grouped by first point);
        # the lane kernel in place of Hopper's bulk-copy recheck, both exactnesses; 256-byte bulk copies
        for ov in recheck=staged recheck_group=off recheck=lane recheck=bulk256; do
            $B --gen gauss --n $n --d $d $E --method brute --device gpu --sink count --reps 3 --override $ov
        done
        $B --gen gauss --n $n --d $d $E --method brute --device gpu --exact off --sink count --reps 3 --override recheck=lane
        # Hopper's warpgroups in step instead of taking turns (they take turns at d <= 128 only)
        [ "$d" -le 128 ] && $B --gen gauss --n $n --d $d $E --method brute --device gpu --sink count --reps 3 \
            --override pingpong=off
    done
    echo "== the issue's end-to-end figure: 1,000,000 x 128, about 64 neighbours"
    $B --gen gauss --n 1000000 --d 128 --neighbours 64 --calibrate --method brute --device gpu --sink count --reps 3
    echo "== the same, streamed: at most 1 GB of GPU memory (the whole join takes about 1.1 GB): 4 blocks"
    $B --gen gauss --n 1000000 --d 128 --neighbours 64 --calibrate --method brute --device gpu --sink count --reps 3 \
        --gpu-memory 1024
    echo "== real data (test/bench/unpack-data, from .data-pack)"
    test/bench/unpack-data .data || true
    if [ -e .data/fmnist_70000x784.f32 ]; then
        echo "gemm_floor 70000 784: $(test/bench/gemm_floor 70000 784)"
        for ex in on off; do
            $B --file .data/fmnist_70000x784.f32 --d 784 --neighbours 64 --calibrate --method brute --device gpu --exact $ex --sink count --reps 3
        done
    fi
    if [ -e .data/tycho2_1871011x3.f32 ]; then
        for dev in gpu cpu; do
            $B --file .data/tycho2_1871011x3.f32 --d 3 --neighbours 64 --device $dev --sink count --reps 3
        done
    fi
    echo "== auto's choice on the GPU: grid against FP16 brute force, 400,000 uniform points, 64 neighbours"
    for d in 8 12 16 32; do
        for m in grid brute; do
            $B --gen uniform --n 400000 --d $d --neighbours 64 --method $m --device gpu --sink count --reps 3
        done
    done
fi 2>&1 | tee "$OUT/bench.log"

if [ -n "$BENCH$DOTBENCH" ]; then
    rm -f test/bench/tcbench && make -C test/bench USE_CUDA=1 >/dev/null
    make -C test/bench gemm_floor >/dev/null
    B=test/bench/tcbench
    echo "== cosine and inner product on FP16 brute force: 1,000,000 x 384 unit vectors, 5% near duplicates"
    echo "gemm_floor 1000000 384: $(test/bench/gemm_floor 1000000 384)"
    # cosine distance 0.02 is Euclidean distance 0.2 between unit vectors: the same join three ways
    $B --gen neardup --n 1000000 --d 384 --metric cosine --eps 0.02 --method brute --device gpu --sink count --reps 3
    $B --gen neardup --n 1000000 --d 384 --metric inner_product --eps -0.98 --method brute --device gpu --sink count --reps 3
    $B --gen neardup --n 1000000 --d 384 --eps 0.2 --method brute --device gpu --sink count --reps 3
    $B --gen neardup --n 1000000 --d 384 --metric cosine --eps 0.02 --method brute --device gpu --exact off --sink count --reps 3
    echo "== the same, streamed: at most 1 GB of GPU memory"
    $B --gen neardup --n 1000000 --d 384 --metric cosine --eps 0.02 --method brute --device gpu --sink count --reps 3 \
        --gpu-memory 1024
    echo "== 200,000 x 384 on the CPU beside the GPU (the CPU's float32 filter)"
    $B --gen neardup --n 200000 --d 384 --metric cosine --eps 0.02 --method brute --device gpu --sink count --reps 3
    $B --gen neardup --n 200000 --d 384 --metric cosine --eps 0.02 --method brute --device cpu --sink count --reps 1
fi 2>&1 | tee "$OUT/dot-bench.log"

if [ -n "$SQL" ]; then
    echo "== through PostgreSQL: 2,000,000 exponential 2-D points, eps 0.0002"
    psql -X -q -A -t -v ON_ERROR_STOP=1 -d postgres <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP TABLE IF EXISTS gpu_bench_pts;
SELECT setseed(0.5);
CREATE TABLE gpu_bench_pts AS
    SELECT i::bigint AS id, ARRAY[-ln(1 - random()) / 40, -ln(1 - random()) / 40]::real[] AS vec
    FROM generate_series(1, 2000000) i;
ALTER TABLE gpu_bench_pts ADD PRIMARY KEY (id);
VACUUM ANALYZE gpu_bench_pts;
CREATE OR REPLACE FUNCTION pg_temp.ms(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN EXECUTE q; RETURN extract(epoch FROM clock_timestamp() - t0) * 1000; END $$;
SELECT 'pairs ' || count(*) FROM tc_selfjoin('gpu_bench_pts', 'vec', 0.0002);
SELECT 'device ' || device || ', load ' || round(load_ms) || ' ms, index ' || round(index_ms) ||
       ' ms, join+output ' || round(join_ms) || ' ms, output ' || round(output_ms) || ' ms'
  FROM tc_last_stats();
SELECT 'gpu tc_selfjoin ms ' || string_agg(round(pg_temp.ms($q$SELECT count(*) FROM tc_selfjoin('gpu_bench_pts', 'vec', 0.0002)$q$))::text, ' ') FROM generate_series(1, 3);
SET tcjoin.device = cpu;
SELECT 'cpu tc_selfjoin ms ' || string_agg(round(pg_temp.ms($q$SELECT count(*) FROM tc_selfjoin('gpu_bench_pts', 'vec', 0.0002)$q$))::text, ' ') FROM generate_series(1, 3);
SELECT 'floor read ms ' || string_agg(round(pg_temp.ms($q$SELECT count(vec) FROM gpu_bench_pts$q$))::text, ' ') FROM generate_series(1, 3);
SELECT 'floor emit ms ' || string_agg(round(pg_temp.ms(format($q$SELECT count(*) FROM generate_series(1, %s)$q$,
       (SELECT pairs FROM tc_last_stats()))))::text, ' ') FROM generate_series(1, 3);
DROP TABLE gpu_bench_pts;
SQL
fi 2>&1 | tee "$OUT/sql-bench.log"

if [ -n "$SWEEP" ]; then
    echo "== auto's choice below 12 dimensions against both engines"
    SWEEP_DIMS=${SWEEP_DIMS:-"6 8 10"} SWEEP_NS=${SWEEP_NS:-"300000 1000000 3000000"} \
        SWEEP_LIMIT=${SWEEP_LIMIT:-40} test/bench/auto-sweep 3
fi 2>&1 | tee "$OUT/auto-sweep.log"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
