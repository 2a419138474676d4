#!/usr/bin/env bash
# pgvector's vector and halfvec columns as input, against the plain SQL
# reference and against real[] and double precision[] columns holding the
# same values: for random shapes (short values, whose varlena header is one
# byte, and values stored out of line), each join's rows must equal the
# reference's, dist bit for bit, whatever the column's type; tc_join across
# types; cosine and the inner product against the plain SQL contract and
# against pgvector's own operators; a domain over vector; pgvector created
# in a schema of its own; and the errors (sparsevec, mixed dimensions).  pgvector is optional: where it
# is not installed the suite says so and counts nothing.
#   test/suites/pgvector.sh      (the cluster up; TCJOIN_PGV_CASES, default 8)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh
DB=tcjoin_pgvector
CASES=${TCJOIN_PGV_CASES:-8}
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok     $1"; }
bad() { fail=$((fail + 1)); echo "FAILED $1"; }

if [ "$(q_db postgres -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")" != 1 ]; then
    echo "pgvector is not installed: skipped"
    echo "0 passed, 0 failed"
    exit 0
fi
fresh_db "$DB" || { echo "0 passed, 1 failed"; exit 1; }
q_db "$DB" <<'SQL' >/dev/null
CREATE SCHEMA pgv;
CREATE EXTENSION vector SCHEMA pgv;
-- the contract's distance of two real[] in float8, summed in index order
CREATE FUNCTION ref_dist(a real[], b real[]) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
    SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8) ORDER BY i))
      FROM unnest(a, b) WITH ORDINALITY AS u(x, y, i)
$$;
SQL

# One shape: n points of d dimensions, values rounded to halfvec first so
# that every column holds exactly the same numbers.
run_case() {
    local n=$1 d=$2 seed=$3
    local out
    out=$(q_db "$DB" -F ' ' 2>&1 <<SQL
SET extra_float_digits = 3;
SELECT setseed($seed);
DROP TABLE IF EXISTS p, q;
CREATE TABLE p (id bigint PRIMARY KEY, h pgv.halfvec, v pgv.vector, r real[], f float8[]);
INSERT INTO p (id, h)
    SELECT i, (SELECT array_agg(round((random() * 2 - 1)::numeric, 2)::real) FROM generate_series(1, $d) k WHERE i > 0)::pgv.halfvec
      FROM generate_series(1, $n) i;
UPDATE p SET r = h::real[];
UPDATE p SET v = r::pgv.vector, f = r::float8[];
-- a NULL vector is left out, as for arrays
INSERT INTO p VALUES ($n + 1, NULL, NULL, NULL, NULL);
ANALYZE p;
CREATE TEMP TABLE ref AS
    SELECT a.id AS id_a, b.id AS id_b, ref_dist(a.r, b.r) AS dist
      FROM p a JOIN p b ON a.id < b.id WHERE a.r IS NOT NULL AND b.r IS NOT NULL;
-- eps: a pair's own distance, so that a pair lies exactly on it
SELECT dist AS eps FROM ref ORDER BY dist OFFSET (SELECT count(*) / 50 FROM ref) LIMIT 1 \\gset
CREATE TEMP TABLE want AS SELECT * FROM ref WHERE dist <= :eps;
CREATE FUNCTION pg_temp.got(col text, e float8) RETURNS TABLE (id_a bigint, id_b bigint, dist float8)
    LANGUAGE sql AS \$\$ SELECT least(id_a, id_b), greatest(id_a, id_b), dist FROM tc_selfjoin('p', col, e) \$\$;
SELECT 'rows', (SELECT count(*) FROM want);
SELECT 'col', c,
       (SELECT count(*) FROM (SELECT * FROM pg_temp.got(c, :eps) EXCEPT ALL TABLE want) x),
       (SELECT count(*) FROM (TABLE want EXCEPT ALL SELECT * FROM pg_temp.got(c, :eps)) x)
  FROM unnest(ARRAY['h', 'v', 'r', 'f']) c;
-- the next float8 below eps drops the pairs exactly on it, on every type
SELECT 'below', c,
       (SELECT count(*) FROM pg_temp.got(c, :eps * (1 - 2::float8 ^ -53))) =
       (SELECT count(*) FROM want WHERE dist < :eps)
  FROM unnest(ARRAY['h', 'v']) c;
-- tc_join across types: vector with real[], halfvec with float8[]
CREATE TABLE q AS SELECT id, v, h, r, f FROM p WHERE id % 3 = 0;
ALTER TABLE q ADD PRIMARY KEY (id);
SELECT 'cross', (SELECT count(*) FROM tc_join('p', 'v', 'q', 'r', :eps)) =
                (SELECT count(*) FROM p a JOIN q b ON ref_dist(a.r, b.r) <= :eps),
                (SELECT count(*) FROM tc_join('q', 'h', 'p', 'f', :eps)) =
                (SELECT count(*) FROM q a JOIN p b ON ref_dist(a.r, b.r) <= :eps);
SQL
)
    local rows col_ok=0 col_bad="" c extra missing
    rows=$(awk '$1 == "rows" { print $2 }' <<<"$out")
    while read -r _ c extra missing; do
        if [ "$extra" = 0 ] && [ "$missing" = 0 ]; then col_ok=$((col_ok + 1))
        else col_bad="$col_bad $c: $extra extra, $missing missing;"; fi
    done < <(awk '$1 == "col"' <<<"$out")
    if [ "$col_ok" = 4 ] && [ -n "$rows" ]; then ok "$n x $d: $rows rows from halfvec, vector, real[] and float8[], each the reference's, dist bit for bit"
    else bad "$n x $d:$col_bad $(grep -m3 ERROR <<<"$out")"; fi
    if [ "$(awk '$1 == "below" && $3 == "t"' <<<"$out" | wc -l)" = 2 ]; then ok "$n x $d: eps one float8 below a pair's distance drops it (halfvec, vector)"
    else bad "$n x $d: below eps: $(awk '$1 == "below"' <<<"$out" | tr '\n' ' ') $(grep -m3 ERROR <<<"$out")"; fi
    if [ "$(awk '$1 == "cross" { print $2, $3 }' <<<"$out")" = "t t" ]; then ok "$n x $d: tc_join of vector with real[] and of halfvec with float8[]"
    else bad "$n x $d: tc_join across types: $(awk '$1 == "cross"' <<<"$out") $(grep -m3 ERROR <<<"$out")"; fi
}

