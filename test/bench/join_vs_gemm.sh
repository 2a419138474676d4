#!/usr/bin/env bash
# A join of two sets on the GPU against the GEMM of its shape: for M query
# points against a corpus of N points in D dimensions (default: 10,000 and
# 1,000,000 queries against 1,000,000 x 128), the engine's exact FP16
# brute force (tcbench --queries M --device gpu --method brute; auto takes
# the same from 12 dimensions) beside cuBLAS's M x N x D FP16 GEMM with
# FP32 output (gemm_floor --rect), which computes every dot product and
# keeps none.  Uniform points (GEN, default uniform: tcbench --gen), the
# queries drawn with the corpus; eps for about NEIGHBOURS (default 64)
# matches in the corpus per query, sampled (CALIBRATE=1: refined by whole
# joins, within 2% of M x NEIGHBOURS pairs).  Pairs go to a sink in host
# memory that counts them (SINK, default count: tcbench --sink).
# Medians of REPS (default 5) runs: the join phase's and the GEMM's seconds,
# their ratio (GEMM / join phase: above 1, the join beats the GEMM), the
# pairs, and the engine's whole run (index and upload included).
#   test/bench/join_vs_gemm.sh [REPS] [N] [D] [M ...]
#   test/bench/join_vs_gemm.sh 3 100000 128 1000 100000     (a quick run)
# With SQL=1, also tc_join(..., method => 'brute') through SQL on the same
# points under tcjoin.device = gpu (the extension installed and a server:
# PGHOST etc., or test/cluster.sh): loading a million rows takes minutes.
# Builds tcbench and gemm_floor (make -C test/bench USE_CUDA=1; needs
# nvcc).  Not a test: it prints a table.
set -uo pipefail
REPS=${1:-5}
N=${2:-1000000}
D=${3:-128}
shift $(($# < 3 ? $# : 3))
if [ $# -gt 0 ]; then QUERIES=("$@"); else QUERIES=(10000 1000000); fi
K=${NEIGHBOURS:-64}
GEN=${GEN:-uniform}
SINK=${SINK:-count}
cd "$(dirname "$0")/../.." || exit 1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Rebuilt every time: a tcbench built without USE_CUDA looks up to date.
rm -f test/bench/tcbench
make -s -C test/bench USE_CUDA=1 tcbench gemm_floor >&2 || {
    echo "join_vs_gemm: the build failed (USE_CUDA=1 needs nvcc)" >&2
    exit 1
}

# The median of the numbers on stdin, one a line.
median() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "-"; exit }
        print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

if [ "${SQL:-0}" = 1 ]; then
    [ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
    . test/stress/lib.sh
    DB=${TCJOIN_BENCH_DB:-tcjoin_join_vs_gemm}
    if ! { fresh_db "$DB" && create_runs_fn "$DB"; }; then
        echo "join_vs_gemm: no server or no extension: SQL rows left out" >&2
        SQL=0
    fi
fi

# Rows [FIRST, FIRST + COUNT) of a raw float32 file of D columns as CSV
# (id from 1, a real[] literal): float32 values printed as doubles, which
# read back into real exactly.
to_csv() {
    /usr/bin/python3 - "$1" "$D" "$2" "$3" <<'PY'
import array, sys
path, d, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
a = array.array('f')
with open(path, 'rb') as f:
    f.seek(4 * d * first)
    a.frombytes(f.read(4 * d * count))
out = sys.stdout
for i in range(count):
    out.write('%d,"{%s}"\n' % (i + 1, ','.join(map(repr, a[i * d:(i + 1) * d]))))
PY
}

GPU=-
CORPUS_LOADED=0
ROWS=("M|N|D|join phase s|GEMM s|GEMM / join|pairs|pairs a query|engine s|method|tc|eps|status")
for M in "${QUERIES[@]}"; do
    # eps first, printed as the runs take it, so that SQL's rows join at the same eps
    args=(--gen "$GEN" --n "$N" --d "$D" --queries "$M" --device gpu --method brute --exact on)
    calibrate=()
    [ "${CALIBRATE:-0}" = 1 ] && calibrate=(--calibrate)
    eps=$(test/bench/tcbench "${args[@]}" --neighbours "$K" "${calibrate[@]}" --eps-only 2>"$WORK/tcbench.err")
    line=
    [ -n "$eps" ] && line=$(test/bench/tcbench "${args[@]}" --eps "$eps" --sink "$SINK" --reps "$REPS" --csv \
                                2>>"$WORK/tcbench.err" | tail -1)
    if [ -z "$line" ]; then
        echo "join_vs_gemm: tcbench failed at M=$M:" >&2
        cat "$WORK/tcbench.err" >&2
        ROWS+=("$M|$N|$D|-|-|-|-|-|-|-|-|-|tcbench failed")
        continue
    fi
    IFS=, read -r _ _ _ _ _ _ method _ _ wall _ _ _ _ _ pairs _ _ _ _ _ _ tc status _ _ _ _ _ join_med _ <<<"$line"
    : >"$WORK/gemm.err"
    for _ in $(seq "$REPS"); do
        test/bench/gemm_floor --rect "$M" "$N" "$D" 2>>"$WORK/gemm.err"
    done >"$WORK/gemm.csv"
    gemm=$(cut -d, -f5 "$WORK/gemm.csv" | median)
    if [ -s "$WORK/gemm.csv" ]; then
        GPU=$(tail -1 "$WORK/gemm.csv" | cut -d, -f8-)
    else
        echo "join_vs_gemm: gemm_floor failed at M=$M:" >&2
        cat "$WORK/gemm.err" >&2
    fi
    ratio=$(awk -v g="$gemm" -v j="$join_med" 'BEGIN { if (g + 0 > 0 && j + 0 > 0) printf "%.2f", g / j; else print "-" }')
    per=$(awk -v p="$pairs" -v m="$M" 'BEGIN { printf "%.1f", p / m }')
    ROWS+=("$M|$N|$D|$join_med|$gemm|$ratio|$pairs|$per|$wall|$method|$tc|$eps|$status")

    if [ "${SQL:-0}" = 1 ]; then
        # The same points: the corpus, the same for every M, then the queries.
        test/bench/tcbench --gen "$GEN" --n "$N" --d "$D" --queries "$M" --write "$WORK/pts.f32"
        if [ "$CORPUS_LOADED" = 0 ]; then
            q_db "$DB" -c "CREATE TABLE corpus (id bigint PRIMARY KEY, vec real[])" >/dev/null
            to_csv "$WORK/pts.f32" 0 "$N" | q_db "$DB" -c "COPY corpus FROM STDIN (FORMAT csv)"
            q_db "$DB" -c "VACUUM ANALYZE corpus" >/dev/null
            CORPUS_LOADED=1
        fi
        q_db "$DB" -c "SET client_min_messages = warning; DROP TABLE IF EXISTS queries; CREATE TABLE queries (id bigint PRIMARY KEY, vec real[])" >/dev/null
        to_csv "$WORK/pts.f32" "$N" "$M" | q_db "$DB" -c "COPY queries FROM STDIN (FORMAT csv)"
        q_db "$DB" -c "VACUUM ANALYZE queries" >/dev/null
        sql=$(q_db "$DB" -F '|' <<SQL
SET tcjoin.device = gpu;
SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) / 1000)::numeric, 6)
  FROM runs(\$q\$SELECT count(*) FROM tc_join('queries', 'vec', 'corpus', 'vec', $eps, method => 'brute')\$q\$, $REPS) ms;
SELECT count(*) FROM tc_join('queries', 'vec', 'corpus', 'vec', $eps, method => 'brute');
SELECT round((join_ms / 1000)::numeric, 6), method, tensor_cores FROM tc_last_stats();
SQL
        )
        if [ -n "$sql" ]; then
            { read -r sql_s; read -r sql_pairs; IFS='|' read -r sql_join sql_method sql_tc; } <<<"$sql"
            sql_ratio=$(awk -v g="$gemm" -v j="$sql_join" 'BEGIN { if (g + 0 > 0 && j + 0 > 0) printf "%.2f", g / j; else print "-" }')
            ROWS+=("$M (SQL)|$N|$D|$sql_join|$gemm|$sql_ratio|$sql_pairs|-|$sql_s|$sql_method|$sql_tc|$eps|tc_join through SQL")
        else
            ROWS+=("$M (SQL)|$N|$D|-|-|-|-|-|-|-|-|$eps|failed")
        fi
    fi
done

echo "Two sets on the GPU: M queries against N $GEN points in D dimensions, eps for about $K matches a query;"
echo "tcbench --queries (exact FP16 brute force, sink $SINK) against cuBLAS FP16 GEMM (FP32 out) of M x N x D; $GPU"
echo "medians of $REPS runs (s); engine: the whole run, index and upload included; commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
[ "${SQL:-0}" = 1 ] && echo "(SQL) rows: tc_join's join phase from tc_last_stats() after the last run; engine: the whole query, median"
echo
printf '%s\n' "${ROWS[@]}" | test/bench/table
[ "${SQL:-0}" = 1 ] && q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
exit 0
