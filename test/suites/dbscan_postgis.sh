#!/usr/bin/env bash
# tc_dbscan against PostGIS's ST_ClusterDBSCAN on 2-D points: fresh
# clusters, noise and duplicates, eps on a pair's own distance, min_points
# 1 to 9.  PostGIS measures a point pair as sqrt(dx * dx + dy * dy) in
# float8, the contract's sum for two dimensions, so both decide every pair
# alike: the same noise, and the same clusters of core points (a border
# point may go to any cluster whose core reaches it there).  Where PostGIS
# is not installed the suite says so and counts nothing.
#   test/suites/dbscan_postgis.sh   (the cluster up; TCJOIN_POSTGIS_CASES, default 4)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh
DB=tcjoin_dbscan_postgis
CASES=${TCJOIN_POSTGIS_CASES:-4}
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok     $1"; }
bad() { fail=$((fail + 1)); echo "FAILED $1"; }

if [ "$(q_db postgres -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'postgis'")" != 1 ]; then
    echo "PostGIS is not installed: skipped"
    echo "0 passed, 0 failed"
    exit 0
fi
fresh_db "$DB" || { echo "0 passed, 1 failed"; exit 1; }
q_db "$DB" -c "SET client_min_messages = warning; CREATE EXTENSION postgis" >/dev/null

for c in $(seq 1 "$CASES"); do
    n=$((3000 + 1500 * c))
    q_db "$DB" <<SQL >/dev/null
DROP TABLE IF EXISTS pts;
CREATE TABLE pts (id bigint PRIMARY KEY, v real[], g geometry(Point));
INSERT INTO pts (id, v)
  SELECT (i * 7919) % 1000003,
         CASE WHEN i % 6 = 0 THEN ARRAY[random() * 40, random() * 40]
              ELSE ARRAY[(i / 30) % 40 + random() * 0.4, (i / 1200) % 40 + random() * 0.4] END::real[]
    FROM generate_series(1, $n) i;
INSERT INTO pts (id, v) SELECT id + 1, v FROM pts WHERE id % 40 = 3;
UPDATE pts SET g = ST_MakePoint(v[1], v[2]);
DROP TABLE IF EXISTS pairs_eps;
CREATE TABLE pairs_eps (eps float8);
-- a pair's own distance: the 2,000th smallest among 2,000 sampled rows
INSERT INTO pairs_eps
  SELECT ST_Distance(a.g, b.g) FROM (SELECT * FROM pts ORDER BY id LIMIT 2000) a
    JOIN (SELECT * FROM pts ORDER BY id LIMIT 2000) b ON a.id < b.id
   ORDER BY ST_Distance(a.g, b.g) OFFSET 2000 LIMIT 1;
SQL
    eps=$(q_db "$DB" -c "SELECT eps FROM pairs_eps")
    for mp in 1 3 5 9; do
        r=$(q_db "$DB" -F ' ' <<SQL
CREATE TEMP TABLE tc AS SELECT * FROM tc_dbscan('pts', 'v', $eps, $mp);
CREATE TEMP TABLE pg AS SELECT id, ST_ClusterDBSCAN(g, $eps, $mp) OVER () AS cluster FROM pts;
SELECT (SELECT count(*) FROM tc JOIN pg USING (id) WHERE (tc.cluster IS NULL) <> (pg.cluster IS NULL)),
       (SELECT count(*) FROM (SELECT tc.cluster FROM tc JOIN pg USING (id) WHERE tc.is_core
                               GROUP BY tc.cluster HAVING count(DISTINCT pg.cluster) > 1) x) +
       (SELECT count(*) FROM (SELECT pg.cluster FROM tc JOIN pg USING (id) WHERE tc.is_core
                               GROUP BY pg.cluster HAVING count(DISTINCT tc.cluster) > 1) x),
       (SELECT count(DISTINCT cluster) FROM tc), (SELECT count(*) - count(cluster) FROM tc),
       (SELECT count(*) FROM tc);
SQL
)
        read -r noise_diff split clusters noise rows <<<"$r"
        name="case $c n=$rows eps=$eps min_points=$mp: $clusters clusters, $noise noise"
        if [ "$noise_diff" = 0 ] && [ "$split" = 0 ] && [ "$rows" -gt 0 ]; then ok "$name"
        else bad "$name: $noise_diff rows noise in one only, $split clusters of core rows split or merged"; fi
    done
done
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
