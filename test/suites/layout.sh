#!/usr/bin/env bash
# The source layout's rules, checked on the files themselves (no server
# needed):
#   - only src/pg/ includes postgres.h or any PostgreSQL server header
#     (src/engine, src/common and cuda/: everything nvcc compiles);
#   - every header a cuda/ file includes by name is one of cuda/,
#     src/engine or src/common (nvcc's include path), so none pulls in the
#     PostgreSQL glue;
#   - src/pg reaches the engine through engine.h alone;
#   - nothing under src/ includes from cuda/, and no include climbs out of
#     its directory ("../");
#   - no getenv in src/ or cuda/ (settings come through the join's
#     parameters);
#   - no source file over 900 lines, no function over 200 (a function body:
#     from a line that is exactly "{" to the next line that is exactly "}");
#   - the engine compiles with no PostgreSQL include path.
set -uo pipefail
cd "$(dirname "$0")/../.."

MAX_FILE_LINES=900
MAX_FUNC_LINES=200

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok     $1"; }
bad() { fail=$((fail + 1)); echo "FAILED $1"; }
# check NAME OFFENDERS: passes when OFFENDERS is empty, else lists them.
check() {
    if [ -z "$2" ]; then
        ok "$1"
    else
        bad "$1"
        sed 's/^/         /' <<<"$2"
    fi
}

# Source files under the given directories (build outputs aside).
sources() {
    find "$@" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \
        -o -name '*.cpp' -o -name '*.hpp' -o -name '*.cc' \) 2>/dev/null | LC_ALL=C sort
}

