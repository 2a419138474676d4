#!/usr/bin/env bash
# One join on several GPUs (tcjoin.devices): the engine alone (tcbench, no
# PostgreSQL) on 1, 2, 4 and 8 GPUs, as many as the machine has
# (--devices 0, 0,1, 0,1,2,3, ...), for three joins:
#   - FP16 brute force, 100,000 x 4,096 Gaussian points;
#   - FP16 brute force, 1,000,000 x 128 Gaussian points;
#   - the grid, 2,000,000 exponential 2-D points (rate 40), eps 0.0002;
#   - streamed: FP16 brute force, 2,000,000 x 128 Gaussian points with
#     1 GB of GPU memory a join (--gpu-memory), so that each GPU holds only
#     the two blocks it joins (the path for sets past one GPU's memory);
#   - big: FP16 brute force, BIG_N (default 4,000,000) x 128 Gaussian
#     points at brute128's eps (so about 4 x 64 neighbours a point at
#     4,000,000): the largest set the benchmark's time allows, not the
#     largest the host holds (a join of that takes hours).
# The brute-force joins' eps gives about NEIGHBOURS (default 64) neighbours
# a point, counted by whole joins on one GPU (tcbench --calibrate) and
# shared by every run of the join.  Pairs go to a sink in host memory that
# counts them (SINK, default count: tcbench --sink; the override
# split=all keeps every listed GPU in the join, as the estimates would for
# these sizes), so that handing the
# pairs over does not hide the join phase.  Medians of REPS (default 3)
# runs: the join phase (tcbench's join_med_s: the part split across the
# GPUs), its speedup over one GPU and the efficiency (speedup / GPUs), the
# whole run (index and upload included), and how the work was split (each
# GPU's share, from the median run).  On a machine of one GPU the same
# joins run with --devices 0,0 too: one GPU named twice, the several-GPU
# path's split and merge on one card, which shows their overhead, not a
# speedup.  Every run of a join must give the same pairs: a count unlike
# one GPU's is marked in the table.
#   test/bench/multi_gpu.sh [REPS]
#   CASES="grid2" test/bench/multi_gpu.sh 5     (one join; names below)
# Builds tcbench with CUDA (make -C test/bench USE_CUDA=1; needs nvcc),
# unless TCBENCH names one already built (to compare two commits' in one
# run: TCBENCH=/path/to/tcbench test/bench/multi_gpu.sh).
# Not a test: it prints a table.  A dry run of the script without a GPU:
# USE_CUDA=0 DEVICE=cpu CASES=grid2 test/bench/multi_gpu.sh 1 (the CPU
# ignores the lists).
set -uo pipefail
REPS=${1:-3}
K=${NEIGHBOURS:-64}
SINK=${SINK:-count}
CASES=${CASES:-brute4096 brute128 grid2 streamed big}
DEVICE=${DEVICE:-gpu}
cd "$(dirname "$0")/../.." || exit 1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Rebuilt every time: a tcbench built without USE_CUDA looks up to date.
# TCBENCH: a tcbench already built (another commit's, to compare in one run)
B=${TCBENCH:-test/bench/tcbench}
if [ -z "${TCBENCH:-}" ]; then
    rm -f test/bench/tcbench
    make -s -C test/bench USE_CUDA="${USE_CUDA:-1}" tcbench >&2 || {
        echo "multi_gpu: the build failed (USE_CUDA=1 needs nvcc)" >&2
        exit 1
    }
fi

NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
# The lists: the first 1, 2, 4, 8 GPUs the machine has; "0,0" on one GPU.
LISTS=()
for g in 1 2 4 8; do
    [ "$g" -le "$NGPU" ] || break
    LISTS+=("$(seq -s, 0 $((g - 1)))")
done
[ "$NGPU" -le 1 ] && LISTS+=("0,0")

# A join's tcbench arguments, without eps.
case_args() {
    case $1 in
        brute4096) echo "--gen gauss --n 100000 --d 4096 --method brute --device $DEVICE" ;;
        brute128)  echo "--gen gauss --n 1000000 --d 128 --method brute --device $DEVICE" ;;
        grid2)     echo "--gen expo --n 2000000 --d 2 --method grid --device $DEVICE" ;;
        streamed)  echo "--gen gauss --n 2000000 --d 128 --method brute --gpu-memory 1024 --device $DEVICE" ;;
        big)       echo "--gen gauss --n ${BIG_N:-4000000} --d 128 --method brute --device $DEVICE" ;;
        *)         return 1 ;;
    esac
}

