#!/usr/bin/env bash
# Cross-matching two sky catalogues within a radius, two ways, in one
# session: tc_join on the CPU (every pair, and with k => 1 each star's best
# match), and on the GPU where there is one, against Q3C's q3c_join over its
# index (every pair, and the nearest by the LATERAL ... ORDER BY q3c_dist
# LIMIT 1 idiom), beside a floor: reading both tables' vector columns in
# plain SQL (SELECT sum(xyz[1]) of each), each method's median as a
# multiple of the floor's (x floor).  The Tycho-2
# catalogue (TCJOIN_DATA, default .data, tycho2_1871011x3.f32: fetch it
# with  bash ../shared/datasets/fetch.sh .data) as right ascension and
# declination, against a copy with every other star moved by 1.5
# arcseconds at a random position angle; radius 2 arcseconds.  Medians of
# REPS (default 3), in ms, with the rows each returned and how many pairs
# the two disagree on.  N (default all) takes the first N stars.
# The GPU rows (tcjoin.device = gpu, with the pairs they and the CPU's
# disagree on) run where TCJOIN_DEVICE includes gpu (cpu,gpu or gpu), or
# where it is unset and tc_devices() lists a GPU; TCJOIN_DEVICE=cpu leaves
# them out.  The CPU rows run always.
#   test/bench/crossmatch_vs_q3c.sh [REPS] [N]
# Needs the extensions tcjoin and q3c (Debian: postgresql-15-q3c) in the
# server; without q3c the Q3C rows are left out.  KEEP_DB=1 keeps the
# database (TCJOIN_BENCH_DB) for a look at tc_last_stats() after.  Not a test: it prints a
# table.
set -uo pipefail
REPS=${1:-3}
N=${2:-0}
DB=${TCJOIN_BENCH_DB:-tcjoin_q3c_bench}
RADIUS=2
cd "$(dirname "$0")/../.." || exit 1
DATA=${TCJOIN_DATA:-.data}/tycho2_1871011x3.f32
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh

if [ ! -r "$DATA" ]; then
    echo "crossmatch_vs_q3c: $DATA is missing (bash ../shared/datasets/fetch.sh .data fetches it)" >&2
    exit 1
fi
fresh_db "$DB" || exit 1
HAVE_Q3C=$(q_db "$DB" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'q3c'")
[ "$HAVE_Q3C" = 1 ] && q_db "$DB" -c "CREATE EXTENSION q3c" >/dev/null || HAVE_Q3C=0

# The stars' float32 unit vectors as CSV rows (id, x, y, z), ids from 1.
q_db "$DB" -c "CREATE TABLE stars (id bigint, x float8, y float8, z float8)" >/dev/null
/usr/bin/python3 - "$DATA" "$N" <<'PY' | q_db "$DB" -c "COPY stars FROM STDIN (FORMAT csv)" || exit 1
import array, sys
a = array.array('f')
with open(sys.argv[1], 'rb') as f:
    a.frombytes(f.read())
n = len(a) // 3 if int(sys.argv[2]) <= 0 else min(int(sys.argv[2]), len(a) // 3)
out = sys.stdout
for i in range(n):
    out.write('%d,%r,%r,%r\n' % (i + 1, a[3 * i], a[3 * i + 1], a[3 * i + 2]))
PY

# Both catalogues as right ascension and declination in degrees (so that
# both methods see the same positions), with the unit vectors tc_join takes
# as generated columns.  The copy's moved stars: small-angle steps, over the
# pole where one crosses it.
q_db "$DB" >/dev/null <<SQL || exit 1
SELECT setseed(0.5);
CREATE TABLE cat_a (id bigint PRIMARY KEY, ra float8, dec float8,
                    xyz float8[] GENERATED ALWAYS AS (tc_radec_to_xyz(ra, dec)) STORED);
INSERT INTO cat_a (id, ra, dec)
  SELECT id, CASE WHEN r < 0 THEN r + 360 ELSE r END, degrees(atan2(z, sqrt(x * x + y * y)))
    FROM (SELECT id, x, y, z, degrees(atan2(y, x)) AS r FROM stars) s;
DROP TABLE stars;
CREATE TABLE cat_b (id bigint PRIMARY KEY, ra float8, dec float8,
                    xyz float8[] GENERATED ALWAYS AS (tc_radec_to_xyz(ra, dec)) STORED);
INSERT INTO cat_b (id, ra, dec)
  SELECT id, CASE WHEN abs(d) > 90 THEN r + 180 ELSE r END - 360 * floor(CASE WHEN abs(d) > 90 THEN r + 180 ELSE r END / 360),
         CASE WHEN d > 90 THEN 180 - d WHEN d < -90 THEN -180 - d ELSE d END
    FROM (SELECT id, ra + m * 1.5 / 3600 * sin(pa) / greatest(cosd(dec), 1e-9) AS r, dec + m * 1.5 / 3600 * cos(pa) AS d
            FROM (SELECT id, ra, dec, (id % 2 = 0)::int AS m, random() * 2 * pi() AS pa FROM cat_a) s) t;
VACUUM ANALYZE cat_a;
VACUUM ANALYZE cat_b;
SQL
create_runs_fn "$DB"

# The GPU rows: asked for, or unasked where the server sees a GPU.
GPUS=$(q_db "$DB" -c "SELECT count(*) FROM tc_devices()" 2>/dev/null || echo 0)
case ${TCJOIN_DEVICE:-} in
    *gpu*) GPU_ROWS=1 ;;
    "") [ "$GPUS" -gt 0 ] 2>/dev/null && GPU_ROWS=1 || GPU_ROWS=0 ;;
    *) GPU_ROWS=0 ;;
