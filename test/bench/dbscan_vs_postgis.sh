#!/usr/bin/env bash
# DBSCAN through SQL: tc_dbscan against PostGIS's ST_ClusterDBSCAN (where
# PostGIS is installed) and against its floors, in one session: N (default
# 1,000,000) 2-D points, blobs of about 50 points (sigma 0.15) around
# uniform centres in a 316 x 316 square plus 20% uniform noise, eps 0.3,
# min_points 5; medians of REPS (default 3) runs, in ms:
#   tc_dbscan                     one row a point
#   tc_count, tc_degrees          the pair count; one row a point
#   count(*) over tc_selfjoin     the pairs as rows, for comparison
#   floor: read                   SELECT sum(v[1]) FROM pts (every vector read)
#   floor: write                  count(*) over generate_series(1, N) (N rows)
#   ST_ClusterDBSCAN              a window function over the geometry column
# and the agreement: noise and core counts, and with PostGIS the rows that
# both call noise (border points may go to either of two clusters there).
# TCJOIN_DEVICE (default auto) is tcjoin.device.
#   test/bench/dbscan_vs_postgis.sh [REPS] [N]     (the extension installed;
#   KEEP_DB=1 keeps the database, TCJOIN_BENCH_DB)
# Not a test: the figures go to docs/.
set -uo pipefail
REPS=${1:-3}
N=${2:-1000000}
DB=${TCJOIN_BENCH_DB:-tcjoin_dbscan_bench}
DEVICE=${TCJOIN_DEVICE:-auto}
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh

fresh_db "$DB" || exit 1
HAVE_POSTGIS=$(q_db "$DB" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'postgis'")
q_db "$DB" <<SQL >/dev/null
SELECT setseed(0.5);
CREATE TABLE centres AS SELECT c, random() * 316 AS x, random() * 316 AS y FROM generate_series(0, ($N * 4 / 5) / 50) c;
CREATE TABLE pts (id bigint PRIMARY KEY, v real[]);
-- blobs: centre c of row i, plus a Gaussian step (Box-Muller); then 20% noise
INSERT INTO pts
  SELECT i, ARRAY[c.x + 0.15 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * r),
                  c.y + 0.15 * sqrt(-2 * ln(1 - random())) * sin(2 * pi() * r)]::real[]
    FROM (SELECT i, (i / 50) AS c, random() AS r FROM generate_series(1, $N * 4 / 5) i) s
    JOIN centres c USING (c);
INSERT INTO pts SELECT i, ARRAY[random() * 316, random() * 316]::real[]
  FROM generate_series($N * 4 / 5 + 1, $N) i;
VACUUM ANALYZE pts;
SQL
if [ "$HAVE_POSTGIS" = 1 ]; then
    q_db "$DB" >/dev/null <<'SQL'
CREATE EXTENSION postgis;
ALTER TABLE pts ADD COLUMN geom geometry(Point);
UPDATE pts SET geom = ST_MakePoint(v[1], v[2]);
VACUUM ANALYZE pts;
SQL
fi
create_runs_fn "$DB"
med() { echo "round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1)"; }
echo "$N clustered 2-D points, eps 0.3, min_points 5; tcjoin.device = $DEVICE; $(nproc) cores, medians of $REPS (ms); commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
q_db "$DB" -F ' ' <<SQL
SET tcjoin.device = $DEVICE;
SELECT 'tc_dbscan', $(med), (SELECT count(*) FROM tc_dbscan('pts', 'v', 0.3, 5))
  FROM runs(\$q\$SELECT count(*) FROM tc_dbscan('pts', 'v', 0.3, 5)\$q\$, $REPS) ms;
SELECT 'tc_count', $(med), (SELECT tc_count('pts', 'v', 0.3))
  FROM runs(\$q\$SELECT tc_count('pts', 'v', 0.3)\$q\$, $REPS) ms;
SELECT 'tc_degrees', $(med), (SELECT count(*) FROM tc_degrees('pts', 'v', 0.3))
  FROM runs(\$q\$SELECT count(*) FROM tc_degrees('pts', 'v', 0.3)\$q\$, $REPS) ms;
SELECT 'count(*)_over_tc_selfjoin', $(med), (SELECT count(*) FROM tc_selfjoin('pts', 'v', 0.3))
  FROM runs(\$q\$SELECT count(*) FROM tc_selfjoin('pts', 'v', 0.3)\$q\$, $REPS) ms;
SELECT 'floor_read', $(med), $N FROM runs(\$q\$SELECT sum(v[1]) FROM pts\$q\$, $REPS) ms;
SELECT 'floor_write', $(med), $N FROM runs(\$q\$SELECT count(*) FROM generate_series(1, $N)\$q\$, $REPS) ms;
CREATE TABLE tc AS SELECT * FROM tc_dbscan('pts', 'v', 0.3, 5);
SELECT 'tc_dbscan: clusters', count(DISTINCT cluster), 'noise', count(*) - count(cluster), 'core', count(*) FILTER (WHERE is_core) FROM tc;
SQL
if [ "$HAVE_POSTGIS" = 1 ]; then
    q_db "$DB" -F ' ' <<SQL
SELECT 'ST_ClusterDBSCAN', $(med), $N
  FROM runs(\$q\$SELECT count(c) FROM (SELECT ST_ClusterDBSCAN(geom, 0.3, 5) OVER () AS c FROM pts) s\$q\$, $REPS) ms;
CREATE TABLE pg AS SELECT id, ST_ClusterDBSCAN(geom, 0.3, 5) OVER () AS cluster FROM pts;
SELECT 'ST_ClusterDBSCAN: clusters', count(DISTINCT cluster), 'noise', count(*) - count(cluster) FROM pg;
SELECT 'noise in one only', count(*) FROM tc JOIN pg USING (id) WHERE (tc.cluster IS NULL) <> (pg.cluster IS NULL);
SQL
fi
[ -n "${KEEP_DB:-}" ] || q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
