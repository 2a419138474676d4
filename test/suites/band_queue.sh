#!/usr/bin/env bash
# The several-GPU queue of bands (cuda/runtime/join_state.h: queue_band,
# open_band, claim_band_units) under 1 to 16 threads on the host, no GPU
# needed: test/gpu/band_queue.cu, compiled with nvcc (host code only) and
# run for 200 rounds of random bands, pauses and thread counts; every
# entry taken once and every band opened once.  Without nvcc it says so
# and counts nothing.  Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=$(command -v nvcc 2>/dev/null || { [ -x "$CUDA_HOME/bin/nvcc" ] && echo "$CUDA_HOME/bin/nvcc"; })
if [ -z "$NVCC" ]; then
    echo "band_queue: no nvcc, not built"
    echo "0 passed, 0 failed"
    exit 0
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if ! "$NVCC" -O2 -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra \
        -Isrc/engine -Isrc/common -Icuda/common -Icuda/runtime \
        -o "$WORK/band_queue" test/gpu/band_queue.cu >"$WORK/build.log" 2>&1; then
    cat "$WORK/build.log"
    echo "0 passed, 1 failed"
    exit 1
fi
"$WORK/band_queue" --rounds "${BAND_QUEUE_ROUNDS:-200}"