# d 20: 88-byte values, stored with a one-byte header; d 700: 2.8 kB, out of line
shapes=("300 2" "250 3" "200 20" "150 64" "80 700")
for ((c = 0; c < CASES; c++)); do
    read -r n d <<<"${shapes[$((c % ${#shapes[@]}))]}"
    run_case "$n" "$d" "0.$((RANDOM % 9000 + 1000))"
done

# Cosine and the inner product on vector and halfvec columns: against the
# plain SQL contract (dist bit for bit), and against pgvector's own <=> and
# <#> (float4 arithmetic) on the pairs whose distance is not within 1e-5 of
# eps, where both must decide alike.
run_metric_case() {
    local n=$1 d=$2 seed=$3
    local out
    out=$(q_db "$DB" -F ' ' 2>&1 <<SQL
SELECT setseed($seed);
DROP TABLE IF EXISTS m;
CREATE TABLE m (id bigint PRIMARY KEY, h pgv.halfvec, v pgv.vector, f float8[]);
INSERT INTO m (id, h)
    SELECT i, (SELECT array_agg(round((random() * 2 - 1)::numeric, 2)::real) FROM generate_series(1, $d) k WHERE i > 0)::pgv.halfvec
      FROM generate_series(1, $n) i;
UPDATE m SET v = h::real[]::pgv.vector, f = h::real[]::float8[];
CREATE TEMP TABLE ref AS
    SELECT mt, a.id AS id_a, b.id AS id_b,
           CASE mt WHEN 'inner_product' THEN -dot
                   ELSE 1 - greatest(-1::float8, least(1::float8, dot / sqrt(na * nb))) END AS dist,
           CASE mt WHEN 'inner_product' THEN (a.v OPERATOR(pgv.<#>) b.v)
                   ELSE (a.v OPERATOR(pgv.<=>) b.v) END AS pgv_dist
      FROM m a JOIN m b ON a.id < b.id,
           LATERAL (SELECT sum(x * y ORDER BY i) AS dot, sum(x * x ORDER BY i) AS na, sum(y * y ORDER BY i) AS nb
                      FROM unnest(a.f, b.f) WITH ORDINALITY AS u(x, y, i)) s,
           unnest(ARRAY['cosine', 'inner_product']) mt;
CREATE TEMP TABLE e AS SELECT mt, (SELECT dist FROM ref r WHERE r.mt = x.mt ORDER BY dist OFFSET 25 LIMIT 1) AS eps
    FROM (VALUES ('cosine'), ('inner_product')) x(mt);
SELECT 'metric', e.mt, c,
       (SELECT count(*) FROM (SELECT least(id_a, id_b), greatest(id_a, id_b), dist FROM tc_selfjoin('m', c, e.eps, metric => e.mt)
                              EXCEPT ALL SELECT id_a, id_b, dist FROM ref r WHERE r.mt = e.mt AND r.dist <= e.eps) x),
       (SELECT count(*) FROM (SELECT id_a, id_b, dist FROM ref r WHERE r.mt = e.mt AND r.dist <= e.eps
                              EXCEPT ALL SELECT least(id_a, id_b), greatest(id_a, id_b), dist FROM tc_selfjoin('m', c, e.eps, metric => e.mt)) x)
  FROM e, unnest(ARRAY['h', 'v', 'f']::name[]) c;
SELECT 'pgvector', e.mt,
       (SELECT count(*) FROM ref r WHERE r.mt = e.mt AND abs(r.pgv_dist - e.eps) > 1e-5 AND
               (r.pgv_dist <= e.eps) <> (r.dist <= e.eps)),
       (SELECT count(*) FROM ref r WHERE r.mt = e.mt AND abs(r.pgv_dist - e.eps) <= 1e-5)
  FROM e;
SQL
)
    local good=0 bad_lines=""
    while read -r _ mt c extra missing; do
        if [ "$extra" = 0 ] && [ "$missing" = 0 ]; then good=$((good + 1))
        else bad_lines="$bad_lines $mt/$c: $extra extra, $missing missing;"; fi
    done < <(awk '$1 == "metric"' <<<"$out")
    if [ "$good" = 6 ]; then ok "$n x $d: cosine and inner product on halfvec, vector and float8[], each the reference's, dist bit for bit"
    else bad "$n x $d metrics:$bad_lines $(grep -m3 ERROR <<<"$out")"; fi
    if [ "$(awk '$1 == "pgvector" && $3 == 0' <<<"$out" | wc -l)" = 2 ]; then
        ok "$n x $d: pgvector's <=> and <#> decide alike away from eps ($(awk '$1 == "pgvector" { printf "%s: %s near eps; ", $2, $4 }' <<<"$out"))"
    else bad "$n x $d: against pgvector's operators: $(awk '$1 == "pgvector"' <<<"$out" | tr '\n' ' ') $(grep -m3 ERROR <<<"$out")"; fi
}
run_metric_case 200 16 0.31
run_metric_case 60 700 0.32

# A domain over vector, and the errors, each statement on its own.
q_db "$DB" >/dev/null <<'SQL'
CREATE DOMAIN emb AS pgv.vector;
CREATE TABLE dv (id int PRIMARY KEY, e emb, s pgv.sparsevec, m pgv.vector);
INSERT INTO dv VALUES (1, '[0,0,0]', '{1:1}/3', '[1,2,3]'), (2, '[0,0,1]', '{2:1}/3', '[1,2]'),
                      (3, '[5,5,5]', '{3:1}/3', '[1,2,3]');
SQL
out=$(for stmt in "SELECT 'domain', count(*) FROM tc_selfjoin('dv', 'e', 1.0)" \
                  "SELECT * FROM tc_selfjoin('dv', 's', 1.0)" \
                  "SELECT * FROM tc_selfjoin('dv', 'm', 1.0)" \
                  "SELECT * FROM tc_join('dv', 'e', 'p', 'v', 1.0)"; do
          q_db "$DB" -c "$stmt" 2>&1
      done)
grep -q "^domain|1$" <<<"$out" && ok "a domain over vector: 1 pair, as the reference" || bad "domain over vector: $out"
grep -q 'column "s" must be of type real\[\], double precision\[\], vector or halfvec, not pgv.sparsevec' <<<"$out" &&
    ok "sparsevec: the error names the accepted types" || bad "sparsevec: $out"
grep -q 'Row with id 2 has 2 dimensions; the rows before it have 3' <<<"$out" &&
    ok "vectors of mixed dimensions in one column: the error" || bad "mixed dimensions: $out"
grep -q 'Vectors of relation "dv" have 3 dimensions, those of relation "p" have' <<<"$out" &&
    ok "tc_join of 3-D vector with another dimension: the error" || bad "tc_join dimensions: $out"

q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