# "file:line:kind:target" for every #include in the given files; kind is
# q for "name", a for <name>.
includes() {
    [ $# -gt 0 ] || return 0
    awk '
        match($0, /^[ \t]*#[ \t]*include[ \t]*[<"][^>"]+[>"]/) {
            t = substr($0, RSTART, RLENGTH)
            sub(/^[ \t]*#[ \t]*include[ \t]*/, "", t)
            k = substr(t, 1, 1) == "<" ? "a" : "q"
            print FILENAME ":" FNR ":" k ":" substr(t, 2, length(t) - 2)
        }' "$@"
}

mapfile -t SRC < <(sources src)
mapfile -t CUDA < <(sources cuda)
mapfile -t PG < <(sources src/pg)
mapfile -t NON_PG < <(sources src/engine src/common cuda)
if [ ${#SRC[@]} -eq 0 ]; then
    bad "source files found under src/"
    echo "$pass passed, $fail failed"
    exit 1
fi

# PostgreSQL's server headers: the names in its server include directory,
# and a fixed list for where pg_config is missing.
PG_CONFIG=${PG_CONFIG:-$(command -v pg_config || echo /usr/lib/postgresql/15/bin/pg_config)}
PGINC=$("$PG_CONFIG" --includedir-server 2>/dev/null || true)
SERVER_NAMES="postgres.h postgres_ext.h postgres_fe.h c.h fmgr.h funcapi.h miscadmin.h
    pg_config.h pg_config_ext.h pg_config_manual.h pg_config_os.h pgstat.h port.h
    access bootstrap catalog commands common datatype executor foreign jit lib libpq
    mb nodes optimizer parser partitioning port postmaster regex replication rewrite
    snowball statistics storage tcop tsearch utils"
if [ -n "$PGINC" ] && [ -d "$PGINC" ]; then
    SERVER_NAMES="$SERVER_NAMES $(ls "$PGINC")"
fi
# Our own headers' names: a server header of the same name is not meant.
OWN_HEADERS=$(for f in "${SRC[@]}" "${CUDA[@]}"; do basename "$f"; done | LC_ALL=C sort -u)
is_server_header() {   # target: a server header, or one under a server directory
    local t=$1 first=${1%%/*} n
    if [ "$t" = "$first" ] && grep -qxF -- "$t" <<<"$OWN_HEADERS"; then
        return 1
    fi
    for n in $SERVER_NAMES; do
        [ "$first" = "$n" ] && return 0
    done
    return 1
}

# 1. PostgreSQL headers only in src/pg.
offenders=""
while IFS=: read -r f l k t; do
    [ -n "$t" ] || continue
    is_server_header "$t" && offenders+="$f:$l: #include $t"$'\n'
done < <(includes "${NON_PG[@]}")
check "no PostgreSQL server header outside src/pg (src/engine, src/common, cuda/)" "${offenders%$'\n'}"

# ... and postgres.h itself, by name, wherever it is spelt.
offenders=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*/)?postgres(_fe)?\.h[>"]' \
    "${NON_PG[@]}" /dev/null)
check "postgres.h is included in src/pg only" "$offenders"

# 2. What nvcc compiles includes, by name, only from its own include path.
NVCC_DIRS=(src/engine src/common $(find cuda -mindepth 1 -maxdepth 1 -type d | LC_ALL=C sort))
offenders=""
for f in "${CUDA[@]}"; do
    while IFS=: read -r _ l k t; do
        [ "$k" = q ] || continue
        found=""
        for d in "$(dirname "$f")" "${NVCC_DIRS[@]}"; do
            [ -f "$d/$t" ] && { found=$d; break; }
        done
        if [ -z "$found" ]; then
            offenders+="$f:$l: #include \"$t\" (not in cuda/, src/engine or src/common)"$'\n'
        fi
    done < <(includes "$f")
done
check "cuda/ includes only headers of cuda/, src/engine and src/common" "${offenders%$'\n'}"

# 3. src/pg reaches the engine through engine.h alone.
ENGINE_ONLY=$(for f in $(sources src/engine src/common cuda); do
    case $f in */engine.h) ;; *.h|*.cuh|*.hpp) basename "$f" ;; esac
done | LC_ALL=C sort -u)
offenders=""
while IFS=: read -r f l k t; do
    [ -n "$t" ] || continue
    [ -f "src/pg/$t" ] && continue
    grep -qxF -- "$(basename "$t")" <<<"$ENGINE_ONLY" && offenders+="$f:$l: #include $t"$'\n'
done < <(includes "${PG[@]}")
check "src/pg includes of the engine only engine.h" "${offenders%$'\n'}"

# 4. Nothing under src/ includes from cuda/; no "../" includes.
CUDA_HEADERS=$(for f in "${CUDA[@]}"; do case $f in *.h|*.cuh|*.hpp) basename "$f" ;; esac; done |
    LC_ALL=C sort -u)
offenders=""
while IFS=: read -r f l k t; do
    [ -n "$t" ] || continue
    case $t in
        cuda/* | */cuda/*) offenders+="$f:$l: #include $t"$'\n'; continue ;;
    esac
    if grep -qxF -- "$(basename "$t")" <<<"$CUDA_HEADERS" &&
        ! ls src/*/"$(basename "$t")" >/dev/null 2>&1; then
        offenders+="$f:$l: #include $t (a cuda/ header)"$'\n'
    fi
done < <(includes "${SRC[@]}")
check "nothing under src/ includes from cuda/" "${offenders%$'\n'}"
offenders=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\.\./' "${SRC[@]}" "${CUDA[@]}" /dev/null)
check 'no #include "../..." in src/ or cuda/' "$offenders"

# 5. No getenv.
offenders=$(grep -nwE '(secure_)?getenv' "${SRC[@]}" "${CUDA[@]}" /dev/null)
check "no getenv in src/ or cuda/" "$offenders"

# 6. Sizes: files, then functions.
offenders=""
for f in "${SRC[@]}" "${CUDA[@]}"; do
    n=$(wc -l <"$f")
    [ "$n" -gt "$MAX_FILE_LINES" ] && offenders+="$f: $n lines"$'\n'
done
check "no source file in src/ or cuda/ over $MAX_FILE_LINES lines" "${offenders%$'\n'}"

# A body opens with a line that is exactly "{" and closes with the next line
# that is exactly "}"; the lines between are counted.  Blocks that are not
# functions are skipped: extern "C" and namespace blocks (their "{" follows
# such a line), and structs, enums and initialisers (they close with "};" or
# "} Name;").
offenders=""
for f in "${SRC[@]}" "${CUDA[@]}"; do
    found=$(awk -v f="$f" -v max="$MAX_FUNC_LINES" '
        /^[A-Za-z_].*\(/ { sig = $0 }
        /^\{$/ {
            if (prev ~ /^extern "C"/ || prev ~ /^namespace/)
                start = 0
            else
            {
                start = FNR
                name = sig
            }
        }
        /^\}/ {
            if (start && $0 == "}" && FNR - start - 1 > max)
            {
                sub(/\(.*/, "", name)
                printf "%s:%d: %s: %d lines\n", f, start, name, FNR - start - 1
            }
            start = 0
        }
        NF { prev = $0 }' "$f")
    [ -n "$found" ] && offenders+="$found"$'\n'
done
check "no function in src/ or cuda/ over $MAX_FUNC_LINES lines" "${offenders%$'\n'}"

# 7. The engine builds with no PostgreSQL include path.
CC=${CC:-cc}
offenders=""
for f in src/engine/*.c; do
    out=$("$CC" -std=gnu11 -Wall -Werror -fsyntax-only -Isrc/engine -Isrc/common "$f" 2>&1) ||
        offenders+="$f: $(head -n 3 <<<"$out")"$'\n'
done
check "every src/engine/*.c compiles with only -Isrc/engine -Isrc/common" "${offenders%$'\n'}"
offenders=""
for f in src/engine/*.h src/common/*.h; do
    out=$("$CC" -std=gnu11 -Wall -Werror -fsyntax-only -x c -Isrc/engine -Isrc/common "$f" 2>&1) ||
        offenders+="$f: $(head -n 3 <<<"$out")"$'\n'
done
check "every header of src/engine and src/common compiles alone, as C" "${offenders%$'\n'}"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
