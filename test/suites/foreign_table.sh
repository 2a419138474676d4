#!/usr/bin/env bash
# A foreign table as input (file_fdw, rows from a program), against the plain
# SQL reference.  Outside pg_regress because file_fdw is not installed with
# every PostgreSQL; skips (0 passed, 0 failed) where it is missing.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d postgres "$@"; }

if [ "$(q -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'file_fdw'")" != 1 ]; then
    echo "file_fdw is not available: skipped"
    echo "0 passed, 0 failed"
    exit 0
fi
out=$(q 2>&1 <<'SQL'
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS tcjoin CASCADE;
CREATE EXTENSION tcjoin;
CREATE EXTENSION IF NOT EXISTS file_fdw;
DROP SERVER IF EXISTS tcjoin_ft_files CASCADE;
CREATE SERVER tcjoin_ft_files FOREIGN DATA WRAPPER file_fdw;
CREATE FOREIGN TABLE tcjoin_ft (id integer, vec real[]) SERVER tcjoin_ft_files
    OPTIONS (program 'printf ''1;{0,0}\n2;{3,4}\n3;{1,1}\n4;{0,0}\n5;{10,10}\n6;\n7;{3,5}\n8;{-1,0}\n''',
             format 'csv', delimiter ';');
WITH j AS (SELECT * FROM tc_selfjoin('tcjoin_ft', 'vec', 1.5, 'id')),
     r AS (SELECT a.id::bigint AS id_a, b.id::bigint AS id_b,
                  (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8)))
                     FROM unnest(a.vec, b.vec) AS u(x, y)) AS dist
             FROM tcjoin_ft a JOIN tcjoin_ft b ON a.id < b.id
            WHERE a.vec IS NOT NULL AND b.vec IS NOT NULL)
SELECT (SELECT count(*) FROM j) || ' ' ||
       (SELECT count(*) FROM (TABLE j EXCEPT ALL SELECT * FROM r WHERE dist <= 1.5) x) || ' ' ||
       (SELECT count(*) FROM (SELECT * FROM r WHERE dist <= 1.5 EXCEPT ALL TABLE j) x);
DROP SERVER tcjoin_ft_files CASCADE;
SQL
)
# 6 pairs: (1,3), (1,4), (3,4), (1,8), (4,8), (2,7); none missing, none extra.
if [ "$out" = "6 0 0" ]; then
    echo "ok: foreign table joined like the reference"
    echo "1 passed, 0 failed"
else
    echo "FAILED: foreign table: got '$out', expected '6 0 0'"
    echo "0 passed, 1 failed"
    exit 1
fi
