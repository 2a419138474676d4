#!/usr/bin/env bash
# The cosine join on a real point set against pgvector's SQL self-join:
# the first N rows of FILE (raw little-endian float32, N_total x D in its
# name, as test/bench/unpack-data and the data fetch write them) as
# pgvector's vector and as real[], then the median of REPS runs of
#   tc_selfjoin(..., EPS, metric => 'cosine') over each column, and
#   SELECT count(*) FROM t a JOIN t b ON a.id < b.id AND a.v <=> b.v <= EPS
# (one run: it is the slow side), with both counts.
#   test/bench/cosine_real.sh FILE N EPS [REPS]   (needs pgvector, the
#                                                  extension and a server)
# Not a test: the figures go to docs/.
set -uo pipefail
FILE=${1:?usage: cosine_real.sh FILE N EPS [REPS]}
N=${2:?}
EPS=${3:?}
REPS=${4:-3}
DB=${TCJOIN_BENCH_DB:-tcjoin_cosine_real}
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh
D=$(basename "$FILE" .f32 | sed 's/.*x//')
CSV=$(mktemp)
trap 'rm -f "$CSV"' EXIT
python3 - "$FILE" "$N" "$D" "$CSV" <<'PY'
import struct, sys
path, n, d, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with open(path, 'rb') as f, open(out, 'w') as o:
    for i in range(n):
        row = struct.unpack('<%df' % d, f.read(4 * d))
        o.write('%d\t[%s]\n' % (i + 1, ','.join(repr(x) for x in row)))
PY
fresh_db "$DB" || exit 1
q_db "$DB" >/dev/null <<SQL
CREATE EXTENSION vector;
CREATE TABLE t (id int PRIMARY KEY, v vector($D), r real[]);
\\copy t (id, v) FROM '$CSV'
UPDATE t SET r = v::real[];
VACUUM ANALYZE t;
SQL
create_runs_fn "$DB"
echo "$(basename "$FILE"), first $N rows, cosine distance <= $EPS; $(nproc) cores, ms (tc_selfjoin: median of $REPS); commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
q_db "$DB" -F ' ' <<SQL
SET tcjoin.device = cpu;
SELECT 'tc_selfjoin(vector)', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
       (SELECT count(*) FROM tc_selfjoin('t', 'v', $EPS, metric => 'cosine'))
  FROM runs(\$q\$SELECT count(*) FROM tc_selfjoin('t', 'v', $EPS, metric => 'cosine')\$q\$, $REPS) ms;
SELECT 'tc_selfjoin(real[])', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
       (SELECT count(*) FROM tc_selfjoin('t', 'r', $EPS, metric => 'cosine'))
  FROM runs(\$q\$SELECT count(*) FROM tc_selfjoin('t', 'r', $EPS, metric => 'cosine')\$q\$, $REPS) ms;
SELECT 'filter', filter, candidates, rechecked FROM tc_last_stats();
CREATE TEMP TABLE pv AS SELECT * FROM runs(\$q\$SELECT count(*) FROM t a JOIN t b ON a.id < b.id AND a.v <=> b.v <= $EPS\$q\$, 1) ms;
SELECT 'pgvector_self_join', round((SELECT ms FROM pv)::numeric, 1),
       (SELECT count(*) FROM t a JOIN t b ON a.id < b.id AND a.v <=> b.v <= $EPS);
SQL
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