EPS128=''
ROWS=("case|devices|GPUs|join phase s|speedup|efficiency|end to end s|pairs|shares|status")
for c in $CASES; do
    if ! args=$(case_args "$c"); then
        echo "multi_gpu: no join named $c (brute4096, brute128, grid2)" >&2
        continue
    fi
    if [ "$c" = grid2 ]; then
        eps=0.0002
    elif [ "$c" = big ] || [ "$c" = streamed ]; then
        # brute128's eps (more neighbours at more points), calibrated here if it did not run
        if [ -z "${EPS128:-}" ]; then
            # shellcheck disable=SC2086
            EPS128=$($B $(case_args brute128) --devices 0 --neighbours "$K" --calibrate --eps-only \
                         2>"$WORK/calibrate.err")
        fi
        eps=$EPS128
        if [ -z "$eps" ]; then
            echo "multi_gpu: $c: calibrating eps failed:" >&2
            cat "$WORK/calibrate.err" >&2
            ROWS+=("$c|-|-|-|-|-|-|-|-|calibration failed")
            continue
        fi
    else
        # calibrated on one GPU: the same eps for every list
        # shellcheck disable=SC2086
        eps=$($B $args --devices 0 --neighbours "$K" --calibrate --eps-only 2>"$WORK/calibrate.err")
        if [ -z "$eps" ]; then
            echo "multi_gpu: $c: calibrating eps failed:" >&2
            cat "$WORK/calibrate.err" >&2
            ROWS+=("$c|-|-|-|-|-|-|-|-|calibration failed")
            continue
        fi
        [ "$c" = brute128 ] && EPS128=$eps
    fi
    echo "# $c: $args --eps $eps" >&2
    base='' base_pairs=''
    for list in "${LISTS[@]}"; do
        # GPUs: the cards (0,0 is one); listed: the entries, each of which runs a part
        gpus=$(tr , '\n' <<<"$list" | sort -u | wc -l)
        listed=$(awk -F, '{ print NF }' <<<"$list")
        label=$c
        [ "$list" = 0,0 ] && label="$c (one GPU named twice)"
        # shellcheck disable=SC2086
        line=$(timeout 900 $B $args --eps "$eps" --devices "$list" --override split=all --sink "$SINK" --reps "$REPS" --csv \
                   2>"$WORK/run.err" | tail -1)
        IFS=, read -r _ _ _ _ _ _ _ _ _ wall _ _ _ _ _ pairs _ _ _ _ _ _ _ status _ _ _ _ _ \
            join_med _ ran _ shares _ <<<"$line"
        if [ -z "$line" ] || [ "${status:-}" != ok ]; then
            echo "multi_gpu: $c on $list failed:" >&2
            tail -5 "$WORK/run.err" >&2
            ROWS+=("$label|$list|$gpus|-|-|-|-|-|-|${status:-tcbench failed}")
            continue
        fi
        # one GPU's join phase is the baseline of the speedups
        if [ "$list" = 0 ]; then
            base=$join_med base_pairs=$pairs
        fi
        speedup=$(awk -v b="$base" -v j="$join_med" 'BEGIN { if (b + 0 > 0 && j + 0 > 0) printf "%.2f", b / j; else print "-" }')
        eff=$(awk -v s="$speedup" -v g="$gpus" 'BEGIN { if (s + 0 > 0) printf "%.0f%%", 100 * s / g; else print "-" }')
        # one GPU named twice: the speedup column is the split's cost, no efficiency
        [ "$list" = 0,0 ] && eff=-
        note=$status
        [ "$ran" != "$listed" ] && note="$note; $ran GPUs ran, $listed listed"
        [ -n "$base_pairs" ] && [ "$pairs" != "$base_pairs" ] && note="$note; pairs unlike one GPU's ($base_pairs)"
        ROWS+=("$label|$list|$gpus|$join_med|$speedup|$eff|$wall|$pairs|${shares//;/ }|$note")
    done
done

echo "One join on several GPUs: tcbench --devices (the engine alone), sink $SINK; medians of $REPS runs (s)"
echo "GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd, -)"
echo "join phase: tcbench's join_med_s (split across the GPUs); end to end: the whole run, index and upload included"
echo "speedup: one GPU's join phase over this one's; efficiency: speedup / GPUs; shares: each GPU's part of the work"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
echo
printf '%s\n' "${ROWS[@]}" | test/bench/table
exit 0
