#!/usr/bin/env bash
# The SQL surface under random shapes, values and arguments, each case
# checked against plain SQL or the error the README names
# (test/stress/random_setup.sql says what varies), for SQL_RANDOM_SECONDS
# (default 60).  Every case is seeded; a failure prints its description
# with the seed (rnd_case(seed) replays it).
# Needs the extension installed and a server (PGHOST etc., or
# test/cluster.sh).  Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
. test/stress/lib.sh
DB=tcjoin_sql_random
SECONDS_RUN=${SQL_RANDOM_SECONDS:-60}

fresh_db "$DB" || { echo "could not create $DB"; echo "0 passed, 1 failed"; exit 1; }
q_db "$DB" -f test/stress/random_setup.sql >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
end=$((SECONDS + SECONDS_RUN))
batches=0
while [ $SECONDS -lt $end ]; do
    # 10 cases a session, each seed in [-1, 1) from the shell's RANDOM
    sql=""
    for _ in $(seq 1 10); do sql+="SELECT rnd_case($((RANDOM * 32768 + RANDOM)) / 536870912.0 - 1);"; done
    if ! q_db "$DB" -c "$sql" >/dev/null 2>"${TMPDIR:-/tmp}/sql_random.$$"; then
        echo "a batch failed outside the cases:"; head -5 "${TMPDIR:-/tmp}/sql_random.$$"
        q_db "$DB" -c "INSERT INTO rnd_log VALUES (NULL, 'batch', false, 'a batch failed outside the cases')" >/dev/null
    fi
    batches=$((batches + 1))
done
rm -f "${TMPDIR:-/tmp}/sql_random.$$"
q_db "$DB" -F ' ' -c "SELECT what, count(*), count(*) FILTER (WHERE ok) FROM rnd_log GROUP BY what ORDER BY what" |
    while read -r what n ok; do echo "$what: $n cases, $ok right"; done
q_db "$DB" -c "SELECT 'FAILED ' || detail FROM rnd_log WHERE NOT ok LIMIT 20"
read -r pass fail < <(q_db "$DB" -F ' ' -c "SELECT count(*) FILTER (WHERE ok), count(*) FILTER (WHERE NOT ok) FROM rnd_log")
q_db postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
[ "${pass:-0}" -gt 0 ] || fail=$((fail + 1))
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
