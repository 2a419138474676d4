#!/usr/bin/env bash
# Every figure docs/performance.md and the README quote, measured again by
# the commands they cite, one after the other (so that no two compete for
# the machine), each command echoed above its output with the time it took.
#   test/bench/figures.sh PART [OUTDIR]
# PART:
#   cpu         the 2-core machine's figures (rows, load, cube + GiST, DBSCAN
#               against PostGIS, Q3C, pgvector, the k nearest, counts past
#               memory, the CPU suite's table and plots into OUTDIR/suite)
#   gpu-sql     the GPU machine through PostgreSQL: first joins and auto,
#               load, rows, Tycho-2 cross-match
#   gpu-graphs  the same: the graph functions, the k nearest against a
#               window function, cosine over pgvector
#   gpu-engine  the GPU machine's engine alone (FP16 brute force against
#               cuBLAS, the grid, real data, two sets, cosine, streamed)
# OUTDIR (default /tmp/tcjoin-figures) gets one log a command.  Each command
# runs under FIGURES_LIMIT seconds (default 300) so that one slow command
# cannot take the rest's time, and where FIGURES_UNTIL is set (seconds since
# the epoch) no later than then: what is left is skipped, and said.  Needs
# the extension installed and a server (test/cluster.sh where PGPORT is
# unset); the GPU parts a GPU and nvcc; real data in TCJOIN_DATA (default
# .data), skipped where missing.
# Not a test: the figures go to docs/performance.md.
set -uo pipefail
PART=${1:?usage: figures.sh cpu|gpu-sql|gpu-graphs|gpu-engine [OUTDIR]}
OUT=${2:-/tmp/tcjoin-figures}
LIMIT=${FIGURES_LIMIT:-300}
DATA=${TCJOIN_DATA:-.data}
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
mkdir -p "$OUT"
echo "figures $PART: $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo none), $(date -u +%F)"

n=0
# fig CMD...: run one command (a shell line), its output to a log and here
fig() {
    n=$((n + 1))
    local log t0 rc lim=$LIMIT
    if [ -n "${FIGURES_UNTIL:-}" ]; then
        lim=$((FIGURES_UNTIL - $(date +%s)))
        [ "$lim" -gt "$LIMIT" ] && lim=$LIMIT
        if [ "$lim" -lt 10 ]; then
            echo; echo "\$ $*"; echo "[$PART: skipped, out of time]"; return
        fi
    fi
    log=$OUT/$(printf '%02d' $n)-$(echo "$*" | tr -c 'A-Za-z0-9' _ | cut -c1-60).log
    echo
    echo "\$ $*"
    t0=$(date +%s.%N)
    timeout "$lim" bash -c "$*" >"$log" 2>&1
    rc=$?
    cat "$log"
    printf '[%s: rc %d, %s s]\n' "$PART" $rc "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')"
}

case $PART in
cpu)
    fig test/bench/rows_floor.sh 3
    fig KEEP_DB=1 test/bench/load_floor.sh 5
    fig test/bench/cpu_vs_sql.sh 200000 0.004 7
    fig test/bench/dbscan_vs_postgis.sh 5 1000000
    fig TCJOIN_DATA=$DATA test/bench/crossmatch_vs_q3c.sh 5
    fig test/bench/neighbors_vs_window.sh 3 200000 10
    fig test/bench/cosine_vs_pgvector.sh 5 10000
    fig test/bench/cosine_vs_pgvector.sh 3 20000
    fig "make -s -C test/bench sgemm_floor tcbench && test/bench/sgemm_floor 10000 384 5 && test/bench/sgemm_floor 20000 384 5"
    fig test/bench/tcbench --gen neardup --n 20000 --d 384 --eps 0.02 --metric cosine --method brute --reps 5
    [ -e "$DATA/fmnist_70000x784.f32" ] && fig test/bench/cosine_real.sh "$DATA/fmnist_70000x784.f32" 10000 0.02 3
    fig test/bench/count_past_memory.sh
    LIMIT=900 fig test/bench/run --out "$OUT/suite"
    ;;
gpu-sql)
    fig FIRST_JOIN_MAX_HD=100000 test/bench/first_join.sh 3
    fig KEEP_DB=1 test/bench/load_floor.sh 5
    fig DEVICE=gpu test/bench/rows_floor.sh 3
    fig TCJOIN_DATA=$DATA TCJOIN_DEVICE=gpu test/bench/crossmatch_vs_q3c.sh 3
    ;;
gpu-graphs)
    fig psql -X -q -A -F "' '" -t -d postgres -f test/bench/sql/graphs_expo2m.sql
    fig TCJOIN_DEVICE=gpu test/bench/neighbors_vs_window.sh 3 200000 10
    fig TCJOIN_DEVICE=gpu test/bench/cosine_vs_pgvector.sh 3 1000000 384 0.02
    ;;
gpu-engine)
    make -s -C test/bench USE_CUDA=1 tcbench gemm_floor copy_floor >/dev/null || exit 1
    test/bench/unpack-data "$DATA"
    B=test/bench/tcbench
    fig $B --gen gauss --n 1000000 --d 128 --neighbours 64 --calibrate --method brute --device gpu --sink count --reps 5
    fig EXACT=on REPS=5 ROUNDS=3 VARIANTS=default test/bench/lab/recheck-variants 100000:4096
    fig EXACT=on REPS=5 VARIANTS=default test/bench/lab/recheck-variants 100000:128 100000:512 100000:960 100000:1024 200000:384
    fig $B --gen gauss --n 1000000 --d 128 --neighbours 64 --calibrate --method brute --device gpu --sink count --reps 3 --gpu-memory 1024
    if [ -e "$DATA/fmnist_70000x784.f32" ]; then
        fig test/bench/gemm_floor 70000 784
        fig $B --file "$DATA/fmnist_70000x784.f32" --d 784 --neighbours 64 --calibrate --method brute --device gpu --exact on --sink count --reps 5
    fi
    fig test/bench/copy_floor
    for eps in 0.0002 0.0005; do
        fig $B --gen expo --n 2000000 --d 2 --eps $eps --device gpu --tensor-cores off --sink count --reps 5
        fig $B --gen expo --n 2000000 --d 2 --eps $eps --device gpu --sink sum --reps 3
    done
    fig $B --gen expo --n 2000000 --d 2 --eps 0.0002 --device cpu --sink count --reps 3
    [ -e "$DATA/tycho2_1871011x3.f32" ] && for dev in gpu cpu; do
        fig $B --file "$DATA/tycho2_1871011x3.f32" --d 3 --neighbours 64 --device $dev --sink count --reps 3
    done
    fig test/bench/join_vs_gemm.sh 3
    fig "test/bench/gemm_floor 1000000 384; $B --gen neardup --n 1000000 --d 384 --metric cosine --eps 0.02 --method brute --device gpu --sink count --reps 3; $B --gen neardup --n 1000000 --d 384 --metric inner_product --eps -0.98 --method brute --device gpu --sink count --reps 3"
    fig $B --gen uniform --n 1000000 --d 128 --neighbours 64 --device gpu --sink count --reps 3
    fig $B --gen uniform --n 1000000 --d 128 --neighbours 64 --device gpu --sink fold --reps 3
    ;;
*)
    echo "unknown part $PART"; exit 2 ;;
esac
echo
echo "figures $PART: done, $n commands"
