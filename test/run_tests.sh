#!/usr/bin/env bash
# The test command: set up, build (warnings are errors), install, start a
# throwaway cluster, run every suite, and finish with one line
#   N passed, N failed
# (totals). Exits non-zero if anything failed, a build step included.
#
# Suites:
#   - make installcheck          (pg_regress: sql/ + expected/)
#   - make -C test/engine check  (if test/engine/Makefile exists)
#   - every executable test/suites/*.sh; its last "N passed, N failed" line counts
set -uo pipefail   # no -e: a failing step is counted, not fatal
cd "$(dirname "$0")/.."
ROOT=$PWD

export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
# Installing writes to system directories: use sudo when not root.
install_ext() {
    if [ "$(id -u)" -eq 0 ]; then make install; else sudo make install PG_CONFIG="$PG_CONFIG"; fi
}
PASSED=0 FAILED=0
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

section() { printf '\n===== %s =====\n' "$*"; }

finish() {
    # On CI the machine is thrown away; don't leave a server running behind the job.
    [ "${CI:-}" = true ] && bash test/cluster.sh stop
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
    exit
}

# Run a step that has no test count of its own: success counts for nothing,
# failure counts as one failed test.
step() {
    local name=$1; shift
    section "$name"
    "$@" && return 0
    echo "FAILED: $name"
    FAILED=$((FAILED + 1))
    return 1
}

# Run a suite that ends with "N passed, N failed", add its numbers in. A suite
# that exits non-zero without reporting a failure counts one failure more.
suite() {
    local name=$1; shift
    section "$name"
    # Indented, so that the only unindented "N passed, N failed" is the final total.
    "$@" 2>&1 | tee "$LOG" | sed -u 's/^/    /'
    local rc=${PIPESTATUS[0]}
    local line p=0 f=0
    line=$(grep -E '^\s*[0-9]+ passed, [0-9]+ failed\s*$' "$LOG" | tail -n 1)
    if [ -n "$line" ]; then
        read -r p _ f _ <<<"$line"
    fi
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    echo "--> $name: $p passed, $f failed"
    PASSED=$((PASSED + p)) FAILED=$((FAILED + f))
}

# pg_regress prints one line per test: "test name ... ok 12 ms" or
# "     name ... FAILED" (PG15), or TAP "ok 1 - name" / "not ok 1 - name" (PG16+).
installcheck() {
    section "make installcheck"
    make installcheck 2>&1 | tee "$LOG"
    local rc=${PIPESTATUS[0]} p f
    p=$(grep -cE '\.\.\. +ok( |$)|^ok +[0-9]+ +[-+] ' "$LOG")
    f=$(grep -cE '\.\.\. +FAILED|^not ok +[0-9]+ ' "$LOG")
    if [ "$rc" -ne 0 ]; then
        [ "$f" -eq 0 ] && f=1
        [ -f regression.diffs ] && { section "regression.diffs (first 300 lines)"; head -n 300 regression.diffs; }
    fi
    echo "--> installcheck: $p passed, $f failed"
    PASSED=$((PASSED + p)) FAILED=$((FAILED + f))
}

step "setup" bash test/setup.sh || finish
# The server-side suites need the extension built, installed and a server running;
# the engine tests and test/suites still run if that fails.
eval "$(bash test/cluster.sh env)"   # PGHOST etc. for pg_regress and the suites
if step "build" make -j"$(nproc)" && step "install" install_ext && step "cluster" bash test/cluster.sh start; then
    installcheck
fi
if [ -f test/engine/Makefile ]; then
    suite "engine tests" make -C test/engine check
fi
for s in test/suites/*.sh; do
    [ -f "$s" ] && [ -x "$s" ] || continue
    suite "$s" "$ROOT/$s"
done
finish
