#!/usr/bin/env bash
# Device selection where no GPU is usable (the pg_regress files must also hold
# on GPU machines, so these checks live here): tcjoin.device = gpu fails and
# names the reason, auto falls back to the CPU and says so in the stats.
# Skips (0 passed, 0 failed) on a machine with a working NVIDIA GPU.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -n "${PGPORT:-}" ] || eval "$(bash test/cluster.sh env)"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "a GPU is present: skipped"
    echo "0 passed, 0 failed"
    exit 0
fi

pass=0 fail=0
check() {   # name, expected substring, sql
    local out
    out=$(psql -X -q -A -t -v ON_ERROR_STOP=0 -d postgres -c "$3" 2>&1)
    if grep -qF -- "$2" <<<"$out"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        printf 'FAILED: %s\n  expected: %s\n  got: %s\n' "$1" "$2" "$out"
    fi
}

psql -X -q -d postgres >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS tcjoin CASCADE;
CREATE EXTENSION tcjoin;
DROP TABLE IF EXISTS tcjoin_device_pts;
CREATE TABLE tcjoin_device_pts (id int PRIMARY KEY, vec real[]);
INSERT INTO tcjoin_device_pts VALUES (1, '{0,0}'), (2, '{0,1}'), (3, '{5,5}');
SQL

check "device=gpu fails with the reason" 'ERROR:  tcjoin.device is "gpu" but no GPU is usable' \
    "SET tcjoin.device = gpu; SELECT * FROM tc_selfjoin('tcjoin_device_pts', 'vec', 1)"
check "the error's detail says why" 'DETAIL:' \
    "SET tcjoin.device = gpu; SELECT * FROM tc_selfjoin('tcjoin_device_pts', 'vec', 1)"
check "device=auto falls back to the CPU" 'cpu|1' \
    "SET tcjoin.device = auto; SELECT count(*) FROM tc_selfjoin('tcjoin_device_pts', 'vec', 1); SELECT device || '|' || pairs FROM tc_last_stats()"
check "device=cpu runs on the CPU" 'cpu' \
    "SET tcjoin.device = cpu; SELECT count(*) FROM tc_selfjoin('tcjoin_device_pts', 'vec', 1); SELECT device FROM tc_last_stats()"

check "tc_devices() lists no GPU" '0' \
    "SELECT count(*) FROM tc_devices()"
check "a GPU memory limit is accepted and unused on the CPU" 'cpu|1' \
    "SET tcjoin.gpu_memory_limit = '1MB'; SELECT count(*) FROM tc_selfjoin('tcjoin_device_pts', 'vec', 1); SELECT device || '|' || pairs FROM tc_last_stats()"

psql -X -q -d postgres -c "DROP TABLE tcjoin_device_pts" >/dev/null
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
