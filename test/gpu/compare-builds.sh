#!/usr/bin/env bash
# Two builds of the engine side by side on a GPU, in one run: the key
# figures, each in fresh processes, the builds' order alternating round by
# round, with the ceilings measured in the same run (cuBLAS's FP16 GEMM of
# the same n x n x d shape for brute force, the host link's copy rate for
# the grid join).
#   test/gpu/compare-builds.sh BASE_TCBENCH [NEW_TCBENCH]
# NEW_TCBENCH defaults to test/bench/tcbench, built here.  ROUNDS (default
# 3), REPS a process (default 3).  Prints each round's line, then per
# figure and build the medians over the rounds and new / base.
# Figures: FP16 brute force at 100,000 x 4,096 and 1,000,000 x 128 (64
# neighbours a point, exact; eps calibrated once with the new build and
# shared), the join phase against cuBLAS and the whole join; the GPU grid
# at 2,000,000 exponential 2-D points, eps 0.0002 (about 100 million pairs).
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${1:?usage: test/gpu/compare-builds.sh BASE_TCBENCH [NEW_TCBENCH]}
NEW=${2:-}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-3}
if [ -z "$NEW" ]; then
    if [ -f .device/pg-up.sh ] && ! command -v pg_config >/dev/null; then
        . .device/pg-up.sh .device/pg15-portable.tar.xz >/dev/null
    fi
    make -j"$(nproc)" USE_CUDA=1 >/dev/null
    rm -f test/bench/tcbench
    make -C test/bench USE_CUDA=1 tcbench >/dev/null
    NEW=test/bench/tcbench
fi
make -C test/bench gemm_floor copy_floor >/dev/null
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# One figure: name, the ceiling's seconds (0: none), tcbench's arguments.
# A line per build to the log: figure build round join_s wall_s ratio
run_figure() {
    local fig=$1 ceil=$2 round=$3
    shift 3
    local order="base new"
    [ $((round % 2)) -eq 0 ] && order="new base"
    for b in $order; do
        local bin=$BASE
        [ "$b" = new ] && bin=$NEW
        # columns (tcbench.c): 10 wall_med_s, 16 pairs, 18 join_s
        "$bin" "$@" --reps "$REPS" --csv 2>/dev/null | tail -1 |
            awk -F, -v f="$fig" -v b="$b" -v r="$round" -v c="$ceil" '{
                ratio = (c > 0 && $18 > 0) ? c / $18 : 0
                printf "%-22s %-5s %5d %10.4f %10.4f %8.2f %12d\n", f, b, r, $18, $10, ratio, $16
                printf "%s %s %s %s %s\n", f, b, $18, $10, ratio >> "/dev/stderr"
            }' 2>>"$log"
    done
}

B4096="--gen gauss --n 100000 --d 4096 --method brute --device gpu --sink count"
B128="--gen gauss --n 1000000 --d 128 --method brute --device gpu --sink count"
G2="--gen expo --n 2000000 --d 2 --eps 0.0002 --device gpu --sink count"
E4096=$("$NEW" $B4096 --neighbours 64 --calibrate --eps-only)
E128=$("$NEW" $B128 --neighbours 64 --calibrate --eps-only)
echo "eps: 100000 x 4096 $E4096, 1000000 x 128 $E128"
echo "copy floor (d2h chunked, d2h large, h2d GB/s, gpu): $(test/bench/copy_floor)"
printf '%-22s %-5s %5s %10s %10s %8s %12s\n' figure build round "join s" "wall s" "x cuBLAS" pairs
for ((round = 1; round <= ROUNDS; round++)); do
    IFS=, read -r _ _ _ g4096 _ _ _ < <(test/bench/gemm_floor 100000 4096)
    IFS=, read -r _ _ _ g128 _ _ _ < <(test/bench/gemm_floor 1000000 128)
    printf '%-22s %-5s %5d %10.4f\n' "cuBLAS 100000x4096" - "$round" "$g4096"
    printf '%-22s %-5s %5d %10.4f\n' "cuBLAS 1000000x128" - "$round" "$g128"
    run_figure brute-100000x4096 "$g4096" "$round" $B4096 --eps "$E4096"
    run_figure brute-1000000x128 "$g128" "$round" $B128 --eps "$E128"
    run_figure grid-2000000x2-expo 0 "$round" $G2
done
echo "# medians over $ROUNDS rounds (x cuBLAS: the median of each round's ratio); new / base of the medians"
awk '{ k = $1 " " $2; n[k]++; j[k, n[k]] = $3; w[k, n[k]] = $4; x[k, n[k]] = $5; figs[$1] = 1 }
     function med(a, k,    m, i, v, c, lo, t) {
         m = n[k]
         for (i = 1; i <= m; i++) v[i] = a[k, i]
         for (i = 2; i <= m; i++) { c = v[i]; lo = i - 1; while (lo >= 1 && v[lo] > c) { v[lo + 1] = v[lo]; lo-- } v[lo + 1] = c }
         return (v[int((m + 1) / 2)] + v[int((m + 2) / 2)]) / 2
     }
     END {
         printf "%-22s %10s %10s %8s %10s %10s %8s %9s %9s\n", "figure", "base join", "base wall", "base x", "new join", "new wall", "new x", "join n/b", "wall n/b"
         for (f in figs) {
             bj = med(j, f " base"); bw = med(w, f " base"); bx = med(x, f " base")
             nj = med(j, f " new"); nw = med(w, f " new"); nx = med(x, f " new")
             printf "%-22s %10.4f %10.4f %8.2f %10.4f %10.4f %8.2f %9.3f %9.3f\n", f, bj, bw, bx, nj, nw, nx, nj / bj, nw / bw
         }
     }' "$log"
