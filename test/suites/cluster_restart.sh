#!/usr/bin/env bash
# test/cluster.sh restarts a running server whose binary was replaced after
# it started (a package upgrade), and reuses it otherwise.
#
# The server's programs are reached through a directory of symbolic links
# (TCJOIN_PGBIN), so the test can "replace the binary" by touching its link
# (which sets the link's change time), and the server runs from its own data directory and port: the
# cluster the other suites use is left alone (checked).  Ends with
#   N passed, N failed
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
REAL_BIN=/usr/lib/postgresql/15/bin
PASSED=0 FAILED=0

ok() {
    local name=$1; shift
    if "$@"; then
        echo "ok     $name"
        PASSED=$((PASSED + 1))
    else
        echo "FAILED $name"
        FAILED=$((FAILED + 1))
    fi
}

finish() {
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
    exit
}

if [ ! -x "$REAL_BIN/postgres" ]; then
    echo "no PostgreSQL 15 server in $REAL_BIN"
    FAILED=1
    finish
fi

# The shared cluster, as it is now: it must be the same afterwards.
MAIN_PGDATA=${TCJOIN_PGDATA:-/tmp/tcjoin-pg}
main_pid() { sed -n 1p "$MAIN_PGDATA/postmaster.pid" 2>/dev/null || true; }
MAIN_PID=$(main_pid)

# A port no local server holds.
PORT=
for p in $(seq 55480 55530); do
    if [ ! -e "/tmp/.s.PGSQL.$p.lock" ] && ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        PORT=$p
        break
    fi
done
if [ -z "$PORT" ]; then
    echo "no free port in 55480-55530"
    FAILED=1
    finish
fi

WORK=$(mktemp -d /tmp/tcjoin-restart.XXXXXX)
chmod 755 "$WORK"           # the server's user (tcjoin, when run as root) enters it
mkdir "$WORK/bin"
for f in "$REAL_BIN"/*; do
    ln -s "$f" "$WORK/bin/${f##*/}"
done
export TCJOIN_PGBIN=$WORK/bin TCJOIN_PGDATA=$WORK/data TCJOIN_PGPORT=$PORT

cluster() { bash "$ROOT/test/cluster.sh" "$@" 2>>"$WORK/cluster.log"; }
cleanup() {
    cluster stop || true
    rm -rf "$WORK"
}
trap cleanup EXIT

pid() { sed -n 1p "$TCJOIN_PGDATA/postmaster.pid" 2>/dev/null || true; }
started() { sed -n 3p "$TCJOIN_PGDATA/postmaster.pid" 2>/dev/null || true; }
query() {
    eval "$(cluster env)"
    "$REAL_BIN/psql" -qAtX -v ON_ERROR_STOP=1 -c "$1" 2>&1
}
serves() {
    local v
    v=$(query 'DO $$BEGIN PERFORM 1; END$$; SELECT 42')
    [ "$v" = 42 ] || { echo "    query gave: $v"; return 1; }
}

ok "cluster.sh starts a server from TCJOIN_PGBIN, data directory and port" cluster start
PID1=$(pid)
ok "it serves queries, plpgsql included" serves
ok "it listens on port $PORT" test "$(sed -n 4p "$TCJOIN_PGDATA/postmaster.pid")" = "$PORT"

ok "start again reuses the server (binary older than it)" cluster start
ok "... same postmaster" test "$(pid)" = "$PID1"

# An upgrade: the binary changes after the server started.
sleep 1.2
touch -h "$TCJOIN_PGBIN/postgres"
CHANGED=$(stat -c %Z "$TCJOIN_PGBIN/postgres")
ok "the binary is now newer than the server" test "$CHANGED" -gt "$(started)"
: >"$WORK/cluster.log"
ok "start with a newer binary succeeds" cluster start
ok "... with a new postmaster" test -n "$(pid)" -a "$(pid)" != "$PID1"
ok "... started no earlier than the binary changed" test "$(started)" -ge "$CHANGED"
ok "... and says why it restarted" grep -q 'changed after the running server started (an upgrade?): restarting it' "$WORK/cluster.log"
ok "the restarted server serves queries" serves
PID2=$(pid)
ok "start again reuses the restarted server" cluster start
ok "... same postmaster" test "$(pid)" = "$PID2"

ok "stop stops it" cluster stop
ok "... no postmaster left" test ! -e "$TCJOIN_PGDATA/postmaster.pid"
ok "the shared cluster's postmaster is untouched" test "$(main_pid)" = "$MAIN_PID"
finish
