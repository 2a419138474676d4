# Helpers shared by test/suites/cancel.sh and test/suites/stress.sh; sourced,
# not run.  They need PGHOST etc. (test/cluster.sh env) in the environment.

# psql on database $1 with the rest as arguments: quiet, unaligned, no psqlrc.
q_db() {
    local db=$1; shift
    psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$db" "$@"
}

# A fresh database of that name with the extension installed: the suites
# never touch the database the other suites use.
fresh_db() {
    local db=$1
    q_db postgres -c "SET client_min_messages = warning" \
        -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null &&
        q_db postgres -c "CREATE DATABASE $db" >/dev/null &&
        q_db "$db" -c "SET client_min_messages = warning; CREATE EXTENSION tcjoin" >/dev/null
}

# The server log, where test/cluster.sh writes it (pg_ctl -l
# $PGDATA/server.log); empty when it cannot be read from here.
server_log() {
    local dir
    dir=$(q_db postgres -c "SHOW data_directory" 2>/dev/null) || return 0
    [ -r "$dir/server.log" ] && echo "$dir/server.log"
}

# Size of a file in bytes (0 when missing): where to start reading new lines.
log_offset() {
    [ -n "$1" ] && [ -r "$1" ] && stat -c %s "$1" || echo 0
}

# Lines written to log $1 since byte offset $2 that tell of a crash: a
# PANIC, a backend killed by a signal, a crash restart, a segfault.
crash_lines() {
    [ -n "$1" ] && [ -r "$1" ] || return 0
    tail -c +"$(($2 + 1))" "$1" |
        grep -E 'PANIC|was terminated by signal|terminated by signal|segmentation fault|Segmentation fault|server process .* exited with exit code [^0]|all server processes terminated|database system was interrupted|TRAP:' || true
}

# The postmaster's start time: a crash restart changes the backends but not
# this; a restarted server changes it.
postmaster_start() {
    q_db postgres -c "SELECT pg_postmaster_start_time()" 2>/dev/null
}

# The suite's server afterwards, through the caller's ok and bad: still up,
# not restarted since postmaster start time $1, and no crash in log $2 since
# byte offset $3.  The crash lines found are left in $crashes.
check_server() {
    local pm_start=$1 log=$2 log_at=$3
    if [ "$(q_db postgres -c 'SELECT 1' 2>&1)" = 1 ] && [ "$(postmaster_start)" = "$pm_start" ]; then
        ok "the server is up and was not restarted"
    else
        bad "the server is up and was not restarted"
    fi
    crashes=$(crash_lines "$log" "$log_at")
    if [ -z "$log" ]; then
        echo "note: the server log is not readable from here; crash lines not checked"
    elif [ -z "$crashes" ]; then
        ok "no PANIC, crash or signal in the server log ($log)"
    else
        bad "no PANIC, crash or signal in the server log ($log)"
        head -n 20 <<<"$crashes" | sed 's/^/         /'
    fi
}

# The GPU's used memory (MiB) and the processes holding it; 0 without a GPU.
gpu_used() {
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1
    else
        echo 0
    fi
}
gpu_apps() {
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l
    else
        echo 0
    fi
}

# Median and maximum of numbers on stdin, one a line: "median max".
median_max() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "- -"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.0f %.0f\n", m, v[NR] }'
}

# The benchmarks' timing helper in database $1: runs(q, reps) executes q
# reps times in one session and returns each run's milliseconds.
create_runs_fn() {
    q_db "$1" >/dev/null <<'SQL'
CREATE FUNCTION runs(q text, reps int) RETURNS SETOF float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
    FOR i IN 1 .. reps LOOP
        t0 := clock_timestamp();
        EXECUTE q;
        RETURN NEXT extract(epoch FROM clock_timestamp() - t0) * 1000;
    END LOOP;
END $$;
SQL
}
