#!/usr/bin/env bash
# tc_count where the pairs would not fit in memory: N (default 142,000)
# points in the unit square, eps 2, so every pair is within eps (N (N - 1) /
# 2 pairs: 10.08 billion at the default, 242 GB as pair rows); the time, and
# the backend's memory contexts after.  The pairs are counted as they come,
# never kept.
#   test/bench/count_past_memory.sh [N]      (the extension installed)
# Not a test: the figures go to docs/.
set -uo pipefail
N=${1:-142000}
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
psql -X -q -A -t -v ON_ERROR_STOP=1 -d postgres <<SQL
CREATE TEMP TABLE big AS SELECT i::bigint AS id, ARRAY[random(), random()]::real[] AS v FROM generate_series(1, $N) i;
ALTER TABLE big ADD PRIMARY KEY (id);
\\timing on
SELECT tc_count('big', 'v', 2) AS pairs;
\\timing off
SELECT 'device ' || device || ', method ' || method || ', join ' || round(join_ms) || ' ms' FROM tc_last_stats();
SELECT 'memory contexts after: ' || pg_size_pretty(sum(total_bytes)) FROM pg_backend_memory_contexts;
SQL
