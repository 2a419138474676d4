#!/usr/bin/env bash
# End-to-end demo: install prerequisites, build and install tcjoin, start a
# throwaway cluster, load 200 random 2-D points and run a similarity self-join.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build against PostgreSQL 15 even if other server-dev versions are installed.
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
# Installing writes to system directories: use sudo when not root.
install_ext() {
    if [ "$(id -u)" -eq 0 ]; then make install; else sudo make install PG_CONFIG="$PG_CONFIG"; fi
}

bash test/setup.sh
make
install_ext
bash test/cluster.sh start
eval "$(bash test/cluster.sh env)"

psql -X -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION IF NOT EXISTS tcjoin;

-- 200 points uniformly in a 10 x 10 square, so that eps 0.2 finds a screenful
-- of pairs. setseed makes the data (and results) repeatable; \gset only keeps
-- its empty result off the screen.
DROP TABLE IF EXISTS points;
CREATE TABLE points (id bigint PRIMARY KEY, vec real[]);
SELECT setseed(0.42) \gset
INSERT INTO points
SELECT g, ARRAY[10 * random(), 10 * random()]::real[] FROM generate_series(1, 200) AS g;
ANALYZE points;

\echo 'Pairs of points within distance 0.2:'
SELECT * FROM tc_selfjoin('points', 'vec', 0.2);
\echo 'What ran:'
SELECT method, grid_dims, n, d, candidates, pairs FROM tc_last_stats();
SQL