esac
DEVICES="tcjoin.device = cpu"
[ "$GPU_ROWS" = 1 ] && DEVICES="$DEVICES and gpu ($(q_db "$DB" -c "SELECT coalesce(string_agg(name, ', '), 'none listed') FROM tc_devices()"))"

med() { echo "round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1)"; }
ROWS=$(q_db "$DB" -c "SELECT count(*) FROM cat_a")
# The floor: both tables' vector columns read in plain SQL.
FLOOR_Q='SELECT (SELECT sum(xyz[1]) FROM cat_a) + (SELECT sum(xyz[1]) FROM cat_b)'
FLOOR=$(q_db "$DB" -c "SELECT $(med) FROM runs(\$q\$$FLOOR_Q\$q\$, $REPS) ms")
echo "Tycho-2: $ROWS stars against a copy with every other star moved 1.5 arcsec; radius $RADIUS arcsec;"
echo "$DEVICES; $(nproc) cores; medians of $REPS (ms); x floor: the median over the floor's;"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
echo
{
    echo "what|ms|rows"
    echo "floor: reading cat_a.xyz and cat_b.xyz (sum(xyz[1]))|$FLOOR|"
    q_db "$DB" -F '|' <<SQL
SET tcjoin.device = cpu;
SELECT 'tc_join (every pair)', $(med), (SELECT count(*) FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS)))
  FROM runs(\$q\$SELECT count(*) FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS))\$q\$, $REPS) ms;
SELECT 'tc_join on the CPU, the last run: load ' || round(load_ms::numeric, 1) || ', index ' ||
       round(index_ms::numeric, 1) || ', join ' || round(join_ms::numeric, 1) || ', output ' ||
       round(output_ms::numeric, 1) || ', the function in all ' || round(total_ms::numeric, 1) || ' ms',
       NULL, NULL FROM tc_last_stats();
SELECT 'tc_join, k => 1 (best match)', $(med), (SELECT count(*) FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS), k => 1))
  FROM runs(\$q\$SELECT count(*) FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS), k => 1)\$q\$, $REPS) ms;
SQL
    if [ "$GPU_ROWS" = 1 ] && [ "$GPUS" = 0 ]; then
        echo "tc_join on the GPU|no GPU (tc_devices() lists none)|"
    elif [ "$GPU_ROWS" = 1 ]; then
        # A join before the timed ones: the session's first GPU join sets up the context.
        q_db "$DB" -F '|' <<SQL
SET tcjoin.device = cpu;
CREATE TEMP TABLE cpu_pairs AS SELECT id_a, id_b FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS));
SET tcjoin.device = gpu;
DO \$\$ BEGIN PERFORM count(*) FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS)); END \$\$;
SELECT 'tc_join on the GPU (every pair)', $(med), (SELECT count(*) FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS)))
  FROM runs(\$q\$SELECT count(*) FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS))\$q\$, $REPS) ms;
