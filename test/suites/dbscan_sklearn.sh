#!/usr/bin/env bash
# tc_dbscan against scikit-learn's DBSCAN on the same points, and
# tc_components against a union-find written here: fresh random clusters,
# noise and duplicates in 2 and 8 dimensions, eps on a pair's own distance
# and min_points from 1 up.  scikit-learn is given the distance matrix
# computed by the contract (float8, index order, then the root), so that
# both decide every pair alike.  Core flags and noise must be identical,
# and the clusters identical once the border rule (a border point joins
# its nearest core neighbour's cluster, ties by the smaller id) is applied
# to scikit-learn's core points, which assigns border points in its own
# order.  Where scikit-learn is not installed the suite says so and counts
# nothing.
#   test/suites/dbscan_sklearn.sh   (the cluster up; TCJOIN_DBSCAN_CASES, default 6)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh
DB=tcjoin_dbscan
CASES=${TCJOIN_DBSCAN_CASES:-6}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Debian's python3, where its python3-sklearn is (another python3 may come first on PATH)
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

if ! $PY -c 'import numpy, sklearn' 2>/dev/null; then
    echo "scikit-learn is not installed: skipped"
    echo "0 passed, 0 failed"
    exit 0
fi
fresh_db "$DB" || { echo "0 passed, 1 failed"; exit 1; }

for c in $(seq 1 "$CASES"); do
    d=$(( c % 2 == 0 ? 8 : 2 ))
    n=$(( 600 + 250 * (c % 3) ))
    # clusters of about 40 points, 15% uniform noise, 2% exact duplicates; ids shuffled
    q_db "$DB" <<SQL >/dev/null
DROP TABLE IF EXISTS pts;
CREATE TABLE pts (id bigint PRIMARY KEY, v real[]);
INSERT INTO pts
  SELECT (i * 7919) % 1000003, (SELECT array_agg(0 * k + CASE WHEN i % 7 = 0 THEN random() * 6
                                                          ELSE (i / 40) % 5 + random() * 0.25 END)
                                   FROM generate_series(1, $d) k)
    FROM generate_series(1, $n) i;
INSERT INTO pts SELECT id + 1, v FROM pts WHERE id % 50 = 3;
SQL
    q_db "$DB" -c "COPY (SELECT id, v::float8[] FROM pts ORDER BY id) TO STDOUT" >"$WORK/pts.tsv"
    # the contract's distance matrix (float8, index order, then the root), kept
    # for every min_points; eps a pair's own distance near the 1.5% quantile
    eps=$($PY - "$WORK/pts.tsv" "$WORK" <<'PY'
import sys, numpy as np
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1])]
X = np.array([[float(t) for t in r[1].strip('{}').split(',')] for r in rows])
s = np.zeros((len(X), len(X)))
for k in range(X.shape[1]):
    t = X[:, None, k] - X[None, :, k]
    s = s + t * t
D = np.sqrt(s)
np.save(sys.argv[2] + '/D.npy', D)
np.save(sys.argv[2] + '/ids.npy', np.array([int(r[0]) for r in rows]))
iu = np.triu_indices(len(X), 1)
print(repr(float(np.sort(D[iu])[int(len(iu[0]) * 0.015)])))
PY
)
    for mp in 1 4 9; do
        q_db "$DB" -c "COPY (SELECT id, coalesce(cluster, -1), is_core FROM tc_dbscan('pts', 'v', $eps, $mp) ORDER BY id) TO STDOUT" \
            >"$WORK/tc.tsv"
        # the components once a case, with the first min_points
        compf=-
        if [ "$mp" = 1 ]; then
            compf=$WORK/comp.tsv
            q_db "$DB" -c "COPY (SELECT id, component FROM tc_components('pts', 'v', $eps) ORDER BY id) TO STDOUT" \
                >"$compf"
        fi
        $PY - "$WORK" "$WORK/tc.tsv" "$compf" "$eps" "$mp" "case $c d=$d n=$(wc -l <"$WORK/pts.tsv") eps=$eps min_points=$mp" <<'PY'
import sys, numpy as np
from sklearn.cluster import DBSCAN
work, tcf, compf, eps, mp, name = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
D = np.load(work + '/D.npy')
ids = np.load(work + '/ids.npy')
n = len(D)
sk = DBSCAN(eps=eps, min_samples=mp, metric='precomputed').fit(D)
core = np.zeros(n, bool)
core[sk.core_sample_indices_] = True
lab = sk.labels_.copy()
A = (D <= eps) & ~np.eye(n, dtype=bool)
# the border rule on scikit-learn's cores: the nearest core neighbour, ties by the smaller id
for i in np.where(~core)[0]:
    nb = [j for j in np.where(A[i])[0] if core[j]]
    lab[i] = min(nb, key=lambda j: (D[i, j], ids[j])) if nb else -1
    if nb:
        lab[i] = sk.labels_[lab[i]]
# clusters numbered by their smallest member id
first = {}
for i in np.argsort(ids):
    if lab[i] >= 0 and lab[i] not in first:
        first[lab[i]] = len(first)
want = {int(ids[i]): (first[lab[i]] if lab[i] >= 0 else -1, bool(core[i])) for i in range(n)}
got = {}
for l in open(tcf):
    a, b, c = l.rstrip('\n').split('\t')
    got[int(a)] = (int(b), c == 't')
bad = [i for i in want if got.get(i) != want[i]]
print(("ok     " if not bad and len(got) == len(want) else "FAILED ") +
      f"dbscan {name}: {len(first)} clusters, {int((lab < 0).sum())} noise, {int(core.sum())} core; {len(bad)} rows differ")
# components (with the first min_points): a union-find over the same edges, named by the smallest id
if compf != '-':
    parent = list(range(n))
    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for i, j in zip(*np.where(np.triu(A, 1))):
        parent[find(i)] = find(j)
    mins = {}
    for i in range(n):
        r = find(i)
        mins[r] = min(mins.get(r, ids[i]), ids[i])
    cwant = {int(ids[i]): int(mins[find(i)]) for i in range(n)}
    cgot = {int(l.split('\t')[0]): int(l.split('\t')[1]) for l in open(compf)}
    cbad = [i for i in cwant if cgot.get(i) != cwant[i]]
    print(("ok     " if not cbad and len(cgot) == len(cwant) else "FAILED ") +
          f"components {name}: {len(set(cwant.values()))} components; {len(cbad)} rows differ")
PY
    done
done | tee "$WORK/log"
pass=$(grep -c '^ok ' "$WORK/log")
fail=$(grep -c '^FAILED' "$WORK/log")
[ $((pass + fail)) -eq 0 ] && fail=1
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
