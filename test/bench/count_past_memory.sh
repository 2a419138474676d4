#!/usr/bin/env bash
# The graph functions where the pairs would not fit in memory: N (default
# 142,000) points in the unit square, eps 2, so every pair is within eps
# (N (N - 1) / 2 pairs: 10.08 billion at the default, 242 GB as pair rows).
# Each function in a fresh session: its time, the pairs its join counted,
# the backend's memory contexts after and its peak resident memory
# (VmHWM, shared buffers it touched included).  The pairs are folded as
# they come, never kept.  FUNCS picks the functions (default all):
#   count       tc_count
#   degrees     tc_degrees
#   components  tc_components
#   neighbors   tc_neighbors with k => 10
#   dbscan      tc_dbscan (min_points 5) on 4-D points in the unit cube,
#               where every pair is within eps too (the 2-D and 3-D grid
#               of cells visits no pair: it is not what is measured here)
#   test/bench/count_past_memory.sh [N]      (the extension installed)
# Not a test: the figures go to docs/.
set -uo pipefail
N=${1:-142000}
FUNCS=${FUNCS:-count degrees components neighbors dbscan}
DB=${TCJOIN_BENCH_DB:-tcjoin_past_memory}
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh

fresh_db "$DB" || exit 1
q_db "$DB" <<SQL >/dev/null || exit 1
CREATE TABLE big AS SELECT i::bigint AS id, ARRAY[random(), random()]::real[] AS v FROM generate_series(1, $N) i;
ALTER TABLE big ADD PRIMARY KEY (id);
CREATE TABLE big4 AS SELECT i::bigint AS id, ARRAY[random(), random(), random(), random()]::real[] AS v
  FROM generate_series(1, $N) i;
ALTER TABLE big4 ADD PRIMARY KEY (id);
VACUUM ANALYZE big, big4;
SQL

echo "$N points, eps 2: every one of $(awk -v n="$N" 'BEGIN { printf "%.0f", n * (n - 1) / 2 }') pairs within eps; $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
printf '%-12s %10s %14s %14s %16s %s\n' function seconds pairs contexts peak_resident answer
for f in $FUNCS; do
    case $f in
        count) q="SELECT tc_count('big', 'v', 2)::text" ;;
        degrees) q="SELECT count(*) || ' rows, degrees ' || min(degree) || '-' || max(degree) FROM tc_degrees('big', 'v', 2)" ;;
        components) q="SELECT count(DISTINCT component) || ' component(s)' FROM tc_components('big', 'v', 2)" ;;
        neighbors) q="SELECT count(*) || ' rows, ' || sum(cardinality(neighbor_ids)) || ' kept' FROM tc_neighbors('big', 'v', 2, k => 10)" ;;
        dbscan) q="SELECT count(DISTINCT cluster) || ' cluster(s), ' || count(*) FILTER (WHERE is_core) || ' cores' FROM tc_dbscan('big4', 'v', 2, 5)" ;;
        *) echo "count_past_memory: no function named $f" >&2; continue ;;
    esac
    # one session: the call timed, then what it left, and the backend's peak from /proc
    out=$(q_db "$DB" -F '|' <<SQL
SELECT pg_backend_pid() AS pid \\gset
SELECT extract(epoch FROM clock_timestamp())::text;
$q;
SELECT extract(epoch FROM clock_timestamp())::text;
SELECT coalesce(pairs::text, '-') FROM tc_last_stats();
SELECT pg_size_pretty(sum(total_bytes)) FROM pg_backend_memory_contexts;
\\setenv TC_PID :pid
\\! awk '/VmHWM/ { printf "%.0f MB\\n", \$2 / 1024 }' /proc/\$TC_PID/status
SQL
)
    t0=$(sed -n 1p <<<"$out") answer=$(sed -n 2p <<<"$out") t1=$(sed -n 3p <<<"$out")
    pairs=$(sed -n 4p <<<"$out") ctx=$(sed -n 5p <<<"$out") peak=$(sed -n 6p <<<"$out")
    printf '%-12s %10s %14s %14s %16s %s\n' "$f" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" \
        "${pairs:--}" "${ctx:--}" "${peak:--}" "$answer"
done
[ -n "${KEEP_DB:-}" ] || q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