SELECT 'tc_join on the GPU, the last run: ' || device || ', ' || method || ', ' || coalesce(gpus, 0) || ' GPU(s), load ' || round(load_ms::numeric, 1) || ', index ' ||
       round(index_ms::numeric, 1) || ', join ' || round(join_ms::numeric, 1) || ', output ' ||
       round(output_ms::numeric, 1) || ', the function in all ' || round(total_ms::numeric, 1) ||
       ' (the rest of the statement: the executor reading its rows), GPU set-up ' ||
       round(coalesce(gpu_setup_ms, 0)::numeric, 1) || ' ms', NULL, NULL FROM tc_last_stats();
SELECT 'tc_join on the GPU, k => 1 (best match)', $(med), (SELECT count(*) FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS), k => 1))
  FROM runs(\$q\$SELECT count(*) FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS), k => 1)\$q\$, $REPS) ms;
SELECT 'pairs the GPU and the CPU differ on', NULL, count(*) FROM (
  (SELECT id_a, id_b FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS)) EXCEPT SELECT * FROM cpu_pairs)
  UNION ALL
  (SELECT * FROM cpu_pairs EXCEPT SELECT id_a, id_b FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS)))) x;
SQL
    fi
    if [ "$HAVE_Q3C" = 1 ]; then
        T0=$(date +%s.%N)
        q_db "$DB" -c "CREATE INDEX ON cat_b (q3c_ang2ipix(ra, dec)); ANALYZE cat_b" >/dev/null
        T1=$(date +%s.%N)
        echo "q3c: its index on cat_b (once)|$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')|"
        q_db "$DB" -F '|' <<SQL
SELECT 'q3c_join (every pair)', $(med), (SELECT count(*) FROM cat_a a, cat_b b WHERE q3c_join(a.ra, a.dec, b.ra, b.dec, $RADIUS / 3600.0))
  FROM runs(\$q\$SELECT count(*) FROM cat_a a, cat_b b WHERE q3c_join(a.ra, a.dec, b.ra, b.dec, $RADIUS / 3600.0)\$q\$, $REPS) ms;
SELECT 'q3c_join, nearest (LATERAL ... LIMIT 1)', $(med),
       (SELECT count(*) FROM cat_a a CROSS JOIN LATERAL (SELECT b.id FROM cat_b b WHERE q3c_join(a.ra, a.dec, b.ra, b.dec, $RADIUS / 3600.0)
                                                         ORDER BY q3c_dist(a.ra, a.dec, b.ra, b.dec) LIMIT 1) m)
  FROM runs(\$q\$SELECT count(*) FROM cat_a a CROSS JOIN LATERAL (SELECT b.id FROM cat_b b WHERE q3c_join(a.ra, a.dec, b.ra, b.dec, $RADIUS / 3600.0)
                                                                  ORDER BY q3c_dist(a.ra, a.dec, b.ra, b.dec) LIMIT 1) m\$q\$, $REPS) ms;
-- pairs one method returns and the other does not, and best matches that differ
SELECT 'pairs that differ', NULL, count(*) FROM (
  (SELECT id_a, id_b FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS))
   EXCEPT SELECT a.id, b.id FROM cat_a a, cat_b b WHERE q3c_join(a.ra, a.dec, b.ra, b.dec, $RADIUS / 3600.0))
  UNION ALL
  (SELECT a.id, b.id FROM cat_a a, cat_b b WHERE q3c_join(a.ra, a.dec, b.ra, b.dec, $RADIUS / 3600.0)
   EXCEPT SELECT id_a, id_b FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS)))) x;
SELECT 'best matches that differ', NULL, count(*) FROM
  (SELECT id_a, id_b FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord($RADIUS), k => 1)) t
  FULL JOIN (SELECT a.id AS id_a, m.id AS id_b FROM cat_a a CROSS JOIN LATERAL
               (SELECT b.id FROM cat_b b WHERE q3c_join(a.ra, a.dec, b.ra, b.dec, $RADIUS / 3600.0)
                 ORDER BY q3c_dist(a.ra, a.dec, b.ra, b.dec), b.id LIMIT 1) m) q USING (id_a)
 WHERE t.id_b IS DISTINCT FROM q.id_b;
SQL
    else
        echo "q3c_join|not installed|"
    fi
} | awk -F '|' -v f="$FLOOR" 'NR == 1 { print $0 "|x floor"; next }
        { r = ($2 ~ /^[0-9.]+$/ && f + 0 > 0) ? sprintf("%.1f", $2 / f) : ""; print $0 "|" r }' | test/bench/table
[ -n "${KEEP_DB:-}" ] || q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
