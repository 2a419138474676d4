#!/usr/bin/env bash
# tc_join on the GPU, in one run on a GPU machine: pg_regress with
# tcjoin.device = gpu (the whole suite, crossmatch.sql included, against
# the CPU's expected files), the GPU-against-CPU comparison of two-set joins
# (gpu_vs_cpu --join-only), then the benchmarks: FP16 brute force of a
# corpus against queries beside cuBLAS (join_vs_gemm.sh) and the Tycho-2
# cross-match on the GPU beside reading both tables (crossmatch_vs_q3c.sh,
# TCJOIN_DATA with tycho2_1871011x3.f32).
#   test/gpu/two_sets.sh [--quick] [--no-bench]
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
QUICK= BENCH=1
for a in "$@"; do
    case $a in
        --quick) QUICK=--quick ;; --no-bench) BENCH= ;;
        *) echo "unknown option $a"; exit 2 ;;
    esac
done
OUT=${OUT:-/tmp/tcjoin-gpu-out}
mkdir -p "$OUT"
PASSED=0 FAILED=0
. test/gpu/lib.sh

# the build, the install and pg_regress with tcjoin.device = gpu (tensor cores on)
OUT=$OUT REGRESS_TC=${REGRESS_TC:-on} test/gpu/run.sh --no-stress --no-bench | tee "$OUT/regress-run.log"
add_counts "$OUT/regress-run.log"

echo "== two-set joins, GPU against CPU"
make -C test/bench USE_CUDA=1 GPU_VS_CPU="$OUT/gpu_vs_cpu" gpu_vs_cpu >"$OUT/gpu_vs_cpu-build.log" 2>&1 ||
    tail -20 "$OUT/gpu_vs_cpu-build.log"
timeout 300 "$OUT/gpu_vs_cpu" --join-only $QUICK | tee "$OUT/gpu_vs_cpu-join.log"
add_counts "$OUT/gpu_vs_cpu-join.log"

if [ -n "$BENCH" ]; then
    echo "== FP16 brute force, a corpus against queries, beside cuBLAS"
    if [ -n "$QUICK" ]; then
        timeout 200 test/bench/join_vs_gemm.sh 3 200000 128 1000 200000
    else
        timeout 300 test/bench/join_vs_gemm.sh 3
    fi
    echo "== Tycho-2 cross-match on the GPU"
    TCJOIN_DEVICE=${TCJOIN_DEVICE:-gpu} timeout 300 test/bench/crossmatch_vs_q3c.sh 3
fi 2>&1 | tee "$OUT/two-sets-bench.log"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
