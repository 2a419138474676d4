#!/usr/bin/env bash
# The cosine join against pgvector's answer to the same question, a SQL
# self-join: N (default 10,000) unit vectors of D (default 384) dimensions
# as pgvector's vector, 5% of them near-duplicates of others, cosine
# distance within EPS (default 0.02).  The median of REPS (default 3) runs
# of each, in one session:
#   tc_selfjoin(..., EPS, metric => 'cosine') over the vector column,
#   the same over a real[] copy,
#   SELECT count(*) FROM t a JOIN t b ON a.id < b.id AND a.v <=> b.v <= EPS
# and both counts (pgvector computes in float4: near eps they may differ),
# then the phases of the last join over each column (tc_last_stats: reading
# the column, the index, the join and the output).  TCJOIN_DEVICE (default
# cpu) is tcjoin.device for the joins, TCJOIN_OVERRIDES (default none)
# tcjoin.dev_overrides (dot_filter=float32: the CPU's float32 filter in
# place of the int8 one); past 20,000 rows pgvector's self-join (n^2 / 2
# distance calls) is left out.
#   test/bench/cosine_vs_pgvector.sh [REPS] [N] [D] [EPS]   (needs pgvector
#                                                  and the extension installed)
# Not a test: the figures go to docs/.
set -uo pipefail
REPS=${1:-3}
N=${2:-10000}
D=${3:-384}
EPS=${4:-0.02}
DB=${TCJOIN_BENCH_DB:-tcjoin_cosine}
DEVICE=${TCJOIN_DEVICE:-cpu}
OVERRIDES=${TCJOIN_OVERRIDES:-}
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh

fresh_db "$DB" || exit 1
q_db "$DB" <<SQL >/dev/null
CREATE EXTENSION vector;
SELECT setseed(0.5);
CREATE TABLE g AS SELECT i AS id, (SELECT array_agg(random() - 0.5) FROM generate_series(1, $D) k WHERE i > 0) AS x
    FROM generate_series(1, $N) i;
-- 5%: a copy of the row before, nudged (lag: one pass, at any size)
CREATE TABLE g2 AS
  SELECT id, CASE WHEN id % 20 = 0
                  THEN (SELECT array_agg(y + (random() - 0.5) * 0.002 ORDER BY o) FROM unnest(px) WITH ORDINALITY AS u(y, o))
                  ELSE x END AS x
    FROM (SELECT id, x, lag(x) OVER (ORDER BY id) AS px FROM g) s;
-- the real[] copy in a table of its own: beside the vector, a row would pass
-- PostgreSQL's 2 kB TOAST threshold and one of the two would be moved out of line
CREATE TABLE t (id int PRIMARY KEY, v vector($D));
INSERT INTO t SELECT id, l2_normalize(x::real[]::vector) FROM g2;
CREATE TABLE tr (id int PRIMARY KEY, r real[]);
INSERT INTO tr SELECT id, v::real[] FROM t;
DROP TABLE g, g2;
VACUUM ANALYZE t, tr;
SQL
create_runs_fn "$DB"
echo "$N x $D unit vectors (5% near-duplicates), cosine distance <= $EPS; tcjoin.device = $DEVICE${OVERRIDES:+, tcjoin.dev_overrides = $OVERRIDES}; $(nproc) cores, medians of $REPS (ms); commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
PGVJ=
[ "$N" -le 20000 ] && PGVJ="SELECT 'pgvector_self_join', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
       (SELECT count(*) FROM t a JOIN t b ON a.id < b.id AND a.v <=> b.v <= $EPS)
  FROM runs(\$q\$SELECT count(*) FROM t a JOIN t b ON a.id < b.id AND a.v <=> b.v <= $EPS\$q\$, $REPS) ms;"
PHASES="SELECT col, device, method, filter, round(load_ms::numeric, 1) AS load_ms, round(index_ms::numeric, 1) AS index_ms,
       round(join_ms::numeric, 1) AS join_ms, round(output_ms::numeric, 1) AS output_ms FROM tc_last_stats()"
echo "(each join: name, median ms, rows; then per column: rows, and device, method, filter, load, index, join, output ms)"
q_db "$DB" -F ' ' <<SQL
SET tcjoin.device = $DEVICE;
SET tcjoin.dev_overrides = '$OVERRIDES';
SELECT 'tc_selfjoin(vector)', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
       (SELECT count(*) FROM tc_selfjoin('t', 'v', $EPS, metric => 'cosine'))
  FROM runs(\$q\$SELECT count(*) FROM tc_selfjoin('t', 'v', $EPS, metric => 'cosine')\$q\$, $REPS) ms;
SELECT 'tc_selfjoin(real[])', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
       (SELECT count(*) FROM tc_selfjoin('tr', 'r', $EPS, metric => 'cosine'))
  FROM runs(\$q\$SELECT count(*) FROM tc_selfjoin('tr', 'r', $EPS, metric => 'cosine')\$q\$, $REPS) ms;
$PGVJ
SELECT count(*) AS phases FROM tc_selfjoin('t', 'v', $EPS, metric => 'cosine');
$(echo "$PHASES" | sed "s/SELECT col,/SELECT 'vector' AS col,/");
SELECT count(*) AS phases FROM tc_selfjoin('tr', 'r', $EPS, metric => 'cosine');
$(echo "$PHASES" | sed "s/SELECT col,/SELECT 'real[]' AS col,/");
SQL
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
