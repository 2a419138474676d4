#!/usr/bin/env bash
# Each row's k nearest neighbours within eps, two ways, in one session:
# tc_neighbors(..., k => K) against tc_selfjoin's pairs in both directions
# ranked by a window function (row_number() over each row's neighbours by
# dist, then id) and aggregated into the same arrays.  N (default 200,000)
# uniform 2-D points in the unit square, eps for about 20 neighbours a row,
# K (default 10); medians of REPS (default 3), in ms, and whether the two
# answers agree row for row.  TCJOIN_DEVICE (default auto) is tcjoin.device.
#   test/bench/neighbors_vs_window.sh [REPS] [N] [K]   (the extension installed)
# Not a test: the figures go to docs/.
set -uo pipefail
REPS=${1:-3}
N=${2:-200000}
K=${3:-10}
DB=${TCJOIN_BENCH_DB:-tcjoin_neighbors_bench}
DEVICE=${TCJOIN_DEVICE:-auto}
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh

fresh_db "$DB" || exit 1
# eps: 20 neighbours a row on average, pi eps^2 N = 20
EPS=$(awk -v n="$N" 'BEGIN { printf "%.10g", sqrt(20 / (3.141592653589793 * n)) }')
q_db "$DB" <<SQL >/dev/null
SELECT setseed(0.5);
CREATE TABLE pts AS SELECT i::bigint AS id, ARRAY[random(), random()]::real[] AS v FROM generate_series(1, $N) i;
ALTER TABLE pts ADD PRIMARY KEY (id);
VACUUM ANALYZE pts;
CREATE VIEW windowed AS
  SELECT id, array_agg(nb ORDER BY r) AS neighbor_ids, array_agg(dist ORDER BY r) AS dists
    FROM (SELECT id, nb, dist, row_number() OVER (PARTITION BY id ORDER BY dist, nb) AS r
            FROM (SELECT x.id, x.nb, p.dist FROM tc_selfjoin('pts', 'v', $EPS) p,
                         LATERAL (VALUES (p.id_a, p.id_b), (p.id_b, p.id_a)) AS x(id, nb)) e) s
   WHERE r <= $K GROUP BY id;
SQL
create_runs_fn "$DB"
med() { echo "round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1)"; }
echo "$N uniform 2-D points, eps $EPS (about 20 neighbours a row), k $K; tcjoin.device = $DEVICE; $(nproc) cores, medians of $REPS (ms); commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
q_db "$DB" -F ' ' <<SQL
SET tcjoin.device = $DEVICE;
SELECT 'tc_neighbors', $(med) FROM runs(\$q\$SELECT count(*) FROM tc_neighbors('pts', 'v', $EPS, $K)\$q\$, $REPS) ms;
SELECT 'tc_selfjoin_and_window', $(med) FROM runs(\$q\$SELECT count(*) FROM windowed\$q\$, $REPS) ms;
-- rows with no neighbour have empty arrays in tc_neighbors and no row in the window's answer
SELECT 'rows_that_differ', count(*) FROM (
  (SELECT * FROM tc_neighbors('pts', 'v', $EPS, $K) WHERE cardinality(neighbor_ids) > 0 EXCEPT SELECT * FROM windowed)
  UNION ALL
  (SELECT * FROM windowed EXCEPT SELECT * FROM tc_neighbors('pts', 'v', $EPS, $K))) x;
SQL
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
