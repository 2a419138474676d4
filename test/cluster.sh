#!/usr/bin/env bash
# Throwaway PostgreSQL 15 cluster for tests and the demo.
#   test/cluster.sh [start|stop|env]
#   eval "$(test/cluster.sh env)"   # point psql / pg_regress at it
# Environment: TCJOIN_PGDATA (default /tmp/tcjoin-pg), TCJOIN_PGPORT (default 55432),
# TCJOIN_PGBIN (the server's programs, default /usr/lib/postgresql/15/bin).
# A running server is reused, unless it listens on another port or its
# binary was replaced after it started (a package upgrade): then it is
# restarted.
set -euo pipefail

BIN=${TCJOIN_PGBIN:-/usr/lib/postgresql/15/bin}
PGDATA=${TCJOIN_PGDATA:-/tmp/tcjoin-pg}
PORT=${TCJOIN_PGPORT:-55432}
SOCKDIR=/tmp
case $PGDATA in /*) ;; *) PGDATA=$PWD/$PGDATA ;; esac
# The checkout may live where the server user cannot even look (e.g. /root),
# and nothing below needs it, so work from /tmp.
cd /tmp

# The server refuses to run as root: as root, run it as a dedicated user;
# as anyone else, run it as ourselves.
if [ "$(id -u)" -eq 0 ]; then
    OWNER=tcjoin
    as_owner() { runuser -u "$OWNER" -- "$@"; }
else
    OWNER=$(id -un)
    as_owner() { "$@"; }
fi

running() { as_owner "$BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; }

# Whether $BIN/postgres was put in place after the running postmaster
# started (postmaster.pid's third line, in seconds since the epoch).  An
# upgrade of the server package replaces the binary and the libraries beside
# it, and the old server then fails to load them (plpgsql: "undefined
# symbol").  The inode's change time tells when: dpkg gives the files the
# package's own mtimes, older than a server started after the package was
# built, but a file it writes changes now.  Where the binary is a symbolic
# link, the link's own change time counts too.
binary_newer() {
    local started file link
    started=$(sed -n 3p "$PGDATA/postmaster.pid" 2>/dev/null) || return 1
    [[ $started =~ ^[0-9]+$ ]] || return 1
    file=$(stat -L -c %Z "$BIN/postgres" 2>/dev/null) || return 1
    link=$(stat -c %Z "$BIN/postgres" 2>/dev/null) || return 1
    [ "$file" -gt "$started" ] || [ "$link" -gt "$started" ]
}

start() {
    if [ "$(id -u)" -eq 0 ] && ! id "$OWNER" >/dev/null 2>&1; then
        useradd -m -s /bin/bash "$OWNER"
    fi
    if [ ! -s "$PGDATA/PG_VERSION" ]; then
        mkdir -p "$PGDATA"
        if [ "$(id -u)" -eq 0 ]; then chown "$OWNER:" "$PGDATA"; fi
        chmod 700 "$PGDATA"
        # C locale and UTF8: sort order and messages do not depend on the host.
        as_owner "$BIN/initdb" -D "$PGDATA" -U "$OWNER" -A trust --no-locale -E UTF8 >/dev/null
        echo "include_if_exists = 'tcjoin.conf'" >>"$PGDATA/postgresql.conf"
    fi
    # Rewritten on every start, so changed env (e.g. the port) takes effect.
    as_owner tee "$PGDATA/tcjoin.conf" >/dev/null <<CONF
port = $PORT
listen_addresses = 'localhost'
unix_socket_directories = '$SOCKDIR'
fsync = off
shared_buffers = 256MB
max_connections = 20
timezone = 'UTC'
CONF
    # Reuse a running server unless it listens on another port or its binary
    # was replaced after it started.
    if running; then
        if binary_newer; then
            echo "cluster.sh: $BIN/postgres changed after the running server started (an upgrade?): restarting it" >&2
        elif [ "$(sed -n 4p "$PGDATA/postmaster.pid")" = "$PORT" ]; then
            return 0
        fi
        as_owner "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
    fi
    if ! as_owner "$BIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 60 start >/dev/null; then
        echo "cluster.sh: server did not start; end of $PGDATA/server.log:" >&2
        tail -20 "$PGDATA/server.log" >&2
        exit 1
    fi
    # Let the invoking user connect without naming the owner: give it a superuser role.
    local me; me=$(id -un)
    if [ "$me" != "$OWNER" ]; then
        "$BIN/psql" -h "$SOCKDIR" -p "$PORT" -U "$OWNER" -d postgres -qAtX -v ON_ERROR_STOP=1 -c \
            "SELECT 1 FROM pg_roles WHERE rolname = '$me'" | grep -q 1 ||
        "$BIN/psql" -h "$SOCKDIR" -p "$PORT" -U "$OWNER" -d postgres -qX -v ON_ERROR_STOP=1 -c \
            "CREATE ROLE \"$me\" SUPERUSER LOGIN"
    fi
    echo "cluster.sh: server running (data $PGDATA, socket $SOCKDIR, port $PORT, superuser $OWNER)" >&2
}

stop() {
    if [ -s "$PGDATA/PG_VERSION" ] && running; then
        as_owner "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
        echo "cluster.sh: server stopped" >&2
    fi
}

case ${1:-start} in
    start) start ;;
    stop)  stop ;;
    env)   echo "export PGHOST=$SOCKDIR PGPORT=$PORT PGUSER=$OWNER PGDATABASE=postgres" ;;
    *)     echo "usage: $0 [start|stop|env]" >&2; exit 2 ;;
esac
